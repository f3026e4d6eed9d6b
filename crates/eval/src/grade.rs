//! Grades: what each grader said about one run, and the pure rules that combine them (a task's
//! graders must all pass; a composite is all / any / weighted with a threshold). Kept as a tree
//! in every result, so a later human grade (`eval grade`) recombines without re-running anything.

use std::collections::BTreeMap;

pub use meta_agent_protocol::eval::{CompositeMode, Grade, GraderDetail};
use meta_agent_report::{JunitSummary, TestStatus};

/// A composite over `children`, its grade combined from theirs.
pub fn composite(
    mode: CompositeMode,
    threshold: Option<f64>,
    children: Vec<GraderDetail>,
) -> GraderDetail {
    let mut detail = GraderDetail {
        kind: "composite".into(),
        grade: Grade::Pending,
        detail: String::new(),
        score: None,
        weight: 1.0,
        mode: Some(mode),
        threshold,
        children,
    };
    recombine(&mut detail);
    detail
}

/// Recomputes a composite's grade from its children (after a human grade).
pub fn recombine(detail: &mut GraderDetail) {
    for child in &mut detail.children {
        recombine(child);
    }
    if let Some(mode) = detail.mode {
        let (grade, text) = combine_composite(mode, detail.threshold, &detail.children);
        detail.grade = grade;
        detail.detail = text;
    }
}

/// A run's grade from its graders: every one must pass. Any error makes it an error, else any
/// failure a failure, else anything pending keeps it pending.
pub fn overall(details: &[GraderDetail]) -> Grade {
    let grades: Vec<Grade> = details.iter().map(|d| d.grade).collect();
    all_of(&grades)
}

fn all_of(grades: &[Grade]) -> Grade {
    if grades.contains(&Grade::Error) {
        Grade::Error
    } else if grades.contains(&Grade::Fail) {
        Grade::Fail
    } else if grades.contains(&Grade::Pending) {
        Grade::Pending
    } else {
        Grade::Pass
    }
}

fn any_of(grades: &[Grade]) -> Grade {
    if grades.contains(&Grade::Pass) {
        Grade::Pass
    } else if grades.contains(&Grade::Pending) {
        Grade::Pending
    } else if grades.contains(&Grade::Error) {
        Grade::Error
    } else {
        Grade::Fail
    }
}

/// A composite's grade and a line saying why.
pub fn combine_composite(
    mode: CompositeMode,
    threshold: Option<f64>,
    children: &[GraderDetail],
) -> (Grade, String) {
    let grades: Vec<Grade> = children.iter().map(|c| c.grade).collect();
    let passed = grades.iter().filter(|g| **g == Grade::Pass).count();
    match mode {
        CompositeMode::All => (
            all_of(&grades),
            format!("{passed}/{} passed (all needed)", grades.len()),
        ),
        CompositeMode::Any => (
            any_of(&grades),
            format!("{passed}/{} passed (any will do)", grades.len()),
        ),
        CompositeMode::Weighted => weighted(threshold.unwrap_or(1.0), children),
    }
}

/// Passes when the passing share of the weight reaches `threshold`; pending while the pending
/// weight could still decide it either way.
fn weighted(threshold: f64, children: &[GraderDetail]) -> (Grade, String) {
    let total: f64 = children.iter().map(|c| c.weight).sum();
    if total <= 0.0 {
        return (Grade::Error, "the weights add up to 0".into());
    }
    let share = |grade: Grade| {
        children
            .iter()
            .filter(|c| c.grade == grade)
            .map(|c| c.weight)
            .sum::<f64>()
            / total
    };
    let (pass, pending, error) = (
        share(Grade::Pass),
        share(Grade::Pending),
        share(Grade::Error),
    );
    let line = format!("passing weight {pass:.2} of 1 (threshold {threshold:.2})");
    let grade = if pass >= threshold {
        Grade::Pass
    } else if pass + pending >= threshold {
        Grade::Pending
    } else if pass + pending + error >= threshold {
        Grade::Error
    } else {
        Grade::Fail
    };
    (grade, line)
}

/// `exact`: the text equals the expected text (line endings normalised).
pub fn exact(actual: &str, expected: &str) -> (Grade, String) {
    let normal = |text: &str| text.replace("\r\n", "\n");
    if normal(actual) == normal(expected) {
        (Grade::Pass, "matches exactly".into())
    } else {
        (
            Grade::Fail,
            format!("differs from the expected {} bytes", expected.len()),
        )
    }
}

