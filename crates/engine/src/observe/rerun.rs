//! The flaky check: a gate's failing tests re-run once, unchanged, through the one way to re-run
//! them alone ([`meta_agent_gates::fast::run_plans`]: each runner's filter, checked to have run
//! exactly what it selected, the whole gate instead when it did not), and what the engine's
//! re-runs share. Part of the [`Observer`].

use std::time::Instant;

use super::Observer;
use meta_agent_exec::CommandRunner;
use meta_agent_gates::fast::{self, Plan};
use meta_agent_gates::{self as gates, GateNetworkMode, GateRunContext, GatesSummary};
use meta_agent_git::Repository;
use meta_agent_protocol::records::{GateNote, GateRecord, GateScope};
use meta_agent_protocol::test_id::TestId;

/// What the flaky check found.
#[derive(Debug, Default)]
pub(super) struct FlakyCheck {
    /// Tests that failed, then passed unchanged.
    pub flaky: Vec<TestId>,
    /// Its wall time, when only failing tests were re-run.
    pub failing_ms: Option<u64>,
}

impl<'e, R: CommandRunner, G: Repository> Observer<'e, R, G> {
    /// The flaky check: re-runs, once and unchanged, the failing tests of every tests gate that
    /// failed (only those tests where the runner can select them exactly, else the whole gate),
    /// but only for a gate with a failing test not in `known` (the tests that were failing
    /// before: one failing again has failed twice, and its verdict does not hang on a re-run).
    /// Tests that pass the second time are flaky: reported, and the gate counts them as passed.
    pub(super) async fn flaky_check(
        &self,
        ctx: &GateRunContext<'_, R>,
        summary: &mut GatesSummary,
        known: &[TestId],
    ) -> FlakyCheck {
        let mut plans = Vec::new();
        for result in summary.gates.iter().filter(|g| !g.passed()) {
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
            let all_known = tests.failures_omitted == 0
                && result
                    .failing
                    .iter()
                    .all(|test| known.iter().any(|k| k.same_test(test)));
            if all_known {
                continue;
            }
            let rerun = (tests.failures_omitted == 0)
                .then(|| fast::partial(spec, &result.failing))
                .flatten();
            plans.push(match rerun {
                Some(rerun) => Plan::Partial(Box::new(rerun), GateScope::Full),
                None => Plan::Whole(Box::new(spec.clone())),
            });
        }
        let mut check = FlakyCheck::default();
        if plans.is_empty() {
            return check;
        }
        let started = Instant::now();
        let again = fast::run_plans(ctx, &plans, in_run()).await;
        if again.iter().all(|(_, partial)| partial.is_some()) {
            check.failing_ms = Some(elapsed_ms(started));
        }
        for (rerun, only_failures) in again {
            let Some(first) = summary.gates.iter_mut().find(|g| g.name == rerun.name) else {
                continue;
            };
            if !rerun.passed() {
                continue;
            }
            check.flaky.extend(first.failing.iter().cloned());
            if only_failures.is_some() {
                passed_on_rerun(first);
            } else {
                *first = rerun;
            }
        }
        *summary = GatesSummary::from_results(std::mem::take(&mut summary.gates));
        check
    }
}

/// A re-run of `record`'s failing tests: how many, of the tests the whole suite ran then.
pub(super) fn rerun_scope(record: &GateRecord) -> GateScope {
    let ran = u64::try_from(record.failing_tests.len()).unwrap_or(u64::MAX);
    let of = match record.scope {
        GateScope::Rerun { of, .. } => of,
        GateScope::Full | GateScope::ExistingTests => record.tests_total.unwrap_or(ran),
    };
    GateScope::Rerun { ran, of }
}

/// The gates' network inside a run: offline unless a gate says `network: on`.
pub(super) fn in_run() -> GateNetworkMode {
    GateNetworkMode::AsConfigured {
        can_cut: gates::runner::network_can_be_cut(),
    }
}

/// Milliseconds since `started`.
pub(crate) fn elapsed_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// A gate whose only failures passed when re-run unchanged: every test passed, some flakily.
fn passed_on_rerun(gate: &mut meta_agent_gates::GateResult) {
    if let Some(tests) = gate.tests.as_mut() {
        let recovered = tests.failed + tests.errors;
        tests.passed += recovered;
        tests.flaky += recovered;
        tests.failed = 0;
        tests.errors = 0;
        tests.failures.clear();
    }
    gate.status = meta_agent_protocol::records::GateStatus::Passed;
    gate.reasons.clear();
    gate.notes.retain(|note| *note == GateNote::NetworkNotCut);
    gate.notes.insert(0, GateNote::Flaky);
}
