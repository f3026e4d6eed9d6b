//! The Improve phase's hindsight half: failures → signatures → known resolutions, applied with no
//! LLM call; and what the run teaches hindsight at its end (outcomes, novel fixes, escalations).
//!
//! Lookups use the store as it stood when the run began (the reviewed, committed state); learned
//! patches and commands are applied only when that reviewed store holds them, catalog fixes
//! always; a patch learned for another (similar) signature never is: the model sees it as a hint. Writes happen once, at the end of a real (not dry) run, into the repository's store
//! directory, so they are committed with the fix and reviewed with it. With shared memory
//! ([`meta_agent_memory::shared`]) the view also recalls what the organisation reviewed, and every
//! change written is journaled for the database.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::state::LoopState;
use meta_agent_config::Config;
use meta_agent_exec::{CommandRunner, CommandSpec, Program, env::child_env};
use meta_agent_gates::{GateResult, GatesSummary};
use meta_agent_git::Repository;
use meta_agent_hindsight::signature::{self, ExtractOptions, ExtractedSignature, InputFormat};
use meta_agent_hindsight::store::{
    Catalog, CatalogError, CommandLine, Entry, EscalationContext, Fix, PatchFix, RankedResolution,
    ResolutionSource, Store, StoreError, StoreOptions, Timestamp,
};
use meta_agent_hindsight::{Signature, SignatureKind};
use meta_agent_memory::shared::RunMemory;
use meta_agent_memory::{Change, ReviewedFix};
use meta_agent_protocol::event::{Event, EventSink};
use meta_agent_protocol::records::{ResolutionTried, SignatureRecord};
use meta_agent_redact::Redactor;
use meta_agent_report::{Limits, SarifReport};

mod learn;
mod signatures;

pub use learn::{record_escalation, record_success};
pub use signatures::signatures_of;

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
    let path = meta_agent_hindsight::store::files::entry_path(relative_dir, id);
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
    pub policy: &'a meta_agent_policy::Policy,
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
    if super::baseline::left_alone(state).contains(&record.id) {
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
    let isolation = meta_agent_exec::sandbox::Isolation {
        network: meta_agent_exec::sandbox::NetworkPolicy::Off,
        ..meta_agent_exec::sandbox::Isolation::for_repository_commands(&env, &writable)
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
        Ok(output) => meta_agent_gates::verdict::termination_line(
            &output.termination,
            RESOLUTION_TIMEOUT.as_millis() as u64,
        ),
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
