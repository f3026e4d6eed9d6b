//! The loop itself: the effectful shell around [`super::decide::decide`].
//!
//! Idle → Planning → Acting → Observing → Deciding → (Planning again | Complete | Escalated |
//! AwaitingGuidance | Failed). The state is saved atomically before every step, so a run killed
//! at any point resumes from its last completed step: an interrupted Acting step is redone on the
//! worktree as the last completed step left it, an interrupted Observing step runs the gates
//! again. Nothing here decides; it gathers, acts, records and emits events.
//!
//! No commit happens without the patch gate ([`super::patch_gate`]): the one unit that commits
//! runs it on everything it commits; a refused change is not committed but escalated; from the
//! work in progress the refused paths are put back as HEAD has them and the rest is committed
//! (nothing is, when the refusal is about the whole change), with the refusals in the report
//! and a `PatchRefused` event.

mod act;
mod end;
mod next;
mod observe;

use meta_agent_render::reason::Describe;
use std::time::Instant;

use super::baseline;
use super::decide::{self, Budgets, Decision, DecisionInput};
use super::improve;
use super::patch_gate::Refusal;
use super::state::{LoopState, Recovery, SessionStoreError};
use meta_agent_exec::CommandRunner;
use meta_agent_git::Repository;
use meta_agent_protocol::builder::{ActRequest, BuildError, Builder, Progress};
use meta_agent_protocol::ending::EscalationReason;
use meta_agent_protocol::event::{Event, LoopPhase};
use meta_agent_protocol::records::{
    ActEnd, ChangedFile, Plan, ResolutionTried, RunOutcome, StepRecord,
};
use meta_agent_protocol::refusal::PatchStage;
use meta_agent_protocol::task::Task;
use meta_agent_render::outcome;

/// How a session is resumed.
#[derive(Debug, Clone, Default)]
pub struct ResumeOptions {
    /// Guidance from a maintainer, for the next prompt.
    pub guidance: Option<String>,
    /// Pause again at the next arrival at the location the run paused at (`--step`).
    pub step: bool,
}

/// How to start a run.
#[derive(Debug, Clone)]
pub struct StartOptions {
    /// From [`new_session_id`].
    pub session: String,
    pub dry_run: bool,
    pub max_iterations: u32,
    /// The user's uncommitted work the run starts from (a local run's snapshot commit, checked
    /// out as HEAD); `None` when the run starts from a commit of the repository.
    pub snapshot: Option<meta_agent_protocol::records::UserSnapshot>,
}

pub(super) use super::machine::Ending;
pub use super::machine::{Engine, EngineError};
pub use meta_agent_render::run_report::RunReport;

/// Commit subjects of the history read to learn the repository's style.
const STYLE_SUBJECTS: usize = 30;

/// What an act did, as its step record keeps it.
struct Acted {
    actions: Vec<String>,
    resolutions: Vec<ResolutionTried>,
    outcome: String,
    ended: ActEnd,
}

pub use meta_agent_protocol::clock::{new_session_id, now_ms};

