//! The Observing step: run the gates (fast feedback first in improve iterations), re-run failing
//! tests once to tell flaky tests from real failures, turn failures into signatures, and record
//! the observation. Part of [`Engine`]; the decision about what it saw is `decide()`'s. Gates run
//! offline here unless they say `network: on`: the code under test may be the model's.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Instant;

use super::improve;
use super::run::{Engine, now_ms};
use super::state::LoopState;
use crate::config::GateSpec;
use crate::exec::CommandRunner;
use crate::gates::fast::{self, RerunUnavailable};
use crate::gates::{self, GateNetworkMode, GateResult, GateRunContext, GatesSummary, filter};
use crate::git::Repository;
use crate::protocol::builder::Builder;
use crate::protocol::event::{Event, LoopPhase};
use crate::protocol::records::{GateRecord, GateScope, SignatureRecord, StepPhase, StepRecord};
use crate::protocol::test_id::TestId;
use crate::report::Limits;

impl<R: CommandRunner, G: Repository, B: Builder> Engine<'_, R, G, B> {
    pub(super) async fn observe(&self, state: &mut LoopState) -> GatesSummary {
        let started = Instant::now();
        let started_ms = now_ms();
        let phase = if state.before_any_act() {
            StepPhase::Baseline
        } else {
            StepPhase::Test
        };
        let workdir = self.repo.workdir();
        let ctx = self.gate_context(&workdir);
        let mut summary = self.run_gates_fast_first(&ctx, state).await;
        let flaky = self.rerun_failed_tests(&ctx, &mut summary).await;
        for test in &flaky {
            self.events.emit(&Event::FlakyTest {
                test: test.to_string(),
            });
        }
        state.flaky.extend(flaky);
        let signatures = improve::signatures_of(&summary, &workdir);
        self.announce(&signatures);
        mark_cured(state, &signatures);
        state.gates = summary.records();
        state.signatures = signatures;
        self.hindsight.recall(&state.signatures).await;
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(0);
        let outcome = match (phase, summary.passed) {
            (StepPhase::Baseline, true) => "baseline: gates passed",
            (StepPhase::Baseline, false) => "baseline: gates failed",
            (_, true) => "gates passed",
            (_, false) => "gates failed",
        };
        self.events.emit(&Event::PhaseFinished {
            phase,
            iteration: state.iteration,
            duration_ms,
            outcome: outcome.into(),
        });
        state.history.push(StepRecord::observation(
            phase,
            state.iteration,
            started_ms,
            duration_ms,
            outcome,
            &state.gates,
            &state.signatures,
        ));
        self.transition(state, LoopPhase::Deciding, outcome);
        summary
    }

    /// Tells the event sinks of the signatures an observation found.
    pub(super) fn announce(&self, signatures: &[SignatureRecord]) {
        for signature in signatures {
            self.events.emit(&Event::SignatureFound {
                signature: signature.id.clone(),
                kind: signature.kind,
                template: signature.template.clone(),
            });
        }
    }

    /// What the gates (and the setup commands) of this run share.
    pub(super) fn gate_context<'c>(&'c self, workdir: &'c Path) -> GateRunContext<'c, R> {
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

    /// In an improve iteration, gates that failed with failing tests first re-run only those tests
    /// (when their runner can select them exactly); if any still fails, the other gates run in
    /// full and the observation stands on that. Otherwise, and always before a commit, every gate
    /// runs in full.
    async fn run_gates_fast_first(
        &self,
        ctx: &GateRunContext<'_, R>,
        state: &LoopState,
    ) -> GatesSummary {
        let plans: Vec<Plan> = self
            .config
            .gates
            .iter()
            .filter_map(|spec| {
                let record = state
                    .gates
                    .iter()
                    .find(|g| g.name == spec.name && g.failed())?;
                let rerun = partial(spec, &record.failing_tests)?;
                Some(Plan::Partial(rerun, rerun_scope(record)))
            })
            .collect();
        if state.iteration == 0 || plans.is_empty() {
            return gates::run_gates_with(ctx, &self.config.gates, in_run()).await;
        }
        tracing::info!(
            "fast feedback: re-running only the failing tests of {} gate(s)",
            plans.len()
        );
        let first = self.run_plans(ctx, &plans).await;
        if first.iter().all(|(gate, _)| gate.passed) {
            return gates::run_gates_with(ctx, &self.config.gates, in_run()).await;
        }
        let others: Vec<GateSpec> = self
            .config
            .gates
            .iter()
            .filter(|spec| !first.iter().any(|(gate, _)| gate.name == spec.name))
            .cloned()
            .collect();
        let rest = gates::run_gates_with(ctx, &others, in_run()).await;
        let mut results = Vec::new();
        for spec in &self.config.gates {
            if let Some((result, scope)) = first.iter().find(|(g, _)| g.name == spec.name) {
                let mut result = result.clone();
                if let Some(scope) = scope {
                    result.reasons.push(
                        "fast feedback: only the tests that failed before were re-run".into(),
                    );
                    result.scope = *scope;
                }
                results.push(result);
            } else if let Some(result) = rest.gates.iter().find(|g| g.name == spec.name) {
                results.push(result.clone());
            }
        }
        GatesSummary::from_results(results)
    }

    /// Re-runs, once and unchanged, the failing tests of every tests gate that failed (only those
    /// tests where the runner can select them exactly, else the whole gate). Tests that pass the
    /// second time are flaky: reported, and the gate counts them as passed.
    pub(super) async fn rerun_failed_tests(
        &self,
        ctx: &GateRunContext<'_, R>,
        summary: &mut GatesSummary,
    ) -> Vec<TestId> {
        let mut plans = Vec::new();
        for result in summary.gates.iter().filter(|g| !g.passed) {
            let Some(tests) = result.tests.as_ref().filter(|t| t.failed + t.errors > 0) else {
                continue;
            };
            let Some(spec) = self
                .config
                .gates
                .iter()
                .find(|spec| spec.name == result.name)
            else {
                continue;
            };
            let rerun = (tests.failures_omitted == 0)
                .then(|| partial(spec, &result.failing))
                .flatten();
            plans.push(match rerun {
                Some(rerun) => Plan::Partial(rerun, GateScope::Full),
                None => Plan::Whole(spec.clone()),
            });
        }
        if plans.is_empty() {
            return Vec::new();
        }
        let again = self.run_plans(ctx, &plans).await;
        let mut flaky = Vec::new();
        for (rerun, only_failures) in again {
            let Some(first) = summary.gates.iter_mut().find(|g| g.name == rerun.name) else {
                continue;
            };
            if !rerun.passed {
                continue;
            }
            flaky.extend(first.failing.iter().cloned());
            if only_failures.is_some() {
                passed_on_rerun(first);
            } else {
                *first = rerun;
            }
        }
        *summary = GatesSummary::from_results(std::mem::take(&mut summary.gates));
        flaky
    }

    /// Runs the plans: the partial re-runs first, with every test id kept so what ran can be
    /// checked. A re-run that did not run exactly the tests it selected is rejected (an event and
    /// a warning say why: a harness problem, never a verdict on the code nor a signature to
    /// learn) and its gate runs whole with the other whole ones. Each result comes with the scope
    /// of its partial run, or `None` when the gate ran whole.
    async fn run_plans(
        &self,
        ctx: &GateRunContext<'_, R>,
        plans: &[Plan],
    ) -> Vec<(GateResult, Option<GateScope>)> {
        let partial: Vec<&Rerun> = plans
            .iter()
            .filter_map(|plan| match plan {
                Plan::Partial(rerun, _) => Some(rerun),
                Plan::Whole(_) => None,
            })
            .collect();
        let selected = partial.iter().map(|r| r.selected.len()).sum::<usize>();
        let counting = GateRunContext {
            limits: Limits {
                max_test_ids: selected + SELECTION_SLACK,
                ..ctx.limits
            },
            ..*ctx
        };
        let quick: Vec<GateSpec> = partial.iter().map(|r| r.quick.clone()).collect();
        let ran = gates::run_gates_with(&counting, &quick, in_run()).await;
        let mut whole: Vec<GateSpec> = Vec::new();
        let mut checked = Vec::new();
        for (result, rerun) in ran.gates.into_iter().zip(&partial) {
            match self.exact(&result, rerun) {
                Ok(()) => checked.push(result),
                Err(()) => whole.extend(
                    self.config
                        .gates
                        .iter()
                        .find(|g| g.name == result.name)
                        .cloned(),
                ),
            }
        }
        whole.extend(plans.iter().filter_map(|plan| match plan {
            Plan::Whole(spec) => Some(spec.clone()),
            Plan::Partial(..) => None,
        }));
        let rest = gates::run_gates_with(ctx, &whole, in_run()).await;
        plans
            .iter()
            .filter_map(|plan| {
                let name = plan.name();
                let scope = match plan {
                    Plan::Partial(_, scope) => Some(*scope),
                    Plan::Whole(_) => None,
                };
                match checked.iter().find(|g| g.name == name) {
                    Some(result) => Some((result.clone(), scope)),
                    None => rest
                        .gates
                        .iter()
                        .find(|g| g.name == name)
                        .map(|g| (g.clone(), None)),
                }
            })
            .collect()
    }

    /// Whether the re-run `result` ran exactly what `rerun` selected; if not, says so (event and
    /// warning).
    fn exact(&self, result: &GateResult, rerun: &Rerun) -> Result<(), ()> {
        let (outcomes, omitted) = result
            .tests
            .as_ref()
            .map_or((&[][..], 0), |t| (&t.outcomes[..], t.outcomes_omitted));
        let Err(mismatch) = filter::check(&rerun.selected, outcomes, omitted) else {
            return Ok(());
        };
        let reason = match result.tests {
            Some(_) => mismatch.to_string(),
            None => format!(
                "{mismatch} (it wrote no JUnit report: {})",
                first_reason(result)
            ),
        };
        self.events.emit(&Event::RerunRejected {
            gate: result.name.clone(),
            reason,
        });
        Err(())
    }
}

