//! What a run did to the repository's tests, for people: the verdicts of the tests that existed
//! at the base commit apart from those of the tests the run added (a new test passing is no
//! evidence the old ones do), and, when a maintainer allowed test edits, every changed test and
//! configuration file with its diff under "Test and configuration changes". Pure.

use std::fmt::Write as _;

use meta_agent_protocol::kinds::GateKind;
use meta_agent_protocol::records::GateScope;
use meta_agent_protocol::state::LoopState;
use meta_agent_protocol::test_id::TestName;

/// The latest test verdicts split by whether the test existed at the base commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestSplit {
    /// Tests that existed at the base commit: how many ran, and the failing ones.
    pub existing_total: u64,
    pub existing_failing: Vec<String>,
    /// Tests the run added, each with whether the last observation saw it fail.
    pub new: Vec<(String, bool)>,
}

/// The split of the last observation's test gate(s), or `None` when no gate reported tests.
pub fn test_split(state: &LoopState) -> Option<TestSplit> {
    let gate = state
        .gates
        .iter()
        .filter(|g| g.tests_total.is_some())
        .find(|g| g.kind == GateKind::Tests)
        .or_else(|| state.gates.iter().find(|g| g.tests_total.is_some()))?;
    let new_names = &state.evidence.new_tests;
    let failing: Vec<TestName> = gate.failing_tests.iter().map(TestName::from).collect();
    let (new_failing, existing_failing): (Vec<&TestName>, Vec<&TestName>) =
        failing.iter().partition(|name| name.is_among(new_names));
    let new = new_names
        .iter()
        .map(|name| {
            let short = name.rsplit("::").next().unwrap_or(name);
            let failing = new_failing
                .iter()
                .any(|f| f.is_among(std::slice::from_ref(name)) || f.as_str().ends_with(short));
            (name.clone(), failing)
        })
        .collect::<Vec<_>>();
    let total = gate.tests_total.unwrap_or(0);
    // A verdict of the existing tests alone counts none of the new ones.
    let existing_total = match gate.scope {
        GateScope::ExistingTests => total,
        GateScope::Full | GateScope::Rerun { .. } => total.saturating_sub(new.len() as u64),
    };
    Some(TestSplit {
        existing_total,
        existing_failing: existing_failing.iter().map(ToString::to_string).collect(),
        new,
    })
}

/// Why a test gate that passed with the change's tests failed without them: the paths left out
/// (at most five named), and what that means.
pub fn existing_tests_note(left_out: &[String]) -> String {
    const NAMED: usize = 5;
    let mut named = left_out
        .iter()
        .take(NAMED)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if left_out.len() > NAMED {
        let _ = write!(named, " and {} more", left_out.len() - NAMED);
    }
    format!(
        "the existing tests fail without the test files the change wrote ({named}): their \
         verdict comes from the repository's own tests and the change's product code alone, so \
         the product code must make them pass (a test the change added must not alter them)"
    )
}

/// One line for the terminal: `existing tests: 4 ran, all pass · new tests: 2 (1 failing)`.
pub fn split_line(state: &LoopState) -> Option<String> {
    let split = test_split(state)?;
    if split.new.is_empty() {
        return None;
    }
    let existing = match split.existing_failing.len() {
        0 => format!("{} ran, all pass", split.existing_total),
        n => format!(
            "{} ran, {n} failing ({})",
            split.existing_total,
            split.existing_failing.join(", ")
        ),
    };
    let failing = split.new.iter().filter(|(_, f)| *f).count();
    Some(format!(
        "existing tests: {existing} · new tests (added by this run): {} ({failing} failing)",
        split.new.len()
    ))
}

