//! Failures as error signatures: every failed gate's JUnit failures, SARIF findings or log read
//! by [`meta_agent_hindsight::signature`], and one signature for a failure reason when they yield none.

use super::*;

/// The signatures of every failed gate: from JUnit failures, SARIF findings, or the gate's log;
/// a failed gate that yields none gets one for its failure reason, so the loop can track it.
pub fn signatures_of(summary: &GatesSummary, repo_root: &Path) -> Vec<SignatureRecord> {
    let opts = ExtractOptions {
        format: InputFormat::Auto,
        repo_root: Some(repo_root.to_owned()),
        limits: Limits::default(),
    };
    let mut records: BTreeMap<String, SignatureRecord> = BTreeMap::new();
    for gate in summary
        .gates
        .iter()
        .filter(|gate| gate.status == meta_agent_protocol::records::GateStatus::Failed)
    {
        let mut found = gate_signatures(gate, &opts);
        if found.is_empty() {
            found.push(reason_signature(gate, repo_root));
        }
        for extracted in found {
            records
                .entry(extracted.id.clone())
                .or_insert_with(|| record(&extracted, &gate.name));
        }
    }
    records.into_values().collect()
}

fn gate_signatures(gate: &GateResult, opts: &ExtractOptions) -> Vec<ExtractedSignature> {
    let mut found = Vec::new();
    if let Some(tests) = &gate.tests {
        found.extend(signature::from_junit(tests, opts));
    }
    if let Some(lint) = gate.lint.as_ref().filter(|lint| lint.blocking > 0) {
        let report = SarifReport {
            findings: lint.findings,
            errors: lint.errors,
            warnings: lint.warnings,
            results: lint.results.clone(),
            results_omitted: 0,
        };
        found.extend(signature::from_sarif(&report, opts));
    }
    if found.is_empty() {
        found.extend(signature::extract_log(
            &gate.log,
            Path::new(&gate.name),
            opts,
        ));
    }
    found
}

fn reason_signature(gate: &GateResult, repo_root: &Path) -> ExtractedSignature {
    let reason = gate
        .reasons
        .first()
        .cloned()
        .unwrap_or_else(|| "failed".into());
    let template = format!(
        "gate {}: {}",
        gate.name,
        signature::normalize(&reason, Some(repo_root))
    );
    ExtractedSignature {
        id: signature::signature_id(SignatureKind::Other, &template),
        family: signature::family_key(SignatureKind::Other, &template),
        kind: SignatureKind::Other,
        template,
        file: PathBuf::from(&gate.name),
        location: None,
        test: None,
        frames: Vec::new(),
        excerpt: reason,
        detail: String::new(),
    }
}

fn record(extracted: &ExtractedSignature, gate: &str) -> SignatureRecord {
    SignatureRecord {
        id: extracted.id.clone(),
        kind: extracted.kind,
        template: extracted.template.clone(),
        family: extracted.family.clone(),
        gate: gate.to_owned(),
        excerpt: meta_agent_report::trim_to(&extracted.excerpt, 2048),
        location: extracted.location.clone(),
        test: extracted.test.clone(),
        frames: extracted.frames.clone(),
        detail: extracted.detail.clone(),
    }
}
