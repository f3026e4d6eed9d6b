//! Fast feedback: a gate that failed with failing tests can be re-run on those tests only, with
//! the runner's own way of selecting tests ([`super::filter`]): the flaky check re-runs them
//! unchanged, and an improve iteration on a large suite re-runs them before the whole gates run
//! again. A re-run counts only when it ran exactly the tests it selected (the engine checks,
//! [`super::filter::check`]); anything else is a harness problem and the whole gate runs.

use super::filter::{self, Unselectable};
use crate::config::{GateCommand, GateSpec};
use crate::protocol::test_id::TestId;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::raw::{RawRerun, TestFilterFormat};

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
