//! The state of a run and its history, persisted atomically after every transition so that a run
//! killed at any point (even with SIGKILL) can be resumed from its last completed step.
//!
//! Sessions live in the repository's git directory (`.git/meta-agent/sessions/<id>/state.json`):
//! outside the worktree, so they never show up in a diff, and beside the clone they describe.
//! The file passes the run's redactor on the way out (CI may upload the session directory): the
//! state in memory keeps the exact worktree diff, the file a redacted one.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::protocol::builder::ModelRefusal;
use crate::protocol::ending::EscalationReason;
use crate::protocol::event::LoopPhase;
use crate::protocol::records::{
    CommitStyle, GateRecord, Plan, RunOutcome, SignatureRecord, StepPhase, StepRecord, Usage,
    UserSnapshot,
};
use crate::protocol::task::Task;
use crate::redact::Redactor;

/// Version of the state file format.
pub const STATE_VERSION: u32 = 2;

/// Everything the loop knows, enough to resume after a kill.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoopState {
    pub version: u32,
    pub session: String,
    pub task: Task,
    /// The bot's branch (`meta-agent/<slug>`); the current branch in a dry run.
    pub branch: String,
    /// The commit the run started from.
    pub base_commit: String,
    pub dry_run: bool,
    pub phase: LoopPhase,
    /// 0 is the build; 1.. are improve iterations.
    pub iteration: u32,
    pub max_iterations: u32,
    /// What the next Acting step will do.
    pub plan: Option<Plan>,
    /// The worktree's diff against `base_commit` after the last completed Acting step.
    pub worktree_diff: String,
    /// How many build/improve calls the builder has answered (scripted edits resume here).
    pub builder_calls: u32,
    pub history: Vec<StepRecord>,
    /// The latest gate results, compact.
    pub gates: Vec<GateRecord>,
    /// Signatures of the latest observation.
    pub signatures: Vec<SignatureRecord>,
    pub usage: Usage,
    /// Tests that failed and then passed on an immediate re-run with no change (older sessions
    /// hold their names as strings: they load untyped).
    pub flaky: Vec<crate::protocol::test_id::TestId>,
    pub tamper: Vec<String>,
    /// Transient failures retried in a row.
    pub transient_retries: u32,
    /// The transient failure of the step just taken, for the decision.
    #[serde(default)]
    pub transient_error: Option<String>,
    pub recoveries: Vec<Recovery>,
    pub started_unix_ms: u64,
    /// Set when the run is over.
    pub outcome: Option<RunOutcome>,
    /// Why the run stopped without a commit, when it did.
    #[serde(default)]
    pub escalation: Option<EscalationReason>,
    /// The requirements review ran (once per run, after the gates first pass).
    #[serde(default)]
    pub reviewed: bool,
    /// What the requirements review found missing: the next act's first failures.
    #[serde(default)]
    pub review_missing: Vec<String>,
    /// Why a signal or a pause point paused the run (with outcome `interrupted`), until it is
    /// resumed.
    #[serde(default)]
    pub interrupted: Option<String>,
    /// The pause point the run paused at, until it is resumed.
    #[serde(default)]
    pub paused: Option<crate::protocol::pause::PauseHit>,
    /// Arrivals at pause points and hits of their rules so far (see [`crate::protocol::pause`]).
    #[serde(default)]
    pub pauses: crate::protocol::pause::PauseCounts,
    /// This session's own work-in-progress commit the worktree diff is relative to (a paused
    /// run's, or the pushed tip a GitHub resume continues from): the verified commit goes on top
    /// of it, even when the worktree adds nothing to it.
    #[serde(default)]
    pub checkpoint: Option<String>,
    /// How the repository writes commit subjects (read from its history at the start).
    #[serde(default)]
    pub commit_style: CommitStyle,
    /// What the run did to the repository's tests: the tests it added, and the test and
    /// configuration edits a maintainer allowed (see [`super::evidence`]).
    #[serde(default)]
    pub evidence: TestEvidence,
    /// The model declined to go on in the act just taken: the decision ends the run with this
    /// refusal as its reason.
    #[serde(default)]
    pub model_refusal: Option<ModelRefusal>,
    /// Worktree entries the setup commands and the baseline gates wrote (a lockfile, a virtual
    /// environment, caches): the environment's, left out of every diff and commit.
    #[serde(default)]
    pub environment: Vec<String>,
    /// The repository's instruction files the model was shown (`AGENTS.md`, ...), in the order
    /// first shown.
    #[serde(default)]
    pub instructions: Vec<String>,
    /// A local run's start from the user's uncommitted work: the snapshot commit that is
    /// `base_commit`, and which paths were the user's.
    #[serde(default)]
    pub snapshot: Option<UserSnapshot>,
    /// What this run's gate runs cost (see [`super::candidate`]).
    #[serde(default)]
    pub costs: super::candidate::GateCosts,
    /// The tree the last observation ran the gates on in a pristine checkout: committed as it is
    /// when the loop completes in the same iteration.
    #[serde(default)]
    pub verified: Option<super::candidate::VerifiedTree>,
    /// The sub-task plan the run paused on at `after_plan` inside a build act: when it goes on
    /// without new guidance, the act runs this plan (the one the maintainers saw); with
    /// guidance, or once the act is done, it is dropped.
    #[serde(default)]
    pub sub_plan: Option<crate::protocol::subplan::TaskPlan>,
}

