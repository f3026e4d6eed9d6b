//! `report.html`: the run as a page a person would rather look at than read. One self-contained
//! file (no script at all, no external style, font or image: it opens from a downloaded zip),
//! under a strict content security policy in a meta tag (`default-src 'none'`, its one inline
//! style allowed by hash). It shows the outcome, the timeline, each act (what it did, its model
//! and tool calls, each call's prompt and answer, its diff) folded in `<details>`, the gates with their failing tests, and the
//! decision at each step.
//!
//! Every text from the run is untrusted (task, test output, model answers, tool inputs): maud's
//! `html!` escapes each one it interpolates; only our own constant style goes in unescaped.

use std::time::{Duration, SystemTime};

use base64::Engine as _;
use maud::{DOCTYPE, Markup, PreEscaped, html};
use sha2::{Digest, Sha256};

use super::timeline::{self, Row, RowKind};
use crate::run_report::RunReport;
use meta_agent_protocol::event::Event;
use meta_agent_protocol::records::{GateRecord, StepRecord};
use meta_agent_protocol::trace::{TraceEntry, Traced};

/// The page's one style (allowed by its hash in the content security policy).
const STYLE: &str = include_str!("html.css");

/// What the page is made from: the run's report and its trace (empty when it could not be read).
pub struct HtmlInput<'a> {
    pub report: &'a RunReport,
    pub trace: &'a [TraceEntry],
}

/// The whole page.
pub fn report_html(input: &HtmlInput<'_>) -> String {
    let state = &input.report.state;
    let title = format!("meta-agent: {}", state.task.title);
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta http-equiv="Content-Security-Policy" content=(policy());
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) }
                style { (PreEscaped(STYLE)) }
            }
            body {
                (header(input.report))
                main {
                    (outcome(input.report))
                    (timeline_section(input.trace))
                    (acts(input))
                    (gates(&state.gates))
                    (decisions(input.trace))
                }
                footer { "meta-agent · session " (state.session) }
            }
        }
    };
    page.into_string()
}

/// `default-src 'none'`: nothing loads; the inline style by its SHA-256.
pub fn policy() -> String {
    let digest = Sha256::digest(STYLE.as_bytes());
    let hash = base64::engine::general_purpose::STANDARD.encode(digest);
    format!(
        "default-src 'none'; style-src 'sha256-{hash}'; img-src 'none'; base-uri 'none'; \
         form-action 'none'"
    )
}

fn header(report: &RunReport) -> Markup {
    let state = &report.state;
    let outcome = state.outcome.map_or("unfinished", |o| o.as_str());
    let usage = &state.usage;
    html! {
        header {
            h1 { (state.task.title) }
            p class="facts" {
                span class={ "badge " (outcome) } { (outcome) }
                span { "branch " code { (state.branch) } }
                @if let Some(commit) = &report.commit {
                    span { "commit " code { (commit.chars().take(12).collect::<String>()) } }
                }
                span { (state.iterations_run()) " iteration(s)" }
                span { (usage.llm_calls) " model call(s), " (usage.input_tokens) " tokens in, "
                    (usage.output_tokens) " out, $" (format!("{:.4}", usage.cost_usd)) }
            }
        }
    }
}

fn outcome(report: &RunReport) -> Markup {
    html! {
        section id="outcome" {
            h2 { "Outcome" }
            @if let Some(escalation) = &report.escalation() {
                h3 { "Escalation report" }
                pre class="text" { (escalation) }
            }
            @if let Some(message) = &report.commit_message {
                h3 { "Commit message" }
                pre class="text" { (message) }
            }
            @if let Some(why) = &report.state.interrupted {
                p { "Stopped: " (why) }
            }
        }
    }
}

fn timeline_section(trace: &[TraceEntry]) -> Markup {
    let rows = timeline::rows(trace);
    html! {
        section id="timeline" {
            h2 { "Timeline" }
            @if rows.is_empty() {
                p { "The run's trace could not be read." }
            } @else {
                table {
                    thead { tr { th { "at" } th { "kind" } th { "what happened" } } }
                    tbody { @for row in &rows { (timeline_row(row)) } }
                }
            }
        }
    }
}

fn timeline_row(row: &Row) -> Markup {
    html! {
        tr class=[bad(row.bad)] {
            td class="at" { (timeline::offset(row.at)) }
            td { span class={ "kind " (row.kind.label()) } { (row.kind.label()) } }
            td { (row.text) }
        }
    }
}

/// The class of something that went wrong.
fn bad(wrong: bool) -> Option<&'static str> {
    wrong.then_some("bad")
}

fn acts(input: &HtmlInput<'_>) -> Markup {
    let history = &input.report.state.history;
    html! {
        section id="acts" {
            h2 { "Steps" }
            @for step in history { (act(step, input.trace)) }
        }
    }
}

