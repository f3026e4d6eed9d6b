//! Renders gate results for people and machines: a terminal table, Markdown (job summaries and
//! comments), JSON and JUnit XML (CI test reporters). Pure functions of a [`GatesSummary`];
//! printing and writing files is the caller's business.

use std::fmt::Write;
use std::time::Duration;

use meta_agent_protocol::clock::human_ms;
use meta_agent_protocol::gates::{GateReason, GateResult, GatesSummary, ReportKind};
use meta_agent_protocol::kinds::GateKind;
use meta_agent_protocol::records::{GateNote, GateStatus};

use super::words::plural;
use meta_agent_protocol::reports::{Case, CaseVerdict, FindingLevel, Suite};
use meta_agent_protocol::termination::Termination;

/// Failing tests listed per gate before "and N more".
const FAILURES_SHOWN: usize = 10;
/// Characters of a failure message shown in a summary line.
const MESSAGE_CHARS: usize = 200;

/// The first line of a message, cut to [`MESSAGE_CHARS`].
fn headline(message: &str) -> String {
    let first = message.lines().next().unwrap_or("");
    match first.char_indices().nth(MESSAGE_CHARS) {
        Some((cut, _)) => format!("{}…", &first[..cut]),
        None => first.to_owned(),
    }
}

/// The sentence of why a gate failed. Its words do not change with the counts ("1 errors",
/// "finding(s)"): a gate whose failures cannot be parsed is known to hindsight by this sentence
/// with its numbers normalised away, and one failure more must not make it another failure.
pub fn reason(reason: &GateReason) -> String {
    match reason {
        GateReason::Exited { code } => format!("exited with code {code}"),
        GateReason::Signaled { signal } => format!("killed by signal {signal}"),
        GateReason::TimedOut { after_ms } => format!("timed out after {}", human_ms(*after_ms)),
        GateReason::Cancelled => "cancelled before it finished".into(),
        GateReason::CouldNotStart { reason } => format!("could not start: {reason}"),
        GateReason::NoTestRan => "no test ran (the JUnit report has no test cases)".into(),
        GateReason::TestsFailed {
            failed,
            errors,
            total,
        } => format!(
            "{} of {total} tests failed ({failed} failures, {errors} errors)",
            failed + errors
        ),
        GateReason::AllSkipped { total } => {
            format!("all {total} tests were skipped; nothing was verified")
        }
        GateReason::CoverageBelow { percent, threshold } => {
            format!("line coverage {percent:.1}% is below the {threshold}% threshold")
        }
        GateReason::Findings { blocking, level } => format!(
            "{blocking} finding(s) at level {} or above",
            level_name(*level)
        ),
        GateReason::ReportMissing { report, patterns } => format!(
            "no {} report found at {}",
            report_name(*report),
            patterns.join(", ")
        ),
        GateReason::ReportUnreadable { report, error } => {
            format!("{} report unreadable: {error}", report_name(*report))
        }
    }
}

fn report_name(report: ReportKind) -> &'static str {
    match report {
        ReportKind::Junit => "JUnit",
        ReportKind::Coverage => "coverage",
        ReportKind::Sarif => "SARIF",
    }
}

fn level_name(level: FindingLevel) -> &'static str {
    match level {
        FindingLevel::None => "none",
        FindingLevel::Note => "note",
        FindingLevel::Warning => "warning",
        FindingLevel::Error => "error",
    }
}

/// The sentence of a gate note.
pub fn note(note: GateNote) -> &'static str {
    match note {
        GateNote::FastFeedback => "fast feedback: only the tests that failed before were re-run",
        GateNote::Flaky => "flaky: the failing tests passed on an immediate re-run with no change",
        GateNote::NetworkNotCut => {
            "note: this gate ran with the network ON: the machine cannot cut it (no unprivileged \
             user namespaces), so code under test could reach the network"
        }
    }
}

/// What a gate's result says, one line each: its reasons, then its notes.
pub fn said(reasons: &[String], notes: &[GateNote]) -> Vec<String> {
    reasons
        .iter()
        .cloned()
        .chain(notes.iter().map(|n| note(*n).to_owned()))
        .collect()
}

/// The JSON document of `meta-agent gates --json`.
pub fn to_json(summary: &GatesSummary) -> serde_json::Value {
    serde_json::to_value(summary)
        .unwrap_or_else(|err| serde_json::json!({ "passed": false, "error": err.to_string() }))
}

