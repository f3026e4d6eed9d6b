//! The unit of the Observing step ([`Observer`]): run the gates, re-run failing tests once where
//! the verdict hangs on it (flaky or not), verify on a pristine checkout. It holds only what
//! that needs and names neither the engine nor its steps; the step (`run/observe.rs`) turns
//! failures into signatures and records the observation. Its parts: `rerun` (the flaky check), `pristine` (the candidate tree on
//! a pristine checkout, and the verification before a commit), `existing_tests` (the existing
//! tests' verdict without the change's test files). The decision about what it saw is
//! `decide()`'s. Gates run offline here unless they say `network: on`: the code under test may
//! be the model's.
//!
//! The baseline runs every gate in the worktree. After an act, [`super::candidate::plan`] says
//! where: on a pristine checkout of the candidate tree (the full gates once, the observation and
//! the verification in one run), after the failing tests alone in the worktree when that pays,
//! or in the worktree when no pristine verification can be made.

mod existing_tests;
pub(crate) mod pristine;
mod rerun;

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::candidate::{self, Facts, Observation, VerifiedTree};
use super::commit::Committer;
use super::improve;
use super::state::LoopState;
use meta_agent_config::Config;
use meta_agent_exec::CommandRunner;
use meta_agent_gates::fast::{self, Plan, partial};
use meta_agent_gates::{self as gates, GateRunContext, GatesSummary};
use meta_agent_git::Repository;
use meta_agent_policy::Policy;
use meta_agent_protocol::deadline::Deadline;
use meta_agent_protocol::event::{Event, EventSink};
use meta_agent_protocol::records::{GateNote, SignatureRecord, StepPhase, start_failures};
use meta_agent_protocol::test_id::TestId;
use meta_agent_report::Limits;
pub(crate) use rerun::elapsed_ms;
use rerun::{FlakyCheck, in_run, rerun_scope};

/// The unit that runs the gates of an observation where [`candidate::plan`] says (the
/// worktree, the failing tests first, a pristine checkout of the candidate tree) and re-runs
/// failing tests once: it holds only what running gates needs, borrowed from the engine
/// (`Engine::observer`). The Observing step (`run/observe.rs`) records what it saw.
pub(crate) struct Observer<'e, R: CommandRunner, G: Repository> {
    pub(crate) config: &'e Config,
    pub(crate) policy: &'e Policy,
    pub(crate) runner: &'e R,
    pub(crate) repo: &'e G,
    pub(crate) events: &'e dyn EventSink,
    pub(crate) parent_env: &'e [(String, String)],
    pub(crate) report_root: &'e Path,
    pub(crate) deadline: Deadline,
    /// The patch gate, for whether a candidate tree could be committed at all.
    pub(crate) committer: Committer<'e, G>,
}

/// What one observation ran, and where.
pub(crate) struct Observed {
    pub(crate) summary: GatesSummary,
    pub(crate) phase: StepPhase,
    /// The directory the gates ran in (the worktree, or the pristine checkout).
    pub(crate) root: PathBuf,
    /// The pristine checkout's directory, kept until the signatures are read.
    pub(crate) _scratch: Option<tempfile::TempDir>,
}

impl<'e, R: CommandRunner, G: Repository> Observer<'e, R, G> {
    /// Every gate on the code as the run found it; the flaky check only when the verdict hangs
    /// on it: when the task is about the failures (or no model could act on them), since
    /// failures the task does not ask about are pre-existing, flaky or not.
    pub(crate) async fn observe_baseline(
        &self,
        state: &mut LoopState,
        workdir: &Path,
        model_available: bool,
    ) -> Observed {
        let ctx = self.gate_context(workdir);
        let started = Instant::now();
        let mut summary = gates::run_gates_with(&ctx, &self.config.gates, in_run()).await;
        state.costs.full_ms = Some(elapsed_ms(started));
        if !summary.passed && verdict_hangs_on_flakiness(state, &summary, workdir, model_available)
        {
            let check = self.flaky_check(&ctx, &mut summary, &[]).await;
            self.record_flaky(state, check);
        }
        Observed {
            summary,
            phase: StepPhase::Baseline,
            root: workdir.to_owned(),
            _scratch: None,
        }
    }

