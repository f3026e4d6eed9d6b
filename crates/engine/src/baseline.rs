//! The baseline: the gates' view of the code as the run found it, taken before any act, and the
//! pure decisions over it. What the first act is (hindsight first, then the model, or nothing
//! at all); whether the task asks about the failures the baseline showed; which later failures
//! are the baseline's own (pre-existing, not caused by the change). No I/O: the loop in
//! [`super::run`] gathers and acts.

use super::decide::Decision;
use meta_agent_protocol::ending::EscalationReason;
use meta_agent_protocol::records::{Plan, SignatureRecord, StartFailure};
use meta_agent_protocol::state::LoopState;

/// Everything the decision after the baseline looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BaselineInput<'a> {
    pub passed: bool,
    /// Gates that could not start ([`meta_agent_protocol::records::start_failures`]).
    pub start_failures: &'a [StartFailure],
    /// The task is about the baseline's failures (see [`task_asks_about`]).
    pub asked: bool,
    /// The task is a failure seen elsewhere (a failed CI run): a green baseline means it did not
    /// reproduce here, and there is nothing to build.
    pub reproduce: bool,
    /// A known resolution not yet tried exists for a baseline signature.
    pub hindsight_available: bool,
    pub agent_available: bool,
}

/// What follows the baseline. A gate that could not start ends the run before anything else
/// (an environment escalation: no model call, no hindsight, whatever the task). Failures the
/// task asks about go to hindsight first and to the model only when hindsight knows nothing; a
/// green baseline (or failures the task does not ask about) leaves the task itself to build.
/// Without a model, failures are hindsight's or an escalation, and only a green baseline has
/// nothing to do. A failed CI run that the gates do not reproduce has nothing to do either: no
/// model is asked to fix what nothing shows.
pub fn after_baseline(input: &BaselineInput<'_>) -> Decision {
    if !input.start_failures.is_empty() {
        return Decision::Escalate {
            reason: EscalationReason::Environment {
                failures: input.start_failures.to_vec(),
                pristine: false,
            },
        };
    }
    if input.passed && input.reproduce {
        return Decision::Complete;
    }
    let failing_and_asked = !input.passed && (input.asked || !input.agent_available);
    if failing_and_asked && input.hindsight_available {
        return Decision::Continue {
            plan: Plan::Hindsight,
            reason: "baseline: hindsight knows a resolution, applied before any model call".into(),
        };
    }
    if input.agent_available {
        let reason = if failing_and_asked {
            "baseline: no known resolution fits; the agent starts from the failures"
        } else if input.passed {
            "baseline: the gates pass; build the change from the requirements"
        } else {
            "baseline: the failures predate the change and the task does not ask about them; \
             build the change from the requirements"
        };
        return Decision::Continue {
            plan: Plan::Build,
            reason: reason.into(),
        };
    }
    if failing_and_asked {
        return Decision::Escalate {
            reason: EscalationReason::NoWayForward,
        };
    }
    Decision::Complete
}

pub use meta_agent_protocol::asked::{
    asks_about, asks_about_any, not_asked, only_preexisting, task_asks_about,
};

/// The ids of the baseline's failures the task does not ask about (none without a baseline):
/// never fixed by hindsight, never required of the model.
pub fn left_alone(state: &LoopState) -> std::collections::BTreeSet<String> {
    state
        .baseline()
        .map(|step| not_asked(&state.task, step))
        .unwrap_or_default()
}

