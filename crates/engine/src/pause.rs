//! Interruption is a clean pause. A SIGTERM/SIGINT ([`meta_agent_protocol::interrupt`]) stops the
//! step under way — its command's process tree is stopped by the executor, an LLM request is
//! dropped after a short grace — and the step is forgotten (redone on resume). What the worktree
//! holds is kept: checked by the tamper guard and the patch gate like any work in progress and
//! committed as the session's checkpoint (`WIP: ...`, with the session trailer). The state is
//! saved with outcome `interrupted` and the phase of the step that was stopped, so `resume` (and
//! `/agent fix` on GitHub) continues from there; the verified commit later goes on top of the
//! checkpoint.

use std::future::Future;
use std::time::Duration;

use super::machine::{Ending, Engine, EngineError};
use super::state::LoopState;
use meta_agent_exec::CommandRunner;
use meta_agent_git::Repository;
use meta_agent_protocol::builder::Builder;
use meta_agent_protocol::event::{Event, LoopPhase};
use meta_agent_protocol::pause::context::{ModelSettings, PauseContext, StepLine};
use meta_agent_protocol::pause::{AgentView, Arrival, Field, Location, PauseHit, Values};
use meta_agent_protocol::records::{GateStatus, Plan, RunOutcome};
use meta_agent_render::outcome;

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
            self.guard().checked_change(state)?;
            let message = self.pause_message(state, why);
            let (commit, note) = self.committer().wip(state, &message)?;
            if let Some(sha) = &commit {
                state.checkpoint = Some(sha.clone());
                state.worktree_diff.clear();
            }
            ending.commit = commit;
            ending.wip_refused = note;
        }
        state.outcome = Some(RunOutcome::Interrupted);
        state.interrupted = Some(why.to_owned());
        Ok(ending)
    }

    /// Arrives at a pause point of the loop (not of an act); true when the run pauses there (the
    /// loop takes the hit at its next turn).
    pub(super) fn arrive(&self, state: &mut LoopState, arrival: &Arrival) -> bool {
        self.pauses.load(&state.pauses);
        let paused = self.pauses.reach(arrival, || None);
        state.pauses = self.pauses.counts();
        paused
    }

    /// Pauses the run at a pause point: the hit recorded (the arrivals up to it replayed when the
    /// run comes back to them on resume), the context written, then the pause of [`Engine::pause`].
    pub(super) fn pause_at(
        &self,
        state: &mut LoopState,
        hit: PauseHit,
        view: Option<AgentView>,
    ) -> Result<Ending, EngineError> {
        if hit.at.reached_again_on_resume() {
            state.pauses.replay = hit.replay.clone();
        }
        state.pauses.step = None;
        if let Some(plan) = view.as_ref().and_then(|view| view.sub_plan.clone()) {
            // The plan the maintainers are shown is the plan the act runs if they let it go on.
            state.sub_plan = Some(plan);
        }
        let why = meta_agent_render::pause::why(&hit);
        self.events.emit(&Event::Paused {
            location: hit.at,
            why: why.clone(),
            iteration: state.iteration,
        });
        let context = self.pause_context(state, &hit, view, &why);
        self.sessions.save_context(&context)?;
        state.paused = Some(hit);
        self.pause(state, &why)
    }

    /// What the run holds at the pause.
    fn pause_context(
        &self,
        state: &LoopState,
        hit: &PauseHit,
        view: Option<AgentView>,
        why: &str,
    ) -> PauseContext {
        let view = view.unwrap_or_default();
        let llm = &self.config.llm;
        let model = ModelSettings {
            role: view.role,
            provider: serde_json::to_value(llm.provider)
                .ok()
                .and_then(|name| name.as_str().map(str::to_owned))
                .unwrap_or_default(),
            model: if view.model.is_empty() {
                llm.model.clone().unwrap_or_default()
            } else {
                view.model
            },
            max_tokens: (view.max_tokens > 0).then_some(view.max_tokens),
            temperature: view.temperature,
        };
        PauseContext {
            session: state.session.clone(),
            hit: hit.clone(),
            why: why.to_owned(),
            phase: state.phase,
            iteration: state.iteration,
            max_iterations: state.max_iterations,
            task: state.task.clone(),
            plan: state.plan.clone(),
            sub_plan: state.sub_plan.clone(),
            progress: state.history.iter().map(step_line).collect(),
            usage: state.usage.clone(),
            model,
            messages: view.messages,
            tool_call: view.tool_call,
            tool_result: view.tool_result,
            gates: state.gates.clone(),
            signatures: state.signatures.clone(),
            hindsight: state
                .history
                .iter()
                .flat_map(|step| step.resolutions.iter().cloned())
                .collect(),
            memory: self.memory_consulted(state),
            instructions: state.instructions.clone(),
        }
    }

    /// What hindsight and the shared memory give the next prompt for the current failures.
    fn memory_consulted(&self, state: &LoopState) -> Vec<String> {
        let mut consulted = super::improve::guidance_for(self.hindsight_ctx(), state);
        consulted.extend(super::hints::family_hints(
            self.hindsight.store.entries(),
            &state.signatures,
            meta_agent_hindsight::signature::family::family_key,
        ));
        consulted
    }

    /// Holds the verified commit before its push: the run ends paused at `before_push` (outcome
    /// `interrupted`, exit code 5) with its commit made and nothing else to do; the session layer
    /// keeps the commit in the run's artifact instead of pushing it, and pushes it when a
    /// maintainer says go on. Nothing here touches the worktree (the commit is the work).
    pub(super) fn hold_before_push(&self, state: &mut LoopState) -> Result<(), EngineError> {
        let Some((hit, view)) = self.pauses.take_hit() else {
            return Ok(());
        };
        let why = meta_agent_render::pause::why(&hit);
        self.events.emit(&Event::Paused {
            location: hit.at,
            why: why.clone(),
            iteration: state.iteration,
        });
        tracing::warn!("{why}: the verified commit is held, not pushed");
        let context = self.pause_context(state, &hit, view, &why);
        self.sessions.save_context(&context)?;
        state.paused = Some(hit);
        state.outcome = Some(RunOutcome::Interrupted);
        state.interrupted = Some(why);
        Ok(())
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

fn step_line(step: &meta_agent_protocol::records::StepRecord) -> StepLine {
    StepLine {
        phase: step.phase.as_str().to_owned(),
        iteration: step.iteration,
        outcome: step.outcome.clone(),
        files_changed: step.files_changed.clone(),
    }
}

/// The arrival after a plan is chosen.
pub(super) fn after_plan(state: &LoopState) -> Arrival {
    let plan = match state.plan.as_ref().unwrap_or(&Plan::Build) {
        Plan::Build => "build",
        Plan::Hindsight => "hindsight",
        Plan::AgentFix { .. } => "agent_fix",
    };
    Arrival::one(
        Location::AfterPlan,
        iteration(state).text_of(Field::Plan, plan),
    )
}

/// The arrival after an observation: one alternative per gate.
pub(super) fn after_gates(state: &LoopState) -> Arrival {
    let alternatives = state
        .gates
        .iter()
        .map(|gate| {
            let result = match gate.result {
                GateStatus::Passed => "passed",
                GateStatus::Failed => "failed",
                GateStatus::Skipped => "skipped",
            };
            iteration(state)
                .text_of(Field::Gate, gate.name.as_str())
                .text_of(Field::Result, result)
        })
        .collect::<Vec<_>>();
    Arrival {
        at: Location::AfterGates,
        alternatives: if alternatives.is_empty() {
            vec![iteration(state)]
        } else {
            alternatives
        },
    }
}

/// The arrival before a commit: one alternative per file the run changed (over all its acts).
pub(super) fn before_commit(state: &LoopState) -> Arrival {
    with_changed_files(state, Location::BeforeCommit)
}

/// The arrival before the verified commit is pushed: as [`before_commit`].
pub(super) fn before_push(state: &LoopState) -> Arrival {
    with_changed_files(state, Location::BeforePush)
}

/// An arrival at `at` with one alternative per file the run changed (over all its acts).
fn with_changed_files(state: &LoopState, at: Location) -> Arrival {
    let files: std::collections::BTreeSet<&String> = state
        .history
        .iter()
        .flat_map(|step| &step.files_changed)
        .collect();
    let count = u64::try_from(files.len()).unwrap_or(u64::MAX);
    let base = iteration(state).number_of(Field::Files, count);
    let alternatives: Vec<Values> = files
        .iter()
        .map(|path| base.clone().text_of(Field::Path, path.as_str()))
        .collect();
    Arrival {
        at,
        alternatives: if alternatives.is_empty() {
            vec![base]
        } else {
            alternatives
        },
    }
}

fn iteration(state: &LoopState) -> Values {
    Values::default().number_of(Field::Iteration, u64::from(state.iteration))
}
