//! The one vocabulary of what happens during a run. The live streams (the console, `--json`, the
//! trace file, the audit log, metrics) are consumers of these events that implement
//! [`EventSink`]; the code that does the work only emits. The texts people read at the end
//! (summary, report, commit message, comments, job summary) are not rendered from events but
//! from the run's state and records, in the renderers (`render`).

use serde::{Deserialize, Serialize};

use super::kinds::SignatureKind;
use crate::ending::DecisionKind;
pub use crate::phase::LoopPhase;
use crate::records::{GateCounts, GateOutcome, GateStatus, RunOutcome, StepPhase};

/// The most characters a [`Event::ModelExchange`] keeps of a prompt or an answer.
pub const EXCHANGE_CHARS: usize = 4000;

/// Something that happened. Serialized with an `event` tag (snake_case variant name); read back
/// from a trace by `telemetry::read_trace`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// A run began (or resumed: see [`Event::Recovered`]).
    RunStarted {
        session: String,
        task: String,
        max_iterations: u32,
    },
    /// A run killed earlier was resumed from its last completed step.
    Recovered {
        session: String,
        phase: LoopPhase,
        iteration: u32,
    },
    /// The loop moved from one state to another, and why.
    StateChanged {
        from: LoopPhase,
        to: LoopPhase,
        iteration: u32,
        reason: String,
    },
    /// A step of the loop (build, improve, baseline, test, verify) began.
    PhaseStarted { phase: StepPhase, iteration: u32 },
    /// A step of the loop (build, improve, baseline, test, verify) ended; an observation's with
    /// the verdict of each gate (after re-runs of failing tests: what the loop decides on).
    PhaseFinished {
        phase: StepPhase,
        iteration: u32,
        duration_ms: u64,
        outcome: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        gates: Vec<GateOutcome>,
    },
    /// A gate's command is about to run.
    GateStarted { gate: String, command: String },
    /// A gate was skipped (a program it requires is missing and the gate is optional).
    GateSkipped { gate: String, reason: String },
    /// A gate finished with its verdict and what it counted.
    GateFinished {
        gate: String,
        /// Passed or failed (traces written before this field read their `passed` flag).
        #[serde(alias = "passed", deserialize_with = "status_or_flag")]
        status: GateStatus,
        duration_ms: u64,
        detail: String,
        #[serde(flatten)]
        counts: GateCounts,
    },
    /// A failure was turned into an error signature.
    SignatureFound {
        signature: String,
        kind: SignatureKind,
        template: String,
    },
    /// A known resolution from hindsight is being applied (no LLM call).
    ResolutionApplied {
        signature: String,
        resolution: String,
        description: String,
    },
    /// Whether an applied resolution made its signature go away.
    ResolutionOutcome {
        signature: String,
        resolution: String,
        cured: bool,
    },
    /// A test failed and then passed on an immediate re-run with no change.
    FlakyTest { test: crate::test_id::TestName },
    /// A re-run of a gate's failing tests did not run exactly the tests it selected (a filter
    /// that selects nothing, or too much): a harness problem, never a verdict on the code. The
    /// gate ran whole instead.
    RerunRejected { gate: String, reason: String },
    /// A command ran (gates, resolutions, agent commands) — for the audit log.
    CommandRun {
        command: String,
        cwd: String,
        result: String,
        duration_ms: u64,
    },
    /// A file of the worktree changed, with its diff — for the audit log.
    FileChanged { path: String, diff: String },
    /// A git operation of the bot's own — for the audit log.
    GitOperation {
        operation: String,
        target: String,
        result: String,
    },
    /// An LLM request completed — for the audit log and usage accounting.
    LlmCall {
        provider: String,
        model: String,
        input_tokens: u64,
        output_tokens: u64,
        cost_usd: f64,
        /// When the request was sent, in milliseconds since the Unix epoch.
        started_unix_ms: u64,
        duration_ms: u64,
    },
    /// What the model was shown for a call (the messages since its previous answer) and what it
    /// answered, each cut at [`EXCHANGE_CHARS`]: for the trace and `report.html`, which show each
    /// act's prompts and answers.
    ModelExchange {
        model: String,
        prompt: String,
        answer: String,
    },
    /// An agent tool call — for the audit log.
    ToolCalled {
        tool: String,
        input: String,
        success: bool,
        /// When the call started, in milliseconds since the Unix epoch.
        started_unix_ms: u64,
        duration_ms: u64,
    },
    /// The pure decision after an observation.
    Decided {
        iteration: u32,
        decision: DecisionKind,
        reason: String,
    },
    /// A change tried to delete or skip tests, weaken assertions or edit protected files (or
    /// left a nested repository the bot removed): what was refused, undone.
    TamperRefused {
        findings: Vec<crate::refusal::Refusal>,
    },
    /// The patch gate refused to commit the change (protected or unplain paths, symlinks out of
    /// the tree, size limits, secrets): one refusal per path and reason.
    PatchRefused {
        /// What the bot was about to commit.
        stage: crate::refusal::PatchStage,
        refusals: Vec<crate::refusal::Refusal>,
    },
    /// Verified work was committed.
    Committed {
        branch: String,
        commit: String,
        iterations: u32,
    },
    /// The run ended with a report for maintainers instead of a commit.
    Escalated {
        reason: String,
        branch: Option<String>,
    },
    /// The run reached a pause point and pauses there (`resume` continues): where, why, and the
    /// location's values.
    Paused {
        location: crate::pause::Location,
        why: String,
        iteration: u32,
    },
    /// The run is over.
    RunFinished {
        outcome: RunOutcome,
        iterations: u32,
        llm_calls: u32,
        duration_ms: u64,
    },
}

