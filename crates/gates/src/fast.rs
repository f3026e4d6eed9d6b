//! Re-running only failing tests: a gate that failed with failing tests can be re-run on those
//! tests only, with the runner's own way of selecting tests ([`super::filter`]): the flaky check
//! re-runs them unchanged, an improve iteration on a large suite re-runs them before the whole
//! gates run again, and `eval mine` checks a commit with them. A re-run counts only when it ran
//! exactly the tests it selected ([`run_plans`] checks, with [`super::filter::check`]); anything
//! else is a harness problem and the whole gate runs.

use super::filter::{self, Unselectable};
use super::{GateNetworkMode, GateResult, GateRunContext, run_gates_with};
use meta_agent_config::{GateCommand, GateSpec};
use meta_agent_exec::CommandRunner;
use meta_agent_protocol::event::Event;
use meta_agent_protocol::records::GateScope;
use meta_agent_protocol::test_id::TestId;
use meta_agent_report::Limits;

/// The placeholder argument replaced by the failing tests.
pub const TESTS_PLACEHOLDER: &str = "{tests}";

/// Why a gate cannot re-run its failing tests alone.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RerunUnavailable {
    #[error("the gate has no `rerun_failed`")]
    NotConfigured,
    #[error("its `rerun_failed.run` has no `{TESTS_PLACEHOLDER}` argument")]
    NoPlaceholder,
    #[error(transparent)]
    Unselectable(#[from] Unselectable),
}

/// The gate with its command replaced by the re-run of `failing`.
pub fn rerun_gate(gate: &GateSpec, failing: &[TestId]) -> Result<GateSpec, RerunUnavailable> {
    let rerun = gate
        .rerun_failed
        .as_ref()
        .ok_or(RerunUnavailable::NotConfigured)?;
    if !rerun.run.iter().any(|arg| arg == TESTS_PLACEHOLDER) {
        return Err(RerunUnavailable::NoPlaceholder);
    }
    let selection = filter::arguments(rerun.format, failing)?;
    let argv = rerun
        .run
        .iter()
        .flat_map(|arg| {
            if arg == TESTS_PLACEHOLDER {
                selection.clone()
            } else {
                vec![arg.clone()]
            }
        })
        .collect();
    Ok(GateSpec {
        command: GateCommand::Argv(argv),
        ..gate.clone()
    })
}

/// Test ids kept beyond the selected ones when a re-run's report is read, so a filter that
/// selected too much shows as such.
const SELECTION_SLACK: usize = 64;

/// One gate's part of a re-run.
pub enum Plan {
    /// Only the failing tests, with the scope the result then has.
    Partial(Box<Rerun>, GateScope),
    /// The whole gate (its runner cannot select the failing tests).
    Whole(Box<GateSpec>),
}

impl Plan {
    pub fn name(&self) -> &str {
        match self {
            Plan::Partial(rerun, _) => &rerun.whole.name,
            Plan::Whole(spec) => &spec.name,
        }
    }
}

/// A gate re-run on the tests it selects.
pub struct Rerun {
    pub whole: GateSpec,
    pub quick: GateSpec,
    pub selected: Vec<TestId>,
}

