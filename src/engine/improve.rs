//! The Improve phase's hindsight half: failures → signatures → known resolutions, applied with no
//! LLM call; and what the run teaches hindsight at its end (outcomes, novel fixes, escalations).
//!
//! Lookups use the store as it stood when the run began (the reviewed, committed state); learned
//! patches and commands are applied only when that reviewed store holds them, catalog fixes
//! always; a patch learned for another (similar) signature never is: the model sees it as a hint. Writes happen once, at the end of a real (not dry) run, into the repository's store
//! directory, so they are committed with the fix and reviewed with it. With shared memory
//! ([`crate::memory::shared`]) the view also recalls what the organisation reviewed, and every
//! change written is journaled for the database.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::state::LoopState;
use crate::config::Config;
use crate::exec::{CommandRunner, CommandSpec, Program, env::child_env};
use crate::gates::{GateResult, GatesSummary};
use crate::git::Repository;
use crate::hindsight::signature::{self, ExtractOptions, ExtractedSignature, InputFormat};
use crate::hindsight::store::{
    Catalog, CatalogError, CommandLine, Entry, EscalationContext, Fix, PatchFix, RankedResolution,
    ResolutionSource, Store, StoreError, StoreOptions, Timestamp,
};
use crate::hindsight::{Signature, SignatureKind};
use crate::memory::shared::RunMemory;
use crate::memory::{Change, ReviewedFix};
use crate::protocol::event::{Event, EventSink};
use crate::protocol::records::{ResolutionTried, SignatureRecord};
use crate::redact::Redactor;
use crate::report::{Limits, SarifReport};

/// Why the store could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum HindsightStepError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Catalog(#[from] CatalogError),
}

/// Time a resolution command may take.
const RESOLUTION_TIMEOUT: Duration = Duration::from_secs(300);

/// The store as it stood when the run began, and where to write what the run learns.
#[derive(Debug)]
pub struct HindsightView {
    /// Entries and catalog, read at the start.
    pub store: Store,
    /// The reviewed store: learned resolutions are applied only if it holds them.
    pub reviewed: Store,
    pub dir: PathBuf,
    /// The worktree `dir` lies in: the store is written beneath it without following links.
    pub anchor: PathBuf,
    pub catalog: bool,
    /// What the run learns passes it before it is written (token patterns only until
    /// [`HindsightView::with_redactor`]).
    pub redactor: Arc<Redactor>,
    /// Shared memory, when the session wired it ([`HindsightView::with_memory`]).
    pub memory: Option<RunMemory>,
}

impl HindsightView {
    /// Loads the repository's store (and the bundled catalog when enabled). `reviewed_blob`
    /// reads a file, by its repository-relative path, as it stands on the default branch: the
    /// reviewed store holds exactly those entries, so a resolution learned by an unreviewed run
    /// (on a work branch, in the worktree) is never applied automatically.
    pub fn load(
        repo_root: &Path,
        relative_dir: &Path,
        catalog: bool,
        reviewed_blob: &dyn Fn(&Path) -> Option<Vec<u8>>,
    ) -> Result<HindsightView, HindsightStepError> {
        let dir = repo_root.join(relative_dir);
        let catalog_rules = if catalog {
            Catalog::bundled()?
        } else {
            Catalog::default()
        };
        let options = StoreOptions {
            dir: Some(dir.clone()),
            anchor: Some(repo_root.to_owned()),
            catalog: catalog_rules,
            ..StoreOptions::default()
        };
        let loaded = Store::open(options.clone())?;
        for skipped in &loaded.load_report().skipped {
            // Named as the repository names it, not by the worktree's absolute path.
            let path = skipped
                .path
                .strip_prefix(repo_root)
                .unwrap_or(&skipped.path);
            tracing::warn!("hindsight: skipped {}: {}", path.display(), skipped.reason);
        }
        let in_memory = StoreOptions {
            dir: None,
            ..options
        };
        let reviewed_entries: Vec<Entry> = loaded
            .entries()
            .iter()
            .filter_map(|entry| reviewed_entry(relative_dir, &entry.signature, reviewed_blob))
            .collect();
        let store = Store::from_entries(in_memory.clone(), loaded.entries().to_vec());
        let reviewed = Store::from_entries(in_memory, reviewed_entries);
        Ok(HindsightView {
            store,
            reviewed,
            dir,
            anchor: repo_root.to_owned(),
            catalog,
            redactor: Arc::new(Redactor::default()),
            memory: None,
        })
    }

