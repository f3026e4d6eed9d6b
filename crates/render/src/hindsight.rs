//! The tables of `meta-agent hindsight`: the signatures found in files, the store's entries, one
//! entry with its ranked resolutions, the store's counts and what a prune removed. Text for
//! people; the `--json` forms are the stable contract and are written by the command itself.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use meta_agent_hindsight::signature::ExtractedSignature;
use meta_agent_hindsight::store::{Entry, RankedResolution, SkippedFile};

/// What `hindsight stats` counts.
#[derive(Debug, Default, serde::Serialize)]
pub struct StoreStats {
    pub entries: usize,
    pub by_status: BTreeMap<String, usize>,
    pub by_kind: BTreeMap<String, usize>,
    pub resolutions: BTreeMap<String, usize>,
    pub applied: u64,
    pub succeeded: u64,
    pub failed: u64,
    pub catalog_rules: usize,
    pub skipped: Vec<SkippedFile>,
}

/// "y" for one, "ies" for any other count ("1 entry", "3 entries").
pub fn plural_y(n: usize) -> &'static str {
    if n == 1 { "y" } else { "ies" }
}

/// One line per signature found (id, kind, file, template) and the count.
pub fn signatures(found: &[ExtractedSignature], files: usize) -> String {
    let mut out = String::new();
    for s in found {
        let _ = writeln!(
            out,
            "{}  {:<12}  {}  {}",
            s.id,
            s.kind.as_str(),
            s.file.display(),
            s.template
        );
    }
    let _ = writeln!(out, "{} signature(s) in {files} file(s)", found.len());
    out
}

/// One line per entry (id, kind, status, occurrences, last seen, the template's first line),
/// the count, and the files the store could not read.
pub fn entries(entries: &[&Entry], skipped: &[SkippedFile]) -> String {
    let mut out = String::new();
    for e in entries {
        let _ = writeln!(
            out,
            "{}  {:<12}  {:<10}  {:>5}x  {}  {}",
            e.signature,
            e.kind.as_str(),
            e.status.as_str(),
            e.occurrences,
            e.last_seen,
            e.template.lines().next().unwrap_or_default()
        );
    }
    let _ = writeln!(out, "{} entr{}", entries.len(), plural_y(entries.len()));
    out.push_str(&skipped_lines(skipped));
    out
}

/// One entry as its YAML, then its resolutions as the store would rank them now.
pub fn entry(entry: &Entry, ranked: &[RankedResolution]) -> String {
    let mut out = serde_yaml::to_string(entry).unwrap_or_default();
    let _ = writeln!(out, "# ranked resolutions");
    for r in ranked {
        let _ = writeln!(
            out,
            "{:.3}  {}  {}",
            r.confidence,
            r.resolution.id,
            r.resolution.fix.summary()
        );
    }
    out
}

/// The store's counts, one line each ("none" for an empty group).
pub fn stats(stats: &StoreStats) -> String {
    let mut out = format!("entries: {}\n", stats.entries);
    for (name, map) in [
        ("status", &stats.by_status),
        ("kind", &stats.by_kind),
        ("resolutions", &stats.resolutions),
    ] {
        let parts: Vec<String> = map.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let shown = if parts.is_empty() {
            "none".to_string()
        } else {
            parts.join(", ")
        };
        let _ = writeln!(out, "{name}: {shown}");
    }
    let _ = writeln!(
        out,
        "outcomes: applied {}, succeeded {}, failed {}",
        stats.applied, stats.succeeded, stats.failed
    );
    let _ = writeln!(out, "catalog rules: {}", stats.catalog_rules);
    out.push_str(&skipped_lines(&stats.skipped));
    out
}

/// The entries a prune removed (or would remove, on a dry run), and their count.
pub fn pruned(stale: &[String], dry_run: bool) -> String {
    let verb = if dry_run { "would prune" } else { "pruned" };
    let mut out: String = stale.iter().map(|id| format!("{verb} {id}\n")).collect();
    let _ = writeln!(out, "{verb} {} entr{}", stale.len(), plural_y(stale.len()));
    out
}

fn skipped_lines(skipped: &[SkippedFile]) -> String {
    skipped
        .iter()
        .map(|s| format!("skipped {}: {}\n", s.path.display(), s.reason))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::{Duration, UNIX_EPOCH};

    use meta_agent_hindsight::store::{Fix, Resolution, ResolutionSource, Status, Timestamp};
    use meta_agent_hindsight::{Signature, SignatureKind};

    use super::*;

    fn entry_of(id: &str, kind: SignatureKind, template: &str) -> Entry {
        let at = Timestamp::new(UNIX_EPOCH + Duration::from_secs(1_795_000_000));
        let signature = Signature {
            id: id.into(),
            kind,
            template: template.into(),
        };
        let mut entry = Entry::new(&signature, at);
        entry.occurrences = 3;
        entry
    }

    fn store_entries() -> Vec<Entry> {
        let mut resolved = entry_of(
            "5f0c2a9e81b3d4c7",
            SignatureKind::TestFailure,
            "tests/test_calc.py::test_mean: assert <n> == <n>\nmore",
        );
        resolved.status = Status::Resolved;
        let mut guidance = Resolution::new(Fix::Guidance("use true division".into()));
        guidance.outcomes.applied = 2;
        guidance.outcomes.succeeded = 2;
        resolved.resolutions.push(guidance);
        let lint = entry_of(
            "0a1b2c3d4e5f6071",
            SignatureKind::Lint,
            "ruff F401: unused import <name>",
        );
        vec![resolved, lint]
    }

    fn skipped() -> Vec<SkippedFile> {
        vec![SkippedFile {
            path: PathBuf::from(".meta-agent/hindsight/entries/zz/broken.yaml"),
            reason: "not YAML: line 1".into(),
        }]
    }

    #[test]
    fn the_store_s_tables_as_people_read_them() {
        let entries_owned = store_entries();
        let listed: Vec<&Entry> = entries_owned.iter().collect();
        let ranked = vec![RankedResolution {
            resolution: entries_owned[0].resolutions[0].clone(),
            source: ResolutionSource::Exact {
                signature: entries_owned[0].signature.clone(),
            },
            confidence: 0.34,
            from_catalog: false,
        }];
        let mut counts = StoreStats {
            entries: 2,
            applied: 2,
            succeeded: 2,
            catalog_rules: 41,
            skipped: skipped(),
            ..StoreStats::default()
        };
        counts.by_status.insert("resolved".into(), 1);
        counts.by_status.insert("unresolved".into(), 1);
        counts.by_kind.insert("lint".into(), 1);
        counts.by_kind.insert("test_failure".into(), 1);
        counts.resolutions.insert("guidance".into(), 1);
        let found = vec![ExtractedSignature {
            id: entries_owned[0].signature.clone(),
            kind: entries_owned[0].kind,
            template: entries_owned[0].template.clone(),
            family: entries_owned[0].family.clone(),
            file: PathBuf::from("reports/junit.xml"),
            location: Some("tests/test_calc.py:28".into()),
            test: Some("tests/test_calc.py::test_mean".into()),
            frames: Vec::new(),
            excerpt: "assert 2 == 2.5".into(),
            detail: String::new(),
        }];
        insta::assert_snapshot!(
            "hindsight_tables",
            [
                signatures(&found, 2),
                entries(&listed, &skipped()),
                entry(&entries_owned[0], &ranked),
                stats(&counts),
                stats(&StoreStats::default()),
                pruned(&["0a1b2c3d4e5f6071".into()], true),
                pruned(&[], false),
            ]
            .join("---\n")
        );
    }
}
