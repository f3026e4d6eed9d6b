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

use super::{Limits, ReportError};
pub use meta_agent_protocol::reports::{
    FailureKind, JunitSummary, TestFailure, TestOutcome, TestStatus,
};

/// The format name used in errors.
const FORMAT: &str = "JUnit XML";

/// Adds `other`'s counts, failures and outcomes, keeping at most `max_items` failures in
/// detail and `max_ids` outcomes.
fn absorb(total: &mut JunitSummary, other: JunitSummary, max_items: usize, max_ids: usize) {
    total.tests += other.tests;
    total.passed += other.passed;
    total.failed += other.failed;
    total.errors += other.errors;
    total.skipped += other.skipped;
    total.flaky += other.flaky;
    total.failures_omitted += other.failures_omitted;
    for failure in other.failures {
        if total.failures.len() < max_items {
            total.failures.push(failure);
        } else {
            total.failures_omitted += 1;
        }
    }
    total.outcomes_omitted += other.outcomes_omitted;
    for outcome in other.outcomes {
        if total.outcomes.len() < max_ids {
            total.outcomes.push(outcome);
        } else {
            total.outcomes_omitted += 1;
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
        absorb(
            &mut total,
            parse_junit_file(path, limits)?,
            limits.max_items,
            limits.max_test_ids,
        );
    }
    Ok(total)
}

#[cfg(test)]
mod tests;