    /// The same view, redacting what it records with `redactor` (the run's).
    pub fn with_redactor(mut self, redactor: Arc<Redactor>) -> HindsightView {
        self.redactor = redactor;
        self
    }

    /// The same view with shared memory: recalls from it, and journals what the run learns.
    pub fn with_memory(mut self, memory: RunMemory) -> HindsightView {
        self.memory = Some(memory);
        self
    }

    /// The resolutions the default branch holds (for marking shared candidates reviewed).
    pub fn reviewed_fixes(&self) -> Vec<ReviewedFix> {
        self.reviewed
            .entries()
            .iter()
            .flat_map(|entry| {
                entry.resolutions.iter().map(|r| ReviewedFix {
                    signature: entry.signature.clone(),
                    resolution: r.id.clone(),
                })
            })
            .collect()
    }

    /// Looks the signatures up in shared memory (once each).
    pub async fn recall(&self, records: &[SignatureRecord]) {
        if let Some(memory) = &self.memory {
            let signatures: Vec<Signature> = records.iter().map(signature_of).collect();
            memory.recall(&signatures).await;
        }
    }

    /// Opens the task's conversation in memory (nothing is written in a dry run).
    pub async fn begin(&self, state: &LoopState) {
        if let Some(memory) = self.memory.as_ref().filter(|_| !state.dry_run) {
            memory.begin(state).await;
        }
    }

    /// What may be applied for `signature`: the file store's reviewed resolutions and the
    /// catalog, then shared memory's ([`RunMemory::applicable`]).
    pub fn applicable(&self, signature: &Signature, now: Timestamp) -> Vec<RankedResolution> {
        let own = self
            .store
            .applicable_resolutions(signature, &self.reviewed, now);
        match &self.memory {
            Some(memory) => memory.applicable(signature, own, &self.store, now),
            None => own,
        }
    }

    /// The fix of resolution `id` as the run found it for `signature` (the file store, the
    /// catalog, or shared memory).
    fn known_fix(&self, signature: &Signature, id: &str, now: Timestamp) -> Option<Fix> {
        self.store
            .ranked_resolutions(signature, now)
            .into_iter()
            .chain(self.applicable(signature, now))
            .find(|ranked| ranked.resolution.id == id)
            .map(|ranked| ranked.resolution.fix)
    }

    /// Notes one learned change for shared memory.
    fn learn(&self, state: &LoopState, signature: &Signature, change: Change, now: Timestamp) {
        if let Some(memory) = &self.memory {
            memory.learn(&state.session, signature, change, now);
        }
    }
}

/// The entry for `id` as the default branch has it, if it has it.
fn reviewed_entry(
    relative_dir: &Path,
    id: &str,
    reviewed_blob: &dyn Fn(&Path) -> Option<Vec<u8>>,
) -> Option<Entry> {
    let path = crate::hindsight::store::files::entry_path(relative_dir, id);
    let bytes = reviewed_blob(&path)?;
    let mut entry: Entry = serde_yaml::from_slice(&bytes).ok()?;
    if entry.signature != id {
        return None;
    }
    entry.normalize();
    Some(entry)
}

/// What the hindsight step needs from the engine.
pub struct HindsightCtx<'a, R: CommandRunner, G: Repository> {
    pub view: &'a HindsightView,
    pub runner: &'a R,
    pub repo: &'a G,
    pub events: &'a dyn EventSink,
    pub parent_env: &'a [(String, String)],
    pub config: &'a Config,
    pub policy: &'a crate::policy::Policy,
}