/// The Markdown sections of the pull request body and the status comment: existing and new tests
/// apart, and the allowed test and configuration changes with their diffs.
pub fn markdown(state: &LoopState) -> String {
    let mut out = String::new();
    if let Some(split) = test_split(state).filter(|s| !s.new.is_empty()) {
        out.push_str("\n**Existing tests** (as the base commit had them): ");
        match split.existing_failing.len() {
            0 => {
                let _ = writeln!(out, "{} ran, all pass", split.existing_total);
            }
            n => {
                let names: Vec<String> = split
                    .existing_failing
                    .iter()
                    .take(10)
                    .map(|n| format!("`{}`", n.replace('`', "'")))
                    .collect();
                let _ = writeln!(
                    out,
                    "{} ran, {n} failing: {}",
                    split.existing_total,
                    names.join(", ")
                );
            }
        }
        out.push_str("\n**New tests** (added by this run, judged apart):\n");
        for (name, failing) in &split.new {
            let mark = if *failing { "❌ fail" } else { "✅ pass" };
            let _ = writeln!(out, "- `{}`: {mark}", name.replace('`', "'"));
        }
    }
    out.push_str(&allowed_edits(state));
    out
}

/// "Test and configuration changes": every allowed edit of existing tests or their configuration,
/// diffed, so a reviewer sees each changed assertion and configuration line.
pub fn allowed_edits(state: &LoopState) -> String {
    let edits = &state.evidence.allowed_edits;
    if edits.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\n### Test and configuration changes\n\nA maintainer allowed test edits for this task; \
         these changes alter existing tests or how they run. Review each one:\n",
    );
    for edit in edits {
        let _ = writeln!(
            out,
            "\n#### `{}`\n\n{}\n\n```diff\n{}\n```",
            edit.path.replace('`', "'"),
            edit.reason,
            edit.diff.trim_end().replace("```", "'''")
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use meta_agent_protocol::test_id::TestId;

    fn state() -> LoopState {
        let mut state = crate::tests::state(true);
        state.gates[0].failing_tests = vec![
            TestId::junit("tests.test_calc", "test_mean", None),
            TestId::junit("tests.test_more", "test_median", None),
        ];
        state.evidence.new_tests = vec![
            "tests/test_more.py::test_median".into(),
            "tests/test_more.py::test_one".into(),
        ];
        state
    }

    #[test]
    fn existing_and_new_tests_are_reported_apart() {
        let split = test_split(&state()).expect("a split");
        assert_eq!(split.existing_failing, ["tests.test_calc::test_mean"]);
        assert_eq!(
            split.new,
            [
                ("tests/test_more.py::test_median".to_owned(), true),
                ("tests/test_more.py::test_one".to_owned(), false)
            ]
        );
        insta::assert_snapshot!(markdown(&state()));
    }

    #[test]
    fn allowed_edits_are_listed_with_their_diffs() {
        let mut state = state();
        state.evidence.new_tests.clear();
        state.evidence.allowed_edits = vec![meta_agent_protocol::state::AllowedEdit {
            path: "tests/test_calc.py".into(),
            reason: "changes existing test code: `assert mean([1, 2]) == 1.5` became `assert mean([1, 2]) == 1`".into(),
            diff: "diff --git a/tests/test_calc.py b/tests/test_calc.py\n--- a/tests/test_calc.py\n+++ b/tests/test_calc.py\n@@ -4 +4 @@\n-    assert mean([1, 2]) == 1.5\n+    assert mean([1, 2]) == 1\n".into(),
        }];
        let text = markdown(&state);
        assert!(
            text.contains("### Test and configuration changes"),
            "{text}"
        );
        insta::assert_snapshot!(text);
    }

    /// A verdict of the existing tests alone (the run without the change's test files) counts
    /// none of the new tests: nothing is taken off its total for them.
    #[test]
    fn the_existing_tests_alone_are_counted_whole() {
        let mut state = state();
        let gate = state
            .gates
            .iter()
            .position(|g| g.tests_total.is_some())
            .unwrap();
        state.gates[gate].tests_total = Some(9);
        assert_eq!(test_split(&state).unwrap().existing_total, 7);
        state.gates[gate].scope = GateScope::ExistingTests;
        assert_eq!(test_split(&state).unwrap().existing_total, 9);
    }

    #[test]
    fn the_existing_tests_note_names_what_was_left_out() {
        let few = existing_tests_note(&["tests/test_aaa.py".into()]);
        let many: Vec<String> = (0..7).map(|i| format!("tests/test_{i}.py")).collect();
        insta::assert_snapshot!(format!("{few}\n{}", existing_tests_note(&many)));
    }
}
