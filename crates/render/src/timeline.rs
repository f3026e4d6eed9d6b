//! A run's trace as a timeline a person reads: one [`Row`] per event worth seeing (phases, model
//! calls with tokens and latency, tool calls, gates, decisions, the outcome), each at its offset
//! from the run's first event. `trace show` prints [`to_terminal`]; `trace replay` prints the
//! rows one at a time ([`terminal_line`]); `report.html` lays the same rows out.
//!
//! Every text here comes from the trace, which is untrusted: control characters are shown as
//! `\u{…}` escapes (no escape sequence reaches the terminal) and long texts are cut.

use std::fmt::Write as _;
use std::time::Duration;

use meta_agent_protocol::ending::DecisionKind;
use meta_agent_protocol::event::Event;
use meta_agent_protocol::records::RunOutcome;
use meta_agent_protocol::trace::{TraceEntry, Traced};

/// The longest text a row shows of one untrusted field (a tool's input, a reason).
const FIELD_CHARS: usize = 160;

/// What a row is about (its label, and its style in `report.html`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKind {
    Run,
    Phase,
    Model,
    Tool,
    Gate,
    Decision,
    Change,
    Outcome,
    Other,
}

impl RowKind {
    /// The short label of the kind.
    pub fn label(self) -> &'static str {
        match self {
            RowKind::Run => "run",
            RowKind::Phase => "phase",
            RowKind::Model => "model",
            RowKind::Tool => "tool",
            RowKind::Gate => "gate",
            RowKind::Decision => "decision",
            RowKind::Change => "change",
            RowKind::Outcome => "outcome",
            RowKind::Other => "event",
        }
    }
}

/// One line of the timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The trace line it shows.
    pub seq: u64,
    /// Since the run's first event.
    pub at: Duration,
    pub kind: RowKind,
    pub text: String,
    /// Whether it went wrong (a failed gate or tool, a refusal, an escalation).
    pub bad: bool,
}

/// The rows of `entries` (events nobody reads in a timeline, the audit log's commands, left out).
pub fn rows(entries: &[TraceEntry]) -> Vec<Row> {
    let Some(start) = entries.first().map(|entry| entry.time) else {
        return Vec::new();
    };
    entries
        .iter()
        .filter_map(|entry| {
            let (kind, text, bad) = describe(&entry.event)?;
            Some(Row {
                seq: entry.seq,
                at: entry.since(start),
                kind,
                text,
                bad,
            })
        })
        .collect()
}

/// `+01:02.3  model     text`: one row for a terminal.
pub fn terminal_line(row: &Row) -> String {
    let mark = if row.bad { "!" } else { " " };
    format!(
        "{} {mark}{:<9}{}\n",
        offset(row.at),
        row.kind.label(),
        row.text
    )
}

/// The whole timeline for `trace show`: a heading, then one line per row.
pub fn to_terminal(rows: &[Row]) -> String {
    let mut out = String::new();
    let span = rows.last().map_or(Duration::ZERO, |row| row.at);
    let _ = writeln!(out, "timeline: {} events over {}", rows.len(), offset(span));
    for row in rows {
        out.push_str(&terminal_line(row));
    }
    out
}

/// How a replay ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplayEnding {
    /// Every row was shown.
    Finished,
    /// The person pressed `q`.
    Quit,
    /// It reached a location with no keyboard to go on (the row at `seq` shown).
    StoppedAt {
        location: meta_agent_protocol::pause::Location,
        seq: u64,
    },
}

/// The replay's last line: how it ended.
pub fn replay_ending(ending: ReplayEnding) -> String {
    use ReplayEnding as Ending;
    match ending {
        Ending::Finished => "replay finished\n".to_owned(),
        Ending::Quit => "replay stopped (q)\n".to_owned(),
        Ending::StoppedAt { location, seq } => {
            format!(
                "replay stopped at {} (trace line {seq}): no keyboard to go on\n",
                location.as_str()
            )
        }
    }
}

