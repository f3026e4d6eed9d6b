//! JUnit XML reader: counts tests and keeps the failures of one or several reports.
//!
//! Reads the shapes real tools write (pytest xunit1/xunit2, cargo-nextest, jest-junit,
//! mocha-junit-reporter, vitest, Maven Surefire, go-junit-report, gotestsum, ruff, eslint):
//! a `<testsuites>` or bare `<testsuite>` root, nested suites, missing attributes, CDATA,
//! `<flakyFailure>`/`<rerunFailure>` retries. Counts come from the `<testcase>` elements, never
//! from the suites' `tests`/`failures` attributes, which tools omit or get wrong.
//!
//! The reader streams quick-xml events through one reused buffer: a passing test costs only
//! counters, a failure is kept (trimmed to [`Limits`]) up to `max_items`. It never expands
//! custom entities (a DOCTYPE declaring entities is refused), never panics on bad input, and
//! never loads the whole file. It must not print or touch anything but the report it reads.

mod input;
mod reader;
mod text;

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{Limits, ReportError};

/// The format name used in errors.
const FORMAT: &str = "JUnit XML";

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

    /// Adds `other`'s counts and failures, keeping at most `max_items` failures in detail.
    fn absorb(&mut self, other: JunitSummary, max_items: usize) {
        self.tests += other.tests;
        self.passed += other.passed;
        self.failed += other.failed;
        self.errors += other.errors;
        self.skipped += other.skipped;
        self.flaky += other.flaky;
        self.failures_omitted += other.failures_omitted;
        for failure in other.failures {
            if self.failures.len() < max_items {
                self.failures.push(failure);
            } else {
                self.failures_omitted += 1;
            }
        }
    }
}

/// Reads one JUnit file.
pub fn parse_junit_file(path: &Path, limits: &Limits) -> Result<JunitSummary, ReportError> {
    let file = std::fs::File::open(path).map_err(|source| ReportError::Io {
        path: path.to_owned(),
        source,
    })?;
    reader::read_report(file, path, limits)
}

/// Reads several JUnit files and merges their counts and failures (at most `max_items` failures
/// kept in detail over all files).
pub fn parse_junit_files(paths: &[PathBuf], limits: &Limits) -> Result<JunitSummary, ReportError> {
    let mut total = JunitSummary::default();
    for path in paths {
        total.absorb(parse_junit_file(path, limits)?, limits.max_items);
    }
    Ok(total)
}

#[cfg(test)]
mod tests;
