//! The session layer: everything that assembles a piece of work from its parts. A session loads
//! the configuration and builds the run's one [`Policy`](crate::policy::Policy), picks the builder
//! (scripted, offline, or the LLM agent), opens the event sinks, drives the engine and writes what
//! it produced; the GitHub session adds the trigger, authorization and publishing around it.
//!
//! [`run`] is `meta-agent run`/`resume` (a local run: where its worktree lives, [`places`]; where
//! it starts, [`start`]; its worktree's fate, [`worktree`]; its session's lock, [`lock`]),
//! [`worktrees`] `meta-agent worktrees list|prune`, [`github`] one GitHub Actions step,
//! [`commands`] the smaller commands (gates, reports, configuration, hindsight), [`memory`] the
//! shared-memory commands, [`eval`] the evaluations. The command line (`cli/`) only
//! parses and calls in here; nothing here parses arguments or prints.

pub mod builder;
pub mod commands;
mod display;
pub mod eval;
pub mod github;
pub mod hindsight_cli;
pub mod lock;
pub mod memory;
pub mod memory_cli;
pub mod places;
pub(crate) mod prepared;
pub mod run;
pub mod signals;
mod sinks;
pub mod start;
pub mod trace;
pub mod worktree;
pub mod worktrees;

use std::path::PathBuf;
use std::sync::Arc;

use crate::config::ConfigError;
use crate::config::raw::LlmProvider;
use crate::exit::{FailureClass, Outcome};
use crate::redact::Redactor;
use crate::report::ReportError;
use crate::session::hindsight_cli::HindsightError;

pub use prepared::Prepared;

/// Why a session could not complete. Each variant knows whether the user or meta-agent is at fault.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Report(#[from] ReportError),
    #[error(transparent)]
    Hindsight(#[from] HindsightError),
    #[error(transparent)]
    Memory(#[from] crate::memory::MemoryError),
    #[error(transparent)]
    Replay(#[from] crate::replay::ReplayError),
    #[error(transparent)]
    Places(#[from] places::PlacesError),
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Internal(String),
}

impl SessionError {
    /// Whose fault it is, for the exit code.
    pub fn class(&self) -> FailureClass {
        match self {
            SessionError::Config(ConfigError::BadPreset { .. }) => FailureClass::Internal,
            SessionError::Config(_)
            | SessionError::Report(_)
            | SessionError::Replay(_)
            | SessionError::Places(_)
            | SessionError::Usage(_) => FailureClass::Usage,
            SessionError::Hindsight(err) => hindsight_class(err),
            SessionError::Memory(err) => crate::session::memory_cli::failure_class(err),
            SessionError::Internal(_) => FailureClass::Internal,
        }
    }
}

/// Bad input (files, ids, exports) is the user's to fix; a broken catalog or an unwritable store
/// is not.
fn hindsight_class(err: &HindsightError) -> FailureClass {
    match err {
        HindsightError::Signature(_)
        | HindsightError::NotFound(_)
        | HindsightError::Ambiguous { .. }
        | HindsightError::Io { .. }
        | HindsightError::Import { .. } => FailureClass::Usage,
        HindsightError::Store(crate::hindsight::store::StoreError::InvalidId { .. })
        | HindsightError::Store(crate::hindsight::store::StoreError::UnknownSignature { .. })
        | HindsightError::Store(crate::hindsight::store::StoreError::Corrupt { .. }) => {
            FailureClass::Usage
        }
        HindsightError::Store(_)
        | HindsightError::Catalog(_)
        | HindsightError::Json(_)
        | HindsightError::SharedMemory => FailureClass::Internal,
    }
}

/// What a command produced: text for stdout, and how it ended.
#[derive(Debug)]
pub struct Done {
    pub stdout: String,
    pub outcome: Outcome,
}

impl Done {
    fn ok(stdout: String) -> Self {
        Done {
            stdout,
            outcome: Outcome::Success,
        }
    }
}

/// The process's environment, read once, and the redactor built from it once: every session
/// of this process redacts with the same secrets.
#[derive(Debug, Clone)]
pub struct Environment {
    /// The parent's environment as strings (non-UTF-8 variables are dropped).
    pub vars: Vec<(String, String)>,
    /// Holds every secret-looking value of `vars`.
    pub redactor: Arc<Redactor>,
}

impl Environment {
    /// The environment of this process.
    pub fn from_process() -> Environment {
        let vars: Vec<(String, String)> = std::env::vars_os()
            .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
            .collect();
        Environment::new(vars)
    }

    /// An environment of these variables.
    pub fn new(vars: Vec<(String, String)>) -> Environment {
        let redactor = Arc::new(Redactor::from_env(vars.iter().cloned()));
        Environment { vars, redactor }
    }

    /// The value of `name`, if set.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

/// Where and how to work, as the global flags say.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// The repository (`--repo`).
    pub repo: PathBuf,
    /// `--config`.
    pub config: Option<PathBuf>,
    pub llm_provider: Option<LlmProvider>,
    pub model: Option<String>,
    /// `--fast-model`.
    pub fast_model: Option<String>,
    pub llm_base_url: Option<String>,
    /// `--worktrees-dir` (`META_AGENT_WORKTREES_DIR`): where local runs' worktrees live.
    pub worktrees_dir: Option<PathBuf>,
    /// `--pause-at`: pause points added to the configuration's.
    pub pause_at: Vec<String>,
    /// More detail in what a person reads.
    pub verbose: bool,
    /// `-q`: no live display, only the outcome on stdout.
    pub quiet: bool,
}