/// `+MM:SS.s` (minutes grow past 59).
pub fn offset(at: Duration) -> String {
    let tenths = at.as_millis() / 100;
    format!(
        "+{:02}:{:02}.{}",
        tenths / 600,
        (tenths / 10) % 60,
        tenths % 10
    )
}

/// Untrusted text on one line: control characters escaped, cut at 160 characters.
pub fn one_line(text: &str) -> String {
    let mut out = String::new();
    for (count, c) in text.chars().enumerate() {
        if count == FIELD_CHARS {
            out.push('…');
            break;
        }
        if c.is_control() || meta_agent_protocol::untrusted::hidden(c) {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out
}

fn seconds(ms: u64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

fn describe(traced: &Traced) -> Option<(RowKind, String, bool)> {
    match traced {
        Traced::Known(event) => describe_event(event),
        Traced::Unknown { name } => Some((RowKind::Other, one_line(name), false)),
    }
}

type Described = Option<(RowKind, String, bool)>;

fn describe_event(event: &Event) -> Described {
    match event {
        Event::RunStarted {
            session,
            task,
            max_iterations,
        } => run(format!(
            "started {}: {} (at most {max_iterations} iterations)",
            one_line(session),
            one_line(task)
        )),
        Event::Recovered {
            phase, iteration, ..
        } => run(format!(
            "resumed in {} (iteration {iteration})",
            phase.as_str()
        )),
        Event::RunFinished {
            outcome,
            iterations,
            llm_calls,
            duration_ms,
        } => finished(*outcome, *iterations, *llm_calls, *duration_ms),
        Event::StateChanged {
            from, to, reason, ..
        } => phase(format!(
            "{} → {}: {}",
            from.as_str(),
            to.as_str(),
            one_line(reason)
        )),
        Event::PhaseStarted {
            phase: step,
            iteration,
        } => phase(format!("{} started (iteration {iteration})", step.as_str())),
        Event::PhaseFinished {
            phase: step,
            duration_ms,
            outcome,
            ..
        } => phase(format!(
            "{} finished in {}: {}",
            step.as_str(),
            seconds(*duration_ms),
            one_line(outcome)
        )),
        Event::LlmCall {
            provider,
            model,
            input_tokens,
            output_tokens,
            cost_usd,
            duration_ms,
            ..
        } => Some((
            RowKind::Model,
            format!(
                "{}/{}: {input_tokens} tokens in, {output_tokens} out, {}, ${cost_usd:.4}",
                one_line(provider),
                one_line(model),
                seconds(*duration_ms)
            ),
            false,
        )),
        Event::ToolCalled {
            tool,
            input,
            success,
            duration_ms,
            ..
        } => Some((
            RowKind::Tool,
            format!(
                "{} {} in {duration_ms} ms: {}",
                one_line(tool),
                if *success { "ok" } else { "failed" },
                one_line(input)
            ),
            !success,
        )),
        Event::GateStarted { gate, command } => gate_row(
            format!("{} running `{}`", one_line(gate), one_line(command)),
            false,
        ),
        Event::GateSkipped { gate, reason } => gate_row(
            format!("{} skipped: {}", one_line(gate), one_line(reason)),
            false,
        ),
        Event::GateFinished {
            gate,
            status,
            duration_ms,
            detail,
            ..
        } => gate_row(
            format!(
                "{} {} in {} {}",
                one_line(gate),
                if status.passed() { "passed" } else { "FAILED" },
                seconds(*duration_ms),
                one_line(detail)
            )
            .trim_end()
            .to_owned(),
            !status.passed(),
        ),
        Event::FlakyTest { test } => {
            gate_row(format!("flaky test {}", one_line(test.as_str())), false)
        }
        Event::RerunRejected { gate, reason } => gate_row(
            format!("{} re-run rejected: {}", one_line(gate), one_line(reason)),
            false,
        ),
        Event::SignatureFound {
            signature,
            template,
            ..
        } => gate_row(
            format!("signature {}: {}", one_line(signature), one_line(template)),
            true,
        ),
        Event::ResolutionApplied {
            signature,
            description,
            ..
        } => decision(
            format!(
                "hindsight fix for {}: {}",
                one_line(signature),
                one_line(description)
            ),
            false,
        ),
        Event::ResolutionOutcome {
            signature, cured, ..
        } => decision(
            format!(
                "hindsight fix for {} {}",
                one_line(signature),
                if *cured {
                    "cured it"
                } else {
                    "did not cure it"
                }
            ),
            !cured,
        ),
        Event::Decided {
            iteration,
            decision: kind,
            reason,
        } => decision(
            format!(
                "{} (iteration {iteration}): {}",
                decision_name(*kind),
                one_line(reason)
            ),
            *kind == DecisionKind::Escalate,
        ),
        Event::TamperRefused { findings } => decision(
            format!(
                "change refused: {}",
                one_line(&super::refusal::lines(findings))
            ),
            true,
        ),
        Event::PatchRefused { stage, refusals } => decision(
            format!(
                "patch gate refused the {}: {}",
                stage.as_str(),
                one_line(&super::refusal::lines(refusals))
            ),
            true,
        ),
        Event::FileChanged { path, .. } => Some((
            RowKind::Change,
            format!("changed {}", one_line(path)),
            false,
        )),
        Event::GitOperation {
            operation,
            target,
            result,
        } => Some((
            RowKind::Change,
            format!(
                "git {} {}: {}",
                one_line(operation),
                one_line(target),
                one_line(result)
            ),
            false,
        )),
        Event::Committed { branch, commit, .. } => Some((
            RowKind::Outcome,
            format!(
                "committed {} on {}",
                one_line(&commit.chars().take(12).collect::<String>()),
                one_line(branch)
            ),
            false,
        )),
        Event::Escalated { reason, .. } => Some((
            RowKind::Outcome,
            format!("escalated: {}", one_line(reason)),
            true,
        )),
        Event::Paused {
            location,
            why,
            iteration,
        } => Some((
            RowKind::Outcome,
            format!(
                "paused at {} (iteration {iteration}): {}",
                location.as_str(),
                one_line(why)
            ),
            false,
        )),
        Event::CommandRun { .. } | Event::ModelExchange { .. } => None,
    }
}

fn run(text: String) -> Described {
    Some((RowKind::Run, text, false))
}

fn phase(text: String) -> Described {
    Some((RowKind::Phase, text, false))
}

fn gate_row(text: String, bad: bool) -> Described {
    Some((RowKind::Gate, text, bad))
}

fn decision(text: String, bad: bool) -> Described {
    Some((RowKind::Decision, text, bad))
}

fn finished(outcome: RunOutcome, iterations: u32, llm_calls: u32, duration_ms: u64) -> Described {
    let bad = match outcome {
        RunOutcome::Committed | RunOutcome::NothingToDo => false,
        RunOutcome::Escalated | RunOutcome::Interrupted | RunOutcome::Failed => true,
    };
    let text = format!(
        "finished: {} after {iterations} iteration(s), {llm_calls} model call(s), {}",
        outcome.as_str(),
        seconds(duration_ms)
    );
    Some((RowKind::Outcome, text, bad))
}

/// The decision's name as a person says it.
pub fn decision_name(decision: DecisionKind) -> &'static str {
    match decision {
        DecisionKind::Complete => "complete",
        DecisionKind::Continue => "continue",
        DecisionKind::Retry => "retry",
        DecisionKind::Escalate => "escalate",
        DecisionKind::AwaitGuidance => "await guidance",
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::time::SystemTime;

    use super::*;
    use meta_agent_protocol::event::LoopPhase;
    use meta_agent_protocol::records::StepPhase;

    fn at(ms: u64, seq: u64, event: Event) -> TraceEntry {
        TraceEntry {
            time: SystemTime::UNIX_EPOCH + Duration::from_millis(1_795_314_548_000 + ms),
            seq,
            event: Traced::Known(event),
        }
    }

    /// A short run: plan, a model call, a tool call (a hostile input), a failing then passing
    /// gate, the decision, the commit.
    pub(crate) fn sample() -> Vec<TraceEntry> {
        vec![
            at(
                0,
                1,
                Event::RunStarted {
                    session: "s-1".into(),
                    task: "Fix mean".into(),
                    max_iterations: 3,
                },
            ),
            at(
                10,
                2,
                Event::StateChanged {
                    from: LoopPhase::Planning,
                    to: LoopPhase::Acting,
                    iteration: 1,
                    reason: "plan ready".into(),
                },
            ),
            at(
                2_300,
                3,
                Event::LlmCall {
                    provider: "openai".into(),
                    model: "gpt-4.1".into(),
                    input_tokens: 5200,
                    output_tokens: 640,
                    cost_usd: 0.0155,
                    started_unix_ms: 0,
                    duration_ms: 2_280,
                },
            ),
            at(
                2_310,
                4,
                Event::ToolCalled {
                    tool: "edit_file".into(),
                    input: "{\"path\":\"calc.py\"}\u{1b}[2J\u{202e}".into(),
                    success: false,
                    started_unix_ms: 0,
                    duration_ms: 3,
                },
            ),
            at(
                2_320,
                5,
                Event::CommandRun {
                    command: "pytest".into(),
                    cwd: "/w".into(),
                    result: "exit 1".into(),
                    duration_ms: 900,
                },
            ),
            at(
                3_400,
                6,
                Event::GateFinished {
                    gate: "tests".into(),
                    status: meta_agent_protocol::records::GateStatus::Failed,
                    duration_ms: 1_080,
                    detail: "11/12 passed".into(),
                    counts: Default::default(),
                },
            ),
            at(
                3_410,
                7,
                Event::PhaseFinished {
                    phase: StepPhase::Test,
                    iteration: 1,
                    duration_ms: 1_090,
                    outcome: "failed".into(),
                    gates: Vec::new(),
                },
            ),
            at(
                3_420,
                8,
                Event::Decided {
                    iteration: 1,
                    decision: DecisionKind::Continue,
                    reason: "1 failure left".into(),
                },
            ),
            at(
                65_000,
                9,
                Event::Committed {
                    branch: "meta-agent/fix-mean".into(),
                    commit: "0123456789abcdef".into(),
                    iterations: 2,
                },
            ),
            at(
                65_010,
                10,
                Event::RunFinished {
                    outcome: RunOutcome::Committed,
                    iterations: 2,
                    llm_calls: 3,
                    duration_ms: 65_010,
                },
            ),
            TraceEntry {
                time: SystemTime::UNIX_EPOCH + Duration::from_millis(1_795_314_613_020),
                seq: 11,
                event: Traced::Unknown {
                    name: "paused".into(),
                },
            },
        ]
    }

    #[test]
    fn timeline_of_a_short_run() {
        insta::assert_snapshot!(to_terminal(&rows(&sample())));
    }

    #[test]
    fn untrusted_text_never_reaches_the_terminal_as_control_characters() {
        let shown = one_line("a\u{1b}[31mred\r\n\u{7}\u{200b}b");
        assert_eq!(shown, "a\\u{1b}[31mred\\u{d}\\u{a}\\u{7}\\u{200b}b");
        assert_eq!(one_line(&"x".repeat(500)).chars().count(), FIELD_CHARS + 1);
    }

    #[test]
    fn offsets_count_minutes_past_the_hour() {
        assert_eq!(offset(Duration::from_millis(3_723_450)), "+62:03.4");
    }
}
