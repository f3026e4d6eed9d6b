//! The baseline: the gates' view of the code as the run found it, taken before any act, and the
//! pure decisions over it. What the first act is (hindsight first, then the model, or nothing
//! at all); whether the task asks about the failures the baseline showed; which later failures
//! are the baseline's own (pre-existing, not caused by the change). No I/O: the loop in
//! [`super::run`] gathers and acts.

use std::collections::BTreeSet;

use super::decide::Decision;
use crate::protocol::ending::EscalationReason;
use crate::protocol::records::{Plan, SignatureRecord};
use crate::protocol::task::{Task, TaskSource};

/// Everything the decision after the baseline looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BaselineInput {
    pub passed: bool,
    /// The task is about the baseline's failures (see [`task_asks_about`]).
    pub asked: bool,
    /// A known resolution not yet tried exists for a baseline signature.
    pub hindsight_available: bool,
    pub agent_available: bool,
}

/// What follows the baseline. Failures the task asks about go to hindsight first and to the
/// model only when hindsight knows nothing; a green baseline (or failures the task does not ask
/// about) leaves the task itself to build. Without a model, failures are hindsight's or an
/// escalation, and only a green baseline has nothing to do.
pub fn after_baseline(input: &BaselineInput) -> Decision {
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

/// Whether the task asks about the baseline's failures: a failed CI run always does; otherwise
/// its text names a failing test, the file of one, or speaks of failures, bugs or fixes. When in
/// doubt it does (every failure then has to go), so only a task plainly about something else
/// leaves pre-existing failures alone.
pub fn task_asks_about(task: &Task, failures: &[SignatureRecord]) -> bool {
    match task.source {
        TaskSource::WorkflowRun { .. } => return true,
        TaskSource::File { .. } | TaskSource::Text | TaskSource::Issue { .. } => {}
    }
    let text = format!(
        "{}\n{}\n{}\n{}",
        task.title,
        task.requirements,
        task.acceptance.join("\n"),
        task.guidance.join("\n")
    )
    .to_lowercase();
    const WORDS: [&str; 16] = [
        "fail",
        "fix",
        "bug",
        "broken",
        "error",
        "crash",
        "regression",
        "test",
        "gate",
        "pass",
        "green",
        "lint",
        "format",
        "warning",
        "coverage",
        "compile",
    ];
    let words: BTreeSet<&str> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let speaks_of_failure = words
        .iter()
        .any(|word| WORDS.iter().any(|w| word.starts_with(w)));
    speaks_of_failure || failures.iter().any(|f| names_failure(&text, f))
}

/// Whether `text` (lowercase) names the failure's test or its file.
fn names_failure(text: &str, failure: &SignatureRecord) -> bool {
    let test_name = failure
        .test
        .as_deref()
        .and_then(|test| test.rsplit(['.', ':', '/']).next())
        .filter(|name| name.len() >= 4);
    let file = failure
        .location
        .as_deref()
        .and_then(|location| location.split(':').next())
        .and_then(|path| path.rsplit('/').next())
        .filter(|name| name.len() >= 4);
    [test_name, file]
        .into_iter()
        .flatten()
        .any(|needle| text.contains(&needle.to_lowercase()))
}

/// Whether every current failure is one the baseline already showed (and there is at least one).
pub fn only_preexisting(current: &BTreeSet<String>, baseline: &[SignatureRecord]) -> bool {
    !current.is_empty()
        && current
            .iter()
            .all(|id| baseline.iter().any(|record| &record.id == id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hindsight::SignatureKind;

    fn input(passed: bool, asked: bool, hindsight: bool, agent: bool) -> BaselineInput {
        BaselineInput {
            passed,
            asked,
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
            test: Some(test.into()),
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

    #[test]
    fn a_task_asks_about_failures_it_speaks_of_or_names() {
        let failures = [failure("a", "tests.test_calc.test_median", "calc.py:12")];
        let about = |text: &str| task_asks_about(&Task::from_text(text).unwrap(), &failures);
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
    fn only_failures_the_baseline_showed_are_preexisting() {
        let baseline = [failure("a", "t", "x.py:1"), failure("b", "u", "y.py:2")];
        let set = |ids: &[&str]| ids.iter().map(|s| (*s).to_owned()).collect::<BTreeSet<_>>();
        assert!(only_preexisting(&set(&["a"]), &baseline));
        assert!(only_preexisting(&set(&["a", "b"]), &baseline));
        assert!(!only_preexisting(&set(&["a", "c"]), &baseline));
        assert!(!only_preexisting(&set(&[]), &baseline));
    }
}
