//! JUnit XML that the bot writes itself, for CI test reporters (GitHub's, GitLab's, Jenkins'):
//! named cases with verdicts, grouped in suites, serialized by quick-junit. Generic on purpose:
//! `meta-agent gates --junit` writes one case per gate, and an evaluation can write one case per
//! task × run (a pending run is [`CaseVerdict::Skipped`] with the reason, as JUnit has no pending).
//!
//! Pure: it returns the document; the caller redacts and writes it. quick-junit strips what XML
//! cannot hold (control characters, ANSI escapes); the project's reader ([`super::junit`]) reads
//! the result back.

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

pub use meta_agent_protocol::reports::{Case, CaseVerdict, Suite};

/// Why the document could not be produced.
#[derive(Debug, thiserror::Error)]
#[error("cannot write JUnit XML: {0}")]
pub struct JunitWriteError(#[from] quick_junit::SerializeError);

/// The JUnit XML document `<testsuites name="{report}">` holding `suites`, with counts and
/// durations summed per suite.
pub fn to_xml(report: &str, suites: &[Suite]) -> Result<String, JunitWriteError> {
    let mut document = Report::new(report);
    for suite in suites {
        document.add_test_suite(test_suite(suite));
    }
    Ok(document.to_string()?)
}

fn test_suite(suite: &Suite) -> TestSuite {
    let mut test_suite = TestSuite::new(suite.name.as_str());
    test_suite.add_test_cases(suite.cases.iter().map(test_case));
    let total = suite.cases.iter().filter_map(|case| case.duration).sum();
    test_suite.set_time(total);
    test_suite
}

fn test_case(case: &Case) -> TestCase {
    let mut test_case = TestCase::new(case.name.as_str(), status(&case.verdict));
    if let Some(classname) = &case.classname {
        test_case.set_classname(classname.as_str());
    }
    if let Some(duration) = case.duration {
        test_case.set_time(duration);
    }
    test_case.add_properties(
        case.properties
            .iter()
            .map(|(name, value)| Property::new(name.as_str(), value.as_str())),
    );
    test_case
}

fn status(verdict: &CaseVerdict) -> TestCaseStatus {
    let non_success = |kind, message: &str, detail: &str| {
        let mut status = TestCaseStatus::non_success(kind);
        status.set_message(message).set_description(detail);
        status
    };
    match verdict {
        CaseVerdict::Passed => TestCaseStatus::success(),
        CaseVerdict::Failed { message, detail } => {
            non_success(NonSuccessKind::Failure, message, detail)
        }
        CaseVerdict::Errored { message, detail } => {
            non_success(NonSuccessKind::Error, message, detail)
        }
        CaseVerdict::Skipped { message } => {
            let mut status = TestCaseStatus::skipped();
            status.set_message(message.as_str());
            status
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::{FailureKind, Limits, parse_junit_file};

    fn case(name: &str, verdict: CaseVerdict) -> Case {
        Case {
            name: name.into(),
            classname: Some("evals.task-7".into()),
            duration: Some(Duration::from_millis(1250)),
            verdict,
            properties: vec![("model".into(), "gpt-4.1".into())],
        }
    }

    /// An evaluation's shape: task × run with pass, fail, error and pending.
    fn evaluation() -> Vec<Suite> {
        vec![Suite {
            name: "task-7".into(),
            cases: vec![
                case("run 1", CaseVerdict::Passed),
                case(
                    "run 2",
                    CaseVerdict::Failed {
                        message: "gates failed: tests <2 of 9> & lint".into(),
                        detail: "tests:\n  \u{1b}[31m✗ test_mean\u{1b}[0m\u{7}".into(),
                    },
                ),
                case(
                    "run 3",
                    CaseVerdict::Errored {
                        message: "timed out after 10m".into(),
                        detail: String::new(),
                    },
                ),
                case(
                    "run 4",
                    CaseVerdict::Skipped {
                        message: "pending: not run yet".into(),
                    },
                ),
            ],
        }]
    }

    #[test]
    fn our_reader_reads_back_what_we_write() {
        let xml = to_xml("meta-agent eval", &evaluation()).unwrap();
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), &xml).unwrap();
        let read = parse_junit_file(file.path(), &Limits::default()).unwrap();
        let counts = [
            read.tests,
            read.passed,
            read.failed,
            read.errors,
            read.skipped,
        ];
        assert_eq!(counts, [4, 1, 1, 1, 1], "{xml}");
        let failed = &read.failures[0];
        assert_eq!(
            (failed.kind, failed.name.as_str(), failed.classname.as_str()),
            (FailureKind::Failure, "run 2", "evals.task-7")
        );
        assert_eq!(failed.message, "gates failed: tests <2 of 9> & lint");
        assert!(failed.body.contains("✗ test_mean"), "{}", failed.body);
        assert!(!xml.contains('\u{1b}') && !xml.contains('\u{7}'), "{xml}");
        assert_eq!(read.failures[1].kind, FailureKind::Error);
        assert_eq!(read.failures[1].message, "timed out after 10m");
    }

    #[test]
    fn suites_sum_their_durations_and_cases_keep_properties() {
        let xml = to_xml("r", &evaluation()).unwrap();
        assert!(
            xml.contains("<testsuite name=\"task-7\" tests=\"4\""),
            "{xml}"
        );
        assert!(xml.contains("time=\"5.000\""), "{xml}");
        assert!(
            xml.contains("<property name=\"model\" value=\"gpt-4.1\"/>"),
            "{xml}"
        );
    }
}
