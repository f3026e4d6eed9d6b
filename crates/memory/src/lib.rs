//! Memory that outlives a runner and a repository: hindsight entries with the repository that
//! learned them and which of their resolutions are reviewed, agent sessions, and the
//! conversation of long-running issues.
//!
//! One [`MemoryBackend`] trait, two real backends: [`files::FileMemory`] (the repository's
//! hindsight files as today, sessions and conversations under `.git/meta-agent/memory/`; the
//! default, no server) and [`postgres::PgMemory`] (shared by every repository of an organisation;
//! migrations embedded and applied on first use). [`AnyMemory`] picks one at run time.
//!
//! Everything written is a [`Learned`] (one signature, one change, one id): a backend applies it
//! in one transaction and at most once, so a journal of them can be queued when the database is
//! down and replayed later ([`journal`], `meta-agent hindsight sync`) without counting anything
//! twice. [`shared`] is the run's view of the shared memory (recall, trust, fallback);
//! [`conversation`] is the pure windowing of a conversation. Nothing here prints: diagnostics go
//! through `tracing`, results to the caller.

#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod conversation;
pub mod files;
pub mod journal;
pub mod postgres;
pub use meta_agent_config::memory as settings;
pub mod shared;

use std::collections::BTreeSet;
use std::future::Future;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use meta_agent_hindsight::Signature;
use meta_agent_hindsight::signature::family_key;
use meta_agent_hindsight::store::{Entry, EscalationContext, Fix, PatchFix, StoreError, Timestamp};

/// Why a memory operation failed. [`MemoryError::unreachable`] says whether the run should go
/// on without the database.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error(transparent)]
    Url(#[from] settings::UrlError),
    #[error("cannot reach the memory database at {target}: {reason}")]
    Connect { target: String, reason: String },
    #[error("memory database: {0}")]
    Database(#[from] tokio_postgres::Error),
    #[error("memory database TLS: {0}")]
    Tls(String),
    #[error(
        "migration {version} ({name}) was applied with other text than this meta-agent embeds: \
         migrations are forward-only and never edited"
    )]
    MigrationChanged { version: i32, name: String },
    #[error(
        "the memory database has schema version {found}, newer than this meta-agent knows \
         ({known}): upgrade meta-agent"
    )]
    SchemaTooNew { found: i32, known: i32 },
    #[error("stored {what} is unreadable: {reason}")]
    Stored { what: String, reason: String },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}: {reason}")]
    Input {
        path: PathBuf,
        line: usize,
        reason: String,
    },
    #[error("signature {0:?} is not a hex id")]
    InvalidId(String),
    #[error("nothing to approve: {0}")]
    NothingToApprove(String),
    #[error("{0}: no database is configured (memory.url or META_AGENT_DATABASE_URL)")]
    NoDatabase(&'static str),
}

impl MemoryError {
    /// A JSON-lines file that could not be read ([`MemoryError::Io`]), or one of its lines that
    /// is not `what` ("a queued lesson"), named by file and line ([`MemoryError::Input`]).
    pub fn of_lines(
        err: meta_agent_hindsight::jsonl::JsonLinesError<serde_json::Error>,
        what: &str,
    ) -> MemoryError {
        use meta_agent_hindsight::jsonl::JsonLinesError;
        match err {
            JsonLinesError::Read { path, source } => MemoryError::Io { path, source },
            JsonLinesError::Line { path, line, source } => MemoryError::Input {
                path,
                line,
                reason: format!("not {what}: {source}"),
            },
        }
    }

    /// True when the database could not be reached or went away: the run continues on the
    /// file store and queues what it learns.
    pub fn unreachable(&self) -> bool {
        match self {
            MemoryError::Connect { .. } => true,
            MemoryError::Database(err) => err.is_closed() || err.code().is_none(),
            MemoryError::Url(_)
            | MemoryError::Tls(_)
            | MemoryError::MigrationChanged { .. }
            | MemoryError::SchemaTooNew { .. }
            | MemoryError::Stored { .. }
            | MemoryError::Store(_)
            | MemoryError::Io { .. }
            | MemoryError::Input { .. }
            | MemoryError::InvalidId(_)
            | MemoryError::NothingToApprove(_)
            | MemoryError::NoDatabase(_) => false,
        }
    }
}

