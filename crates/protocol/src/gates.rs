//! What one run of the gates found ([`GatesSummary`]): each gate's status, how its command ended,
//! the reasons it failed, and what its reports said ([`GateResult`]). The gates produce these,
//! the engine decides on them and the renderers show them; the loop's history keeps the compact
//! [`GateRecord`] of each.

use serde::Serialize;

use crate::kinds::GateKind;
use crate::records::{GateNote, GateProblem, GateRecord, GateScope, GateStatus};
use crate::reports::{Finding, FindingLevel, JunitSummary};
use crate::termination::Termination;
use crate::test_id::TestId;

/// Coverage as measured against the gate's threshold.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CoverageOutcome {
    pub line_percent: f64,
    pub lines_covered: u64,
    pub lines_total: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch_percent: Option<f64>,
    pub threshold: f64,
}

/// Lint findings as read from SARIF.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LintOutcome {
    pub findings: u64,
    pub errors: u64,
    pub warnings: u64,
    /// Findings at or above the gate's `fail_on` level.
    pub blocking: u64,
    pub results: Vec<Finding>,
}

/// Everything known about one gate after it ran.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateResult {
    pub name: String,
    pub kind: GateKind,
    pub status: GateStatus,
    pub duration_ms: u64,
    /// The command as configured (placeholders expanded).
    pub command: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub termination: Option<Termination>,
    /// Why the gate failed or was skipped, one line each, most important first.
    pub reasons: Vec<String>,
    /// What the loop or the runner says about how it ran (fast feedback, flaky, the network
    /// not cut): for people, beside the reasons.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<GateNote>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tests: Option<JunitSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coverage: Option<CoverageOutcome>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lint: Option<LintOutcome>,
    /// The last lines of the command's output (stderr, then stdout), for failures without reports.
    pub output_tail: String,
    /// Processes the command left behind, killed after it ended.
    pub descendants_killed: u32,
    /// The command's captured output (stderr then stdout, capped, without escape sequences),
    /// for signature extraction; not serialized.
    #[serde(skip)]
    pub log: String,
    /// The whole suite, or only the tests that failed before (fast feedback).
    #[serde(skip_serializing_if = "GateScope::is_full")]
    pub scope: GateScope,
    /// Why the gate could not judge the code at all (the gates' `start::classify`): it could not start,
    /// or it timed out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<GateProblem>,
    /// The failing tests kept in `tests.failures`, typed for the gate's runner (its
    /// `rerun_failed.format`) so they can be selected again; not serialized (the failures are).
    #[serde(skip)]
    pub failing: Vec<TestId>,
}

impl GateResult {
    /// Whether the gate ran and passed (its [`GateStatus`]).
    pub fn passed(&self) -> bool {
        self.status == GateStatus::Passed
    }
}

/// All gates of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GatesSummary {
    /// True when every gate that ran passed and at least one ran: commit readiness.
    pub passed: bool,
    pub gates: Vec<GateResult>,
}

impl GatesSummary {
    /// Readiness from the individual results (skipped gates do not count either way).
    pub fn from_results(gates: Vec<GateResult>) -> Self {
        let ran: Vec<&GateResult> = gates
            .iter()
            .filter(|g| g.status != GateStatus::Skipped)
            .collect();
        let passed = !ran.is_empty() && ran.iter().all(|g| g.passed());
        GatesSummary { passed, gates }
    }

    /// The compact records of every gate, for the loop's history.
    pub fn records(&self) -> Vec<GateRecord> {
        self.gates.iter().map(GateRecord::from).collect()
    }
}

impl From<&GateResult> for GateRecord {
    fn from(gate: &GateResult) -> GateRecord {
        GateRecord {
            name: gate.name.clone(),
            kind: gate.kind,
            result: gate.status,
            duration_ms: gate.duration_ms,
            reasons: gate.reasons.clone(),
            notes: gate.notes.clone(),
            tests_passed: gate.tests.as_ref().map(|t| t.passed),
            tests_total: gate.tests.as_ref().map(|t| t.tests),
            tests_skipped: gate.tests.as_ref().map(|t| t.skipped),
            failing_tests: gate.failing.clone(),
            coverage: gate.coverage.as_ref().map(|c| c.line_percent),
            coverage_threshold: gate.coverage.as_ref().map(|c| c.threshold),
            findings: gate.lint.as_ref().map(|l| l.findings),
            problem: gate.problem.clone(),
            scope: gate.scope,
        }
    }
}

/// Why a gate's verdict is a failure, typed (render writes each one's sentence): how its command
/// ended, what its reports say, or that a report is missing or unreadable.
#[derive(Debug, Clone, PartialEq)]
pub enum GateReason {
    /// The command exited with a code other than 0.
    Exited { code: i32 },
    /// A signal killed it (not meta-agent).
    Signaled { signal: i32 },
    /// It ran out of its time, `after_ms`.
    TimedOut { after_ms: u64 },
    /// meta-agent was stopping.
    Cancelled,
    /// It could not start, and why.
    CouldNotStart { reason: String },
    /// The JUnit report has no test case.
    NoTestRan,
    /// Tests failed (assertions) or errored, of `total`.
    TestsFailed {
        failed: u64,
        errors: u64,
        total: u64,
    },
    /// Every one of `total` tests was skipped: nothing verified.
    AllSkipped { total: u64 },
    /// Line coverage under the gate's threshold (both percent).
    CoverageBelow { percent: f64, threshold: f64 },
    /// `blocking` findings at `level` or above.
    Findings { blocking: u64, level: FindingLevel },
    /// No file matched the report's configured paths.
    ReportMissing {
        report: ReportKind,
        patterns: Vec<String>,
    },
    /// A report file could not be read.
    ReportUnreadable { report: ReportKind, error: String },
}

/// The reports a gate reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportKind {
    Junit,
    Coverage,
    Sarif,
}