/// The tests a run added and the test edits it was allowed, for the report and the PR body.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestEvidence {
    /// `path::name` of every test the change adds (new files and new tests alike).
    #[serde(default)]
    pub new_tests: Vec<String>,
    /// Test code and configuration the change alters, kept because a maintainer allowed test
    /// edits for this task: one entry per file, with its diff against the base commit.
    #[serde(default)]
    pub allowed_edits: Vec<AllowedEdit>,
}

/// One allowed change to existing tests or their configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllowedEdit {
    pub path: String,
    /// Why it would have been refused (the evidence check's finding).
    pub reason: String,
    /// The file's unified diff against the base commit.
    pub diff: String,
}

/// A resume after a kill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recovery {
    pub phase: LoopPhase,
    pub iteration: u32,
    pub at_unix_ms: u64,
}

impl LoopState {
    /// A new session's state before its first step: `task` on `branch`, from `base_commit`, with
    /// at most `max_iterations` improve iterations; nothing run, spent or decided yet.
    pub fn new(
        session: String,
        task: Task,
        branch: String,
        base_commit: String,
        max_iterations: u32,
    ) -> LoopState {
        LoopState {
            version: STATE_VERSION,
            session,
            task,
            branch,
            base_commit,
            dry_run: false,
            phase: LoopPhase::Idle,
            iteration: 0,
            max_iterations,
            plan: None,
            worktree_diff: String::new(),
            builder_calls: 0,
            history: Vec::new(),
            gates: Vec::new(),
            signatures: Vec::new(),
            usage: Usage::default(),
            flaky: Vec::new(),
            tamper: Vec::new(),
            transient_retries: 0,
            transient_error: None,
            recoveries: Vec::new(),
            started_unix_ms: 0,
            outcome: None,
            escalation: None,
            reviewed: false,
            review_missing: Vec::new(),
            interrupted: None,
            paused: None,
            pauses: Default::default(),
            checkpoint: None,
            commit_style: CommitStyle::Plain,
            evidence: Default::default(),
            model_refusal: None,
            environment: Vec::new(),
            instructions: Vec::new(),
            snapshot: None,
            costs: Default::default(),
            verified: None,
            sub_plan: None,
        }
    }

    /// Acts whose result reached the gates: the number people read as "iterations" everywhere
    /// (outcome, trailer, reports, metrics), on the scale of `--max-iterations`. Iteration 0 is
    /// the baseline observation before any act and is not counted; a run never reports more than
    /// its maximum.
    pub fn iterations_run(&self) -> u32 {
        let improve: BTreeSet<u32> = self
            .history
            .iter()
            .filter(|step| step.phase.is_check_after_act() && step.iteration > 0)
            .map(|step| step.iteration)
            .collect();
        u32::try_from(improve.len()).unwrap_or(u32::MAX)
    }

    /// The baseline observation (the gates before any act), when the run took one.
    pub fn baseline(&self) -> Option<&StepRecord> {
        self.history
            .iter()
            .find(|step| step.phase == StepPhase::Baseline)
    }

