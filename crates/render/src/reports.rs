//! What `meta-agent report junit|coverage|sarif` prints for people: a report's counts, then its
//! failures, files or findings one line each. The `--json` forms are the readers' data as they
//! are, written by the command itself.

use std::fmt::Write as _;

use meta_agent_protocol::reports::{CoverageReport, JunitSummary, SarifReport};

use super::words::plural;

/// The counts and pass rate (none when no test ran), then each kept failure's id and first
/// message line.
pub fn junit(summary: &JunitSummary) -> String {
    let rate = if summary.tests == 0 {
        "no test ran".to_owned()
    } else {
        format!("pass rate {:.1}%", summary.pass_rate() * 100.0)
    };
    let mut out = format!(
        "{} test{}: {} passed, {} failed, {} error{}, {} skipped, {} flaky ({rate})\n",
        summary.tests,
        plural(summary.tests),
        summary.passed,
        summary.failed,
        summary.errors,
        plural(summary.errors),
        summary.skipped,
        summary.flaky,
    );
    for failure in &summary.failures {
        let _ = write!(out, "  ✗ {}", failure.id());
        match failure
            .message
            .lines()
            .next()
            .filter(|line| !line.trim().is_empty())
        {
            Some(first) => {
                let _ = writeln!(out, ": {first}");
            }
            None => out.push('\n'),
        }
    }
    if summary.failures_omitted > 0 {
        let _ = writeln!(out, "  … and {} more", summary.failures_omitted);
    }
    out
}

/// Line (and branch, when measured) coverage, then each file's line coverage.
pub fn coverage(coverage: &CoverageReport) -> String {
    let mut out = format!(
        "lines: {:.2}% ({}/{})\n",
        coverage.line_percent, coverage.lines_covered, coverage.lines_total
    );
    if let (Some(percent), Some(covered), Some(total)) = (
        coverage.branch_percent,
        coverage.branches_covered,
        coverage.branches_total,
    ) {
        let _ = writeln!(out, "branches: {percent:.2}% ({covered}/{total})");
    }
    for file in &coverage.files {
        let _ = writeln!(out, "  {:6.2}%  {}", file.line_percent, file.path);
    }
    out
}

/// The counts, then each kept finding's location, rule and first message line.
pub fn sarif(sarif: &SarifReport) -> String {
    let mut out = format!(
        "{} finding{}: {} error{}, {} warning{}\n",
        sarif.findings,
        plural(sarif.findings),
        sarif.errors,
        plural(sarif.errors),
        sarif.warnings,
        plural(sarif.warnings)
    );
    for finding in &sarif.results {
        let location = match (&finding.file, finding.line) {
            (Some(file), Some(line)) => format!("{file}:{line}"),
            (Some(file), None) => file.clone(),
            _ => "-".into(),
        };
        let rule = finding.rule_id.as_deref().unwrap_or("-");
        let _ = writeln!(
            out,
            "  {location}: [{rule}] {}",
            finding.message.lines().next().unwrap_or("")
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use meta_agent_protocol::reports::{
        CoverageFormat, FailureKind, FileCoverage, Finding, FindingLevel, TestFailure,
    };

    use super::*;

    fn failure(classname: &str, name: &str, message: &str) -> TestFailure {
        TestFailure {
            kind: FailureKind::Failure,
            report: PathBuf::from("reports/junit.xml"),
            suite: "pytest".into(),
            classname: classname.into(),
            name: name.into(),
            file: None,
            file_in_text: false,
            line: None,
            message: message.into(),
            failure_type: "AssertionError".into(),
            body: String::new(),
            stdout: String::new(),
            stderr: String::new(),
        }
    }

    #[test]
    fn each_report_as_people_read_it() {
        let junit_summary = JunitSummary {
            tests: 12,
            passed: 9,
            failed: 2,
            errors: 0,
            skipped: 1,
            flaky: 1,
            failures: vec![
                failure(
                    "tests.test_calc",
                    "test_mean",
                    "assert 2 == 2.5\nwhere 2 = mean(...)",
                ),
                failure("tests.test_calc", "test_median", ""),
            ],
            failures_omitted: 3,
            ..JunitSummary::default()
        };
        let file = |path: &str, covered, total, percent| FileCoverage {
            path: path.into(),
            lines_covered: covered,
            lines_total: total,
            line_percent: percent,
            branches_covered: None,
            branches_total: None,
            branch_percent: None,
        };
        let measured = CoverageReport {
            format: CoverageFormat::Lcov,
            line_percent: 87.5,
            lines_covered: 35,
            lines_total: 40,
            branch_percent: Some(50.0),
            branches_covered: Some(2),
            branches_total: Some(4),
            files: vec![
                file("src/calc.py", 30, 32, 93.75),
                file("src/io.py", 5, 8, 62.5),
            ],
        };
        let finding = |file: Option<&str>, line, rule: Option<&str>, message: &str| Finding {
            tool: "ruff".into(),
            rule_id: rule.map(Into::into),
            level: FindingLevel::Error,
            message: message.into(),
            file: file.map(Into::into),
            line,
        };
        let findings = SarifReport {
            findings: 3,
            errors: 2,
            warnings: 1,
            results: vec![
                finding(
                    Some("src/calc.py"),
                    Some(3),
                    Some("F401"),
                    "`os` imported but unused",
                ),
                finding(Some("src/io.py"), None, None, "file too long\nsecond line"),
                finding(None, None, Some("E999"), "syntax error"),
            ],
            results_omitted: 0,
        };
        insta::assert_snapshot!(
            "report_texts",
            [
                junit(&junit_summary),
                junit(&JunitSummary::default()),
                coverage(&measured),
                sarif(&findings),
            ]
            .join("---\n")
        );
    }
}