fn act(step: &StepRecord, trace: &[TraceEntry]) -> Markup {
    let calls = calls_during(step, trace);
    let exchanges = exchanges_during(step, trace);
    html! {
        details class="act" {
            summary {
                "iteration " (step.iteration) " · " (step.phase.as_str()) " · " (step.outcome)
                " · " (format!("{:.1} s", step.duration_ms as f64 / 1000.0))
            }
            @if !step.actions.is_empty() {
                h4 { "What it did" }
                ul { @for action in &step.actions { li { (action) } } }
            }
            @if !calls.is_empty() {
                h4 { "Model and tool calls" }
                ul class="calls" { @for call in &calls { li { (call) } } }
            }
            @for (number, (model, prompt, answer)) in exchanges.iter().enumerate() {
                details class="exchange" {
                    summary { "model call " (number + 1) " (" (model) "): prompt and answer" }
                    h5 { "What the model was shown (since its previous answer)" }
                    pre class="text" { (prompt) }
                    h5 { "What it answered" }
                    pre class="text" { (answer) }
                }
            }
            @if !step.diff.is_empty() {
                h4 { "Diff" }
                (diff(&step.diff))
            }
            @if !step.gates.is_empty() { (gate_table(&step.gates)) }
        }
    }
}

/// The trace's entries written within the step's time.
fn during<'a>(step: &StepRecord, trace: &'a [TraceEntry]) -> impl Iterator<Item = &'a TraceEntry> {
    let start = SystemTime::UNIX_EPOCH + Duration::from_millis(step.started_unix_ms);
    let end = start + Duration::from_millis(step.duration_ms);
    trace
        .iter()
        .filter(move |entry| entry.time >= start && entry.time <= end)
}

/// The step's model exchanges: (model, prompt, answer).
fn exchanges_during<'a>(
    step: &StepRecord,
    trace: &'a [TraceEntry],
) -> Vec<(&'a str, &'a str, &'a str)> {
    during(step, trace)
        .filter_map(|entry| match &entry.event {
            Traced::Known(Event::ModelExchange {
                model,
                prompt,
                answer,
            }) => Some((model.as_str(), prompt.as_str(), answer.as_str())),
            Traced::Known(_) | Traced::Unknown { .. } => None,
        })
        .collect()
}

/// The model and tool calls (their row texts) the trace holds within the step's time.
fn calls_during(step: &StepRecord, trace: &[TraceEntry]) -> Vec<String> {
    let inside: Vec<TraceEntry> = during(step, trace)
        .filter(|entry| {
            matches!(
                entry.event,
                Traced::Known(Event::LlmCall { .. } | Event::ToolCalled { .. })
            )
        })
        .cloned()
        .collect();
    timeline::rows(&inside)
        .into_iter()
        .map(|row| row.text)
        .collect()
}

/// A unified diff, each line classed by what it is (file, hunk, added, removed, context).
pub fn diff(text: &str) -> Markup {
    html! {
        pre class="diff" {
            @for line in text.lines() {
                span class=(diff_class(line)) { (line) "\n" }
            }
        }
    }
}

fn diff_class(line: &str) -> &'static str {
    let meta = [
        "diff ",
        "index ",
        "--- ",
        "+++ ",
        "new file",
        "deleted file",
        "rename ",
    ];
    if meta.iter().any(|prefix| line.starts_with(prefix)) {
        "meta"
    } else if line.starts_with("@@") {
        "hunk"
    } else if line.starts_with('+') {
        "add"
    } else if line.starts_with('-') {
        "del"
    } else {
        "ctx"
    }
}

fn gates(records: &[GateRecord]) -> Markup {
    html! {
        section id="gates" {
            h2 { "Gates" }
            @if records.is_empty() { p { "No gate ran." } } @else { (gate_table(records)) }
        }
    }
}

fn gate_table(records: &[GateRecord]) -> Markup {
    html! {
        table class="gates" {
            thead { tr { th { "gate" } th { "result" } th { "tests" } th { "why" } } }
            tbody {
                @for gate in records {
                    tr class=[bad(gate.failed())] {
                        td { (gate.name) }
                        td { (gate.result.short()) }
                        td { (tests(gate)) }
                        td {
                            @for reason in super::gates::said(&gate.reasons, &gate.notes) { div { (reason) } }
                            @if !gate.failing_tests.is_empty() {
                                details {
                                    summary { (gate.failing_tests.len()) " failing test(s)" }
                                    ul { @for test in &gate.failing_tests { li { code { (test) } } } }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn tests(gate: &GateRecord) -> String {
    match (gate.tests_passed, gate.tests_total) {
        (Some(passed), Some(total)) => format!("{passed}/{total}"),
        (Some(_) | None, None) | (None, Some(_)) => String::new(),
    }
}

fn decisions(trace: &[TraceEntry]) -> Markup {
    let rows: Vec<Row> = timeline::rows(trace)
        .into_iter()
        .filter(|row| row.kind == RowKind::Decision)
        .collect();
    html! {
        section id="decisions" {
            h2 { "Decisions" }
            @if rows.is_empty() { p { "No decision was recorded." } }
            ol { @for row in &rows { li class=[bad(row.bad)] { (row.text) } } }
        }
    }
}
