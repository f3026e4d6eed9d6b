//! SARIF findings to candidates: one per result at level warning or error, kind lint, with the
//! template `<tool> <rule-id>: <message>` and the file in `location`. This module reads no files.

use super::Candidate;
use crate::SignatureKind;
use meta_agent_report::{Finding, FindingLevel, SarifReport};

/// The candidates of a SARIF report, in report order.
pub(super) fn candidates(report: &SarifReport) -> Vec<Candidate> {
    report
        .results
        .iter()
        .filter(|f| counts(f.level))
        .map(candidate)
        .collect()
}

/// Notes and `none` results do not fail a lint gate.
fn counts(level: FindingLevel) -> bool {
    match level {
        FindingLevel::Error | FindingLevel::Warning => true,
        FindingLevel::Note | FindingLevel::None => false,
    }
}

fn candidate(finding: &Finding) -> Candidate {
    let rule = finding.rule_id.as_deref().unwrap_or("finding");
    let location = finding.file.as_ref().map(|file| {
        finding
            .line
            .map_or_else(|| file.clone(), |line| format!("{file}:{line}"))
    });
    Candidate {
        kind: SignatureKind::Lint,
        template: format!(
            "{} {rule}: {}",
            finding.tool.to_lowercase(),
            finding.message
        ),
        location,
        test: None,
        frames: Vec::new(),
        excerpt: finding.message.clone(),
    }
}
