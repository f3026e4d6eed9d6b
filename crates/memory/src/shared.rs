//! A run's memory beyond what the engine reads from the repository's files: the organisation's
//! hindsight in the database, the journal of what the run learns, and the conversation of the
//! task across runs.
//!
//! [`RunMemory::open`] connects when a database is configured and marks reviewed the candidates
//! this repository's default branch now holds. When the database is unreachable the run goes on
//! with the file store and says so once; what it learns is queued in the run's
//! `memory-pending.jsonl` at the end ([`RunMemory::finish`]) for `meta-agent hindsight sync`,
//! and its conversation is kept in the file backend. Lookups are cached per signature:
//! [`RunMemory::recall`] (async) fills the cache, [`RunMemory::applicable`] and
//! [`RunMemory::hints`] (pure, over the cache) rank what it found: this repository's reviewed
//! resolutions first, then the organisation's reviewed ones, applied or shown as hints per
//! `memory.organisation`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::conversation::{self, Continuation, Summarizer};
use super::files::FileMemory;
use super::journal;
use super::postgres::{ConnectOptions, PgMemory};
use super::settings::{self, MemorySettings, OrganisationUse};
use super::{
    Change, ConversationMessage, Learned, MemoryBackend, MemoryError, RecallQuery, ReviewedFix,
    Role, SessionRecord, SessionState, StoredEntry,
};
use meta_agent_hindsight::Signature;
use meta_agent_hindsight::signature::family_key;
use meta_agent_hindsight::store::{
    Fix, RankedResolution, ResolutionSource, Store, StoreOptions, Timestamp, rank,
};
use meta_agent_llm::AnyProvider;
use meta_agent_llm::tokens::TokenCounter;
use meta_agent_protocol::event::LoopPhase;
use meta_agent_protocol::records::RunOutcome;
use meta_agent_protocol::state::LoopState;
use meta_agent_redact::Redactor;

/// Weight of a resolution found through the family rather than the exact signature.
pub const FAMILY_SCORE: f64 = 0.8;
/// Most entries one recall brings back.
const RECALL_LIMIT: usize = 50;
/// The longest message kept in a conversation, in characters.
const MAX_MESSAGE_CHARS: usize = 4_000;

/// What [`RunMemory::open`] needs.
pub struct OpenMemory<'a> {
    pub settings: &'a MemorySettings,
    pub env: &'a [(String, String)],
    pub repo_root: &'a Path,
    /// `.git/meta-agent/memory` of the repository.
    pub memory_dir: PathBuf,
    /// The repository's store (for the file backend's sessions and conversations).
    pub store: StoreOptions,
    pub repository: String,
    /// Resolutions the default branch holds: candidates in the database become reviewed.
    pub reviewed: Vec<ReviewedFix>,
    pub redactor: Arc<Redactor>,
    pub summarizer: Summarizer<AnyProvider>,
}

/// What a run needs to open its memory.
pub struct RunSetup<'a> {
    pub config: &'a meta_agent_config::Config,
    pub env: &'a [(String, String)],
    pub repo_root: &'a Path,
    pub git_dir: &'a Path,
    /// The hindsight store directory (absolute).
    pub store_dir: PathBuf,
    /// Resolutions the default branch holds.
    pub reviewed: Vec<ReviewedFix>,
    pub redactor: Arc<Redactor>,
}

/// The run's memory, as configured: the fast model summarises conversations when an LLM is
/// configured.
pub async fn open_for_run(setup: RunSetup<'_>) -> RunMemory {
    let memory = &setup.config.memory;
    RunMemory::open(OpenMemory {
        settings: memory,
        env: setup.env,
        repo_root: setup.repo_root,
        memory_dir: setup.git_dir.join("meta-agent").join("memory"),
        store: StoreOptions {
            dir: Some(setup.store_dir),
            redactor: setup.redactor.clone(),
            ..StoreOptions::default()
        },
        repository: repository_name(memory, setup.env, setup.repo_root),
        reviewed: setup.reviewed,
        summarizer: summarizer(&setup.config.llm, setup.env, setup.redactor.clone()),
        redactor: setup.redactor,
    })
    .await
}