/// `pattern`: the expression matches (or, `absent`, does not).
pub fn pattern(actual: &str, regex: &regex::Regex, absent: bool) -> (Grade, String) {
    let found = regex.find(actual);
    match (found, absent) {
        (Some(m), false) => (
            Grade::Pass,
            format!("matched `{}`", meta_agent_report::trim_to(m.as_str(), 80)),
        ),
        (None, true) => (Grade::Pass, format!("`{}` is absent", regex.as_str())),
        (Some(m), true) => (
            Grade::Fail,
            format!(
                "`{}` should be absent but matched",
                meta_agent_report::trim_to(m.as_str(), 80)
            ),
        ),
        (None, false) => (Grade::Fail, format!("`{}` did not match", regex.as_str())),
    }
}

/// How one run of the test gates ended for each test, by the id the JUnit reader writes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TestRun {
    pub statuses: BTreeMap<String, TestStatus>,
    /// Test cases whose outcome the reader did not keep (over its cap).
    pub omitted: u64,
}

impl TestRun {
    /// The outcomes of every report read; a test in several reports keeps its worst outcome.
    pub fn from_reports<'a>(reports: impl IntoIterator<Item = &'a JunitSummary>) -> TestRun {
        let mut run = TestRun::default();
        for report in reports {
            run.omitted += report.outcomes_omitted;
            for outcome in &report.outcomes {
                let status = run
                    .statuses
                    .entry(outcome.id.to_string())
                    .or_insert(outcome.status);
                if rank(outcome.status) > rank(*status) {
                    *status = outcome.status;
                }
            }
        }
        run
    }

    fn status(&self, id: &str) -> Option<TestStatus> {
        self.statuses.get(id).copied()
    }

    /// How a test ended, in words (`None` when it is not in any report).
    fn describe(&self, id: &str) -> String {
        match self.status(id) {
            Some(TestStatus::Passed) => "passed".into(),
            Some(TestStatus::Failed) => "failed".into(),
            Some(TestStatus::Errored) => "errored".into(),
            Some(TestStatus::Skipped) => "did not run (skipped)".into(),
            None if self.omitted > 0 => format!(
                "did not run (not in the test reports; {} outcomes were not kept)",
                self.omitted
            ),
            None => "did not run (not in the test reports)".into(),
        }
    }
}

fn rank(status: TestStatus) -> u8 {
    match status {
        TestStatus::Passed => 0,
        TestStatus::Skipped => 1,
        TestStatus::Failed => 2,
        TestStatus::Errored => 3,
    }
}

/// The tests a `hidden_tests` grader names.
#[derive(Debug, Clone, Copy)]
pub struct NamedTests<'a> {
    /// Must fail before the run and pass after it.
    pub fail_to_pass: &'a [String],
    /// Must pass before the run and still pass after it.
    pub pass_to_pass: &'a [String],
}

