//! What the report readers found, as plain data: a JUnit report's counts, failures and outcomes
//! ([`JunitSummary`]), a SARIF log's findings ([`SarifReport`]) and a coverage report's totals
//! ([`CoverageReport`]). The readers (`meta-agent-report`)
//! produce these; the gates judge them and the renderers show them, knowing no reader. And the
//! other way: the cases of a JUnit report the bot writes ([`Suite`]), which the renderers compose
//! and the report crate's writer serializes.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::test_id::TestId;

/// Whether a test case ended in a `<failure>` (an assertion) or an `<error>` (the test crashed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    Failure,
    Error,
}

/// One failing test case, every text trimmed to the reader's limits.
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

/// One test case's id and how it ended: kept only when the reader's `max_test_ids` limit asks for them.
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
    /// when the reader's `max_test_ids` limit is above 0 (then at most that many), so a reader that
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
}

/// SARIF result levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingLevel {
    None,
    Note,
    Warning,
    Error,
}

/// One SARIF result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// `tool.driver.name` of the run the result belongs to.
    pub tool: String,
    /// `ruleId`, else `rule.id`, else the id of the rule `ruleIndex` points at.
    pub rule_id: Option<String>,
    pub level: FindingLevel,
    /// `message.text` (or the rule's message string), trimmed to `Limits::max_message_bytes`.
    pub message: String,
    /// The first location's file, relative to the source root when the log says what it is.
    pub file: Option<String>,
    /// The first location's `region.startLine`.
    pub line: Option<u32>,
}

/// All results of a SARIF log (every run), kept in detail up to a cap.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SarifReport {
    /// Total number of results.
    pub findings: u64,
    /// Results at level error.
    pub errors: u64,
    /// Results at level warning.
    pub warnings: u64,
    pub results: Vec<Finding>,
    /// Results counted but not kept in `results` because the cap was reached.
    pub results_omitted: u64,
}

/// The format a coverage report was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CoverageFormat {
    Lcov,
    Cobertura,
}

/// Coverage of one source file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FileCoverage {
    /// The path as the report wrote it (lcov `SF:`, Cobertura `filename`).
    pub path: String,
    pub lines_covered: u64,
    pub lines_total: u64,
    /// Percent (0 to 100), 0.0 when the file has no instrumented lines.
    pub line_percent: f64,
    /// Branch counts are present only when this file has branch data.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branches_covered: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branches_total: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch_percent: Option<f64>,
}

/// A whole coverage report: totals, and per file (sorted by path).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CoverageReport {
    pub format: CoverageFormat,
    /// Percent (0 to 100); 0.0 when the report has no instrumented lines (see the module doc).
    pub line_percent: f64,
    pub lines_covered: u64,
    pub lines_total: u64,
    /// Present only when the report has at least one branch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch_percent: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branches_covered: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branches_total: Option<u64>,
    pub files: Vec<FileCoverage>,
}

/// How a case ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaseVerdict {
    Passed,
    /// It ran and did not pass: `message` in one line, `detail` the evidence (reasons, output).
    Failed {
        message: String,
        detail: String,
    },
    /// It could not be judged: it did not start, timed out or crashed.
    Errored {
        message: String,
        detail: String,
    },
    /// It was not run (a missing optional program, a pending evaluation run): why.
    Skipped {
        message: String,
    },
}

/// One named case.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    pub name: String,
    /// Where reporters group the case (`meta-agent.gates.tests`, an evaluation task id).
    pub classname: Option<String>,
    pub duration: Option<Duration>,
    pub verdict: CaseVerdict,
    /// Extra facts shown by some reporters (`command`, `model`, `run`).
    pub properties: Vec<(String, String)>,
}

/// Cases under one name.
#[derive(Debug, Clone, PartialEq)]
pub struct Suite {
    pub name: String,
    pub cases: Vec<Case>,
}