/// One entry as a backend holds it: which repository learned it, its family, and which of its
/// resolutions are reviewed (and so may be applied automatically). The export format, one JSON
/// object a line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredEntry {
    pub repository: String,
    pub family: String,
    pub entry: Entry,
    /// Ids of the resolutions reviewed: merged on the learning repository's default branch, or
    /// approved.
    #[serde(default)]
    pub reviewed: BTreeSet<String>,
}

impl StoredEntry {
    /// The entry with only its reviewed resolutions.
    pub fn reviewed_only(&self) -> Entry {
        let mut entry = self.entry.clone();
        entry.resolutions.retain(|r| self.reviewed.contains(&r.id));
        entry
    }

    /// The identities of the counts an import of this entry adds, claimed in the write log
    /// like a learned change's id: importing the same export again adds nothing.
    pub fn import_claims(&self) -> ImportClaims {
        let entry = &self.entry;
        let key = (self.repository.as_str(), entry.signature.as_str());
        let occurrences = (
            key,
            entry.occurrences,
            unix_secs(entry.first_seen),
            unix_secs(entry.last_seen),
        );
        ImportClaims {
            entry: format!("import {occurrences:?}"),
            resolutions: entry
                .resolutions
                .iter()
                .map(|r| {
                    let o = &r.outcomes;
                    let counts = (o.applied, o.succeeded, o.failed, o.last_used.map(unix_secs));
                    format!("import {:?}", (key, r.id.as_str(), counts))
                })
                .collect(),
        }
    }

    /// This entry without the counts an earlier import already added: `fresh` says which of
    /// its [`ImportClaims`] were claimed now (the entry's, then each resolution's in order).
    /// Everything else (status, tags, dates, resolutions, reviewed flags) merges idempotently.
    pub fn unclaimed(&self, fresh: &ClaimedNow) -> StoredEntry {
        let mut out = self.clone();
        if !fresh.entry {
            out.entry.occurrences = 0;
        }
        for (resolution, fresh) in out.entry.resolutions.iter_mut().zip(&fresh.resolutions) {
            if !fresh {
                let outcomes = &mut resolution.outcomes;
                (outcomes.applied, outcomes.succeeded, outcomes.failed) = (0, 0, 0);
            }
        }
        out
    }
}

/// The write-log ids of what importing one [`StoredEntry`] adds
/// ([`StoredEntry::import_claims`]): its occurrences, and each resolution's outcomes, each
/// named by the counts it carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportClaims {
    pub entry: String,
    /// One per resolution, in the entry's order.
    pub resolutions: Vec<String>,
}

/// Which of an entry's [`ImportClaims`] were new to the write log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedNow {
    pub entry: bool,
    pub resolutions: Vec<bool>,
}

fn unix_secs(at: Timestamp) -> u64 {
    at.system_time()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// What one recorded change does to the entry of its signature.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum Change {
    /// One occurrence.
    Seen,
    /// One application of a fix: cured or not. Adds the fix as a candidate when new.
    Outcome { fix: Fix, cured: bool },
    /// A novel change that cured it, learned as a candidate patch (one success).
    Patch { patch: PatchFix },
    /// A run escalated with it still failing.
    Unresolved { context: EscalationContext },
}

/// One thing a run learned: the unit of every write, applied in one transaction and at most
/// once per `id` (so a queued journal can be replayed safely).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Learned {
    /// `<session>/<sequence>`: unique per run.
    pub id: String,
    /// The repository that learned it.
    pub repository: String,
    pub at: Timestamp,
    pub signature: Signature,
    #[serde(flatten)]
    pub change: Change,
}

impl Learned {
    /// The family key of its signature.
    pub fn family(&self) -> String {
        family_key(self.signature.kind, &self.signature.template)
    }