/// The re-run of `failing` for `spec`, when its runner can select them (the reason when it
/// cannot, logged).
pub fn partial(spec: &GateSpec, failing: &[TestId]) -> Option<Rerun> {
    match rerun_gate(spec, failing) {
        Ok(quick) => Some(Rerun {
            whole: spec.clone(),
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

/// Runs the plans: the partial re-runs first, with every test id kept so what ran can be
/// checked. A re-run that did not run exactly the tests it selected is rejected (a
/// `rerun_rejected` event says why: a harness problem, never a verdict on the code nor a
/// signature to learn) and its gate runs whole with the other whole ones. Each result comes with
/// the scope of its partial run, or `None` when the gate ran whole; results keep the plans'
/// order.
pub async fn run_plans<R: CommandRunner>(
    ctx: &GateRunContext<'_, R>,
    plans: &[Plan],
    mode: GateNetworkMode,
) -> Vec<(GateResult, Option<GateScope>)> {
    let partial: Vec<&Rerun> = plans
        .iter()
        .filter_map(|plan| match plan {
            Plan::Partial(rerun, _) => Some(&**rerun),
            Plan::Whole(_) => None,
        })
        .collect();
    let selected = partial.iter().map(|r| r.selected.len()).sum::<usize>();
    let counting = GateRunContext {
        limits: Limits {
            max_test_ids: ctx.limits.max_test_ids.max(selected + SELECTION_SLACK),
            ..ctx.limits
        },
        ..*ctx
    };
    let quick: Vec<GateSpec> = partial.iter().map(|r| r.quick.clone()).collect();
    let ran = run_gates_with(&counting, &quick, mode).await;
    let mut whole: Vec<GateSpec> = Vec::new();
    let mut checked = Vec::new();
    for (result, rerun) in ran.gates.into_iter().zip(&partial) {
        if exact(ctx, &result, rerun) {
            checked.push(result);
        } else {
            whole.push(rerun.whole.clone());
        }
    }
    whole.extend(plans.iter().filter_map(|plan| match plan {
        Plan::Whole(spec) => Some((**spec).clone()),
        Plan::Partial(..) => None,
    }));
    let rest = run_gates_with(ctx, &whole, mode).await;
    plans
        .iter()
        .filter_map(|plan| {
            let scope = match plan {
                Plan::Partial(_, scope) => Some(*scope),
                Plan::Whole(_) => None,
            };
            match checked.iter().find(|g| g.name == plan.name()) {
                Some(result) => Some((result.clone(), scope)),
                None => rest
                    .gates
                    .iter()
                    .find(|g| g.name == plan.name())
                    .map(|g| (g.clone(), None)),
            }
        })
        .collect()
}

/// Whether the re-run `result` ran exactly what `rerun` selected; if not, says so.
fn exact<R: CommandRunner>(
    ctx: &GateRunContext<'_, R>,
    result: &GateResult,
    rerun: &Rerun,
) -> bool {
    let (outcomes, omitted) = result
        .tests
        .as_ref()
        .map_or((&[][..], 0), |t| (&t.outcomes[..], t.outcomes_omitted));
    let Err(mismatch) = filter::check(&rerun.selected, outcomes, omitted) else {
        return true;
    };
    let reason = match result.tests {
        Some(_) => mismatch.to_string(),
        None => format!(
            "{mismatch} (it wrote no JUnit report: {})",
            result.reasons.first().cloned().unwrap_or_default()
        ),
    };
    ctx.events.emit(&Event::RerunRejected {
        gate: result.name.clone(),
        reason,
    });
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use meta_agent_config::raw::{RawRerun, TestFilterFormat};

    fn gate(format: TestFilterFormat, run: &[&str]) -> GateSpec {
        GateSpec {
            name: "tests".into(),
            kind: meta_agent_config::raw::GateKind::Tests,
            command: GateCommand::Argv(vec!["full".into()]),
            workdir: ".".into(),
            timeout: std::time::Duration::from_secs(60),
            env: Default::default(),
            junit: vec![],
            coverage: None,
            sarif: vec![],
            fail_on: meta_agent_report::FindingLevel::Error,
            requires: vec![],
            optional: false,
            files: Default::default(),
            rerun_failed: Some(RawRerun {
                run: run.iter().map(|s| (*s).to_owned()).collect(),
                format,
            }),
            network: meta_agent_config::raw::GateNetwork::Off,
        }
    }

    fn argv(spec: &GateSpec) -> Vec<String> {
        match &spec.command {
            GateCommand::Argv(argv) => argv.clone(),
            GateCommand::Shell(line) => vec![line.clone()],
        }
    }

    fn id(format: TestFilterFormat, classname: &str, name: &str) -> TestId {
        let exists = |p: &std::path::Path| p == std::path::Path::new("t/test_x.py");
        TestId::junit(classname, name, None).typed(format, &exists)
    }

    #[test]
    fn the_placeholder_becomes_the_runners_own_selection() {
        let nextest = gate(
            TestFilterFormat::Nextest,
            &["cargo", "nextest", "run", "-E", "{tests}"],
        );
        let failing = [
            id(TestFilterFormat::Nextest, "stats", "tests::mean_of_two"),
            id(TestFilterFormat::Nextest, "stats::it", "a.b"),
        ];
        assert_eq!(
            argv(&rerun_gate(&nextest, &failing).unwrap()),
            [
                "cargo",
                "nextest",
                "run",
                "-E",
                "(binary_id(=stats) & test(=tests::mean_of_two)) | \
                 (binary_id(=stats::it) & test(=a\\u{2e}b))"
            ]
        );
        let pytest = gate(TestFilterFormat::Pytest, &["pytest", "{tests}", "-q"]);
        let failing = [
            id(TestFilterFormat::Pytest, "t.test_x", "test_a[1-2]"),
            id(TestFilterFormat::Pytest, "t.test_x.TestB", "test_b"),
        ];
        assert_eq!(
            argv(&rerun_gate(&pytest, &failing).unwrap()),
            [
                "pytest",
                "t/test_x.py::test_a[1-2]",
                "t/test_x.py::TestB::test_b",
                "-q"
            ]
        );
    }

    #[test]
    fn a_gate_that_cannot_select_says_why() {
        let mut plain = gate(TestFilterFormat::Pytest, &["pytest", "{tests}"]);
        let typed = [id(TestFilterFormat::Pytest, "t.test_x", "test_a")];
        assert_eq!(
            rerun_gate(&plain, &[]),
            Err(RerunUnavailable::Unselectable(Unselectable::Nothing))
        );
        let untyped = [TestId::junit("t.test_x", "test_a", None)];
        assert!(matches!(
            rerun_gate(&plain, &untyped),
            Err(RerunUnavailable::Unselectable(
                Unselectable::NotTyped { .. }
            ))
        ));
        plain.rerun_failed = Some(RawRerun {
            run: vec!["pytest".into()],
            format: TestFilterFormat::Pytest,
        });
        assert_eq!(
            rerun_gate(&plain, &typed),
            Err(RerunUnavailable::NoPlaceholder)
        );
        plain.rerun_failed = None;
        assert_eq!(
            rerun_gate(&plain, &typed),
            Err(RerunUnavailable::NotConfigured)
        );
    }
}