/// The fast model of `llm` when a provider is configured, else the extractive summary.
pub fn summarizer(
    llm: &meta_agent_config::LlmSettings,
    env: &[(String, String)],
    redactor: Arc<Redactor>,
) -> Summarizer<AnyProvider> {
    use meta_agent_config::raw::LlmProvider;
    use meta_agent_llm::{LlmConfig, LlmEnv, RetryPolicy, connect};
    if llm.provider == LlmProvider::None {
        return Summarizer::Extractive;
    }
    let lookup = LlmEnv::from_lookup(llm, |name| {
        env.iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.clone())
    });
    let config = LlmConfig::from_settings(llm, &lookup).with_redactor(redactor);
    match connect(&config, RetryPolicy::default()) {
        Ok(provider) => Summarizer::Model {
            provider,
            model: config.fast_model.clone(),
        },
        Err(err) => {
            tracing::warn!("memory: conversations are summarised extractively: {err}");
            Summarizer::Extractive
        }
    }
}

/// This repository's name in shared memory: `memory.repository`, else `GITHUB_REPOSITORY`,
/// else the directory name.
pub fn repository_name(settings: &MemorySettings, env: &[(String, String)], root: &Path) -> String {
    settings
        .repository
        .clone()
        .or_else(|| {
            env.iter()
                .find(|(k, v)| k == "GITHUB_REPOSITORY" && !v.is_empty())
                .map(|(_, v)| v.clone())
        })
        .unwrap_or_else(|| {
            root.file_name()
                .map_or_else(|| "repository".into(), |n| n.to_string_lossy().into_owned())
        })
}

/// What the run has recalled and learned so far.
#[derive(Debug, Default)]
struct Inner {
    asked: BTreeSet<String>,
    recalled: Vec<StoredEntry>,
    journal: Vec<Learned>,
    /// The conversation's session and what it recalls.
    conversation: Option<String>,
    notes: Vec<String>,
}

/// What [`RunMemory::finish`] did with the journal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Finished {
    pub written: usize,
    /// The queue file, when lessons could not be written.
    pub queued: Option<PathBuf>,
}

/// The run's memory: the database when configured and reachable, the file backend otherwise.
pub struct RunMemory {
    database: Option<PgMemory>,
    /// A database is configured: the run journals what it learns (written or queued).
    journaling: bool,
    files: FileMemory,
    repository: String,
    settings: MemorySettings,
    summarizer: Summarizer<AnyProvider>,
    redactor: Arc<Redactor>,
    nonce: String,
    location: String,
    /// Approved in this clone (`hindsight approve` without a database).
    approved: BTreeSet<(String, String)>,
    down: AtomicBool,
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for RunMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunMemory")
            .field("repository", &self.repository)
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

impl RunMemory {
    /// Connects when a database is configured; never fails: an unusable database is reported
    /// once and the run continues on the file store.
    pub async fn open(input: OpenMemory<'_>) -> RunMemory {
        let files = FileMemory::open(&input.repository, input.store.clone(), &input.memory_dir);
        let approved = match files.approvals() {
            Ok(fixes) => fixes
                .into_iter()
                .map(|fix| (fix.signature, fix.resolution))
                .collect(),
            Err(err) => {
                tracing::warn!("memory: approvals in this clone are unreadable: {err}");
                BTreeSet::new()
            }
        };
        let mut memory = RunMemory {
            database: None,
            journaling: false,
            files,
            repository: input.repository.clone(),
            settings: input.settings.clone(),
            summarizer: input.summarizer,
            redactor: input.redactor.clone(),
            nonce: meta_agent_protocol::clock::new_session_id(),
            location: input.memory_dir.display().to_string(),
            approved,
            down: AtomicBool::new(false),
            inner: Mutex::new(Inner::default()),
        };
        let target = match settings::database_target(input.settings, input.env) {
            Ok(None) => return memory,
            Ok(Some(target)) => target,
            Err(err) => {
                memory.journaling = true;
                memory.fail(&MemoryError::Url(err));
                return memory;
            }
        };
        memory.journaling = true;
        memory.location = settings::describe(&target.config);
        let options = ConnectOptions::new(
            input.settings,
            target,
            input.repo_root,
            input.redactor.clone(),
        );
        match PgMemory::connect(options).await {
            Ok(database) => {
                match database
                    .mark_reviewed(&memory.repository, &input.reviewed)
                    .await
                {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(
                        "memory: {n} candidate resolution(s) merged on the default branch are now reviewed"
                    ),
                    Err(err) => memory.fail(&err),
                }
                memory.database = Some(database);
            }
            Err(err) => memory.fail(&err),
        }
        memory
    }