/// A consumer of events.
pub trait EventSink: Send + Sync {
    fn emit(&self, event: &Event);
}

/// Drops every event.
#[derive(Debug, Default, Clone, Copy)]
pub struct Discard;

impl EventSink for Discard {
    fn emit(&self, _event: &Event) {}
}

/// Sends every event to several sinks, in order.
pub struct Fanout<'a> {
    pub sinks: Vec<&'a dyn EventSink>,
}

impl EventSink for Fanout<'_> {
    fn emit(&self, event: &Event) {
        for sink in &self.sinks {
            sink.emit(event);
        }
    }
}

/// Writes events as human-readable `tracing` lines (stderr).
#[derive(Debug, Default, Clone, Copy)]
pub struct TracingSink;

impl EventSink for TracingSink {
    fn emit(&self, event: &Event) {
        match event {
            Event::GateStarted { gate, command } => {
                tracing::info!(gate = %gate, "running `{command}`")
            }
            Event::GateSkipped { gate, reason } => {
                tracing::warn!(gate = %gate, "skipped: {reason}")
            }
            Event::RerunRejected { gate, reason } => {
                tracing::warn!(gate = %gate, "{reason}: a harness problem, not a verdict; running the whole gate")
            }
            Event::GateFinished {
                gate,
                status,
                duration_ms,
                detail,
                ..
            } => {
                let verdict = match status {
                    GateStatus::Passed => "passed",
                    GateStatus::Failed => "FAILED",
                    GateStatus::Skipped => "skipped",
                };
                tracing::info!(gate = %gate, "{verdict} in {duration_ms} ms {detail}");
            }
            Event::StateChanged {
                from,
                to,
                iteration,
                reason,
            } => {
                tracing::info!(iteration, "{} → {}: {reason}", from.as_str(), to.as_str());
            }
            Event::PatchRefused { stage, refusals } => {
                tracing::warn!(stage = stage.as_str(), ?refusals, "the patch gate refused")
            }
            other => tracing::debug!(event = ?other),
        }
    }
}

/// Collects events in memory (for tests and for renderers that need the whole run).
#[derive(Debug, Default)]
pub struct Recorder {
    events: std::sync::Mutex<Vec<Event>>,
}

impl Recorder {
    /// Everything emitted so far.
    pub fn events(&self) -> Vec<Event> {
        self.events
            .lock()
            .map(|events| events.clone())
            .unwrap_or_default()
    }
}

impl EventSink for Recorder {
    fn emit(&self, event: &Event) {
        if let Ok(mut events) = self.events.lock() {
            events.push(event.clone());
        }
    }
}

/// A gate's status as written now, or the `passed` flag of traces written before it.
fn status_or_flag<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<GateStatus, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Written {
        Status(GateStatus),
        Flag(bool),
    }
    Ok(match Written::deserialize(deserializer)? {
        Written::Status(status) => status,
        Written::Flag(true) => GateStatus::Passed,
        Written::Flag(false) => GateStatus::Failed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gate_finished_reads_its_status_and_the_flag_older_traces_wrote() {
        let now = r#"{"event":"gate_finished","gate":"tests","status":"failed","duration_ms":5,"detail":"1 failed"}"#;
        let old =
            r#"{"event":"gate_finished","gate":"tests","passed":true,"duration_ms":5,"detail":""}"#;
        let status = |line: &str| match serde_json::from_str::<Event>(line).unwrap() {
            Event::GateFinished { status, .. } => status,
            other => panic!("{other:?}"),
        };
        assert_eq!(status(now), GateStatus::Failed);
        assert_eq!(status(old), GateStatus::Passed);
        let written = serde_json::to_value(Event::GateFinished {
            gate: "lint".into(),
            status: GateStatus::Passed,
            duration_ms: 1,
            detail: String::new(),
            counts: GateCounts::default(),
        })
        .unwrap();
        assert_eq!(written["status"], "passed");
        assert!(written.get("passed").is_none(), "{written}");
    }
}
