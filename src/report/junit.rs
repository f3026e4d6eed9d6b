//! JUnit XML reader (placeholder types: the streaming reader is being written).

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{Limits, ReportError};

/// Whether a test case ended in a `<failure>` (an assertion) or an `<error>` (the test crashed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    Failure,
    Error,
}

/// One failing test case, every text trimmed to [`Limits`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TestFailure {
    pub kind: FailureKind,
    /// The report file this failure was read from.
    pub report: PathBuf,
    pub suite: String,
    pub classname: String,
    pub name: String,
    pub file: Option<String>,
    pub line: Option<u32>,
    pub message: String,
    #[serde(rename = "type")]
    pub failure_type: String,
    /// The element's text: usually the stack trace.
    pub body: String,
    pub stdout: String,
    pub stderr: String,
}

/// Counts over one or several JUnit files, and the failures in detail (up to a cap).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct JunitSummary {
    pub tests: u64,
    pub passed: u64,
    pub failed: u64,
    pub errors: u64,
    pub skipped: u64,
    /// Tests that failed at first and passed on a retry (counted in `passed` too).
    pub flaky: u64,
    pub failures: Vec<TestFailure>,
    /// Failures counted but not kept in `failures` because the cap was reached.
    pub failures_omitted: u64,
}

impl JunitSummary {
    /// passed / tests, or 0 when nothing ran.
    pub fn pass_rate(&self) -> f64 {
        if self.tests == 0 {
            0.0
        } else {
            self.passed as f64 / self.tests as f64
        }
    }
}

/// Reads one JUnit file.
pub fn parse_junit_file(path: &Path, limits: &Limits) -> Result<JunitSummary, ReportError> {
    let _ = limits;
    Err(ReportError::WrongFormat {
        path: path.to_owned(),
        expected: "JUnit XML",
        found: "reader not written yet".into(),
    })
}

/// Reads several JUnit files and merges their counts and failures.
pub fn parse_junit_files(paths: &[PathBuf], limits: &Limits) -> Result<JunitSummary, ReportError> {
    let mut total = JunitSummary::default();
    for path in paths {
        let one = parse_junit_file(path, limits)?;
        total.tests += one.tests;
        total.passed += one.passed;
        total.failed += one.failed;
        total.errors += one.errors;
        total.skipped += one.skipped;
        total.flaky += one.flaky;
        total.failures.extend(one.failures);
        total.failures_omitted += one.failures_omitted;
    }
    Ok(total)
}
