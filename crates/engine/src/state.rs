//! The state of a run and its history, persisted atomically after every transition so that a run
//! killed at any point (even with SIGKILL) can be resumed from its last completed step.
//!
//! Sessions live in the repository's git directory (`.git/meta-agent/sessions/<id>/state.json`):
//! outside the worktree, so they never show up in a diff, and beside the clone they describe.
//! The file passes the run's redactor on the way out (CI may upload the session directory): the
//! state in memory keeps the exact worktree diff, the file a redacted one.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use meta_agent_redact::Redactor;

pub use meta_agent_protocol::state::{
    AllowedEdit, LoopState, Recovery, STATE_VERSION, TestEvidence,
};

/// Why a session could not be saved or loaded.
#[derive(Debug, thiserror::Error)]
pub enum SessionStoreError {
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
    pub fn save(&self, state: &LoopState) -> Result<(), SessionStoreError> {
        let path = self.state_path(&state.session);
        let json =
            serde_json::to_string_pretty(state).map_err(|source| SessionStoreError::Corrupt {
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
        context: &meta_agent_protocol::pause::context::PauseContext,
    ) -> Result<(), SessionStoreError> {
        let path = self
            .session_dir(&context.session)
            .join(meta_agent_protocol::pause::context::CONTEXT_FILE);
        let json =
            serde_json::to_string_pretty(context).map_err(|source| SessionStoreError::Corrupt {
                path: path.clone(),
                source,
            })?;
        write_atomic(&path, self.redactor.redact_text(&json).as_bytes())
    }

    /// The context of a session paused at a pause point (the latest session by default).
    pub fn load_context(
        &self,
        session: Option<&str>,
    ) -> Result<meta_agent_protocol::pause::context::PauseContext, SessionStoreError> {
        let state = self.load(session)?;
        if state.paused.is_none() {
            return Err(SessionStoreError::NotPaused(state.session));
        }
        let path = self
            .session_dir(&state.session)
            .join(meta_agent_protocol::pause::context::CONTEXT_FILE);
        let text = std::fs::read_to_string(&path).map_err(|source| SessionStoreError::Io {
            path: path.clone(),
            source,
        })?;
        serde_json::from_str(&text).map_err(|source| SessionStoreError::Corrupt { path, source })
    }

    /// Loads a session, or the latest one.
    pub fn load(&self, session: Option<&str>) -> Result<LoopState, SessionStoreError> {
        let session = match session {
            Some(session) => session.to_owned(),
            None => {
                let latest = self.dir.join("latest");
                std::fs::read_to_string(&latest)
                    .map_err(|_| SessionStoreError::NoneYet(self.dir.clone()))?
                    .trim()
                    .to_owned()
            }
        };
        let valid = !session.is_empty()
            && session
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-');
        if !valid {
            return Err(SessionStoreError::Unknown(session));
        }
        let path = self.state_path(&session);
        let bytes =
            std::fs::read(&path).map_err(|_| SessionStoreError::Unknown(session.clone()))?;
        serde_json::from_slice(&bytes).map_err(|source| SessionStoreError::Corrupt { path, source })
    }
}

/// [`meta_agent_fsafe::write_atomic`] without fsync: a reader, or a run resumed after the
/// process was killed at any instant, sees the old file or the new one, never a mix. (No fsync:
/// that guards against power loss, which a CI runner does not survive anyway, and it would cost
/// milliseconds on every transition.)
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), SessionStoreError> {
    meta_agent_fsafe::write_atomic(path, bytes, false).map_err(|source| SessionStoreError::Io {
        path: path.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use meta_agent_protocol::event::LoopPhase;
    use meta_agent_protocol::records::{GateRecord, Plan};
    use meta_agent_protocol::task::Task;

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
            meta_agent_config::raw::GateKind::Tests,
            meta_agent_protocol::records::GateStatus::Failed,
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
