//! The one vocabulary of what happens during a run. Everything a person or a machine reads (the
//! console, `--json`, traces, metrics, summaries) is rendered from these events by consumers that
//! implement [`EventSink`]; the code that does the work only emits.

use serde::Serialize;

/// Something that happened.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// A gate's command is about to run.
    GateStarted { gate: String, command: String },
    /// A gate was skipped (a program it requires is missing and the gate is optional).
    GateSkipped { gate: String, reason: String },
    /// A gate finished with its verdict.
    GateFinished {
        gate: String,
        passed: bool,
        duration_ms: u64,
        detail: String,
    },
}

/// A consumer of events.
pub trait EventSink: Send + Sync {
    fn emit(&self, event: &Event);
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
            Event::GateFinished {
                gate,
                passed,
                duration_ms,
                detail,
            } => {
                let verdict = if *passed { "passed" } else { "FAILED" };
                tracing::info!(gate = %gate, "{verdict} in {duration_ms} ms {detail}");
            }
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