/// What applying resolutions did.
pub struct Applied {
    pub actions: Vec<String>,
    pub tried: Vec<ResolutionTried>,
}

fn now() -> Timestamp {
    Timestamp::new(SystemTime::now())
}

fn signature_of(record: &SignatureRecord) -> Signature {
    Signature {
        id: record.id.clone(),
        kind: record.kind,
        template: record.template.clone(),
    }
}

/// The untried command and patch resolutions for one signature, best first (patches not yet
/// checked against today's code).
fn candidates<R: CommandRunner, G: Repository>(
    ctx: &HindsightCtx<'_, R, G>,
    state: &LoopState,
    record: &SignatureRecord,
) -> Vec<RankedResolution> {
    if super::run::left_alone(state).contains(&record.id) {
        return Vec::new();
    }
    let signature = signature_of(record);
    let tried = state.tried(&record.id);
    ctx.view
        .applicable(&signature, now())
        .into_iter()
        .filter(|ranked| !tried.contains(&ranked.resolution.id))
        .filter(|ranked| !matches!(ranked.resolution.fix, Fix::Guidance(_)))
        .filter(|ranked| !another_signatures_patch(ranked))
        .collect()
}

/// A patch learned for another signature (a similar one): never applied, since the code around
/// it may differ; of the same family it is shown to the model as a hint ([`super::hints`]).
fn another_signatures_patch(ranked: &RankedResolution) -> bool {
    let similar = match ranked.source {
        ResolutionSource::Similar { .. } => true,
        ResolutionSource::Exact { .. } | ResolutionSource::Catalog { .. } => false,
    };
    similar && matches!(ranked.resolution.fix, Fix::Patch(_))
}

/// Whether a patch applies cleanly to the worktree as it is now.
fn applies<G: Repository>(repo: &G, fix: &Fix) -> bool {
    match fix {
        Fix::Patch(patch) => repo.patch_applies(&patch.diff).unwrap_or(false),
        Fix::Command(_) | Fix::Guidance(_) => false,
    }
}

/// Whether some current signature has a command not tried yet, or an untried patch that applies
/// cleanly to today's code.
pub fn has_untried<R: CommandRunner, G: Repository>(
    ctx: HindsightCtx<'_, R, G>,
    state: &LoopState,
) -> bool {
    state.signatures.iter().any(|record| {
        candidates(&ctx, state, record).iter().any(|ranked| {
            matches!(ranked.resolution.fix, Fix::Command(_))
                || applies(ctx.repo, &ranked.resolution.fix)
        })
    })
}

/// Guidance texts hindsight holds for the current signatures, each once, with the hints of
/// shared memory, then what the task's conversation recalls.
pub fn guidance_for<R: CommandRunner, G: Repository>(
    ctx: HindsightCtx<'_, R, G>,
    state: &LoopState,
) -> Vec<String> {
    let mut texts = BTreeSet::new();
    for signature in state.signatures.iter().map(signature_of) {
        for ranked in ctx.view.applicable(&signature, now()) {
            if let Fix::Guidance(text) = ranked.resolution.fix {
                texts.insert(text);
            }
        }
        if let Some(memory) = &ctx.view.memory {
            texts.extend(memory.hints(&signature, now()));
        }
    }
    let mut guidance: Vec<String> = texts.into_iter().collect();
    if let Some(memory) = &ctx.view.memory {
        guidance.extend(memory.notes());
    }
    guidance
}

/// Resolutions chosen for one round, by resolution id, with the signatures they serve.
type Chosen = BTreeMap<String, (RankedResolution, Vec<String>)>;