    /// The change an act left, where [`candidate::plan`] says.
    pub(crate) async fn observe_candidate(
        &self,
        state: &mut LoopState,
        workdir: &Path,
    ) -> Observed {
        state.verified = None;
        let facts = Facts {
            pristine: self.pristine_applies(state),
            failing_rerunnable: !self.failing_plans(state).is_empty(),
            costs: state.costs,
        };
        let plan = candidate::plan(&facts);
        tracing::debug!(?plan, ?facts, "observing the candidate");
        if plan == Observation::FailingFirst
            && let Some(failing) = self.failing_first(state, workdir).await
        {
            return failing;
        }
        if plan != Observation::Worktree
            && let Some(pristine) = self.observe_pristine(state).await
        {
            if start_failures(&pristine.summary.records()).is_empty() {
                return pristine;
            }
            // A gate that could not start on the pristine checkout: where it starts in the
            // worktree, the change is observed there, and the verification before a commit runs
            // again and ends the run for the environment (the change unverified, not failed).
            // Where it cannot start in the worktree either, the change broke it: the model's.
            state.verified = None;
            let worktree = self.observe_worktree(state, workdir).await;
            if start_failures(&worktree.summary.records()).is_empty() {
                return worktree;
            }
            return pristine;
        }
        self.observe_worktree(state, workdir).await
    }

    /// Every gate in the worktree, the failing tests first where that is cheaper, then the
    /// flaky check of new failures.
    async fn observe_worktree(&self, state: &mut LoopState, workdir: &Path) -> Observed {
        let ctx = self.gate_context(workdir);
        let mut summary = self.run_gates_fast_first(&ctx, state).await;
        let known = failing_before(state);
        let check = self.flaky_check(&ctx, &mut summary, &known).await;
        self.record_flaky(state, check);
        Observed {
            summary,
            phase: StepPhase::Test,
            root: workdir.to_owned(),
            _scratch: None,
        }
    }

    /// The failing tests alone in the worktree (and every other gate that failed, whole): their
    /// failures are the observation; `None` when they all pass, for the pristine run to follow.
    async fn failing_first(&self, state: &mut LoopState, workdir: &Path) -> Option<Observed> {
        let ctx = self.gate_context(workdir);
        let mut plans = self.failing_plans(state);
        plans.extend(
            self.config
                .gates
                .iter()
                .filter(|spec| {
                    state
                        .gates
                        .iter()
                        .any(|g| g.name == spec.name && g.failed())
                })
                .filter(|spec| !plans.iter().any(|p| p.name() == spec.name))
                .map(|spec| Plan::Whole(Box::new(spec.clone())))
                .collect::<Vec<_>>(),
        );
        tracing::info!(
            "fast feedback: re-running the failing tests of {} gate(s) before the full gates",
            plans.len()
        );
        let started = Instant::now();
        let ran = fast::run_plans(&ctx, &plans, in_run()).await;
        if ran.iter().all(|(_, partial)| partial.is_some()) {
            state.costs.failing_ms = Some(elapsed_ms(started));
        }
        if ran.iter().all(|(gate, _)| gate.passed()) {
            return None;
        }
        let mut summary = GatesSummary::from_results(scoped(ran));
        let check = self
            .flaky_check(&ctx, &mut summary, &failing_before(state))
            .await;
        self.record_flaky(state, check);
        Some(Observed {
            summary,
            phase: StepPhase::Test,
            root: workdir.to_owned(),
            _scratch: None,
        })
    }

    /// The full gates once, on a pristine checkout of the candidate tree: the observation, and
    /// the verification a commit in this iteration stands on. `None` when the checkout cannot be
    /// made (the worktree is observed instead, and the verification before a commit says why).
    async fn observe_pristine(&self, state: &mut LoopState) -> Option<Observed> {
        let known = failing_before(state);
        let run = match self.pristine_gates(state, &known).await {
            Ok(run) => run,
            Err(err) => {
                tracing::warn!(
                    "pristine: cannot prepare the checkout ({err}): the worktree is observed"
                );
                return None;
            }
        };
        let mut summary = run.summary;
        if !summary.passed {
            self.name_what_only_the_worktree_holds(state, &mut summary);
        }
        state.verified = Some(VerifiedTree {
            tree: run.tree,
            iteration: state.iteration,
        });
        Some(Observed {
            summary,
            phase: StepPhase::Verify,
            root: run.checkout,
            _scratch: Some(run.scratch),
        })
    }