/// One line of details for a gate: test counts, coverage, findings, or the first reason.
pub fn details(gate: &GateResult) -> String {
    let mut parts = Vec::new();
    if let Some(tests) = &gate.tests {
        let mut counts = match gate.scope.describe() {
            Some(scope) => format!("{scope}: {} passed", tests.passed),
            None => format!(
                "{} test{}: {} passed",
                tests.tests,
                plural(tests.tests),
                tests.passed
            ),
        };
        for (count, label) in [
            (tests.failed, "failed"),
            (tests.errors, "errors"),
            (tests.skipped, "skipped"),
            (tests.flaky, "flaky"),
        ] {
            if count > 0 {
                let _ = write!(counts, ", {count} {label}");
            }
        }
        parts.push(counts);
    }
    if let Some(coverage) = &gate.coverage {
        let cmp = if coverage.line_percent >= coverage.threshold {
            ">="
        } else {
            "<"
        };
        parts.push(format!(
            "coverage {:.1}% {cmp} {}%",
            coverage.line_percent, coverage.threshold
        ));
    }
    if let Some(lint) = &gate.lint {
        parts.push(format!(
            "{} findings ({} errors, {} warnings)",
            lint.findings, lint.errors, lint.warnings
        ));
    }
    let abnormal_end = gate
        .termination
        .as_ref()
        .is_some_and(|termination| !matches!(termination, Termination::Exited { .. }));
    let first = match gate.problem.as_ref().filter(|p| p.cannot_start()) {
        Some(problem) => Some(super::environment::headline(problem)),
        None => said(&gate.reasons, &gate.notes).into_iter().next(),
    };
    if let Some(reason) =
        first.filter(|_| parts.is_empty() || abnormal_end || gate.problem.is_some())
    {
        parts.insert(0, reason);
    }
    parts.join("; ")
}

fn status_word(gate: &GateResult) -> &'static str {
    match gate.status {
        GateStatus::Passed => "pass",
        GateStatus::Failed => "FAIL",
        GateStatus::Skipped => "skip",
    }
}

/// The lowercase name of a gate kind.
pub fn kind_word(kind: GateKind) -> &'static str {
    match kind {
        GateKind::Tests => "tests",
        GateKind::Lint => "lint",
        GateKind::Coverage => "coverage",
        GateKind::Custom => "custom",
    }
}

