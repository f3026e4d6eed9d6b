//! The engine's parts ([`Engine`]: everything the loop talks to), why a run cannot go on
//! ([`EngineError`]) and what its last decision produced ([`Ending`]). The loop's steps are
//! methods of [`Engine`] in their own modules (`run`, `observe`, `pristine`, `pause`, `once`,
//! ...); they name this module, never each other's, for the engine itself and the two worktree
//! helpers they share ([`restore_path`], [`file_section`]).

use std::path::Path;

use super::improve::HindsightView;
use super::state::{SessionStore, SessionStoreError};
use meta_agent_config::Config;
use meta_agent_exec::CommandRunner;
use meta_agent_git::{GitError, Identity, Repository};
use meta_agent_protocol::builder::{BuildError, Builder};
use meta_agent_protocol::ending::WipRefused;
use meta_agent_protocol::event::EventSink;

/// Why a run could not go on (not: why the code is wrong — that is an escalation).
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Session(#[from] SessionStoreError),
    #[error(transparent)]
    Git(#[from] GitError),
    #[error("hindsight: {0}")]
    Hindsight(#[from] super::improve::HindsightStepError),
    #[error("the builder failed: {0}")]
    Builder(#[from] BuildError),
}

/// Everything the loop talks to.
pub struct Engine<'a, R: CommandRunner, G: Repository, B: Builder> {
    pub config: &'a Config,
    /// What may be read, written and run: built once from the configuration.
    pub policy: &'a meta_agent_policy::Policy,
    pub runner: &'a R,
    pub repo: &'a G,
    pub builder: &'a B,
    pub events: &'a dyn EventSink,
    pub sessions: &'a SessionStore,
    pub hindsight: &'a HindsightView,
    pub parent_env: &'a [(String, String)],
    /// Where gates write their reports (one directory per gate, reused per observation).
    pub report_root: &'a Path,
    pub identity: Identity,
    /// The run's one deadline (see [`meta_agent_protocol::deadline`]).
    pub deadline: meta_agent_protocol::deadline::Deadline,
    /// A SIGTERM/SIGINT: the run pauses at once (see [`super::pause`]).
    pub interrupt: meta_agent_protocol::interrupt::Interrupt,
    /// The pause points (`pause:`, `--pause-at`) and their counts, shared with the builder.
    pub pauses: &'a meta_agent_protocol::pause::PauseGate,
}

impl<R: CommandRunner, G: Repository, B: Builder> Engine<'_, R, G, B> {
    /// The change-check unit: what an act left, checked and put back where refused.
    pub(crate) fn guard(&self) -> super::guard::ChangeGuard<'_, G> {
        super::guard::ChangeGuard {
            repo: self.repo,
            policy: self.policy,
            redactor: self.sessions.redactor(),
            events: self.events,
            allow_test_edits: self.config.commit.allow_test_edits,
        }
    }

    /// The commit unit: the only way the loop commits (through the patch gate).
    pub(crate) fn committer(&self) -> super::commit::Committer<'_, G> {
        super::commit::Committer {
            repo: self.repo,
            policy: self.policy,
            redactor: self.sessions.redactor(),
            identity: &self.identity,
            events: self.events,
            records: &self.config.hindsight.path,
        }
    }
}

/// What the last decision produced, for the report.
#[derive(Debug, Default)]
pub(crate) struct Ending {
    pub(crate) commit_message: Option<String>,
    pub(crate) commit: Option<String>,
    /// What the patch gate refused of the work in progress (the report renders its note).
    pub(crate) wip_refused: Option<WipRefused>,
}

/// Replaces whatever is at `path` under `root` (a file, a symlink, never followed) with `blob`,
/// or removes it when `blob` is `None`, through [`meta_agent_fsafe`]: beneath the worktree, never
/// through a link. False when a directory on the way is a symlink or the filesystem says no. (A
/// symlink in HEAD comes back as a file holding its target.)
pub(crate) fn restore_path(root: &Path, path: &str, blob: Option<Vec<u8>>) -> bool {
    let Ok(files) = meta_agent_fsafe::Beneath::open(root) else {
        return false;
    };
    let path = Path::new(path);
    files.remove(path).is_ok() && blob.is_none_or(|bytes| files.write(path, &bytes, false).is_ok())
}

/// The part of a unified diff about one file.
pub(crate) fn file_section(diff: &str, path: &str) -> String {
    let header = format!("diff --git a/{path} b/{path}");
    let Some(start) = diff.find(&header) else {
        return String::new();
    };
    let rest = &diff[start..];
    let end = rest[1..]
        .find("\ndiff --git ")
        .map_or(rest.len(), |i| i + 2);
    rest[..end].to_owned()
}
