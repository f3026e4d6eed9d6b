//! Re-running failing tests: the flaky check and fast feedback share one way to re-run a
//! gate's failing tests alone ([`crate::gates::fast`], with each runner's filter), read with every
//! test id kept so the re-run can be checked to have run exactly what it selected. A re-run that
//! did not is a harness problem (a `rerun_rejected` event says why): its gate runs whole
//! instead, and nothing is judged or learned from the re-run. Part of [`Engine`].

use std::time::Instant;

use super::run::Engine;
use crate::config::GateSpec;
use crate::exec::CommandRunner;
use crate::gates::fast::{self, RerunUnavailable};
use crate::gates::{self, GateNetworkMode, GateResult, GateRunContext, GatesSummary, filter};
use crate::git::Repository;
use crate::protocol::builder::Builder;
use crate::protocol::event::Event;
use crate::protocol::records::{GateRecord, GateScope};
use crate::protocol::test_id::TestId;
use crate::report::Limits;

/// What the flaky check found.
#[derive(Debug, Default)]
pub(super) struct FlakyCheck {
    /// Tests that failed, then passed unchanged.
    pub flaky: Vec<TestId>,
    /// Its wall time, when only failing tests were re-run.
    pub failing_ms: Option<u64>,
}

impl<R: CommandRunner, G: Repository, B: Builder> Engine<'_, R, G, B> {
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
            let all_known = tests.failures_omitted == 0
                && result
                    .failing
                    .iter()
                    .all(|test| known.iter().any(|k| k.same_test(test)));
            if all_known {
                continue;
            }
            let rerun = (tests.failures_omitted == 0)
                .then(|| partial(spec, &result.failing))
                .flatten();
            plans.push(match rerun {
                Some(rerun) => Plan::Partial(rerun, GateScope::Full),
                None => Plan::Whole(spec.clone()),
            });
        }
        let mut check = FlakyCheck::default();
        if plans.is_empty() {
            return check;
        }
        let started = Instant::now();
        let again = self.run_plans(ctx, &plans).await;
        if again.iter().all(|(_, partial)| partial.is_some()) {
            check.failing_ms = Some(elapsed_ms(started));
        }
        for (rerun, only_failures) in again {
            let Some(first) = summary.gates.iter_mut().find(|g| g.name == rerun.name) else {
                continue;
            };
            if !rerun.passed {
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

    /// Runs the plans: the partial re-runs first, with every test id kept so what ran can be
    /// checked. A re-run that did not run exactly the tests it selected is rejected (an event and
    /// a warning say why: a harness problem, never a verdict on the code nor a signature to
    /// learn) and its gate runs whole with the other whole ones. Each result comes with the scope
    /// of its partial run, or `None` when the gate ran whole.
    pub(super) async fn run_plans(
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
pub(super) enum Plan {
    /// Only the failing tests, with the scope the result then has.
    Partial(Rerun, GateScope),
    /// The whole gate (its runner cannot select the failing tests).
    Whole(GateSpec),
}

impl Plan {
    pub(super) fn name(&self) -> &str {
        match self {
            Plan::Partial(rerun, _) => &rerun.quick.name,
            Plan::Whole(spec) => &spec.name,
        }
    }
}

/// A gate re-run on the tests it selects (the gate's name is the whole gate's).
pub(super) struct Rerun {
    quick: GateSpec,
    selected: Vec<TestId>,
}

/// The re-run of `failing` for `spec`, when its runner can select them (the reason when it
/// cannot, logged).
pub(super) fn partial(spec: &GateSpec, failing: &[TestId]) -> Option<Rerun> {
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
pub(super) fn rerun_scope(record: &GateRecord) -> GateScope {
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

/// Milliseconds since `started`.
pub(super) fn elapsed_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
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