/// Applies, for every current signature, its best untried resolution: commands first (formatters
/// and autofixers), then patches, each checked against the code as the commands left it. A
/// resolution shared by several signatures runs once.
pub async fn apply_resolutions<R: CommandRunner, G: Repository>(
    ctx: HindsightCtx<'_, R, G>,
    state: &LoopState,
) -> Applied {
    ctx.view.recall(&state.signatures).await;
    let mut commands = Chosen::new();
    let mut patch_wanted = Vec::new();
    for record in &state.signatures {
        match candidates(&ctx, state, record).into_iter().next() {
            Some(ranked) if matches!(ranked.resolution.fix, Fix::Command(_)) => {
                commands
                    .entry(ranked.resolution.id.clone())
                    .or_insert_with(|| (ranked, Vec::new()))
                    .1
                    .push(record.id.clone());
            }
            Some(_) => patch_wanted.push(record),
            None => {}
        }
    }
    let mut applied = Applied {
        actions: Vec::new(),
        tried: Vec::new(),
    };
    apply_chosen(&ctx, commands, &mut applied).await;
    let mut patches = Chosen::new();
    for record in patch_wanted {
        let fitting = candidates(&ctx, state, record)
            .into_iter()
            .find(|ranked| applies(ctx.repo, &ranked.resolution.fix));
        if let Some(ranked) = fitting {
            patches
                .entry(ranked.resolution.id.clone())
                .or_insert_with(|| (ranked, Vec::new()))
                .1
                .push(record.id.clone());
        }
    }
    apply_chosen(&ctx, patches, &mut applied).await;
    applied
}

async fn apply_chosen<R: CommandRunner, G: Repository>(
    ctx: &HindsightCtx<'_, R, G>,
    chosen: Chosen,
    applied: &mut Applied,
) {
    for (id, (ranked, signatures)) in chosen {
        let description = ranked.resolution.fix.summary();
        for signature in &signatures {
            ctx.events.emit(&Event::ResolutionApplied {
                signature: signature.clone(),
                resolution: id.clone(),
                description: description.clone(),
            });
        }
        let result = apply_fix(ctx, &ranked.resolution.fix).await;
        applied.actions.push(format!(
            "{description} for {} signature(s): {result}",
            signatures.len()
        ));
        applied
            .tried
            .extend(signatures.into_iter().map(|signature| ResolutionTried {
                signature,
                resolution: id.clone(),
                description: description.clone(),
                cured: None,
            }));
    }
}

async fn apply_fix<R: CommandRunner, G: Repository>(
    ctx: &HindsightCtx<'_, R, G>,
    fix: &Fix,
) -> String {
    match fix {
        Fix::Command(line) => run_command(ctx, line).await,
        Fix::Patch(patch) => match ctx.repo.apply_patch(&patch.diff) {
            Ok(()) => "patch applied".into(),
            Err(err) => format!("patch failed: {err}"),
        },
        Fix::Guidance(_) => "guidance is for the agent".into(),
    }
}

/// Runs a resolution command through the exec module, like a gate of a run: offline.
async fn run_command<R: CommandRunner, G: Repository>(
    ctx: &HindsightCtx<'_, R, G>,
    line: &CommandLine,
) -> String {
    let program = match line {
        CommandLine::Argv(argv) => Program::Argv(argv.clone()),
        CommandLine::Shell(text) => Program::Shell(text.clone()),
    };
    let workdir = ctx.repo.workdir();
    let offline = [("CARGO_NET_OFFLINE".to_owned(), "true".to_owned())];
    let env = child_env(
        ctx.parent_env.iter().cloned(),
        &ctx.config.sandbox.env_allow,
        offline.iter().map(|(name, value)| (name, value)),
    );
    let writable = ctx.policy.writable_dirs(&workdir);
    // Offline like the gates of a run: `cargo clippy --fix` and `cargo fix` compile the crate
    // (build scripts, proc macros), eslint and prettier load JavaScript configuration files —
    // repository code the model may have written. No catalog command needs the network.
    let isolation = crate::exec::sandbox::Isolation {
        network: crate::exec::sandbox::NetworkPolicy::Off,
        ..crate::exec::sandbox::Isolation::for_repository_commands(&env, &writable)
            .reading(ctx.policy.readable_dirs())
    };
    let spec = CommandSpec {
        program,
        cwd: workdir.clone(),
        env,
        timeout: RESOLUTION_TIMEOUT,
        kill_grace: ctx.config.sandbox.kill_grace,
        output_cap: usize::try_from(ctx.config.sandbox.output_cap).unwrap_or(usize::MAX),
        isolation,
    };
    let started = std::time::Instant::now();
    let result = match ctx.runner.run(spec).await {
        Ok(output) => match crate::gates::verdict::termination_reason(
            &output.termination,
            RESOLUTION_TIMEOUT.as_millis() as u64,
        ) {
            None => "exit 0".to_owned(),
            Some(reason) => reason,
        },
        Err(err) => err.to_string(),
    };
    ctx.events.emit(&Event::CommandRun {
        command: line.to_string(),
        cwd: workdir.display().to_string(),
        result: result.clone(),
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    });
    result
}

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
        .filter(|gate| gate.status == crate::protocol::records::GateStatus::Failed)
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
        excerpt: crate::report::trim_to(&extracted.excerpt, 2048),
        location: extracted.location.clone(),
        test: extracted.test.clone(),
        frames: extracted.frames.clone(),
        detail: extracted.detail.clone(),
    }
}