    /// Whether the database is in use (configured, reached, and not gone since).
    pub fn shared(&self) -> bool {
        self.database.is_some() && !self.down.load(Ordering::SeqCst)
    }

    fn live(&self) -> Option<&PgMemory> {
        self.database.as_ref().filter(|_| self.shared())
    }

    /// Reports the database's failure once; the run continues on the file store.
    fn fail(&self, err: &MemoryError) {
        if !self.down.swap(true, Ordering::SeqCst) {
            let message = format!(
                "memory: the database at {} cannot be used ({err}); this run continues on the \
                 file store, and what it learns is queued in its {} for `meta-agent hindsight \
                 sync`",
                self.location,
                journal::PENDING_FILE
            );
            tracing::warn!("{}", self.redactor.redact_text(&message));
        }
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Looks up the signatures not looked up yet (exact and family; this repository's and the
    /// organisation's reviewed entries).
    pub async fn recall(&self, signatures: &[Signature]) {
        let Some(database) = self.live() else {
            return;
        };
        let fresh: Vec<Signature> = {
            let inner = self.inner();
            signatures
                .iter()
                .filter(|s| !inner.asked.contains(&s.id))
                .cloned()
                .collect()
        };
        if fresh.is_empty() {
            return;
        }
        let query = RecallQuery {
            repository: &self.repository,
            signatures: &fresh,
            limit: RECALL_LIMIT,
        };
        match database.recall(&query).await {
            Ok(found) => {
                let mut inner = self.inner();
                inner.asked.extend(fresh.iter().map(|s| s.id.clone()));
                for stored in found {
                    let known = inner.recalled.iter().any(|r| {
                        r.repository == stored.repository
                            && r.entry.signature == stored.entry.signature
                    });
                    if !known {
                        inner.recalled.push(stored);
                    }
                }
            }
            Err(err) => self.fail(&err),
        }
    }

    /// The resolutions the engine may apply for `signature`, best first: `own` (the file
    /// store's, reviewed by the default branch), the file store's candidates approved (in the
    /// database, or in this clone without one), this repository's reviewed entries in the database, then the organisation's
    /// reviewed ones that `memory.organisation` applies.
    pub fn applicable(
        &self,
        signature: &Signature,
        mut own: Vec<RankedResolution>,
        files: &Store,
        now: Timestamp,
    ) -> Vec<RankedResolution> {
        let inner = self.inner();
        let (mine, theirs): (Vec<&StoredEntry>, Vec<&StoredEntry>) = inner
            .recalled
            .iter()
            .partition(|s| s.repository == self.repository);
        let mut approved: BTreeSet<(String, String)> = mine
            .iter()
            .flat_map(|s| {
                s.reviewed
                    .iter()
                    .map(|id| (s.entry.signature.clone(), id.clone()))
            })
            .collect();
        approved.extend(self.approved.iter().cloned());
        own.extend(
            files
                .ranked_resolutions(signature, now)
                .into_iter()
                .filter(|r| {
                    approved.contains(&(source_signature(&r.source), r.resolution.id.clone()))
                }),
        );
        own.extend(mine.iter().flat_map(|s| ranked_from(signature, s, now)));
        best_first(&mut own);
        let mut org: Vec<RankedResolution> = theirs
            .iter()
            .flat_map(|s| ranked_from(signature, s, now))
            .filter(|r| self.use_of(&r.resolution.fix) == OrganisationUse::Apply)
            .collect();
        best_first(&mut org);
        for ranked in org {
            if !own.iter().any(|o| o.resolution.id == ranked.resolution.id) {
                own.push(ranked);
            }
        }
        own
    }

    /// The organisation's reviewed resolutions that `memory.organisation` shows as hints.
    pub fn hints(&self, signature: &Signature, now: Timestamp) -> Vec<String> {
        let inner = self.inner();
        let mut hints = Vec::new();
        for stored in inner
            .recalled
            .iter()
            .filter(|s| s.repository != self.repository)
        {
            for ranked in ranked_from(signature, stored, now) {
                if self.use_of(&ranked.resolution.fix) == OrganisationUse::Hint {
                    hints.push(hint_text(&stored.repository, &ranked));
                }
            }
        }
        hints
    }

    /// The conversation recalled for this run (empty without one).
    pub fn notes(&self) -> Vec<String> {
        self.inner().notes.clone()
    }

    fn use_of(&self, fix: &Fix) -> OrganisationUse {
        let policy = &self.settings.organisation;
        match fix {
            Fix::Command(_) => policy.command,
            Fix::Patch(_) => policy.patch,
            Fix::Guidance(_) => policy.guidance,
        }
    }

    /// Notes one thing the run learned (kept only when a database is configured).
    pub fn learn(&self, session: &str, signature: &Signature, change: Change, at: Timestamp) {
        if !self.journaling {
            return;
        }
        let mut inner = self.inner();
        let id = format!("{session}/{}/{}", self.nonce, inner.journal.len());
        inner.journal.push(Learned {
            id,
            repository: self.repository.clone(),
            at,
            signature: signature.clone(),
            change,
        });
    }

    /// What the run learned so far.
    pub fn journal(&self) -> Vec<Learned> {
        self.inner().journal.clone()
    }

    /// Opens the task's conversation: continues the latest session of the task unless it
    /// expired, recalls its messages, and adds the maintainer's request.
    pub async fn begin(&self, state: &LoopState) {
        let now = Timestamp::new(std::time::SystemTime::now());
        let task = task_key(state);
        let latest = match self.latest_session(&task).await {
            Ok(latest) => latest,
            Err(err) => {
                tracing::warn!("memory: cannot read the sessions of {task}: {err}");
                return;
            }
        };
        let (id, messages) =
            match conversation::continuation(latest.as_ref(), now, self.settings.session_idle) {
                Continuation::Continue(id) => {
                    let messages = self.conversation(&id).await.unwrap_or_default();
                    (id, messages)
                }
                Continuation::Start => (state.session.clone(), Vec::new()),
            };
        let notes = conversation::recall(&messages, &self.summarizer).await;
        let started = latest
            .as_ref()
            .filter(|s| s.id == id)
            .map_or(now, |s| s.started);
        let session = SessionRecord {
            id: id.clone(),
            repository: self.repository.clone(),
            task: task.clone(),
            state: SessionState::Active,
            started,
            updated: now,
            outcome: None,
        };
        let request = request_text(state, !messages.is_empty());
        self.remember(&session, Role::Maintainer, &request).await;
        let mut inner = self.inner();
        inner.conversation = Some(id);
        if !notes.is_empty() {
            inner.notes = vec![notes];
        }
    }

    /// Writes the journal (or queues it in `dir`), and records how the run ended in the
    /// conversation.
    pub async fn finish(&self, state: &LoopState, dir: &Path) -> Finished {
        let finished = self.flush(dir).await;
        let conversation = self.inner().conversation.clone();
        if let Some(id) = conversation {
            let now = Timestamp::new(std::time::SystemTime::now());
            let latest = self.latest_session(&task_key(state)).await.ok().flatten();
            let session = SessionRecord {
                id: id.clone(),
                repository: self.repository.clone(),
                task: task_key(state),
                state: session_state(state),
                started: latest.filter(|s| s.id == id).map_or(now, |s| s.started),
                updated: now,
                outcome: state.outcome.as_ref().map(|o| o.as_str().to_owned()),
            };
            let summary = meta_agent_render::outcome::final_summary(state, false);
            self.remember(&session, Role::Bot, &summary).await;
        }
        finished
    }

    async fn flush(&self, dir: &Path) -> Finished {
        let journal = self.journal();
        if journal.is_empty() {
            return Finished::default();
        }
        let (written, left) = match self.live() {
            Some(database) => {
                let (done, left, failure) = journal::write_all(database, &journal).await;
                if let Some(err) = failure {
                    self.fail(&err);
                }
                (done.applied + done.already, left)
            }
            None => (0, journal),
        };
        if left.is_empty() {
            return Finished {
                written,
                queued: None,
            };
        }
        let mut redacted = left;
        for item in &mut redacted {
            item.redact(&|text: &str| self.redactor.redact_text(text).into_owned());
        }
        match journal::write_pending(dir, &redacted) {
            Ok(path) => {
                tracing::warn!(
                    "memory: {} lesson(s) queued in {} (`meta-agent hindsight sync` writes them)",
                    redacted.len(),
                    path.display()
                );
                Finished {
                    written,
                    queued: Some(path),
                }
            }
            Err(err) => {
                tracing::error!("memory: cannot queue what this run learned: {err}");
                Finished {
                    written,
                    queued: None,
                }
            }
        }
    }

    async fn latest_session(&self, task: &str) -> Result<Option<SessionRecord>, MemoryError> {
        match self.live() {
            Some(database) => database.latest_session(&self.repository, task).await,
            None => self.files.latest_session(&self.repository, task).await,
        }
    }

    async fn conversation(&self, id: &str) -> Result<Vec<ConversationMessage>, MemoryError> {
        match self.live() {
            Some(database) => database.conversation(id).await,
            None => self.files.conversation(id).await,
        }
    }

    /// Saves the session and appends one message (redacted) to its conversation.
    async fn remember(&self, session: &SessionRecord, role: Role, text: &str) {
        let content: String = self
            .redactor
            .redact_text(text.trim())
            .chars()
            .take(MAX_MESSAGE_CHARS)
            .collect();
        let message = ConversationMessage {
            session: session.id.clone(),
            role,
            tokens: u32::try_from(TokenCounter::approximate().count(&content)).unwrap_or(u32::MAX),
            content,
            at: session.updated,
        };
        let result = match self.live() {
            Some(database) => match database.save_session(session).await {
                Ok(()) => database.append_message(&message).await,
                Err(err) => Err(err),
            },
            None => match self.files.save_session(session).await {
                Ok(()) => self.files.append_message(&message).await,
                Err(err) => Err(err),
            },
        };
        if let Err(err) = result {
            tracing::warn!(
                "memory: the conversation of {} was not saved: {err}",
                session.task
            );
        }
    }
}

/// What a conversation is about: the issue, else the task's title.
pub fn task_key(state: &LoopState) -> String {
    match state.task.issue {
        Some(number) => format!("issue #{number}"),
        None => format!("task: {}", state.task.title),
    }
}

/// The maintainer's message of this run: the request on a new conversation, the latest
/// guidance (or the request again) on a continued one.
fn request_text(state: &LoopState, continued: bool) -> String {
    match (continued, state.task.guidance.last()) {
        (true, Some(guidance)) => format!("Guidance: {guidance}"),
        _ => state.task.brief(),
    }
}

/// The session's state after a run.
pub fn session_state(state: &LoopState) -> SessionState {
    match state.outcome {
        Some(RunOutcome::Committed) | Some(RunOutcome::NothingToDo) => SessionState::Finished,
        Some(RunOutcome::Escalated) => SessionState::AwaitingGuidance,
        Some(RunOutcome::Interrupted) => SessionState::Active,
        Some(RunOutcome::Failed) => SessionState::Failed,
        None if state.phase == LoopPhase::AwaitingGuidance => SessionState::AwaitingGuidance,
        None => SessionState::Active,
    }
}

fn source_signature(source: &ResolutionSource) -> String {
    match source {
        ResolutionSource::Exact { signature } | ResolutionSource::Similar { signature, .. } => {
            signature.clone()
        }
        ResolutionSource::Catalog { .. } => String::new(),
    }
}

/// The reviewed resolutions of `stored` for `signature`: exact, or through the family.
pub fn ranked_from(
    signature: &Signature,
    stored: &StoredEntry,
    now: Timestamp,
) -> Vec<RankedResolution> {
    let entry = &stored.entry;
    let (source, score) = if entry.signature == signature.id {
        (
            ResolutionSource::Exact {
                signature: signature.id.clone(),
            },
            1.0,
        )
    } else if entry.kind == signature.kind
        && stored.family == family_key(signature.kind, &signature.template)
    {
        (
            ResolutionSource::Similar {
                signature: entry.signature.clone(),
                score: FAMILY_SCORE,
            },
            FAMILY_SCORE,
        )
    } else {
        return Vec::new();
    };
    entry
        .resolutions
        .iter()
        .filter(|r| stored.reviewed.contains(&r.id))
        .map(|r| RankedResolution {
            resolution: r.clone(),
            source: source.clone(),
            confidence: score * rank::confidence(&r.outcomes, now, rank::DEFAULT_HALF_LIFE_DAYS),
            from_catalog: false,
        })
        .collect()
}

/// Highest confidence first (stable), each resolution id once.
fn best_first(ranked: &mut Vec<RankedResolution>) {
    ranked.sort_by(|a, b| b.confidence.total_cmp(&a.confidence));
    let mut seen = BTreeSet::new();
    ranked.retain(|r| seen.insert(r.resolution.id.clone()));
}

fn hint_text(repository: &str, ranked: &RankedResolution) -> String {
    let how = match &ranked.source {
        ResolutionSource::Exact { .. } => "this failure",
        ResolutionSource::Similar { .. } | ResolutionSource::Catalog { .. } => {
            "a failure of the same family"
        }
    };
    match &ranked.resolution.fix {
        Fix::Guidance(text) => format!("From {repository} (reviewed, for {how}): {text}"),
        Fix::Command(line) => {
            format!("In {repository}, running `{line}` cured {how} (reviewed there).")
        }
        Fix::Patch(patch) => {
            let diff: String = patch.diff.chars().take(3_000).collect();
            format!("In {repository}, this reviewed change cured {how}:\n```diff\n{diff}\n```")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use meta_agent_hindsight::SignatureKind;
    use meta_agent_hindsight::signature::signature_id;
    use meta_agent_hindsight::store::{CommandLine, Entry, Resolution};

    fn signature(test: &str) -> Signature {
        let template = format!("pytest tests/t.py::{test}: KeyError: 'x'");
        Signature {
            id: signature_id(SignatureKind::TestFailure, &template),
            kind: SignatureKind::TestFailure,
            template,
        }
    }

    fn stored(signature: &Signature, reviewed: bool) -> StoredEntry {
        let now = Timestamp::from_unix_secs(100);
        let mut entry = Entry::new(signature, now);
        let mut resolution = Resolution::new(Fix::Command(CommandLine::Shell("fix".into())));
        resolution.outcomes.record(true, now);
        let id = resolution.id.clone();
        entry.add_resolution(resolution);
        StoredEntry {
            repository: "org/other".into(),
            family: family_key(signature.kind, &signature.template),
            entry,
            reviewed: if reviewed {
                BTreeSet::from([id])
            } else {
                BTreeSet::new()
            },
        }
    }

    #[test]
    fn family_matches_rank_below_exact_ones_and_candidates_never_rank() {
        let now = Timestamp::from_unix_secs(100);
        let a = signature("test_a");
        let exact = ranked_from(&a, &stored(&a, true), now);
        let family = ranked_from(&signature("test_b"), &stored(&a, true), now);
        assert_eq!(exact.len(), 1);
        assert_eq!(family.len(), 1);
        assert!((family[0].confidence - FAMILY_SCORE * exact[0].confidence).abs() < 1e-12);
        assert!(matches!(family[0].source, ResolutionSource::Similar { .. }));
        assert!(ranked_from(&a, &stored(&a, false), now).is_empty());
        let unrelated = Signature {
            template: "pytest tests/t.py::test_a: ValueError".into(),
            ..a.clone()
        };
        assert!(
            ranked_from(
                &Signature {
                    id: "ff".into(),
                    ..unrelated
                },
                &stored(&a, true),
                now
            )
            .is_empty()
        );
    }

    #[test]
    fn a_session_awaits_guidance_after_an_escalation_and_ends_with_a_commit() {
        let task = meta_agent_protocol::task::Task::from_text("x").unwrap();
        let base = |outcome: Option<RunOutcome>, phase: LoopPhase| {
            let mut state: LoopState = serde_json::from_value(serde_json::json!({
                "version": meta_agent_protocol::state::STATE_VERSION, "session": "s", "task": task, "branch": "b", "base_commit": "c",
                "dry_run": false, "phase": phase, "iteration": 0, "max_iterations": 1,
                "plan": null, "worktree_diff": "", "builder_calls": 0, "history": [],
                "gates": [], "signatures": [], "usage": meta_agent_protocol::records::Usage::default(), "flaky": [],
                "tamper": [], "transient_retries": 0, "recoveries": [], "started_unix_ms": 0,
                "outcome": null
            }))
            .unwrap();
            state.outcome = outcome;
            session_state(&state)
        };
        assert_eq!(
            base(Some(RunOutcome::Escalated), LoopPhase::Escalated),
            SessionState::AwaitingGuidance
        );
        assert_eq!(
            base(None, LoopPhase::AwaitingGuidance),
            SessionState::AwaitingGuidance
        );
        assert_eq!(
            base(Some(RunOutcome::Committed), LoopPhase::Complete),
            SessionState::Finished
        );
        assert_eq!(
            base(Some(RunOutcome::Failed), LoopPhase::Failed),
            SessionState::Failed
        );
        assert_eq!(base(None, LoopPhase::Acting), SessionState::Active);
    }
}
