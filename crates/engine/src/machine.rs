//! The engine's parts ([`Engine`]: everything the loop talks to), why a run cannot go on
//! ([`EngineError`]) and what its last decision produced ([`Ending`]).
//!
//! The loop's steps (plan, act, observe, decide, end, pause) are methods of [`Engine`]: they
//! move the state from phase to phase and record what happened. What they do to the world is
//! done by three units, each a struct of its own holding only the parts it needs, borrowed from
//! the engine: the [`ChangeGuard`] checks what an act left (tamper, evidence, nested
//! repositories) and puts the worktree back; the `Observer` (in `observe`) runs the gates where
//! the candidate plan says, re-runs failing tests and verifies on a pristine checkout; the
//! [`Committer`] makes every commit, through the patch gate. The steps name this module, never
//! each other's; the units name neither it nor the steps.

use std::path::Path;

use super::commit::Committer;
use super::guard::ChangeGuard;
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
    pub(crate) fn guard(&self) -> ChangeGuard<'_, G> {
        ChangeGuard {
            repo: self.repo,
            policy: self.policy,
            redactor: self.sessions.redactor(),
            events: self.events,
            config: self.config,
        }
    }

    /// The observation unit: the gates run where the candidate plan says.
    pub(crate) fn observer(&self) -> super::observe::Observer<'_, R, G> {
        super::observe::Observer {
            config: self.config,
            policy: self.policy,
            runner: self.runner,
            repo: self.repo,
            events: self.events,
            parent_env: self.parent_env,
            report_root: self.report_root,
            deadline: self.deadline,
            committer: self.committer(),
        }
    }

    /// The commit unit: the only way the loop commits (through the patch gate).
    pub(crate) fn committer(&self) -> Committer<'_, G> {
        Committer {
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