    /// Whether no act has happened yet (the next observation is the baseline).
    pub fn before_any_act(&self) -> bool {
        !self.history.iter().any(|step| step.phase.is_act())
    }

    /// The signature ids of the latest observation.
    pub fn signature_ids(&self) -> BTreeSet<String> {
        self.signatures.iter().map(|s| s.id.clone()).collect()
    }

    /// The signature ids of the observation before the latest one, if there was one.
    pub fn previous_signature_ids(&self) -> Option<BTreeSet<String>> {
        self.history
            .iter()
            .rev()
            .filter(|step| step.phase.is_check_after_act())
            .nth(1)
            .map(|step| step.signatures.iter().map(|s| s.id.clone()).collect())
    }

    /// Every resolution id tried for a signature so far.
    pub fn tried(&self, signature: &str) -> BTreeSet<String> {
        self.history
            .iter()
            .flat_map(|step| step.resolutions.iter())
            .filter(|r| r.signature == signature)
            .map(|r| r.resolution.clone())
            .collect()
    }
}

/// Why a session could not be saved or loaded.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a session state file: {source}")]
    Corrupt {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("no session {0} (see .git/meta-agent/sessions/)")]
    Unknown(String),
    #[error("no session to resume in {0}")]
    NoneYet(PathBuf),
    #[error("session {0} already ended ({1}); nothing to resume")]
    Ended(String, String),
    #[error("session {0} is not paused at a pause point (no context to show)")]
    NotPaused(String),
}

/// Where sessions are kept: one directory per session, and a `latest` pointer. Every state file
/// passes the store's redactor (token patterns only, until [`SessionStore::with_redactor`] gives
/// it the secrets the run holds).
#[derive(Debug, Clone)]
pub struct SessionStore {
    dir: PathBuf,
    redactor: Arc<Redactor>,
}

impl SessionStore {
    /// Sessions of the repository whose git directory is `git_dir`.
    pub fn for_git_dir(git_dir: &Path) -> SessionStore {
        SessionStore {
            dir: git_dir.join("meta-agent").join("sessions"),
            redactor: Arc::new(Redactor::default()),
        }
    }

    /// The same store, redacting with `redactor` (the run's, holding its secrets).
    pub fn with_redactor(mut self, redactor: Arc<Redactor>) -> SessionStore {
        self.redactor = redactor;
        self
    }

    /// The redactor state files pass (the engine's patch gate scans with it too).
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    pub fn session_dir(&self, session: &str) -> PathBuf {
        self.dir.join(session)
    }

    fn state_path(&self, session: &str) -> PathBuf {
        self.session_dir(session).join("state.json")
    }

    /// Writes the state, redacted, atomically (temporary file, rename) and points `latest` at it.
    /// Redaction keeps the JSON valid: markers hold no quote or backslash, and every encoded
    /// form of a secret is matched as it appears inside a JSON string.
    pub fn save(&self, state: &LoopState) -> Result<(), SessionError> {
        let path = self.state_path(&state.session);
        let json = serde_json::to_string_pretty(state).map_err(|source| SessionError::Corrupt {
            path: path.clone(),
            source,
        })?;
        let json = self.redactor.redact_text(&json);
        write_atomic(&path, json.as_bytes())?;
        write_atomic(&self.dir.join("latest"), state.session.as_bytes())
    }

    /// Writes the context of a pause (`context.json` in the session directory), redacted.
    pub fn save_context(
        &self,
        context: &crate::protocol::pause::context::PauseContext,
    ) -> Result<(), SessionError> {
        let path = self
            .session_dir(&context.session)
            .join(crate::protocol::pause::context::CONTEXT_FILE);
        let json =
            serde_json::to_string_pretty(context).map_err(|source| SessionError::Corrupt {
                path: path.clone(),
                source,
            })?;
        write_atomic(&path, self.redactor.redact_text(&json).as_bytes())
    }

    /// The context of a session paused at a pause point (the latest session by default).
    pub fn load_context(
        &self,
        session: Option<&str>,
    ) -> Result<crate::protocol::pause::context::PauseContext, SessionError> {
        let state = self.load(session)?;
        if state.paused.is_none() {
            return Err(SessionError::NotPaused(state.session));
        }
        let path = self
            .session_dir(&state.session)
            .join(crate::protocol::pause::context::CONTEXT_FILE);
        let text = std::fs::read_to_string(&path).map_err(|source| SessionError::Io {
            path: path.clone(),
            source,
        })?;
        serde_json::from_str(&text).map_err(|source| SessionError::Corrupt { path, source })
    }

