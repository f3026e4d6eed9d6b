//! `meta-agent hindsight ...`: the command-line surface of signatures and the store.
//!
//! [`run`] takes parsed arguments and a [`HindsightContext`] (repository, store directory, the
//! time) and returns what to print on stdout; it prints nothing itself and picks no exit code.
//! Tables are for people (written by [`crate::render::hindsight`]); `--json` output is the stable
//! contract.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::config::values::{UnknownName, parse_name};
use crate::hindsight::SignatureKind;
use crate::hindsight::signature::{
    self, ExtractOptions, ExtractedSignature, InputFormat, SignatureError,
};
use crate::hindsight::store::{
    Catalog, CatalogError, Entry, RankedResolution, Status, Store, StoreError, StoreOptions,
    Timestamp,
};
use crate::render::hindsight::{self as hindsight_text, EntryLine, RankedLine, StoreStats};

/// `meta-agent hindsight`.
#[derive(Debug, Clone, clap::Args)]
pub struct HindsightArgs {
    #[command(subcommand)]
    pub command: HindsightCommand,
}

/// The hindsight subcommands.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum HindsightCommand {
    /// Print the error signatures found in report or log files.
    Signature {
        /// JUnit XML, SARIF, `cargo --message-format=json` output or plain logs.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        #[arg(long, value_enum, default_value = "auto")]
        format: InputFormat,
        /// A JSON list of objects with `signature`, `template`, `kind`, `file`, ...
        #[arg(long)]
        json: bool,
    },
    /// List the store's entries.
    List {
        #[arg(long)]
        json: bool,
        /// Only entries of this kind (compile, test_failure, test_error, lint, crash, timeout, other).
        #[arg(long, value_parser = parse_kind)]
        kind: Option<SignatureKind>,
        /// Only entries with this status (resolved, unresolved, escalated).
        #[arg(long, value_parser = parse_status)]
        status: Option<Status>,
    },
    /// Show one entry and its ranked resolutions, by full id or unique prefix.
    Show {
        signature: String,
        #[arg(long)]
        json: bool,
    },
    /// Counts by status and kind, resolution outcomes, and what the load skipped.
    Stats {
        #[arg(long)]
        json: bool,
    },
    /// Delete stale entries: last seen long ago, never cured and not escalated.
    Prune {
        #[arg(long, default_value_t = 180)]
        older_than_days: u64,
        /// Only list what would be deleted.
        #[arg(long)]
        dry_run: bool,
    },
    /// Merge an export file into the store (counts added, resolutions unioned).
    Import { file: PathBuf },
    /// Write every entry as JSON lines, sorted by signature.
    Export {
        /// Write here instead of stdout.
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Approve learned candidates, so runs apply them automatically (in the database when one
    /// is configured, else in this clone's `.git/meta-agent/memory`).
    Approve(super::memory_cli::ApproveArgs),
    /// Write what runs queued while the database was unreachable (`memory-pending.jsonl`).
    Sync(super::memory_cli::SyncArgs),
}

/// The hindsight commands that work on shared memory (async, [`super::memory_cli`]).
#[derive(Debug, Clone, Copy)]
pub enum SharedCommand<'a> {
    Approve(&'a super::memory_cli::ApproveArgs),
    Sync(&'a super::memory_cli::SyncArgs),
}

impl HindsightCommand {
    /// The command when it works on shared memory rather than on the file store here.
    pub fn shared(&self) -> Option<SharedCommand<'_>> {
        match self {
            HindsightCommand::Approve(args) => Some(SharedCommand::Approve(args)),
            HindsightCommand::Sync(args) => Some(SharedCommand::Sync(args)),
            HindsightCommand::Signature { .. }
            | HindsightCommand::List { .. }
            | HindsightCommand::Show { .. }
            | HindsightCommand::Stats { .. }
            | HindsightCommand::Prune { .. }
            | HindsightCommand::Import { .. }
            | HindsightCommand::Export { .. } => None,
        }
    }
}

/// Where and when the command runs.
#[derive(Debug, Clone)]
pub struct HindsightContext {
    pub repo_root: PathBuf,
    /// The store directory (relative paths are under `repo_root`).
    pub store_dir: PathBuf,
    /// Whether the bundled catalog takes part in lookups.
    pub use_catalog: bool,
    pub now: SystemTime,
}

/// Why a hindsight command failed. Names the file or signature.
#[derive(Debug, thiserror::Error)]
pub enum HindsightError {
    #[error(transparent)]
    Signature(#[from] SignatureError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("bundled catalog: {0}")]
    Catalog(#[from] CatalogError),
    #[error("no entry matches signature {0:?}")]
    NotFound(String),
    #[error("signature prefix {prefix:?} is ambiguous: {candidates}")]
    Ambiguous { prefix: String, candidates: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}: not an exported entry: {source}")]
    Import {
        path: PathBuf,
        line: usize,
        #[source]
        source: serde_json::Error,
    },
    #[error("cannot encode JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// `approve` and `sync` go through [`super::memory_cli`] (see [`HindsightCommand::shared`]).
    #[error("`hindsight approve` and `hindsight sync` run through the memory commands")]
    SharedMemory,
}

/// Runs one hindsight command; returns what to print on stdout.
pub fn run(args: &HindsightArgs, ctx: &HindsightContext) -> Result<String, HindsightError> {
    match &args.command {
        HindsightCommand::Signature {
            files,
            format,
            json,
        } => signatures(files, *format, *json, ctx),
        HindsightCommand::List { json, kind, status } => list(&open(ctx)?, *json, *kind, *status),
        HindsightCommand::Show { signature, json } => show(&open(ctx)?, signature, *json, ctx),
        HindsightCommand::Stats { json } => stats(&open(ctx)?, *json),
        HindsightCommand::Prune {
            older_than_days,
            dry_run,
        } => prune(&mut open(ctx)?, *older_than_days, *dry_run, ctx),
        HindsightCommand::Import { file } => import(&mut open(ctx)?, file),
        HindsightCommand::Export { output } => export(&open(ctx)?, output.as_deref()),
        HindsightCommand::Approve(_) | HindsightCommand::Sync(_) => {
            Err(HindsightError::SharedMemory)
        }
    }
}

fn open(ctx: &HindsightContext) -> Result<Store, HindsightError> {
    let catalog = if ctx.use_catalog {
        Catalog::bundled()?
    } else {
        Catalog::default()
    };
    Ok(Store::open(StoreOptions {
        dir: Some(ctx.repo_root.join(&ctx.store_dir)),
        catalog,
        ..StoreOptions::default()
    })?)
}

fn parse_kind(text: &str) -> Result<SignatureKind, UnknownName> {
    parse_name(
        text,
        "signature kind",
        "compile, test-failure, test-error, lint, crash, timeout, other",
    )
}

fn parse_status(text: &str) -> Result<Status, UnknownName> {
    parse_name(text, "status", "resolved, unresolved, escalated")
}

fn kind_name(kind: SignatureKind) -> String {
    kind.as_str().to_owned()
}

fn signatures(
    files: &[PathBuf],
    format: InputFormat,
    json: bool,
    ctx: &HindsightContext,
) -> Result<String, HindsightError> {
    let opts = ExtractOptions {
        format,
        repo_root: Some(ctx.repo_root.clone()),
        ..ExtractOptions::default()
    };
    let mut found: Vec<ExtractedSignature> = Vec::new();
    for file in files {
        found.extend(signature::extract_file(file, &opts)?);
    }
    if json {
        return Ok(serde_json::to_string_pretty(&found)? + "\n");
    }
    Ok(hindsight_text::signatures(&found, files.len()))
}

fn sorted(store: &Store) -> Vec<&Entry> {
    let mut entries: Vec<&Entry> = store.entries().iter().collect();
    entries.sort_by(|a, b| a.signature.cmp(&b.signature));
    entries
}

fn list(
    store: &Store,
    json: bool,
    kind: Option<SignatureKind>,
    status: Option<Status>,
) -> Result<String, HindsightError> {
    let entries: Vec<&Entry> = sorted(store)
        .into_iter()
        .filter(|e| kind.is_none_or(|k| e.kind == k) && status.is_none_or(|s| e.status == s))
        .collect();
    if json {
        return Ok(serde_json::to_string_pretty(&entries)? + "\n");
    }
    let lines: Vec<EntryLine> = entries.iter().map(|e| entry_line(e)).collect();
    Ok(hindsight_text::entries(
        &lines,
        &store.load_report().skipped,
    ))
}

/// What `list` shows of an entry.
fn entry_line(entry: &Entry) -> EntryLine<'_> {
    EntryLine {
        signature: &entry.signature,
        kind: entry.kind,
        status: entry.status.as_str(),
        occurrences: entry.occurrences,
        last_seen: entry.last_seen.to_string(),
        template: &entry.template,
    }
}

/// What `show` lists of a ranked resolution.
fn ranked_line(ranked: &RankedResolution) -> RankedLine<'_> {
    RankedLine {
        confidence: ranked.confidence,
        id: &ranked.resolution.id,
        summary: ranked.resolution.fix.summary(),
    }
}

fn find<'a>(store: &'a Store, prefix: &str) -> Result<&'a Entry, HindsightError> {
    match store.find_prefix(prefix).as_slice() {
        [] => Err(HindsightError::NotFound(prefix.to_string())),
        [one] => Ok(one),
        many => Err(HindsightError::Ambiguous {
            prefix: prefix.to_string(),
            candidates: many
                .iter()
                .map(|e| e.signature.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

fn show(
    store: &Store,
    prefix: &str,
    json: bool,
    ctx: &HindsightContext,
) -> Result<String, HindsightError> {
    let entry = find(store, prefix)?;
    let ranked = store.ranked_resolutions(&entry.signature(), Timestamp::new(ctx.now));
    if json {
        let value = serde_json::json!({ "entry": entry, "ranked": ranked });
        return Ok(serde_json::to_string_pretty(&value)? + "\n");
    }
    let lines: Vec<RankedLine> = ranked.iter().map(ranked_line).collect();
    Ok(hindsight_text::entry(entry, &lines))
}

fn stats(store: &Store, json: bool) -> Result<String, HindsightError> {
    let mut stats = StoreStats {
        entries: store.len(),
        catalog_rules: store.catalog().rules().len(),
        skipped: store.load_report().skipped.clone(),
        ..StoreStats::default()
    };
    for e in store.entries() {
        *stats.by_status.entry(e.status.as_str().into()).or_default() += 1;
        *stats.by_kind.entry(kind_name(e.kind)).or_default() += 1;
        for r in &e.resolutions {
            *stats
                .resolutions
                .entry(r.fix.kind_name().into())
                .or_default() += 1;
            stats.applied += r.outcomes.applied;
            stats.succeeded += r.outcomes.succeeded;
            stats.failed += r.outcomes.failed;
        }
    }
    if json {
        return Ok(serde_json::to_string_pretty(&stats)? + "\n");
    }
    Ok(hindsight_text::stats(&stats))
}

fn prune(
    store: &mut Store,
    older_than_days: u64,
    dry_run: bool,
    ctx: &HindsightContext,
) -> Result<String, HindsightError> {
    let now = Timestamp::new(ctx.now);
    let stale: Vec<String> = sorted(store)
        .into_iter()
        .filter(|e| prunable(e, now, older_than_days))
        .map(|e| e.signature.clone())
        .collect();
    if !dry_run {
        store.remove(&stale)?;
    }
    Ok(hindsight_text::pruned(&stale, dry_run))
}

/// Last seen more than `days` ago, never cured, not escalated.
pub fn prunable(entry: &Entry, now: Timestamp, days: u64) -> bool {
    entry.last_seen.days_until(now) > days as f64
        && !entry.ever_cured()
        && entry.status != Status::Escalated
}

fn import(store: &mut Store, file: &Path) -> Result<String, HindsightError> {
    let entries = json_lines_of(file, |line| serde_json::from_str::<Entry>(line)).map_err(
        |err| match err {
            JsonLinesError::Read { path, source } => HindsightError::Io { path, source },
            JsonLinesError::Line { path, line, source } => {
                HindsightError::Import { path, line, source }
            }
        },
    )?;
    for entry in &entries {
        store.merge_entry(entry)?;
    }
    Ok(hindsight_text::imported(entries.len()))
}

/// Every entry as one JSON line, sorted by signature.
pub fn export_lines(store: &Store) -> Result<String, HindsightError> {
    Ok(json_lines(sorted(store))?)
}

/// One JSON line per item (the export format of `hindsight export` and `memory export`).
pub fn json_lines<T: serde::Serialize>(
    items: impl IntoIterator<Item = T>,
) -> Result<String, serde_json::Error> {
    let mut out = String::new();
    for item in items {
        out.push_str(&serde_json::to_string(&item)?);
        out.push('\n');
    }
    Ok(out)
}

pub use crate::hindsight::jsonl::{JsonLinesError, json_lines_of};

/// An export's lines: printed when no `output` is named, else written there atomically and
/// summarised in one line ("exported 3 entries to FILE").
pub fn deliver_export(
    lines: String,
    entries: usize,
    output: Option<&Path>,
) -> Result<String, StoreError> {
    let Some(path) = output else {
        return Ok(lines);
    };
    crate::hindsight::store::files::write_atomic(path, lines.as_bytes())?;
    Ok(hindsight_text::exported(entries, path))
}

fn export(store: &Store, output: Option<&Path>) -> Result<String, HindsightError> {
    Ok(deliver_export(export_lines(store)?, store.len(), output)?)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::{Duration, UNIX_EPOCH};

    use crate::hindsight::Signature;
    use crate::hindsight::store::{Fix, Resolution, ResolutionSource, SkippedFile};
    use crate::render::hindsight::{entries, entry, exported, imported, pruned, signatures, stats};

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
    /// The tables as people read them, from real store entries (what the session reads off
    /// them, and how render writes it).
    fn the_store_s_tables_as_people_read_them() {
        let entries_owned = store_entries();
        let listed: Vec<EntryLine> = entries_owned.iter().map(entry_line).collect();
        let ranked = [RankedResolution {
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
                entry(&entries_owned[0], &[ranked_line(&ranked[0])]),
                stats(&counts),
                stats(&StoreStats::default()),
                pruned(&["0a1b2c3d4e5f6071".into()], true),
                pruned(&[], false),
                imported(1),
                exported(12, Path::new(".meta-agent/hindsight-export.jsonl")),
            ]
            .join("---\n")
        );
    }
}