/// `hidden_tests` by name, matched exactly against the reader's ids: every named test must pass
/// after the run (a test that did not run at all fails, with that reason). `before` is the
/// same hidden tests on the untouched source: a `fail_to_pass` test that already passed there,
/// or a `pass_to_pass` test that did not, makes the task itself wrong (an `error`, not the
/// bot's failure). One line per named test says what happened to it.
pub fn named_tests(before: &TestRun, after: &TestRun, named: NamedTests<'_>) -> (Grade, String) {
    let mut lines = Vec::new();
    let mut wrong = Vec::new();
    let mut failing = Vec::new();
    let groups = [
        ("fail_to_pass", named.fail_to_pass, false),
        ("pass_to_pass", named.pass_to_pass, true),
    ];
    for (group, ids, must_pass_before) in groups {
        for id in ids {
            let passed_before = before.status(id) == Some(TestStatus::Passed);
            if passed_before != must_pass_before {
                wrong.push(id.as_str());
            }
            if after.status(id) != Some(TestStatus::Passed) {
                failing.push(id.as_str());
            }
            lines.push(format!(
                "- {group} `{id}`: before {}, after {}",
                before.describe(id),
                after.describe(id)
            ));
        }
    }
    let total = named.fail_to_pass.len() + named.pass_to_pass.len();
    let (grade, head) = if !wrong.is_empty() {
        (
            Grade::Error,
            format!(
                "the task is wrong: {} did not start as the suite says",
                wrong.join(", ")
            ),
        )
    } else if failing.is_empty() {
        (Grade::Pass, format!("the {total} named tests pass"))
    } else {
        (Grade::Fail, format!("not passing: {}", failing.join(", ")))
    };
    (grade, format!("{head}\n{}", lines.join("\n")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(grade: Grade, weight: f64) -> GraderDetail {
        GraderDetail {
            weight,
            ..GraderDetail::leaf("exact", grade, "")
        }
    }

    #[test]
    fn all_needs_every_one_and_any_needs_one() {
        let children = vec![leaf(Grade::Pass, 1.0), leaf(Grade::Fail, 1.0)];
        assert_eq!(
            combine_composite(CompositeMode::All, None, &children).0,
            Grade::Fail
        );
        assert_eq!(
            combine_composite(CompositeMode::Any, None, &children).0,
            Grade::Pass
        );
    }

    #[test]
    fn weighted_compares_the_passing_share_with_the_threshold() {
        let children = vec![leaf(Grade::Pass, 3.0), leaf(Grade::Fail, 1.0)];
        let (grade, line) = combine_composite(CompositeMode::Weighted, Some(0.7), &children);
        assert_eq!(grade, Grade::Pass, "{line}");
        assert_eq!(
            combine_composite(CompositeMode::Weighted, Some(0.8), &children).0,
            Grade::Fail
        );
        let waiting = vec![leaf(Grade::Pass, 1.0), leaf(Grade::Pending, 1.0)];
        assert_eq!(
            combine_composite(CompositeMode::Weighted, Some(0.75), &waiting).0,
            Grade::Pending
        );
        assert_eq!(
            combine_composite(CompositeMode::Weighted, Some(0.5), &waiting).0,
            Grade::Pass
        );
    }

    #[test]
    fn a_human_grade_recombines_the_tree() {
        let mut tree = composite(
            CompositeMode::All,
            None,
            vec![leaf(Grade::Pass, 1.0), leaf(Grade::Pending, 1.0)],
        );
        assert_eq!(tree.grade, Grade::Pending);
        tree.children[1].grade = Grade::Fail;
        recombine(&mut tree);
        assert_eq!(tree.grade, Grade::Fail);
        assert_eq!(overall(&[leaf(Grade::Pass, 1.0), tree]), Grade::Fail);
    }

    #[test]
    fn errors_outrank_failures_in_a_run() {
        assert_eq!(
            overall(&[leaf(Grade::Fail, 1.0), leaf(Grade::Error, 1.0)]),
            Grade::Error
        );
        assert_eq!(overall(&[]), Grade::Pass);
    }

    #[test]
    fn exact_and_pattern_judge_text() {
        assert_eq!(exact("a\r\nb", "a\nb").0, Grade::Pass);
        assert_eq!(exact("a", "b").0, Grade::Fail);
        let re = regex::Regex::new("sum\\(values\\) / len").unwrap();
        assert_eq!(
            pattern("return sum(values) / len(values)", &re, false).0,
            Grade::Pass
        );
        assert_eq!(
            pattern("return sum(values) / len(values)", &re, true).0,
            Grade::Fail
        );
    }

    fn run(entries: &[(&str, TestStatus)]) -> TestRun {
        TestRun {
            statuses: entries
                .iter()
                .map(|(id, status)| ((*id).to_owned(), *status))
                .collect(),
            omitted: 0,
        }
    }

    #[test]
    fn named_tests_must_each_pass_and_one_that_did_not_run_fails_by_name() {
        let f2p = vec!["t::new".to_owned()];
        let p2p = vec!["t::old".to_owned(), "t::gone".to_owned()];
        let named = NamedTests {
            fail_to_pass: &f2p,
            pass_to_pass: &p2p,
        };
        let before = run(&[
            ("t::new", TestStatus::Failed),
            ("t::old", TestStatus::Passed),
            ("t::gone", TestStatus::Passed),
        ]);
        let all = run(&[
            ("t::new", TestStatus::Passed),
            ("t::old", TestStatus::Passed),
            ("t::gone", TestStatus::Passed),
        ]);
        assert_eq!(named_tests(&before, &all, named).0, Grade::Pass);
        let skipped = run(&[
            ("t::new", TestStatus::Passed),
            ("t::old", TestStatus::Skipped),
        ]);
        let (grade, detail) = named_tests(&before, &skipped, named);
        assert_eq!(grade, Grade::Fail);
        assert!(
            detail.starts_with("not passing: t::old, t::gone\n"),
            "{detail}"
        );
        assert!(
            detail
                .contains("`t::gone`: before passed, after did not run (not in the test reports)"),
            "{detail}"
        );
        // A near name is not the name: matching is exact.
        let near = run(&[
            ("t::new_one", TestStatus::Passed),
            ("t::old", TestStatus::Passed),
            ("t::gone", TestStatus::Passed),
        ]);
        assert_eq!(named_tests(&before, &near, named).0, Grade::Fail);
        // A fail_to_pass test that already passed before makes the task wrong.
        let (grade, detail) = named_tests(&all, &all, named);
        assert_eq!(grade, Grade::Error, "{detail}");
        assert!(detail.contains("the task is wrong: t::new"), "{detail}");
    }
}
