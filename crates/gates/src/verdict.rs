//! The pure verdict of a gate over what was observed: how its command ended and what its reports
//! say. No I/O: the runner gathers the evidence, [`judge`] gives the verdict (the engine's
//! `decide` is the loop's own "what next").
//!
//! - `tests_pass`: the JUnit reports exist and parse, at least one test ran, none failed or errored.
//! - `linter_pass`: no SARIF finding at or above the gate's `fail_on` level.
//! - `coverage_pass`: total line coverage at or above the threshold.
//! - every gate: the command exited with code 0.

use meta_agent_exec::Termination;
use meta_agent_protocol::gates::{GateReason, ReportKind};
use meta_agent_report::{CoverageReport, FindingLevel, JunitSummary, SarifReport};

use super::{CoverageOutcome, LintOutcome};

/// What one report check found: the parsed report, or why there is none.
#[derive(Debug, Clone)]
pub enum ReportEvidence<T> {
    /// The gate does not produce this report.
    NotConfigured,
    /// No file matched the configured paths (or only stale ones did).
    Missing {
        patterns: Vec<String>,
    },
    /// A file could not be read.
    Unreadable {
        error: String,
    },
    Parsed(T),
}

/// Everything observed about one gate run.
#[derive(Debug, Clone)]
pub struct Evidence {
    pub termination: Termination,
    pub timeout_ms: u64,
    pub junit: ReportEvidence<JunitSummary>,
    pub coverage: ReportEvidence<CoverageReport>,
    pub coverage_threshold: f64,
    pub sarif: ReportEvidence<SarifReport>,
    pub fail_on: FindingLevel,
}

/// The decision, with the reasons a person needs (typed; render writes their sentences).
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub passed: bool,
    pub reasons: Vec<GateReason>,
    pub tests: Option<JunitSummary>,
    pub coverage: Option<CoverageOutcome>,
    pub lint: Option<LintOutcome>,
}

/// Decides a gate.
pub fn judge(evidence: Evidence) -> Verdict {
    let mut reasons = Vec::new();
    if let Some(reason) = termination_reason(&evidence.termination, evidence.timeout_ms) {
        reasons.push(reason);
    }
    let tests = tests_check(evidence.junit, &mut reasons);
    let coverage = coverage_check(evidence.coverage, evidence.coverage_threshold, &mut reasons);
    let lint = lint_check(evidence.sarif, evidence.fail_on, &mut reasons);
    Verdict {
        passed: reasons.is_empty(),
        reasons,
        tests,
        coverage,
        lint,
    }
}

/// Why the command's ending fails the gate, if it does.
pub fn termination_reason(termination: &Termination, timeout_ms: u64) -> Option<GateReason> {
    match termination {
        Termination::Exited { code: 0 } => None,
        Termination::Exited { code } => Some(GateReason::Exited { code: *code }),
        Termination::Signaled { signal } => Some(GateReason::Signaled { signal: *signal }),
        Termination::TimedOut => Some(GateReason::TimedOut {
            after_ms: timeout_ms,
        }),
        Termination::Cancelled => Some(GateReason::Cancelled),
        Termination::NotStarted { reason } => Some(GateReason::CouldNotStart {
            reason: reason.clone(),
        }),
    }
}

/// The sentence of how a command ended, for logs and events: "exit 0", or why it failed.
pub fn termination_line(termination: &Termination, timeout_ms: u64) -> String {
    termination_reason(termination, timeout_ms).map_or_else(
        || "exit 0".to_owned(),
        |r| meta_agent_render::gates::reason(&r),
    )
}

fn tests_check(
    evidence: ReportEvidence<JunitSummary>,
    reasons: &mut Vec<GateReason>,
) -> Option<JunitSummary> {
    let summary = parsed_or_reason(evidence, ReportKind::Junit, reasons)?;
    if summary.tests == 0 {
        reasons.push(GateReason::NoTestRan);
    } else if summary.failed + summary.errors > 0 {
        reasons.push(GateReason::TestsFailed {
            failed: summary.failed,
            errors: summary.errors,
            total: summary.tests,
        });
    } else if summary.passed == 0 {
        reasons.push(GateReason::AllSkipped {
            total: summary.tests,
        });
    }
    Some(summary)
}

fn coverage_check(
    evidence: ReportEvidence<CoverageReport>,
    threshold: f64,
    reasons: &mut Vec<GateReason>,
) -> Option<CoverageOutcome> {
    let report = parsed_or_reason(evidence, ReportKind::Coverage, reasons)?;
    if report.line_percent < threshold {
        reasons.push(GateReason::CoverageBelow {
            percent: report.line_percent,
            threshold,
        });
    }
    Some(CoverageOutcome {
        line_percent: report.line_percent,
        lines_covered: report.lines_covered,
        lines_total: report.lines_total,
        branch_percent: report.branch_percent,
        threshold,
    })
}

fn lint_check(
    evidence: ReportEvidence<SarifReport>,
    fail_on: FindingLevel,
    reasons: &mut Vec<GateReason>,
) -> Option<LintOutcome> {
    let report = parsed_or_reason(evidence, ReportKind::Sarif, reasons)?;
    let blocking = report
        .results
        .iter()
        .filter(|finding| finding.level >= fail_on)
        .count() as u64
        + if fail_on <= FindingLevel::Error {
            report.results_omitted
        } else {
            0
        };
    if blocking > 0 {
        reasons.push(GateReason::Findings {
            blocking,
            level: fail_on,
        });
    }
    Some(LintOutcome {
        findings: report.findings,
        errors: report.errors,
        warnings: report.warnings,
        blocking,
        results: report.results,
    })
}