/// The current failures that are still failing and not the task's to fix (the baseline
/// showed them and the task does not ask about them), when every current failure is one:
/// they do not hold the change back (the commit message names them).
pub fn preexisting_left(state: &LoopState) -> Vec<SignatureRecord> {
    if !only_preexisting(&state.signature_ids(), &left_alone(state)) {
        return Vec::new();
    }
    state.signatures.clone()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use meta_agent_config::raw::GateKind;
    use meta_agent_hindsight::SignatureKind;
    use meta_agent_protocol::records::{SignatureRecord, StepRecord};
    use meta_agent_protocol::task::Task;
    use meta_agent_protocol::test_id::TestName;

    fn input(passed: bool, asked: bool, hindsight: bool, agent: bool) -> BaselineInput<'static> {
        BaselineInput {
            passed,
            start_failures: &[],
            asked,
            reproduce: false,
            hindsight_available: hindsight,
            agent_available: agent,
        }
    }

    fn plan(decision: Decision) -> Option<Plan> {
        match decision {
            Decision::Continue { plan, .. } => Some(plan),
            Decision::Complete
            | Decision::Retry { .. }
            | Decision::Escalate { .. }
            | Decision::AwaitGuidance { .. } => None,
        }
    }

    fn failure(id: &str, test: &str, location: &str) -> SignatureRecord {
        SignatureRecord {
            id: id.into(),
            kind: SignatureKind::TestFailure,
            template: "assert <N> == <N>".into(),
            gate: "tests".into(),
            excerpt: String::new(),
            location: Some(location.into()),
            test: Some(TestName::new(test)),
            frames: Vec::new(),
            family: String::new(),
            detail: String::new(),
        }
    }

    #[test]
    fn hindsight_comes_before_the_model_for_failures_the_task_asks_about() {
        let decision = after_baseline(&input(false, true, true, true));
        assert_eq!(plan(decision), Some(Plan::Hindsight));
        let decision = after_baseline(&input(false, true, false, true));
        assert_eq!(plan(decision), Some(Plan::Build));
        let decision = after_baseline(&input(false, true, false, false));
        assert!(
            matches!(decision, Decision::Escalate { .. }),
            "{decision:?}"
        );
    }

    #[test]
    fn a_gate_that_cannot_start_ends_the_run_before_hindsight_or_the_model() {
        let failures = [StartFailure {
            gate: "tests".into(),
            problem: meta_agent_protocol::records::GateProblem::RunnerMissing {
                runner: "pytest".into(),
                error: "No module named pytest".into(),
            },
        }];
        for (asked, hindsight, agent) in [
            (true, true, true),
            (false, false, true),
            (true, false, false),
        ] {
            let decision = after_baseline(&BaselineInput {
                start_failures: &failures,
                ..input(false, asked, hindsight, agent)
            });
            assert_eq!(
                decision,
                Decision::Escalate {
                    reason: EscalationReason::Environment {
                        failures: failures.to_vec(),
                        pristine: false
                    }
                }
            );
        }
    }

    #[test]
    fn a_green_baseline_builds_or_has_nothing_to_do() {
        assert_eq!(
            plan(after_baseline(&input(true, false, false, true))),
            Some(Plan::Build)
        );
        assert_eq!(
            after_baseline(&input(true, true, true, false)),
            Decision::Complete
        );
    }

    #[test]
    fn a_failed_run_that_does_not_reproduce_asks_no_model() {
        for (hindsight, agent) in [(true, true), (false, true), (false, false)] {
            let decision = after_baseline(&BaselineInput {
                reproduce: true,
                ..input(true, true, hindsight, agent)
            });
            assert_eq!(decision, Decision::Complete);
        }
        let reproduced = after_baseline(&BaselineInput {
            reproduce: true,
            ..input(false, true, false, true)
        });
        assert_eq!(plan(reproduced), Some(Plan::Build));
    }

    #[test]
    fn failures_the_task_does_not_ask_about_are_left_alone() {
        assert_eq!(
            plan(after_baseline(&input(false, false, true, true))),
            Some(Plan::Build),
            "no hindsight for pre-existing failures the task does not ask about"
        );
        assert_eq!(
            plan(after_baseline(&input(false, false, true, false))),
            Some(Plan::Hindsight),
            "without a model, hindsight is all there is"
        );
    }

    fn baseline_of(failures: Vec<SignatureRecord>, lint_gate: bool) -> StepRecord {
        let kind = if lint_gate {
            GateKind::Lint
        } else {
            GateKind::Tests
        };
        let gates = [meta_agent_protocol::records::GateRecord::judged(
            "tests",
            kind,
            meta_agent_protocol::records::GateStatus::Failed,
            Vec::new(),
        )];
        StepRecord::observation(
            meta_agent_protocol::records::StepPhase::Baseline,
            0,
            0,
            0,
            "gates failed",
            &gates,
            &failures,
        )
    }

    #[test]
    fn a_task_asks_about_failures_it_speaks_of_or_names() {
        let baseline = baseline_of(
            vec![failure("a", "tests.test_calc.test_median", "calc.py:12")],
            false,
        );
        let about = |text: &str| task_asks_about(&Task::from_text(text).unwrap(), &baseline);
        assert!(about("Fix mean of floats"));
        assert!(about("The tests fail on main"));
        assert!(about("median returns the wrong value: see test_median"));
        assert!(about("Something is off in calc.py"));
        assert!(!about("Add a --verbose flag to the CLI"));
        assert!(!about("Document the median function"));
        assert!(about("Make the gates pass"));
        assert!(about("Lint is red on main"));
    }

    #[test]
    fn a_lint_finding_is_the_tasks_only_when_it_speaks_of_lint_or_names_it() {
        let mut finding = failure("l", "", "src/util.py:3");
        finding.kind = SignatureKind::Lint;
        finding.test = None;
        let baseline = baseline_of(vec![finding], true);
        let left = |text: &str| !not_asked(&Task::from_text(text).unwrap(), &baseline).is_empty();
        assert!(
            left("Fix the failing test"),
            "a test task leaves old findings alone"
        );
        assert!(left("Fix the bug in mean"));
        assert!(!left("Fix the lint warnings"));
        assert!(!left("Make ruff happy"));
        assert!(!left("Make the gates pass"));
        assert!(
            !left("Something is off in util.py"),
            "a task naming the file asks about it"
        );
    }

    #[test]
    fn only_failures_the_task_leaves_alone_are_preexisting() {
        let set = |ids: &[&str]| ids.iter().map(|s| (*s).to_owned()).collect::<BTreeSet<_>>();
        let left_alone = set(&["a", "b"]);
        assert!(only_preexisting(&set(&["a"]), &left_alone));
        assert!(only_preexisting(&set(&["a", "b"]), &left_alone));
        assert!(!only_preexisting(&set(&["a", "c"]), &left_alone));
        assert!(!only_preexisting(&set(&[]), &left_alone));
    }
}