/// A plain-text table followed by the failures, for the terminal.
pub fn to_terminal(summary: &GatesSummary) -> String {
    let rows: Vec<[String; 5]> = summary
        .gates
        .iter()
        .map(|gate| {
            [
                gate.name.clone(),
                kind_word(gate.kind).to_owned(),
                status_word(gate).to_owned(),
                human_ms(gate.duration_ms),
                details(gate),
            ]
        })
        .collect();
    let header = ["GATE", "KIND", "RESULT", "TIME", "DETAILS"].map(str::to_owned);
    let widths: Vec<usize> = (0..4)
        .map(|col| {
            rows.iter()
                .chain([&header])
                .map(|row| row[col].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in [&header].into_iter().chain(rows.iter()) {
        let line = format!(
            "{:w0$}  {:w1$}  {:w2$}  {:>w3$}  {}",
            row[0],
            row[1],
            row[2],
            row[3],
            row[4],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
            w3 = widths[3]
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
    for gate in summary
        .gates
        .iter()
        .filter(|gate| gate.status == GateStatus::Failed)
    {
        out.push('\n');
        out.push_str(&failure_text(gate));
    }
    let verdict = if summary.passed {
        "all gates passed"
    } else {
        "gates FAILED"
    };
    let _ = writeln!(out, "\n{verdict}");
    out
}

/// The gates as JUnit cases (`meta-agent gates --junit`, serialized by the report crate's
/// writer): one case per gate, classname `meta-agent.gates.<kind>`, its duration and command; a
/// failed gate fails with its first reason and the failure text, a gate that did not finish
/// (timeout, signal, not started) is an error, a skipped gate is skipped with its reason.
pub fn junit_suite(summary: &GatesSummary) -> Suite {
    Suite {
        name: "meta-agent gates".into(),
        cases: summary.gates.iter().map(junit_case).collect(),
    }
}

fn junit_case(gate: &GateResult) -> Case {
    let reason = |fallback: &str| {
        said(&gate.reasons, &gate.notes)
            .into_iter()
            .next()
            .unwrap_or_else(|| fallback.to_owned())
    };
    let verdict = match gate.status {
        GateStatus::Passed => CaseVerdict::Passed,
        GateStatus::Skipped => CaseVerdict::Skipped {
            message: reason("skipped"),
        },
        GateStatus::Failed => {
            let (message, detail) = (reason("failed"), failure_text(gate));
            match &gate.termination {
                None | Some(Termination::Exited { .. }) => CaseVerdict::Failed { message, detail },
                Some(
                    Termination::Signaled { .. }
                    | Termination::TimedOut
                    | Termination::Cancelled
                    | Termination::NotStarted { .. },
                ) => CaseVerdict::Errored { message, detail },
            }
        }
    };
    Case {
        name: gate.name.clone(),
        classname: Some(format!("meta-agent.gates.{}", kind_word(gate.kind))),
        duration: Some(Duration::from_millis(gate.duration_ms)),
        verdict,
        properties: vec![("command".into(), gate.command.clone())],
    }
}

/// What went wrong in one gate, for the terminal.
fn failure_text(gate: &GateResult) -> String {
    let mut out = format!("{} failed:\n", gate.name);
    for reason in said(&gate.reasons, &gate.notes) {
        let _ = writeln!(out, "  - {reason}");
    }
    if let Some(tests) = &gate.tests {
        for failure in tests.failures.iter().take(FAILURES_SHOWN) {
            let location = failure_location(failure.file.as_deref(), failure.line);
            let _ = writeln!(out, "  ✗ {}{location}", failure.id());
            let first = headline(&failure.message);
            if !first.is_empty() {
                let _ = writeln!(out, "      {first}");
            }
        }
        let more =
            (tests.failures.len() + tests.failures_omitted as usize).saturating_sub(FAILURES_SHOWN);
        if more > 0 {
            let _ = writeln!(out, "  … and {more} more");
        }
    }
    if let Some(lint) = &gate.lint {
        for finding in lint.results.iter().take(FAILURES_SHOWN) {
            let location = failure_location(finding.file.as_deref(), finding.line);
            let rule = finding.rule_id.as_deref().unwrap_or("-");
            let _ = writeln!(out, "  ✗ [{rule}]{location} {}", headline(&finding.message));
        }
    }
    if gate.tests.is_none() && gate.lint.is_none() && !gate.output_tail.trim().is_empty() {
        let _ = writeln!(out, "  output (last lines):");
        for line in last_lines(&gate.output_tail, 15) {
            let _ = writeln!(out, "    {line}");
        }
    }
    out
}

fn failure_location(file: Option<&str>, line: Option<u32>) -> String {
    match (file, line) {
        (Some(file), Some(line)) => format!(" ({file}:{line})"),
        (Some(file), None) => format!(" ({file})"),
        _ => String::new(),
    }
}

fn last_lines(text: &str, count: usize) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(count)..].to_vec()
}

/// Escapes text for a Markdown table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// A Markdown table (for job summaries and comments) with failing tests in a details block.
pub fn to_markdown(summary: &GatesSummary) -> String {
    let mut out =
        String::from("| Gate | Kind | Result | Time | Details |\n|---|---|---|---:|---|\n");
    for gate in &summary.gates {
        let icon = match gate.status {
            GateStatus::Passed => "✅ pass",
            GateStatus::Failed => "❌ fail",
            GateStatus::Skipped => "⏭️ skip",
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {icon} | {} | {} |",
            gate.name,
            kind_word(gate.kind),
            human_ms(gate.duration_ms),
            cell(&details(gate))
        );
    }
    for gate in summary
        .gates
        .iter()
        .filter(|gate| gate.status == GateStatus::Failed)
    {
        let _ = write!(
            out,
            "\n<details><summary><code>{}</code> failed</summary>\n\n",
            gate.name
        );
        for reason in said(&gate.reasons, &gate.notes) {
            let _ = writeln!(out, "- {}", cell(&reason));
        }
        for failure in gate
            .tests
            .iter()
            .flat_map(|tests| tests.failures.iter().take(FAILURES_SHOWN))
        {
            let location = failure_location(failure.file.as_deref(), failure.line);
            let message = headline(&failure.message);
            let _ = writeln!(out, "- `{}`{location}: {}", failure.id(), cell(&message));
        }
        out.push_str("\n</details>\n");
    }
    let verdict = if summary.passed {
        "**All gates passed.**"
    } else {
        "**Gates failed.**"
    };
    let _ = writeln!(out, "\n{verdict}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_gate_reason_and_note_as_people_read_them() {
        let reasons = [
            GateReason::Exited { code: 2 },
            GateReason::Signaled { signal: 9 },
            GateReason::TimedOut { after_ms: 600_000 },
            GateReason::TimedOut { after_ms: 1_500 },
            GateReason::Cancelled,
            GateReason::CouldNotStart {
                reason: "`pytest` is not on PATH".into(),
            },
            GateReason::NoTestRan,
            GateReason::TestsFailed {
                failed: 1,
                errors: 0,
                total: 12,
            },
            GateReason::TestsFailed {
                failed: 3,
                errors: 1,
                total: 9,
            },
            GateReason::AllSkipped { total: 4 },
            GateReason::CoverageBelow {
                percent: 79.94,
                threshold: 80.0,
            },
            GateReason::Findings {
                blocking: 1,
                level: FindingLevel::Error,
            },
            GateReason::Findings {
                blocking: 5,
                level: FindingLevel::Warning,
            },
            GateReason::ReportMissing {
                report: ReportKind::Junit,
                patterns: vec!["out/junit.xml".into(), "out/*.xml".into()],
            },
            GateReason::ReportUnreadable {
                report: ReportKind::Sarif,
                error: "not JSON at line 1".into(),
            },
        ];
        let mut lines: Vec<String> = reasons.iter().map(reason).collect();
        lines.extend(
            [
                GateNote::FastFeedback,
                GateNote::Flaky,
                GateNote::NetworkNotCut,
            ]
            .map(|n| note(n).to_owned()),
        );
        insta::assert_snapshot!("gate_reasons_and_notes", lines.join("\n"));
    }

    #[test]
    fn a_gate_says_its_reasons_then_its_notes() {
        let said = said(
            &["1 of 3 tests failed".to_owned()],
            &[GateNote::FastFeedback],
        );
        assert_eq!(said.len(), 2);
        assert_eq!(said[0], "1 of 3 tests failed");
        assert!(said[1].starts_with("fast feedback:"));
    }
}