fn parsed_or_reason<T>(
    evidence: ReportEvidence<T>,
    report: ReportKind,
    reasons: &mut Vec<GateReason>,
) -> Option<T> {
    match evidence {
        ReportEvidence::NotConfigured => None,
        ReportEvidence::Missing { patterns } => {
            reasons.push(GateReason::ReportMissing { report, patterns });
            None
        }
        ReportEvidence::Unreadable { error } => {
            reasons.push(GateReason::ReportUnreadable { report, error });
            None
        }
        ReportEvidence::Parsed(report) => Some(report),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reasons' sentences as people read them.
    fn said(verdict: &Verdict) -> Vec<String> {
        verdict
            .reasons
            .iter()
            .map(meta_agent_render::gates::reason)
            .collect()
    }

    fn evidence() -> Evidence {
        Evidence {
            termination: Termination::Exited { code: 0 },
            timeout_ms: 60_000,
            junit: ReportEvidence::NotConfigured,
            coverage: ReportEvidence::NotConfigured,
            coverage_threshold: 0.0,
            sarif: ReportEvidence::NotConfigured,
            fail_on: FindingLevel::Error,
        }
    }

    fn junit(tests: u64, failed: u64, skipped: u64) -> JunitSummary {
        JunitSummary {
            tests,
            failed,
            skipped,
            passed: tests - failed - skipped,
            ..JunitSummary::default()
        }
    }

    #[test]
    fn exit_code_alone_decides_a_custom_gate() {
        assert!(judge(evidence()).passed);
        let failed = judge(Evidence {
            termination: Termination::Exited { code: 2 },
            ..evidence()
        });
        assert!(!failed.passed);
        assert_eq!(said(&failed), vec!["exited with code 2".to_owned()]);
    }

    #[test]
    fn a_runner_that_ran_nothing_does_not_pass() {
        let verdict = judge(Evidence {
            junit: ReportEvidence::Parsed(junit(0, 0, 0)),
            ..evidence()
        });
        assert!(!verdict.passed);
        assert!(said(&verdict)[0].contains("no test ran"));
        let all_skipped = judge(Evidence {
            junit: ReportEvidence::Parsed(junit(3, 0, 3)),
            ..evidence()
        });
        assert!(!all_skipped.passed);
    }

    #[test]
    fn failing_tests_fail_even_when_the_exit_code_is_zero() {
        let verdict = judge(Evidence {
            junit: ReportEvidence::Parsed(junit(10, 2, 1)),
            ..evidence()
        });
        assert!(!verdict.passed);
        assert_eq!(
            said(&verdict),
            vec!["2 of 10 tests failed (2 failures, 0 errors)".to_owned()]
        );
        assert!(
            judge(Evidence {
                junit: ReportEvidence::Parsed(junit(10, 0, 1)),
                ..evidence()
            })
            .passed
        );
    }

    #[test]
    fn a_missing_report_is_a_failure_that_names_where_it_looked() {
        let verdict = judge(Evidence {
            junit: ReportEvidence::Missing {
                patterns: vec!["out/junit.xml".into()],
            },
            ..evidence()
        });
        assert_eq!(
            said(&verdict),
            vec!["no JUnit report found at out/junit.xml".to_owned()]
        );
    }

    #[test]
    fn coverage_at_the_threshold_passes_and_below_fails() {
        let report = |percent: f64| CoverageReport {
            format: meta_agent_report::CoverageFormat::Lcov,
            line_percent: percent,
            lines_covered: 0,
            lines_total: 0,
            branch_percent: None,
            branches_covered: None,
            branches_total: None,
            files: Vec::new(),
        };
        let at = judge(Evidence {
            coverage: ReportEvidence::Parsed(report(80.0)),
            coverage_threshold: 80.0,
            ..evidence()
        });
        assert!(at.passed);
        let below = judge(Evidence {
            coverage: ReportEvidence::Parsed(report(79.9)),
            coverage_threshold: 80.0,
            ..evidence()
        });
        assert_eq!(
            said(&below),
            vec!["line coverage 79.9% is below the 80% threshold".to_owned()]
        );
    }

    #[test]
    fn lint_fails_only_at_or_above_the_configured_level() {
        let finding = |level| meta_agent_report::Finding {
            tool: "ruff".into(),
            rule_id: Some("F401".into()),
            level,
            message: "unused".into(),
            file: None,
            line: None,
        };
        let report = SarifReport {
            findings: 1,
            warnings: 1,
            results: vec![finding(FindingLevel::Warning)],
            ..SarifReport::default()
        };
        assert!(
            judge(Evidence {
                sarif: ReportEvidence::Parsed(report.clone()),
                ..evidence()
            })
            .passed
        );
        let strict = judge(Evidence {
            sarif: ReportEvidence::Parsed(report),
            fail_on: FindingLevel::Warning,
            ..evidence()
        });
        assert!(!strict.passed);
    }

    #[test]
    fn timeouts_say_how_long() {
        let verdict = judge(Evidence {
            termination: Termination::TimedOut,
            timeout_ms: 600_000,
            ..evidence()
        });
        assert_eq!(said(&verdict), vec!["timed out after 10m".to_owned()]);
    }
}
