//! The trace file: every event, in order, as a JSON line `{"time": …, "seq": n, "event": …, …}`
//! (the event's own fields flattened in). `seq` counts the lines of the file, so a resumed run
//! that appends to its trace keeps numbering where the killed one stopped.

use std::path::Path;
use std::sync::Arc;

use serde::Serialize;

use super::clock::{Clock, format_time};
use super::line_writer::LineWriter;
use super::{Redact, TelemetryError};
use meta_agent_protocol::event::{Event, EventSink};

#[derive(Serialize)]
struct TraceRecord<'a> {
    time: String,
    seq: u64,
    #[serde(flatten)]
    event: &'a Event,
}

/// The trace file; see the module documentation.
pub struct TraceFile {
    lines: LineWriter<std::fs::File>,
    clock: Arc<dyn Clock>,
}

impl TraceFile {
    /// Opens (or creates) the trace at `path` for appending.
    pub fn open(
        path: &Path,
        clock: Arc<dyn Clock>,
        redactor: Arc<dyn Redact>,
    ) -> Result<Self, TelemetryError> {
        let lines = LineWriter::append_to(path, redactor)?;
        Ok(Self { lines, clock })
    }
}

impl EventSink for TraceFile {
    fn emit(&self, event: &Event) {
        self.lines.write_line(|seq| {
            let record = TraceRecord {
                time: format_time(self.clock.now()),
                seq,
                event,
            };
            Some(serde_json::to_string(&record))
        });
    }
}
