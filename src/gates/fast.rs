//! Fast feedback: a gate that failed with failing tests is first re-run on those tests only, with
//! the runner's own way of selecting tests (pytest node ids, a nextest filterset, a jest name
//! pattern, a `go test -run` expression). Only when they pass does the whole gate run again, so
//! an improve iteration's time grows with the failures, not with the suite. The full gates always
//! run before a commit.

use std::path::Path;

use crate::config::raw::{RawRerun, TestFilterFormat};
use crate::config::{GateCommand, GateSpec};

/// The placeholder argument replaced by the failing tests.
pub const TESTS_PLACEHOLDER: &str = "{tests}";

/// A failing test as JUnit names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailingTest {
    pub classname: String,
    pub name: String,
}

impl FailingTest {
    /// From `classname::name` (the form kept in history); the class part has no `::` of its own
    /// for the runners supported here.
    pub fn parse(id: &str) -> FailingTest {
        match id.split_once("::") {
            Some((classname, name)) => FailingTest {
                classname: classname.into(),
                name: name.into(),
            },
            None => FailingTest {
                classname: String::new(),
                name: id.into(),
            },
        }
    }
}

/// The gate with its command replaced by the re-run of `failing`, or `None` when the gate cannot
/// re-run single tests.
pub fn rerun_gate(
    gate: &GateSpec,
    failing: &[FailingTest],
    exists: &dyn Fn(&Path) -> bool,
) -> Option<GateSpec> {
    let rerun = gate.rerun_failed.as_ref()?;
    if failing.is_empty() {
        return None;
    }
    let selection = select(rerun, failing, exists);
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
    Some(GateSpec {
        command: GateCommand::Argv(argv),
        ..gate.clone()
    })
}

/// The arguments that select `failing` for this runner.
fn select(
    rerun: &RawRerun,
    failing: &[FailingTest],
    exists: &dyn Fn(&Path) -> bool,
) -> Vec<String> {
    match rerun.format {
        TestFilterFormat::Pytest => failing
            .iter()
            .map(|test| pytest_node_id(test, exists))
            .collect(),
        TestFilterFormat::Nextest => {
            let terms: Vec<String> = failing
                .iter()
                .map(|test| format!("test(={})", test.name))
                .collect();
            vec![terms.join(" | ")]
        }
        TestFilterFormat::Jest => vec![alternation(failing.iter().map(|t| t.name.as_str()))],
        TestFilterFormat::Go => vec![alternation(failing.iter().map(|t| t.name.as_str()))],
    }
}

/// `^(a|b)$` with regex metacharacters escaped.
fn alternation<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let escaped: Vec<String> = names.map(regex::escape).collect();
    format!("^({})$", escaped.join("|"))
}

/// pytest's node id for a JUnit test case: the longest dotted prefix of the class name that is a
/// `.py` file, then the rest (test classes) and the name, joined by `::`.
pub fn pytest_node_id(test: &FailingTest, exists: &dyn Fn(&Path) -> bool) -> String {
    let parts: Vec<&str> = test
        .classname
        .split('.')
        .filter(|p| !p.is_empty())
        .collect();
    for split in (1..=parts.len()).rev() {
        let file = format!("{}.py", parts[..split].join("/"));
        if exists(Path::new(&file)) {
            let mut id = vec![file];
            id.extend(parts[split..].iter().map(|p| (*p).to_owned()));
            id.push(test.name.clone());
            return id.join("::");
        }
    }
    format!("{}.py::{}", parts.join("/"), test.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(format: TestFilterFormat, run: &[&str]) -> GateSpec {
        GateSpec {
            name: "tests".into(),
            kind: crate::config::raw::GateKind::Tests,
            command: GateCommand::Argv(vec!["full".into()]),
            workdir: ".".into(),
            timeout: std::time::Duration::from_secs(60),
            env: Default::default(),
            junit: vec![],
            coverage: None,
            sarif: vec![],
            fail_on: crate::report::FindingLevel::Error,
            requires: vec![],
            optional: false,
            files: Default::default(),
            rerun_failed: Some(RawRerun {
                run: run.iter().map(|s| (*s).to_owned()).collect(),
                format,
            }),
            network: crate::config::raw::GateNetwork::Off,
        }
    }

    fn argv(spec: &GateSpec) -> Vec<String> {
        match &spec.command {
            GateCommand::Argv(argv) => argv.clone(),
            GateCommand::Shell(line) => vec![line.clone()],
        }
    }

    #[test]
    fn pytest_ids_find_the_module_file_and_keep_classes() {
        let exists = |p: &Path| p == Path::new("tests/test_calc.py");
        let plain = FailingTest::parse("tests.test_calc::test_mean");
        assert_eq!(
            pytest_node_id(&plain, &exists),
            "tests/test_calc.py::test_mean"
        );
        let in_class = FailingTest {
            classname: "tests.test_calc.TestMean".into(),
            name: "test_empty".into(),
        };
        assert_eq!(
            pytest_node_id(&in_class, &exists),
            "tests/test_calc.py::TestMean::test_empty"
        );
    }

    #[test]
    fn each_runner_gets_its_own_selection() {
        let failing = [
            FailingTest::parse("stats::tests::mean_of_two"),
            FailingTest::parse("stats::tests::a.b"),
        ];
        let none = |_: &Path| false;
        let nextest = rerun_gate(
            &gate(
                TestFilterFormat::Nextest,
                &["cargo", "nextest", "run", "-E", "{tests}"],
            ),
            &failing,
            &none,
        )
        .unwrap();
        assert_eq!(
            argv(&nextest),
            [
                "cargo",
                "nextest",
                "run",
                "-E",
                "test(=tests::mean_of_two) | test(=tests::a.b)"
            ]
        );
        let go = rerun_gate(
            &gate(
                TestFilterFormat::Go,
                &["go", "test", "-run", "{tests}", "./..."],
            ),
            &failing,
            &none,
        )
        .unwrap();
        assert_eq!(argv(&go)[3], r"^(tests::mean_of_two|tests::a\.b)$");
        let pytest = rerun_gate(
            &gate(TestFilterFormat::Pytest, &["pytest", "{tests}"]),
            &[
                FailingTest::parse("t.test_x::test_a"),
                FailingTest::parse("t.test_x::test_b"),
            ],
            &none,
        )
        .unwrap();
        assert_eq!(
            argv(&pytest),
            ["pytest", "t/test_x.py::test_a", "t/test_x.py::test_b"]
        );
    }

    #[test]
    fn gates_without_a_rerun_or_without_failures_have_none() {
        let mut plain = gate(TestFilterFormat::Pytest, &["pytest", "{tests}"]);
        assert!(rerun_gate(&plain, &[], &|_| true).is_none());
        plain.rerun_failed = None;
        assert!(rerun_gate(&plain, &[FailingTest::parse("a::b")], &|_| true).is_none());
    }
}