impl<R: CommandRunner, G: Repository, B: Builder> Engine<'_, R, G, B> {
    /// Starts a new session for `task`.
    pub async fn start(&self, task: Task, options: StartOptions) -> Result<RunReport, EngineError> {
        let head = self.repo.head()?;
        let session = options.session.clone();
        let branch = if options.dry_run {
            head.branch.clone().unwrap_or_else(|| "HEAD".into())
        } else {
            self.create_branch(&task, &session)?
        };
        let subjects = self
            .repo
            .recent_subjects(&head.commit, STYLE_SUBJECTS)
            .unwrap_or_default();
        let mut state = LoopState {
            dry_run: options.dry_run,
            started_unix_ms: now_ms(),
            snapshot: options.snapshot,
            commit_style: meta_agent_render::subject::style_of(&subjects),
            ..LoopState::new(
                session.clone(),
                task,
                branch,
                head.commit,
                options.max_iterations,
            )
        };
        // Saved before the first event: a run killed at any event from here on can be resumed.
        self.sessions.save(&state)?;
        if !options.dry_run {
            self.events.emit(&Event::GitOperation {
                operation: "branch".into(),
                target: state.branch.clone(),
                result: "created".into(),
            });
        }
        self.events.emit(&Event::RunStarted {
            session,
            task: state.task.title.clone(),
            max_iterations: state.max_iterations,
        });
        self.drive(&mut state, true).await
    }

    /// Resumes a session killed earlier (or awaiting guidance), from its last completed step.
    pub async fn resume(
        &self,
        session: Option<&str>,
        options: ResumeOptions,
    ) -> Result<RunReport, EngineError> {
        let ResumeOptions { guidance, step } = options;
        let mut state = self.sessions.load(session)?;
        let ended = matches!(
            state.phase,
            LoopPhase::Complete | LoopPhase::Escalated | LoopPhase::Failed
        );
        if ended && guidance.is_none() {
            let outcome = state
                .outcome
                .as_ref()
                .map_or("ended", |o| o.as_str())
                .to_owned();
            return Err(SessionStoreError::Ended(state.session.clone(), outcome).into());
        }
        if state.outcome == Some(RunOutcome::Interrupted) {
            state.outcome = None;
            state.interrupted = None;
        }
        let paused = state.paused.take();
        if step {
            state.pauses.step = paused.as_ref().map(|hit| hit.at);
        }
        state.recoveries.push(Recovery {
            phase: state.phase,
            iteration: state.iteration,
            at_unix_ms: now_ms(),
        });
        self.events.emit(&Event::Recovered {
            session: state.session.clone(),
            phase: state.phase,
            iteration: state.iteration,
        });
        if !state.dry_run && self.repo.head()?.branch.as_deref() != Some(state.branch.as_str()) {
            self.repo.checkout_existing(&state.branch)?;
        }
        self.guard().restore_last_completed(&state)?;
        if let Some(text) = guidance {
            state.task.guidance.push(text);
            // Guidance at a sub-task plan is a word against it: the act plans again with it.
            state.sub_plan = None;
            // At a pause point the run goes on from where it stopped; the guidance reaches the
            // next prompt.
            if state.phase != LoopPhase::Planning && paused.is_none() {
                state.iteration += 1;
                state.max_iterations = state.max_iterations.max(state.iteration);
                state.plan = Some(Plan::AgentFix {
                    different_approach: true,
                });
                state.outcome = None;
                self.transition(
                    &mut state,
                    LoopPhase::Planning,
                    "guidance received from a maintainer",
                );
            }
        }
        let untouched = state.builder_calls == 0
            && state.worktree_diff.is_empty()
            && state.checkpoint.is_none()
            && self.repo.changed_files()?.is_empty();
        self.drive(&mut state, untouched).await
    }

    fn create_branch(&self, task: &Task, session: &str) -> Result<String, EngineError> {
        let prefix = &self.config.commit.branch_prefix;
        let slug = meta_agent_git::branch_slug(&task.title);
        let first = format!("{prefix}{slug}");
        let fallback = format!(
            "{prefix}{slug}-{}",
            session.rsplit('-').next().unwrap_or(session)
        );
        let name = if self.repo.checkout_new_branch(&first).is_ok() {
            first
        } else {
            self.repo.checkout_new_branch(&fallback)?;
            fallback
        };
        Ok(name)
    }

    /// Runs the loop to its end. `setup`: run the setup commands first (a fresh run, or a resumed
    /// one whose worktree holds nothing the model wrote: they run with the network on).
    async fn drive(&self, state: &mut LoopState, setup: bool) -> Result<RunReport, EngineError> {
        let resumed_at = Instant::now();
        let elapsed_before = state.usage.elapsed_ms;
        let mut last_gates = None;
        let mut ending = Ending::default();
        if !meta_agent_gates::runner::network_can_be_cut() {
            tracing::warn!(
                "this machine cannot cut the network (no unprivileged user namespaces): the gates \
                 of this run will run with the network ON"
            );
        }
        self.hindsight.begin(state).await;
        self.leave_out_environment(state);
        if setup {
            match self.setup().await {
                Ok(()) => self.settle_after_setup(state),
                Err(failure) if self.interrupt.reason().is_none() => {
                    ending = self.setup_failed(state, &failure);
                }
                Err(_) => {}
            }
        }
        loop {
            state.usage.elapsed_ms =
                elapsed_before + u64::try_from(resumed_at.elapsed().as_millis()).unwrap_or(0);
            self.sessions.save(state)?;
            if let Some(why) = self.interrupt.reason()
                && super::pause::running(state.phase)
            {
                ending = self.pause(state, &why)?;
                break;
            }
            if let Some((hit, view)) = self.pauses.take_hit() {
                ending = self.pause_at(state, hit, view)?;
                break;
            }
            if self.deadline_passed(state) {
                ending = self.time_spent(state)?;
            }
            match state.phase {
                LoopPhase::Idle if self.config.gates.is_empty() => {
                    self.transition(state, LoopPhase::Planning, "run started (no gates)");
                }
                LoopPhase::Idle => self.transition(
                    state,
                    LoopPhase::Observing,
                    "baseline: observe the gates before acting",
                ),
                LoopPhase::Planning => self.plan(state),
                LoopPhase::Acting => {
                    self.settle_before_first_act(state);
                    self.observer().seed_before_first_act(state);
                    let before = state.clone();
                    match self.unless_interrupted(self.act(state)).await {
                        Some(acted)
                            if self.interrupt.reason().is_none() && !self.pauses.stopping() =>
                        {
                            if let Some(refused) = acted? {
                                ending = refused;
                            }
                        }
                        // Stopped (a signal, a pause point): the step is redone on resume (its
                        // edits are kept).
                        Some(_) | None => *state = before,
                    }
                }
                LoopPhase::Observing => {
                    let before = state.clone();
                    match self.unless_interrupted(self.observe(state)).await {
                        Some(gates) if self.interrupt.reason().is_none() => {
                            last_gates = Some(gates);
                            if super::pause::running(state.phase) {
                                self.arrive(state, &super::pause::after_gates(state));
                            }
                        }
                        // Gates cut short say nothing: they run again on resume.
                        Some(_) | None => *state = before,
                    }
                }
                LoopPhase::Deciding => ending = self.decide_next(state).await?,
                LoopPhase::Complete
                | LoopPhase::Escalated
                | LoopPhase::Failed
                | LoopPhase::AwaitingGuidance => break,
            }
        }
        self.finish(state);
        if state.phase != LoopPhase::AwaitingGuidance {
            self.observer().drop_pristine_material(state);
        }
        self.sessions.save(state)?;
        Ok(RunReport {
            diff: self.repo.diff()?,
            state: state.clone(),
            gates: last_gates,
            commit_message: ending.commit_message,
            commit: ending.commit,
            wip_refused: ending.wip_refused,
        })
    }

    pub(super) fn transition(&self, state: &mut LoopState, to: LoopPhase, reason: &str) {
        tracing::debug!(
            iteration = state.iteration,
            "{} -> {}: {reason}",
            state.phase.as_str(),
            to.as_str()
        );
        self.events.emit(&Event::StateChanged {
            from: state.phase,
            to,
            iteration: state.iteration,
            reason: reason.to_owned(),
        });
        state.phase = to;
    }

    fn plan(&self, state: &mut LoopState) {
        let plan = state.plan.clone().unwrap_or(Plan::Build);
        let reason = match &plan {
            Plan::Build => "build the change from the requirements".to_owned(),
            Plan::Hindsight => format!(
                "iteration {}: apply known resolutions (no LLM)",
                state.iteration
            ),
            Plan::AgentFix { .. } => {
                format!("iteration {}: ask the agent for a fix", state.iteration)
            }
        };
        state.plan = Some(plan);
        self.transition(state, LoopPhase::Acting, &reason);
        self.arrive(state, &super::pause::after_plan(state));
    }

    pub(super) fn hindsight_ctx(&self) -> improve::HindsightCtx<'_, R, G> {
        improve::HindsightCtx {
            view: self.hindsight,
            runner: self.runner,
            repo: self.repo,
            events: self.events,
            parent_env: self.parent_env,
            config: self.config,
            policy: self.policy,
        }
    }

    pub(super) fn decision(&self, state: &LoopState) -> Decision {
        let signatures = state.signature_ids();
        let previous = state.previous_signature_ids();
        let gates_passed = meta_agent_protocol::records::gates_passed(&state.gates)
            || !baseline::preexisting_left(state).is_empty();
        let budgets = Budgets {
            max_tokens: self.config.llm.max_tokens,
            max_cost_usd: self.config.llm.max_cost_usd,
            max_calls: self.config.llm.max_calls,
            wall_clock: Some(self.config.loop_.wall_clock),
        };
        decide::decide(&DecisionInput {
            iteration: state.iteration,
            max_iterations: state.max_iterations,
            gates_passed,
            signatures: &signatures,
            previous_signatures: previous.as_ref(),
            usage: &state.usage,
            budgets: &budgets,
            transient_error: state.transient_error.as_deref(),
            transient_retries: state.transient_retries,
            model_refusal: state.model_refusal.as_ref(),
            hindsight_available: improve::has_untried(self.hindsight_ctx(), state),
            agent_available: self.builder.available(state.builder_calls),
        })
    }

    pub(super) fn redacted(&self, text: &str) -> String {
        self.sessions.redactor().redact_text(text).into_owned()
    }
}
