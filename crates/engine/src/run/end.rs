//! How a run ends: complete (the verified commit), escalated (the work in progress kept, the
//! report written), out of time, or stopped by a setup that failed; and the closing event.

use super::*;
use act::patch_refused;

impl<R: CommandRunner, G: Repository, B: Builder> Engine<'_, R, G, B> {
    /// Ends the run with its commit: of `verified`, the tree the pristine verification passed,
    /// when there is one, else of the worktree.
    pub(super) fn complete(
        &self,
        state: &mut LoopState,
        verified: Option<&str>,
    ) -> Result<Ending, EngineError> {
        let failing = !meta_agent_protocol::records::gates_passed(&state.gates);
        // A paused run's work is in its checkpoint commit, not in the worktree's diff.
        let changed = !state.worktree_diff.is_empty() || state.checkpoint.is_some();
        if !changed && failing {
            let signatures = state.signatures.len();
            return self.escalate(state, EscalationReason::PreexistingFailures { signatures });
        }
        if !changed {
            state.outcome = Some(RunOutcome::NothingToDo);
            self.transition(
                state,
                LoopPhase::Complete,
                "the gates pass and nothing needed to change",
            );
            return Ok(Ending::default());
        }
        let message = self.redacted(&outcome::commit_message(state, self.config.commit.trailers));
        // Killed after its commit: the commit (hindsight's record included) is adopted as it is.
        let adopted = !state.dry_run && self.committer().adoptable_head(state, &message)?.is_some();
        if !state.dry_run && !adopted {
            let refused = self.committer().refusals(state, PatchStage::Commit)?;
            if !refused.is_empty() {
                return self.escalate(state, patch_refused(&refused, false));
            }
        }
        if !adopted {
            improve::record_success(self.hindsight_ctx(), state).map_err(EngineError::Hindsight)?;
        }
        let message = self.redacted(&outcome::commit_message(state, self.config.commit.trailers));
        let commit = if state.dry_run {
            None
        } else {
            let refused = self.committer().refusals(state, PatchStage::Commit)?;
            if !refused.is_empty() {
                return self.escalate(state, patch_refused(&refused, true));
            }
            let sha = match verified {
                Some(tree) => self.committer().verified(state, &message, tree)?,
                None => self.committer().once(state, &message)?,
            };
            self.events.emit(&Event::Committed {
                branch: state.branch.clone(),
                commit: sha.clone(),
                iterations: state.iterations_run(),
            });
            Some(sha)
        };
        state.outcome = Some(RunOutcome::Committed);
        self.transition(state, LoopPhase::Complete, "all gates passed");
        if commit.is_some() && self.arrive(state, &super::super::pause::before_push(state)) {
            self.hold_before_push(state)?;
        }
        Ok(Ending {
            commit_message: Some(message),
            commit,
            wip_refused: None,
        })
    }

    /// Ends the run without a commit: the reason recorded in hindsight and the state, the work
    /// in progress committed (what the patch gate allows of it), the report written.
    pub(super) fn escalate(
        &self,
        state: &mut LoopState,
        reason: EscalationReason,
    ) -> Result<Ending, EngineError> {
        let to = if reason.awaits_guidance() {
            LoopPhase::AwaitingGuidance
        } else {
            LoopPhase::Escalated
        };
        let text = reason.describe();
        let wip_message = self.redacted(&outcome::wip_message(state, &text));
        // Killed after its WIP commit: the commit (hindsight's record included) is adopted.
        let mut commit = if state.dry_run {
            None
        } else {
            self.committer().adoptable_head(state, &wip_message)?
        };
        if commit.is_none() && reason.blames_the_code() {
            improve::record_escalation(self.hindsight_ctx(), state, &text)
                .map_err(EngineError::Hindsight)?;
        }
        let mut wip_refused = None;
        if commit.is_none() && !state.dry_run && !self.repo.changed_files()?.is_empty() {
            let (wip, refused) = self.committer().wip(state, &wip_message)?;
            wip_refused = refused;
            commit = wip;
        }
        let branch = (!state.dry_run).then(|| state.branch.clone());
        self.events.emit(&Event::Escalated {
            reason: text.clone(),
            branch,
        });
        state.outcome = Some(RunOutcome::Escalated);
        state.escalation = Some(reason);
        self.transition(state, to, &text);
        Ok(Ending {
            commit_message: None,
            commit,
            wip_refused,
        })
    }

    /// Whether the run's deadline passed before a step that takes time (a decision, which may
    /// commit gates that passed, still happens).
    pub(super) fn deadline_passed(&self, state: &LoopState) -> bool {
        let costly = match state.phase {
            LoopPhase::Idle | LoopPhase::Planning | LoopPhase::Acting | LoopPhase::Observing => {
                true
            }
            LoopPhase::Deciding
            | LoopPhase::Complete
            | LoopPhase::Escalated
            | LoopPhase::Failed
            | LoopPhase::AwaitingGuidance => false,
        };
        costly && self.deadline.is_spent()
    }

    /// The deadline passed: the run ends escalated ("the time budget is spent"), the work in
    /// progress committed.
    pub(super) fn time_spent(&self, state: &mut LoopState) -> Result<Ending, EngineError> {
        let what = meta_agent_protocol::ending::BudgetKind::WallClock;
        self.escalate(state, EscalationReason::Budget { what })
    }

    /// The setup commands, in order, with the network on, before anything of the model's exists.
    pub(super) async fn setup(&self) -> Result<(), meta_agent_gates::setup::SetupFailure> {
        if self.config.setup.is_empty() {
            return Ok(());
        }
        let workdir = self.repo.workdir();
        let ctx = self.observer().gate_context(&workdir);
        meta_agent_gates::setup::run_setup(&ctx, &self.config.setup).await
    }

    /// A failed setup command ends the run before the build: escalated, naming the command,
    /// nothing committed and nothing recorded in hindsight (the code is not at fault).
    pub(super) fn setup_failed(
        &self,
        state: &mut LoopState,
        failure: &meta_agent_gates::setup::SetupFailure,
    ) -> Ending {
        let reason = EscalationReason::SetupFailed {
            command: self.redacted(&failure.command),
            reason: self.redacted(&failure.reason),
            tail: self.redacted(&failure.tail),
        };
        let text = reason.describe();
        self.events.emit(&Event::Escalated {
            reason: text.clone(),
            branch: None,
        });
        state.outcome = Some(RunOutcome::Escalated);
        state.escalation = Some(reason);
        self.transition(state, LoopPhase::Escalated, &text);
        Ending::default()
    }

    pub(super) fn finish(&self, state: &LoopState) {
        let outcome = state.outcome.unwrap_or(RunOutcome::Failed);
        self.events.emit(&Event::RunFinished {
            outcome,
            iterations: state.iterations_run(),
            llm_calls: state.usage.llm_calls,
            duration_ms: state.usage.elapsed_ms,
        });
    }
}

/// The tree this iteration's observation verified on a pristine checkout, if it did.
pub(super) fn verified_now(state: &LoopState) -> Option<String> {
    state
        .verified
        .as_ref()
        .filter(|verified| verified.iteration == state.iteration)
        .map(|verified| verified.tree.clone())
}