    /// The re-runs of the failing tests of every gate that failed in the last observation and
    /// whose runner can select them.
    fn failing_plans(&self, state: &LoopState) -> Vec<Plan> {
        self.config
            .gates
            .iter()
            .filter_map(|spec| {
                let record = state
                    .gates
                    .iter()
                    .find(|g| g.name == spec.name && g.failed())?;
                let rerun = partial(spec, &record.failing_tests)?;
                Some(Plan::Partial(Box::new(rerun), rerun_scope(record)))
            })
            .collect()
    }

    /// Keeps the flaky check's findings: events, the state's list, its cost.
    fn record_flaky(&self, state: &mut LoopState, check: FlakyCheck) {
        for test in &check.flaky {
            self.events.emit(&Event::FlakyTest { test: test.into() });
        }
        state.flaky.extend(check.flaky);
        if check.failing_ms.is_some() {
            state.costs.failing_ms = check.failing_ms;
        }
    }

    /// Tells the event sinks of the signatures an observation found.
    pub(crate) fn announce(&self, signatures: &[SignatureRecord]) {
        for signature in signatures {
            self.events.emit(&Event::SignatureFound {
                signature: signature.id.clone(),
                kind: signature.kind,
                template: signature.template.clone(),
            });
        }
    }

    /// What the gates (and the setup commands) of this run share.
    pub(crate) fn gate_context<'c>(&self, workdir: &'c Path) -> GateRunContext<'c, R>
    where
        'e: 'c,
    {
        GateRunContext {
            repo_root: workdir,
            parent_env: self.parent_env,
            sandbox: &self.config.sandbox,
            policy: self.policy,
            report_root: self.report_root,
            limits: Limits::default(),
            deadline: self.deadline,
            concurrency: self.config.loop_.gate_concurrency,
            runner: self.runner,
            events: self.events,
        }
    }

    /// In the worktree (no pristine verification can be made): gates that failed with failing
    /// tests first re-run only those tests (when their runner can select them exactly); if any
    /// still fails, the other gates run in full and the observation stands on that. Otherwise
    /// every gate runs in full.
    async fn run_gates_fast_first(
        &self,
        ctx: &GateRunContext<'_, R>,
        state: &LoopState,
    ) -> GatesSummary {
        let plans = self.failing_plans(state);
        if plans.is_empty() {
            return gates::run_gates_with(ctx, &self.config.gates, in_run()).await;
        }
        tracing::info!(
            "fast feedback: re-running only the failing tests of {} gate(s)",
            plans.len()
        );
        let first = fast::run_plans(ctx, &plans, in_run()).await;
        if first.iter().all(|(gate, _)| gate.passed()) {
            return gates::run_gates_with(ctx, &self.config.gates, in_run()).await;
        }
        let others: Vec<_> = self
            .config
            .gates
            .iter()
            .filter(|spec| !first.iter().any(|(gate, _)| gate.name == spec.name))
            .cloned()
            .collect();
        let rest = gates::run_gates_with(ctx, &others, in_run()).await;
        let mut results = scoped(first);
        results.extend(rest.gates);
        let order = |name: &str| self.config.gates.iter().position(|g| g.name == name);
        results.sort_by_key(|gate| order(&gate.name));
        GatesSummary::from_results(results)
    }
}

/// Whether the baseline's failures are the task's to fix (or nothing but hindsight could act
/// on them): then a flaky one must not be "fixed".
fn verdict_hangs_on_flakiness(
    state: &LoopState,
    summary: &GatesSummary,
    workdir: &Path,
    model_available: bool,
) -> bool {
    let signatures = improve::signatures_of(summary, workdir);
    signatures.is_empty()
        || super::baseline::asks_about_any(&state.task, &signatures, &summary.records())
        || !model_available
}

/// The results of re-runs, each partial one marked with its scope and a reason saying so.
fn scoped(
    ran: Vec<(
        gates::GateResult,
        Option<meta_agent_protocol::records::GateScope>,
    )>,
) -> Vec<gates::GateResult> {
    ran.into_iter()
        .map(|(mut result, scope)| {
            if let Some(scope) = scope {
                result.notes.push(GateNote::FastFeedback);
                result.scope = scope;
            }
            result
        })
        .collect()
}

/// The tests failing in the last observation: one failing again has failed twice.
fn failing_before(state: &LoopState) -> Vec<TestId> {
    state
        .gates
        .iter()
        .flat_map(|g| g.failing_tests.iter().cloned())
        .collect()
}
