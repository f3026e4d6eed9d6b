//! What `meta-agent run` shows on stderr while it works: on a terminal, one status line (the
//! current step, the gate running with its elapsed time, the last tool call) redrawn in place;
//! elsewhere, one plain line per step, gate verdict and tool call.
//!
//! Pure: [`Live::fold`] takes the run's events with the time they arrived, [`Live::frame`]
//! renders the status line at a given time, [`plain_line`] the line of one event; the session's
//! display only draws them (`src/session/display.rs`).

use super::checklist::{finished_gate, gate_word, step_title, tool_line};
use meta_agent_protocol::event::Event;
use meta_agent_protocol::records::StepPhase;

/// The run so far, as the status line shows it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Live {
    /// The step running, and its iteration.
    step: Option<(StepPhase, u32)>,
    /// The gate running and when it started (milliseconds since the Unix epoch).
    gate: Option<(String, u64)>,
    /// The last tool call (or known fix applied) of the run.
    last_call: Option<String>,
}

impl Live {
    /// Takes in one event, arrived at `now_ms`.
    pub fn fold(&mut self, event: &Event, now_ms: u64) {
        match event {
            Event::PhaseStarted { phase, iteration } => {
                self.step = Some((*phase, *iteration));
                self.gate = None;
            }
            Event::GateStarted { gate, .. } => self.gate = Some((gate.clone(), now_ms)),
            Event::GateFinished { .. }
            | Event::GateSkipped { .. }
            | Event::PhaseFinished { .. } => {
                self.gate = None;
            }
            Event::ToolCalled {
                tool,
                input,
                success,
                ..
            } => self.last_call = Some(tool_line(tool, input, *success)),
            Event::ResolutionApplied { .. } => self.last_call = Some("applied a known fix".into()),
            Event::RunStarted { .. }
            | Event::Recovered { .. }
            | Event::Paused { .. }
            | Event::StateChanged { .. }
            | Event::SignatureFound { .. }
            | Event::ResolutionOutcome { .. }
            | Event::FlakyTest { .. }
            | Event::ModelExchange { .. }
            | Event::RerunRejected { .. }
            | Event::CommandRun { .. }
            | Event::FileChanged { .. }
            | Event::GitOperation { .. }
            | Event::LlmCall { .. }
            | Event::Decided { .. }
            | Event::TamperRefused { .. }
            | Event::PatchRefused { .. }
            | Event::Committed { .. }
            | Event::Escalated { .. }
            | Event::RunFinished { .. } => {}
        }
    }

    /// The status line at `now_ms`: `Act 1: fix · last: edited `calc.py``,
    /// `Gates after act 1 · tests 3.2 s`.
    pub fn frame(&self, now_ms: u64) -> String {
        let mut parts = vec![match self.step {
            Some((phase, iteration)) => step_title(phase, iteration),
            None => "Starting".to_owned(),
        }];
        if let Some((gate, started)) = &self.gate {
            parts.push(format!(
                "{gate} {}",
                seconds(now_ms.saturating_sub(*started))
            ));
        }
        if let Some(call) = &self.last_call {
            parts.push(format!("last: {call}"));
        }
        parts.join(" · ")
    }
}

/// The plain line of one event (stderr is not a terminal), or `None` for events it does not
/// show.
pub fn plain_line(event: &Event) -> Option<String> {
    match event {
        Event::PhaseStarted { phase, iteration } => Some(step_title(*phase, *iteration)),
        Event::GateFinished {
            gate,
            status,
            duration_ms,
            counts,
            ..
        } => Some(format!(
            "  {} in {}",
            gate_word(&finished_gate(gate, status.passed(), counts)),
            seconds(*duration_ms)
        )),
        Event::GateSkipped { gate, reason } => Some(format!("  {gate} skipped: {reason}")),
        Event::ToolCalled {
            tool,
            input,
            success,
            ..
        } => Some(format!("  {}", tool_line(tool, input, *success))),
        Event::RunStarted { .. }
        | Event::Recovered { .. }
        | Event::Paused { .. }
        | Event::StateChanged { .. }
        | Event::PhaseFinished { .. }
        | Event::GateStarted { .. }
        | Event::SignatureFound { .. }
        | Event::ResolutionApplied { .. }
        | Event::ResolutionOutcome { .. }
        | Event::FlakyTest { .. }
        | Event::ModelExchange { .. }
        | Event::RerunRejected { .. }
        | Event::CommandRun { .. }
        | Event::FileChanged { .. }
        | Event::GitOperation { .. }
        | Event::LlmCall { .. }
        | Event::Decided { .. }
        | Event::TamperRefused { .. }
        | Event::PatchRefused { .. }
        | Event::Committed { .. }
        | Event::Escalated { .. }
        | Event::RunFinished { .. } => None,
    }
}

/// `3.2 s`.
fn seconds(ms: u64) -> String {
    format!("{}.{} s", ms / 1000, ms % 1000 / 100)
}

#[cfg(test)]
mod tests {
    use super::*;
    use meta_agent_protocol::records::GateCounts;

    /// A short run's events, each with the time it arrived.
    fn run() -> Vec<(u64, Event)> {
        let gate_started = |gate: &str| Event::GateStarted {
            gate: gate.into(),
            command: "pytest".into(),
        };
        let tool = |tool: &str, input: &str| Event::ToolCalled {
            tool: tool.into(),
            input: input.into(),
            success: true,
            started_unix_ms: 0,
            duration_ms: 1,
        };
        vec![
            (
                0,
                Event::PhaseStarted {
                    phase: StepPhase::Baseline,
                    iteration: 0,
                },
            ),
            (100, gate_started("tests")),
            (
                2_400,
                Event::GateFinished {
                    gate: "tests".into(),
                    status: meta_agent_protocol::records::GateStatus::Failed,
                    duration_ms: 2_300,
                    detail: String::new(),
                    counts: GateCounts {
                        tests_passed: Some(6),
                        tests_total: Some(7),
                        ..GateCounts::default()
                    },
                },
            ),
            (
                2_500,
                Event::PhaseStarted {
                    phase: StepPhase::Improve,
                    iteration: 1,
                },
            ),
            (2_600, tool("read_file", "calc.py")),
            (2_700, tool("edit_file", "calc.py")),
            (
                2_800,
                Event::PhaseStarted {
                    phase: StepPhase::Test,
                    iteration: 1,
                },
            ),
            (2_900, gate_started("tests")),
        ]
    }

    #[test]
    fn terminal_frames_follow_the_events_and_the_clock() {
        let mut live = Live::default();
        let mut frames = vec![format!("{:>6} ms | {}", 0, live.frame(0))];
        for (at, event) in run() {
            live.fold(&event, at);
            frames.push(format!("{at:>6} ms | {}", live.frame(at)));
        }
        frames.push(format!("{:>6} ms | {}", 6_150, live.frame(6_150)));
        insta::assert_snapshot!("live_terminal_frames", frames.join("\n"));
    }

    #[test]
    fn plain_lines_when_stderr_is_not_a_terminal() {
        let lines: Vec<String> = run()
            .iter()
            .filter_map(|(_, event)| plain_line(event))
            .collect();
        insta::assert_snapshot!("live_plain_lines", lines.join("\n"));
    }
}
