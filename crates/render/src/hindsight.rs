//! The tables of `meta-agent hindsight`: the signatures found in files, the store's entries, one
//! entry with its ranked resolutions, the store's counts and what a prune removed. Text for
//! people; the `--json` forms are the stable contract and are written by the command itself.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use meta_agent_protocol::kinds::SignatureKind;
use meta_agent_protocol::signature::{ExtractedSignature, SkippedFile};

use super::words::plural_y;

/// One entry of the store as `hindsight list` shows it (the session layer reads it off the
/// store's entry).
#[derive(Debug, Clone, PartialEq)]
pub struct EntryLine<'a> {
    pub signature: &'a str,
    pub kind: SignatureKind,
    /// The entry's status, as the store names it.
    pub status: &'a str,
    pub occurrences: u64,
    /// When it was last seen, as written in the store.
    pub last_seen: String,
    pub template: &'a str,
}

/// One resolution of an entry as the store ranks it now.
#[derive(Debug, Clone, PartialEq)]
pub struct RankedLine<'a> {
    pub confidence: f64,
    pub id: &'a str,
    /// What the fix does, in one line.
    pub summary: String,
}

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
pub fn entries(entries: &[EntryLine], skipped: &[SkippedFile]) -> String {
    let mut out = String::new();
    for e in entries {
        let _ = writeln!(
            out,
            "{}  {:<12}  {:<10}  {:>5}x  {}  {}",
            e.signature,
            e.kind.as_str(),
            e.status,
            e.occurrences,
            e.last_seen,
            e.template.lines().next().unwrap_or_default()
        );
    }
    let _ = writeln!(
        out,
        "{} entr{}",
        entries.len(),
        plural_y(entries.len() as u64)
    );
    out.push_str(&skipped_lines(skipped));
    out
}

/// One entry as its YAML, then its resolutions as the store would rank them now.
pub fn entry(entry: &impl Serialize, ranked: &[RankedLine]) -> String {
    let mut out = serde_yaml::to_string(entry).unwrap_or_default();
    let _ = writeln!(out, "# ranked resolutions");
    for r in ranked {
        let _ = writeln!(out, "{:.3}  {}  {}", r.confidence, r.id, r.summary);
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
    let _ = writeln!(
        out,
        "{verb} {} entr{}",
        stale.len(),
        plural_y(stale.len() as u64)
    );
    out
}

/// How many entries an import (`hindsight import`, `memory import`) wrote.
pub fn imported(count: usize) -> String {
    format!("imported {count} entr{}\n", plural_y(count as u64))
}

/// An export written to a file (printed, it is only its JSON lines).
pub fn exported(count: usize, path: &std::path::Path) -> String {
    format!(
        "exported {count} entr{} to {}\n",
        plural_y(count as u64),
        path.display()
    )
}

fn skipped_lines(skipped: &[SkippedFile]) -> String {
    skipped
        .iter()
        .map(|s| format!("skipped {}: {}\n", s.path.display(), s.reason))
        .collect()
}