    /// Every free text passed through `redact` (template, fix, context); a fix that changes
    /// keeps the id of its new content, as entries do.
    pub fn redact(&mut self, redact: &dyn Fn(&str) -> String) {
        self.signature.template = redact(&self.signature.template);
        match &mut self.change {
            Change::Seen => {}
            Change::Outcome { fix, .. } => *fix = fix.redacted(redact),
            Change::Patch { patch } => {
                if let Fix::Patch(clean) = Fix::Patch(patch.clone()).redacted(redact) {
                    *patch = clean;
                }
            }
            Change::Unresolved { context } => {
                let mut holder = Entry::new(&self.signature, self.at);
                holder.escalation = Some(context.clone());
                holder.redact(redact);
                if let Some(clean) = holder.escalation {
                    *context = clean;
                }
            }
        }
    }
}

/// Whether a write changed anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    Applied,
    /// A write with this id was applied before (a replayed journal).
    AlreadyApplied,
}

/// What to look up: entries for these signatures (exact, then their families) for
/// `repository`, and the organisation's reviewed ones.
#[derive(Debug, Clone)]
pub struct RecallQuery<'a> {
    pub repository: &'a str,
    pub signatures: &'a [Signature],
    /// At most this many entries in all.
    pub limit: usize,
}

/// A resolution to mark reviewed: the signature and the resolution id.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ReviewedFix {
    pub signature: String,
    pub resolution: String,
}

/// `meta-agent hindsight approve`: which candidates a maintainer approves.
#[derive(Debug, Clone)]
pub struct Approval<'a> {
    pub repository: &'a str,
    /// A full signature id or a unique prefix.
    pub signature: &'a str,
    /// Only this resolution (id or prefix); all of the entry's when `None`.
    pub resolution: Option<&'a str>,
    /// Who approved (recorded with the flag).
    pub by: &'a str,
}

/// Where a session stands, for expiry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionState {
    /// Working, or between runs.
    Active,
    /// Escalated or paused for a maintainer's answer: it never expires.
    AwaitingGuidance,
    /// Committed, or nothing to do.
    Finished,
    /// Stopped by an error.
    Failed,
}

impl SessionState {
    pub fn as_str(self) -> &'static str {
        match self {
            SessionState::Active => "active",
            SessionState::AwaitingGuidance => "awaiting_guidance",
            SessionState::Finished => "finished",
            SessionState::Failed => "failed",
        }
    }

    pub fn parse(text: &str) -> Option<SessionState> {
        [
            SessionState::Active,
            SessionState::AwaitingGuidance,
            SessionState::Finished,
            SessionState::Failed,
        ]
        .into_iter()
        .find(|state| state.as_str() == text)
    }
}

/// One agent session: the bot's work on one task (an issue), possibly over several runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    pub id: String,
    pub repository: String,
    /// What it works on (`issue #17`, or the task's title).
    pub task: String,
    pub state: SessionState,
    pub started: Timestamp,
    pub updated: Timestamp,
    /// The last run's outcome (`committed`, `escalated`, ...).
    pub outcome: Option<String>,
}

/// Who said a message of a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A maintainer: the request, guidance, answers.
    Maintainer,
    /// The bot: what a run did and how it ended.
    Bot,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Maintainer => "maintainer",
            Role::Bot => "bot",
        }
    }

    pub fn parse(text: &str) -> Option<Role> {
        [Role::Maintainer, Role::Bot]
            .into_iter()
            .find(|role| role.as_str() == text)
    }
}

/// One message of a session's conversation (already redacted when stored).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationMessage {
    pub session: String,
    pub role: Role,
    pub content: String,
    pub tokens: u32,
    pub at: Timestamp,
}

pub use meta_agent_protocol::memory::MemoryStatus;

/// A store of memory. Every method is one unit of work: a write is one transaction.
pub trait MemoryBackend: Send + Sync {
    /// Entries for the query's signatures: this repository's (exact and family, reviewed or
    /// not), then other repositories' reviewed ones (only their reviewed resolutions).
    fn recall(
        &self,
        query: &RecallQuery<'_>,
    ) -> impl Future<Output = Result<Vec<StoredEntry>, MemoryError>> + Send;

    /// Applies one learned change (redacted by the caller) at most once.
    fn record(
        &self,
        learned: &Learned,
    ) -> impl Future<Output = Result<Recorded, MemoryError>> + Send;