/// Test ids kept beyond the selected ones when a re-run's report is read, so a filter that
/// selected too much shows as such.
const SELECTION_SLACK: usize = 64;

/// One gate's part of a re-run.
enum Plan {
    /// Only the failing tests, with the scope the result then has.
    Partial(Rerun, GateScope),
    /// The whole gate (its runner cannot select the failing tests).
    Whole(GateSpec),
}

impl Plan {
    fn name(&self) -> &str {
        match self {
            Plan::Partial(rerun, _) => &rerun.quick.name,
            Plan::Whole(spec) => &spec.name,
        }
    }
}

/// A gate re-run on the tests it selects (the gate's name is the whole gate's).
struct Rerun {
    quick: GateSpec,
    selected: Vec<TestId>,
}

/// The re-run of `failing` for `spec`, when its runner can select them (the reason when it
/// cannot, logged).
fn partial(spec: &GateSpec, failing: &[TestId]) -> Option<Rerun> {
    match fast::rerun_gate(spec, failing) {
        Ok(quick) => Some(Rerun {
            quick,
            selected: failing.to_vec(),
        }),
        Err(RerunUnavailable::NotConfigured) => None,
        Err(why) => {
            tracing::info!(gate = %spec.name, "the failing tests cannot be re-run alone ({why}): the whole gate runs");
            None
        }
    }
}

