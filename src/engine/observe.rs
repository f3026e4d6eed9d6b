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
use crate::gates::fast::{self, FailingTest};
use crate::gates::{self, GateNetworkMode, GateRunContext, GatesSummary};
use crate::git::Repository;
use crate::protocol::builder::Builder;
use crate::protocol::event::{Event, LoopPhase};
use crate::protocol::records::{GateRecord, GateScope, SignatureRecord, StepPhase, StepRecord};
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
        self.events.emit(&Event::PhaseStarted {
            phase,
            iteration: state.iteration,
        });
        let workdir = self.repo.workdir();
        let ctx = self.gate_context(&workdir);
        let mut summary = self.run_gates_fast_first(&ctx, state, &workdir).await;
        let flaky = self.rerun_failed_tests(&ctx, &mut summary).await;
        for test in &flaky {
            self.events.emit(&Event::FlakyTest { test: test.clone() });
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
            gates: state.gates.iter().map(GateRecord::outcome).collect(),
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
    /// (when their runner can); if any still fails, the other gates run in full and the
    /// observation stands on that. Otherwise, and always before a commit, every gate runs in full.
    async fn run_gates_fast_first(
        &self,
        ctx: &GateRunContext<'_, R>,
        state: &LoopState,
        workdir: &Path,
    ) -> GatesSummary {
        let exists = |path: &Path| workdir.join(path).is_file();
        let mut scopes = Vec::new();
        let quick: Vec<GateSpec> = self
            .config
            .gates
            .iter()
            .filter_map(|spec| {
                let record = state
                    .gates
                    .iter()
                    .find(|g| g.name == spec.name && g.failed())?;
                let failing: Vec<FailingTest> = record
                    .failing_tests
                    .iter()
                    .map(|id| FailingTest::parse(id))
                    .collect();
                let quick = fast::rerun_gate(spec, &failing, &exists)?;
                scopes.push((spec.name.clone(), rerun_scope(record)));
                Some(quick)
            })
            .collect();
        if state.iteration == 0 || quick.is_empty() {
            return gates::run_gates_with(ctx, &self.config.gates, in_run()).await;
        }
        tracing::info!(
            "fast feedback: re-running only the failing tests of {} gate(s)",
            quick.len()
        );
        let first = gates::run_gates_with(ctx, &quick, in_run()).await;
        if first.gates.iter().all(|gate| gate.passed) {
            return gates::run_gates_with(ctx, &self.config.gates, in_run()).await;
        }
        let others: Vec<GateSpec> = self
            .config
            .gates
            .iter()
            .filter(|spec| !quick.iter().any(|q| q.name == spec.name))
            .cloned()
            .collect();
        let rest = gates::run_gates_with(ctx, &others, in_run()).await;
        let mut results = Vec::new();
        for spec in &self.config.gates {
            let from_quick = first.gates.iter().find(|g| g.name == spec.name);
            let result = from_quick.or_else(|| rest.gates.iter().find(|g| g.name == spec.name));
            if let Some(result) = result {
                let mut result = result.clone();
                if from_quick.is_some() {
                    result.reasons.push(
                        "fast feedback: only the tests that failed before were re-run".into(),
                    );
                    result.scope = scopes
                        .iter()
                        .find(|(name, _)| *name == spec.name)
                        .map_or(GateScope::Full, |(_, scope)| *scope);
                }
                results.push(result);
            }
        }
        GatesSummary::from_results(results)
    }

    /// Re-runs, once and unchanged, the failing tests of every tests gate that failed (only those
    /// tests where the runner can select them, else the whole gate). Tests that pass the second
    /// time are flaky: reported, and the gate counts them as passed.
    pub(super) async fn rerun_failed_tests(
        &self,
        ctx: &GateRunContext<'_, R>,
        summary: &mut GatesSummary,
    ) -> Vec<String> {
        let exists = |path: &Path| ctx.repo_root.join(path).is_file();
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
            let failing: Vec<FailingTest> = tests
                .failures
                .iter()
                .map(|f| FailingTest {
                    classname: f.classname.clone(),
                    name: f.name.clone(),
                })
                .collect();
            let partial = tests.failures_omitted == 0;
            let quick = partial
                .then(|| fast::rerun_gate(spec, &failing, &exists))
                .flatten();
            plans.push((quick.is_some(), quick.unwrap_or_else(|| spec.clone())));
        }
        if plans.is_empty() {
            return Vec::new();
        }
        let specs: Vec<GateSpec> = plans.iter().map(|(_, spec)| spec.clone()).collect();
        let again = gates::run_gates_with(ctx, &specs, in_run()).await;
        let mut flaky = Vec::new();
        for (rerun, (only_failures, _)) in again.gates.into_iter().zip(&plans) {
            let Some(first) = summary.gates.iter_mut().find(|g| g.name == rerun.name) else {
                continue;
            };
            if !rerun.passed {
                continue;
            }
            flaky.extend(GateRecord::from(&*first).failing_tests);
            if *only_failures {
                passed_on_rerun(first);
            } else {
                *first = rerun;
            }
        }
        *summary = GatesSummary::from_results(std::mem::take(&mut summary.gates));
        flaky
    }
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
