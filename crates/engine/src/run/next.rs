//! The Deciding step: what the observation means for the run ([`super::super::decide`] over
//! the state), the baseline's own decision, and the requirements review before a commit.

use super::*;
use crate::observe::pristine::Pristine;
use end::verified_now;

impl<R: CommandRunner, G: Repository, B: Builder> Engine<'_, R, G, B> {
    pub(super) async fn decide_next(&self, state: &mut LoopState) -> Result<Ending, EngineError> {
        let after_baseline = state.before_any_act() && state.transient_error.is_none();
        let decision = if after_baseline {
            self.baseline_decision(state)
        } else {
            self.decision(state)
        };
        self.events.emit(&Event::Decided {
            iteration: state.iteration,
            decision: decision.kind(),
            reason: decision.reason(),
        });
        let decision = match decision {
            Decision::Complete => self.review(state).await?,
            other => other,
        };
        // The final verification: the gates on a pristine checkout of the tree to commit, unless
        // this iteration's observation already ran them there.
        let (decision, verified) = match (decision, verified_now(state)) {
            (Decision::Complete, Some(tree)) => (Decision::Complete, Some(tree)),
            (Decision::Complete, None) => self.pristine_decision(state).await?,
            (other, _) => (other, None),
        };
        match decision {
            Decision::Complete => {
                if self.arrive(state, &super::super::pause::before_commit(state)) {
                    return Ok(Ending::default());
                }
                self.complete(state, verified.as_deref())
            }
            Decision::Continue { plan, reason } => {
                // Every act is an iteration: the baseline observation is iteration 0, the first
                // act after it iteration 1, so `--max-iterations N` allows N acts.
                state.iteration += 1;
                state.plan = Some(plan);
                tracing::info!(
                    iteration = state.iteration,
                    max = state.max_iterations,
                    "improve iteration: {reason}"
                );
                self.transition(state, LoopPhase::Planning, &reason);
                Ok(Ending::default())
            }
            Decision::Retry { delay, reason } => {
                state.transient_retries += 1;
                state.transient_error = None;
                tokio::time::sleep(delay).await;
                self.transition(state, LoopPhase::Acting, &reason);
                Ok(Ending::default())
            }
            Decision::Escalate { reason } | Decision::AwaitGuidance { reason } => {
                self.escalate(state, reason)
            }
        }
    }

    /// What follows the baseline: hindsight for the failures the task asks about, then the
    /// model; a green baseline builds the task (or has nothing to do without a model).
    pub(super) fn baseline_decision(&self, state: &LoopState) -> Decision {
        baseline::after_baseline(&baseline::BaselineInput {
            passed: meta_agent_protocol::records::gates_passed(&state.gates),
            start_failures: &meta_agent_protocol::records::start_failures(&state.gates),
            asked: self.baseline_asked(state),
            reproduce: state.task.source.is_failing_check(),
            hindsight_available: improve::has_untried(self.hindsight_ctx(), state),
            agent_available: self.builder.available(state.builder_calls),
        })
    }

    /// Whether the task asks about the baseline's failures (true when there was no baseline).
    pub(super) fn baseline_asked(&self, state: &LoopState) -> bool {
        state.baseline().is_none_or(|step| {
            step.signatures.is_empty() || baseline::task_asks_about(&state.task, step)
        })
    }

    /// After the gates first pass on a change, when the task states requirements and another
    /// iteration could act on the verdict: the builder's requirements review. Missing
    /// requirements turn completion into one more fix; anything else leaves it complete.
    pub(super) async fn review(&self, state: &mut LoopState) -> Result<Decision, EngineError> {
        let can_act =
            state.iteration < state.max_iterations && self.builder.available(state.builder_calls);
        if state.reviewed
            || state.task.acceptance.is_empty()
            || state.worktree_diff.is_empty()
            || !can_act
        {
            return Ok(Decision::Complete);
        }
        state.reviewed = true;
        let request = meta_agent_protocol::builder::ReviewRequest {
            task: &state.task,
            diff: &state.worktree_diff,
            progress: Progress::to(self.events),
        };
        let Some(report) = self.builder.review(request).await? else {
            return Ok(Decision::Complete);
        };
        state.usage.add(&report.usage);
        tracing::info!("{}", report.line);
        if report.missing.is_empty() {
            return Ok(Decision::Complete);
        }
        state.review_missing = report.missing;
        Ok(Decision::Continue {
            plan: Plan::AgentFix {
                different_approach: false,
            },
            reason: format!("the requirements review: {}", report.line),
        })
    }

    /// The decision once the loop found the change complete: complete with the verified tree,
    /// as before when the pristine run is skipped, or (the gates fail there) one more
    /// iteration when the budgets allow, else an escalation naming what the worktree held.
    pub(super) async fn pristine_decision(
        &self,
        state: &mut LoopState,
    ) -> Result<(Decision, Option<String>), EngineError> {
        let failure = match self.observer().verify_pristine(state).await? {
            Pristine::Verified { tree } => return Ok((Decision::Complete, Some(tree))),
            Pristine::Skipped => return Ok((Decision::Complete, None)),
            Pristine::Failed(failure) => failure,
            Pristine::Environment(failures) => {
                let reason = EscalationReason::Environment {
                    failures,
                    pristine: true,
                };
                let decision = Decision::Escalate { reason };
                self.events.emit(&Event::Decided {
                    iteration: state.iteration,
                    decision: decision.kind(),
                    reason: decision.reason(),
                });
                return Ok((decision, None));
            }
        };
        let decision = match self.decision(state) {
            Decision::Continue { plan, reason } => Decision::Continue {
                plan,
                reason: format!("the gates fail on a pristine checkout of the change: {reason}"),
            },
            Decision::Complete
            | Decision::Retry { .. }
            | Decision::Escalate { .. }
            | Decision::AwaitGuidance { .. } => Decision::Escalate {
                reason: failure.reason(),
            },
        };
        self.events.emit(&Event::Decided {
            iteration: state.iteration,
            decision: decision.kind(),
            reason: decision.reason(),
        });
        Ok((decision, None))
    }
}