/// Opens the repository's store for writing (end of a real run).
fn writable(view: &HindsightView) -> Result<Store, HindsightStepError> {
    let catalog = if view.catalog {
        Catalog::bundled()?
    } else {
        Catalog::default()
    };
    Store::open(StoreOptions {
        dir: Some(view.dir.clone()),
        anchor: Some(view.anchor.clone()),
        catalog,
        redactor: view.redactor.clone(),
        ..StoreOptions::default()
    })
    .map_err(HindsightStepError::from)
}

/// Every signature seen in the run, from its observations.
fn seen(state: &LoopState) -> Vec<Signature> {
    let mut all: BTreeMap<String, Signature> = BTreeMap::new();
    for record in state.history.iter().flat_map(|step| step.signatures.iter()) {
        all.insert(record.id.clone(), signature_of(record));
    }
    all.into_values().collect()
}

/// At a commit: occurrences, the outcomes of applied resolutions, and the run's change captured
/// as a patch for every signature it cured that no resolution cured. Dry runs record nothing.
pub fn record_success<R: CommandRunner, G: Repository>(
    ctx: HindsightCtx<'_, R, G>,
    state: &LoopState,
) -> Result<(), HindsightStepError> {
    if state.dry_run {
        return Ok(());
    }
    let mut store = writable(ctx.view)?;
    let now = now();
    let all = seen(state);
    store.record_seen(&all, now)?;
    learn_seen(ctx.view, state, &all, now);
    record_outcomes(&mut store, ctx.view, state, now)?;
    let cured_by_resolution: BTreeSet<&str> = state
        .history
        .iter()
        .flat_map(|s| s.resolutions.iter())
        .filter(|r| r.cured == Some(true))
        .map(|r| r.signature.as_str())
        .collect();
    let novel: Vec<&Signature> = all
        .iter()
        .filter(|s| !cured_by_resolution.contains(s.id.as_str()))
        .collect();
    let code_diff = code_only(&state.worktree_diff, &ctx.view.dir, &ctx.repo.workdir());
    if novel.is_empty() || code_diff.is_empty() {
        return Ok(());
    }
    let secrets = ctx.view.redactor.find_secrets(&code_diff);
    if !secrets.is_empty() {
        let paths = paths_holding(&code_diff, &secrets);
        tracing::warn!(
            "hindsight: the run's change holds a secret (in {}); it is not learned as a patch",
            paths.join(", ")
        );
        return Ok(());
    }
    let files = state
        .history
        .iter()
        .flat_map(|s| s.files_changed.iter().cloned())
        .filter(|f| !f.starts_with(".meta-agent/"))
        .collect();
    let patch = PatchFix {
        diff: code_diff,
        files,
        source: Some(format!("meta-agent session {}", state.session)),
    };
    for signature in novel {
        store.capture_patch(signature, patch.clone(), now)?;
        let patch = patch.clone();
        ctx.view
            .learn(state, signature, Change::Patch { patch }, now);
    }
    Ok(())
}