fn first_reason(result: &GateResult) -> String {
    result.reasons.first().cloned().unwrap_or_default()
}

/// A re-run of `record`'s failing tests: how many, of the tests the whole suite ran then.
fn rerun_scope(record: &GateRecord) -> GateScope {
    let ran = u64::try_from(record.failing_tests.len()).unwrap_or(u64::MAX);
    let of = match record.scope {
        GateScope::Rerun { of, .. } => of,
        GateScope::Full => record.tests_total.unwrap_or(ran),
    };
    GateScope::Rerun { ran, of }
}

/// The gates' network inside a run: offline unless a gate says `network: on`.
pub(super) fn in_run() -> GateNetworkMode {
    GateNetworkMode::AsConfigured {
        can_cut: gates::runner::network_can_be_cut(),
    }
}

/// A gate whose only failures passed when re-run unchanged: every test passed, some flakily.
fn passed_on_rerun(gate: &mut crate::gates::GateResult) {
    if let Some(tests) = gate.tests.as_mut() {
        let recovered = tests.failed + tests.errors;
        tests.passed += recovered;
        tests.flaky += recovered;
        tests.failed = 0;
        tests.errors = 0;
        tests.failures.clear();
    }
    gate.passed = true;
    gate.status = crate::protocol::records::GateStatus::Passed;
    let network_note = gate
        .reasons
        .iter()
        .find(|reason| reason.as_str() == gates::runner::NETWORK_NOT_CUT_NOTE)
        .cloned();
    gate.reasons =
        vec!["flaky: the failing tests passed on an immediate re-run with no change".into()];
    gate.reasons.extend(network_note);
}

/// Marks the resolutions of the last Acting step cured or not, by whether their signature is
/// still present.
fn mark_cured(state: &mut LoopState, now: &[SignatureRecord]) {
    let present: BTreeSet<&str> = now.iter().map(|s| s.id.as_str()).collect();
    if let Some(step) = state
        .history
        .iter_mut()
        .rev()
        .find(|step| step.phase.is_act())
    {
        for resolution in step.resolutions.iter_mut().filter(|r| r.cured.is_none()) {
            resolution.cured = Some(!present.contains(resolution.signature.as_str()));
        }
    }
}
