//! JUnit XML reader: counts tests and keeps the failures of one or several reports.
//!
//! Reads the shapes real tools write (pytest xunit1/xunit2, cargo-nextest, jest-junit,
//! mocha-junit-reporter, vitest, Maven Surefire, go-junit-report, gotestsum, ruff, eslint):
//! a `<testsuites>` or bare `<testsuite>` root, nested suites, missing attributes, CDATA,
//! `<flakyFailure>`/`<rerunFailure>` retries. Counts come from the `<testcase>` elements, never
//! from the suites' `tests`/`failures` attributes, which tools omit or get wrong.
//!
//! The reader streams quick-xml events through one reused buffer: a passing test costs only
//! counters, a failure is kept (trimmed to [`Limits`]) up to `max_items`; only when asked
//! (`max_test_ids`) is every test's id kept with its outcome. It never expands
//! custom entities (a DOCTYPE declaring entities is refused), never panics on bad input, and
//! never loads the whole file. It must not print or touch anything but the report it reads.

mod input;
mod location;
mod reader;
mod text;

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{Limits, ReportError};
use meta_agent_protocol::test_id::TestId;

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
    /// Where the test is: the case's `file` attribute, else the file of the location the
    /// runner wrote in its text (vitest's ` ❯ path:line:column`).
    pub file: Option<String>,
    /// Whether `file` came from the runner's text rather than the case's attribute: a
    /// location, not part of the test's identity (a passing run of the same test has none).
    #[serde(skip)]
    pub file_in_text: bool,
    pub line: Option<u32>,
    pub message: String,
    #[serde(rename = "type")]
    pub failure_type: String,
    /// The element's text: usually the stack trace.
    pub body: String,
    pub stdout: String,
    pub stderr: String,
}

impl TestFailure {
    /// The test's id as the report names it (its runner not known here: see
    /// [`TestId::typed`]).
    pub fn id(&self) -> TestId {
        let file = self.file.as_deref().filter(|_| !self.file_in_text);
        TestId::junit(&self.classname, &self.name, file)
    }
}

/// How one test case ended, by its last attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TestStatus {
    Passed,
    Skipped,
    Failed,
    Errored,
}

/// One test case's id and how it ended: kept only when [`Limits::max_test_ids`] asks for them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TestOutcome {
    /// As the report names it (its runner not known here).
    pub id: TestId,
    pub status: TestStatus,
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
    /// Every test case's id and outcome, passing ones included, in report order: kept only
    /// when [`Limits::max_test_ids`] is above 0 (then at most that many), so a reader that
    /// needs only counts and failures stays flat in memory.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outcomes: Vec<TestOutcome>,
    /// Test cases whose outcome was not kept in `outcomes` because the cap was reached (0 when
    /// outcomes were not asked for).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub outcomes_omitted: u64,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
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

    /// Adds `other`'s counts, failures and outcomes, keeping at most `max_items` failures in
    /// detail and `max_ids` outcomes.
    fn absorb(&mut self, other: JunitSummary, max_items: usize, max_ids: usize) {
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
        self.outcomes_omitted += other.outcomes_omitted;
        for outcome in other.outcomes {
            if self.outcomes.len() < max_ids {
                self.outcomes.push(outcome);
            } else {
                self.outcomes_omitted += 1;
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
        total.absorb(
            parse_junit_file(path, limits)?,
            limits.max_items,
            limits.max_test_ids,
        );
    }
    Ok(total)
}

#[cfg(test)]
mod tests;