    /// Loads a session, or the latest one.
    pub fn load(&self, session: Option<&str>) -> Result<LoopState, SessionError> {
        let session = match session {
            Some(session) => session.to_owned(),
            None => {
                let latest = self.dir.join("latest");
                std::fs::read_to_string(&latest)
                    .map_err(|_| SessionError::NoneYet(self.dir.clone()))?
                    .trim()
                    .to_owned()
            }
        };
        let valid = !session.is_empty()
            && session
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-');
        if !valid {
            return Err(SessionError::Unknown(session));
        }
        let path = self.state_path(&session);
        let bytes = std::fs::read(&path).map_err(|_| SessionError::Unknown(session.clone()))?;
        serde_json::from_slice(&bytes).map_err(|source| SessionError::Corrupt { path, source })
    }
}

/// [`crate::fsafe::write_atomic`] without fsync: a reader, or a run resumed after the
/// process was killed at any instant, sees the old file or the new one, never a mix. (No fsync:
/// that guards against power loss, which a CI runner does not survive anyway, and it would cost
/// milliseconds on every transition.)
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), SessionError> {
    crate::fsafe::write_atomic(path, bytes, false).map_err(|source| SessionError::Io {
        path: path.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const CANARY: &str = "StateCanary-0123456789abcdef";

    fn state_with(text: &str) -> LoopState {
        let mut task = Task::from_text(&format!("Fix {text}")).unwrap();
        task.guidance = vec![format!("ghp_abcdefghijklmnopqrstuvwxyz0123 and {text}")];
        LoopState {
            phase: LoopPhase::Acting,
            plan: Some(Plan::Build),
            worktree_diff: format!("+token = \"{text}\"\n"),
            ..LoopState::new("s-1".into(), task, "meta-agent/x".into(), "0".repeat(40), 3)
        }
    }

    #[test]
    fn the_state_file_is_redacted_and_still_loads() {
        let dir = tempfile::tempdir().unwrap();
        let redactor = Arc::new(Redactor::from_values([CANARY.to_owned()]));
        let store = SessionStore::for_git_dir(dir.path()).with_redactor(redactor);
        let state = state_with(CANARY);
        store.save(&state).unwrap();
        let text = std::fs::read_to_string(store.state_path("s-1")).unwrap();
        assert!(!text.contains(CANARY), "{text}");
        assert!(!text.contains("ghp_abc"), "{text}");
        let loaded = store.load(None).unwrap();
        assert_eq!(loaded.task.title, "Fix [REDACTED:secret]");
        assert_eq!(loaded.worktree_diff, "+token = \"[REDACTED:secret]\"\n");
        assert_eq!(loaded.phase, state.phase);
    }

    /// A state saved before test ids were typed names its failing and flaky tests as
    /// `classname::name` strings: it loads, and shows them as it did.
    #[test]
    fn a_state_with_string_test_ids_still_loads() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::for_git_dir(dir.path());
        let mut state = state_with("old");
        state.gates = vec![GateRecord::judged(
            "tests",
            crate::config::raw::GateKind::Tests,
            crate::protocol::records::GateStatus::Failed,
            vec![],
        )];
        store.save(&state).unwrap();
        let path = store.state_path("s-1");
        let mut json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        json["gates"][0]["failing_tests"] =
            serde_json::json!(["semver::test_version_req::test_less_than", "bare"]);
        json["flaky"] = serde_json::json!(["tests.test_x::test_y[a::b]"]);
        std::fs::write(&path, json.to_string()).unwrap();
        let loaded = store.load(None).unwrap();
        let shown: Vec<String> = loaded.gates[0]
            .failing_tests
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(shown, ["semver::test_version_req::test_less_than", "bare"]);
        assert!(loaded.gates[0].failing_tests[0].select.is_unknown());
        assert_eq!(loaded.flaky[0].to_string(), "tests.test_x::test_y[a::b]");
    }
}