    /// Marks `fixes` of `repository` reviewed (seen on its default branch); returns how many
    /// candidates changed.
    fn mark_reviewed(
        &self,
        repository: &str,
        fixes: &[ReviewedFix],
    ) -> impl Future<Output = Result<u64, MemoryError>> + Send;

    /// A maintainer's approval of candidates; returns the resolutions now reviewed.
    fn approve(
        &self,
        approval: &Approval<'_>,
    ) -> impl Future<Output = Result<Vec<ReviewedFix>, MemoryError>> + Send;

    /// Every entry, sorted by repository and signature.
    fn export(&self) -> impl Future<Output = Result<Vec<StoredEntry>, MemoryError>> + Send;

    /// Merges entries (counts added, resolutions unioned, reviewed flags kept); returns how many.
    /// Idempotent: counts an earlier import of the same entry added are not added again
    /// ([`StoredEntry::import_claims`]).
    fn import(
        &self,
        entries: &[StoredEntry],
    ) -> impl Future<Output = Result<u64, MemoryError>> + Send;

    /// Creates or updates a session.
    fn save_session(
        &self,
        session: &SessionRecord,
    ) -> impl Future<Output = Result<(), MemoryError>> + Send;

    /// The most recently updated session of `task` in `repository`.
    fn latest_session(
        &self,
        repository: &str,
        task: &str,
    ) -> impl Future<Output = Result<Option<SessionRecord>, MemoryError>> + Send;

    /// Appends one message to its session's conversation.
    fn append_message(
        &self,
        message: &ConversationMessage,
    ) -> impl Future<Output = Result<(), MemoryError>> + Send;

    /// A session's conversation, oldest first.
    fn conversation(
        &self,
        session: &str,
    ) -> impl Future<Output = Result<Vec<ConversationMessage>, MemoryError>> + Send;

    /// Counts and where it lives.
    fn status(&self) -> impl Future<Output = Result<MemoryStatus, MemoryError>> + Send;
}

/// One of the backends, chosen at run time.
#[derive(Debug)]
pub enum AnyMemory {
    Files(Box<files::FileMemory>),
    Postgres(postgres::PgMemory),
}

macro_rules! dispatch {
    ($self:ident, $backend:ident => $call:expr) => {
        match $self {
            AnyMemory::Files($backend) => $call.await,
            AnyMemory::Postgres($backend) => $call.await,
        }
    };
}

impl MemoryBackend for AnyMemory {
    async fn recall(&self, query: &RecallQuery<'_>) -> Result<Vec<StoredEntry>, MemoryError> {
        dispatch!(self, backend => backend.recall(query))
    }

    async fn record(&self, learned: &Learned) -> Result<Recorded, MemoryError> {
        dispatch!(self, backend => backend.record(learned))
    }

    async fn mark_reviewed(
        &self,
        repository: &str,
        fixes: &[ReviewedFix],
    ) -> Result<u64, MemoryError> {
        dispatch!(self, backend => backend.mark_reviewed(repository, fixes))
    }

    async fn approve(&self, approval: &Approval<'_>) -> Result<Vec<ReviewedFix>, MemoryError> {
        dispatch!(self, backend => backend.approve(approval))
    }

    async fn export(&self) -> Result<Vec<StoredEntry>, MemoryError> {
        dispatch!(self, backend => backend.export())
    }

    async fn import(&self, entries: &[StoredEntry]) -> Result<u64, MemoryError> {
        dispatch!(self, backend => backend.import(entries))
    }

    async fn save_session(&self, session: &SessionRecord) -> Result<(), MemoryError> {
        dispatch!(self, backend => backend.save_session(session))
    }

    async fn latest_session(
        &self,
        repository: &str,
        task: &str,
    ) -> Result<Option<SessionRecord>, MemoryError> {
        dispatch!(self, backend => backend.latest_session(repository, task))
    }

    async fn append_message(&self, message: &ConversationMessage) -> Result<(), MemoryError> {
        dispatch!(self, backend => backend.append_message(message))
    }

    async fn conversation(&self, session: &str) -> Result<Vec<ConversationMessage>, MemoryError> {
        dispatch!(self, backend => backend.conversation(session))
    }

    async fn status(&self) -> Result<MemoryStatus, MemoryError> {
        dispatch!(self, backend => backend.status())
    }
}