fn learn_seen(view: &HindsightView, state: &LoopState, all: &[Signature], now: Timestamp) {
    for signature in all {
        view.learn(state, signature, Change::Seen, now);
    }
}

fn record_outcomes(
    store: &mut Store,
    view: &HindsightView,
    state: &LoopState,
    now: Timestamp,
) -> Result<(), HindsightStepError> {
    for tried in state.history.iter().flat_map(|s| s.resolutions.iter()) {
        let Some(cured) = tried.cured else {
            continue;
        };
        let signature = store.get(&tried.signature).map(Entry::signature);
        let known = signature
            .as_ref()
            .and_then(|s| view.known_fix(s, &tried.resolution, now));
        match (signature, known) {
            (Some(signature), Some(fix)) => {
                store.record_fix_outcome(&signature, fix.clone(), cured, now)?;
                view.learn(state, &signature, Change::Outcome { fix, cured }, now);
            }
            _ => store.record_outcome(&tried.signature, &tried.resolution, cured, now)?,
        }
    }
    Ok(())
}

/// The files of `diff` (named by their `diff --git` headers) where `secrets` were found, sorted,
/// once each.
fn paths_holding(diff: &str, secrets: &[crate::redact::SecretMatch]) -> Vec<String> {
    const HEADER: &str = "diff --git a/";
    let mut paths: Vec<String> = secrets
        .iter()
        .filter_map(|found| {
            let before = diff.get(..found.range.start)?;
            let rest = &before[before.rfind(HEADER)? + HEADER.len()..];
            rest.split(" b/").next().map(str::to_owned)
        })
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

/// The run's diff without the store's own files.
fn code_only(diff: &str, store_dir: &Path, workdir: &Path) -> String {
    let prefix = store_dir
        .strip_prefix(workdir)
        .unwrap_or(store_dir)
        .display()
        .to_string();
    diff.split_inclusive('\n')
        .fold((String::new(), true), |(mut out, keep), line| {
            let keep = if let Some(rest) = line.strip_prefix("diff --git a/") {
                !rest.starts_with(&prefix)
            } else {
                keep
            };
            if keep {
                out.push_str(line);
            }
            (out, keep)
        })
        .0
}

/// At an escalation: occurrences, outcomes, and the remaining signatures marked unresolved with
/// the escalation context. Dry runs record nothing.
pub fn record_escalation<R: CommandRunner, G: Repository>(
    ctx: HindsightCtx<'_, R, G>,
    state: &LoopState,
    reason: &str,
) -> Result<(), HindsightStepError> {
    if state.dry_run {
        return Ok(());
    }
    let mut store = writable(ctx.view)?;
    let now = now();
    let all = seen(state);
    store.record_seen(&all, now)?;
    learn_seen(ctx.view, state, &all, now);
    record_outcomes(&mut store, ctx.view, state, now)?;
    let remaining: Vec<Signature> = state.signatures.iter().map(signature_of).collect();
    let tags = state
        .signatures
        .iter()
        .map(|s| format!("gate:{}", s.gate))
        .collect();
    let context = EscalationContext {
        reason: reason.to_owned(),
        run: Some(format!("session {}", state.session)),
        branch: Some(state.branch.clone()),
        summary: Some(format!(
            "{} iteration(s); task: {}",
            state.iteration, state.task.title
        )),
        tags,
        at: None,
    };
    store.record_unresolved(&remaining, &context, now)?;
    for signature in &remaining {
        let context = context.clone();
        ctx.view
            .learn(state, signature, Change::Unresolved { context }, now);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_is_named_by_the_file_that_holds_it() {
        let diff = "diff --git a/a.py b/a.py\n+x = 1\ndiff --git a/keys.py b/keys.py\n+T = \
                    'ghp_abcdefghijklmnopqrstuvwxyz0123456789'\n+U = \
                    'ghp_0123456789abcdefghijklmnopqrstuvwxyz'\n";
        let found = crate::redact::Redactor::default().find_secrets(diff);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(paths_holding(diff, &found), ["keys.py"]);
    }
}
