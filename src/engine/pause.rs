//! Interruption is a clean pause. A SIGTERM/SIGINT ([`crate::protocol::interrupt`]) stops the
//! step under way — its command's process tree is stopped by the executor, an LLM request is
//! dropped after a short grace — and the step is forgotten (redone on resume). What the worktree
//! holds is kept: checked by the tamper guard and the patch gate like any work in progress and
//! committed as the session's checkpoint (`WIP: ...`, with the session trailer). The state is
//! saved with outcome `interrupted` and the phase of the step that was stopped, so `resume` (and
//! `/agent fix` on GitHub) continues from there; the verified commit later goes on top of the
//! checkpoint.

use std::future::Future;
use std::time::Duration;

use super::run::{Ending, Engine, EngineError};
use super::state::LoopState;
use crate::exec::CommandRunner;
use crate::git::Repository;
use crate::protocol::builder::Builder;
use crate::protocol::event::LoopPhase;
use crate::protocol::records::RunOutcome;
use crate::render::outcome;

/// How long a step may go on after the interruption (its command being stopped by the
/// executor) before it is dropped.
pub const STOP_GRACE: Duration = Duration::from_secs(3);

/// Whether a run in `phase` is still under way (a pause has something to stop).
pub fn running(phase: LoopPhase) -> bool {
    match phase {
        LoopPhase::Idle
        | LoopPhase::Planning
        | LoopPhase::Acting
        | LoopPhase::Observing
        | LoopPhase::Deciding => true,
        LoopPhase::Complete
        | LoopPhase::Escalated
        | LoopPhase::Failed
        | LoopPhase::AwaitingGuidance => false,
    }
}

impl<R: CommandRunner, G: Repository, B: Builder> Engine<'_, R, G, B> {
    /// `step`'s result, or `None` when the run was interrupted and the step did not end within
    /// [`STOP_GRACE`] after that (it is dropped).
    pub(super) async fn unless_interrupted<T>(&self, step: impl Future<Output = T>) -> Option<T> {
        let stopped = async {
            self.interrupt.wait().await;
            tokio::time::sleep(STOP_GRACE).await;
        };
        tokio::select! {
            biased;
            done = step => Some(done),
            () = stopped => None,
        }
    }

    /// Pauses the run: the work in progress checked and committed as the session's checkpoint,
    /// the outcome `interrupted` (the phase stays: that step runs again on resume).
    pub(super) fn pause(&self, state: &mut LoopState, why: &str) -> Result<Ending, EngineError> {
        tracing::warn!("{why}: pausing in {}", state.phase.as_str());
        let mut ending = Ending::default();
        if !state.dry_run && !self.repo.changed_files()?.is_empty() {
            self.checked_change(state)?;
            let message = self.pause_message(state, why);
            let (commit, note) = self.commit_wip(state, &message)?;
            if let Some(sha) = &commit {
                state.checkpoint = Some(sha.clone());
                state.worktree_diff.clear();
            }
            ending.commit = commit;
            ending.refused_wip = (!note.is_empty()).then_some(note);
        }
        state.outcome = Some(RunOutcome::Interrupted);
        state.interrupted = Some(why.to_owned());
        Ok(ending)
    }

    fn pause_message(&self, state: &LoopState, why: &str) -> String {
        self.redacted(&format!(
            "WIP: meta-agent: {}\n\nInterrupted: {why}.\nThe gates have not verified this yet; \
             `meta-agent resume` (`/agent fix` on GitHub) continues.\n\n{}",
            state.task.title,
            outcome::trailer_block(state)
        ))
    }
}
