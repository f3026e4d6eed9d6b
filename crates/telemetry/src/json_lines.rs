//! The `--json` stream: every event as one JSON line (its own serde form, tagged by `event`) on any
//! writer, stdout in a run. The final outcome object is not an event; the run command prints it.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use super::Redact;
use super::line_writer::LineWriter;
use meta_agent_protocol::event::{Event, EventSink};

/// Events as JSON lines on a writer, flushed line by line.
pub struct JsonLines<W> {
    lines: LineWriter<W>,
}

impl<W: Write + Send> JsonLines<W> {
    /// `destination` is how a write failure names the writer in its warning (e.g. `<stdout>`).
    pub fn new(writer: W, destination: impl Into<PathBuf>, redactor: Arc<dyn Redact>) -> Self {
        Self {
            lines: LineWriter::new(writer, destination.into(), redactor),
        }
    }

    /// The writer back, e.g. a buffer to inspect.
    pub fn into_inner(self) -> W {
        self.lines.into_inner()
    }
}

impl<W: Write + Send> EventSink for JsonLines<W> {
    fn emit(&self, event: &Event) {
        self.lines
            .write_line(|_| Some(serde_json::to_string(event)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NoRedaction;

    #[test]
    fn one_tagged_line_per_event() {
        let sink = JsonLines::new(Vec::new(), "<buffer>", Arc::new(NoRedaction));
        sink.emit(&Event::FlakyTest {
            test: "tests::a".into(),
        });
        sink.emit(&Event::GateStarted {
            gate: "lint".into(),
            command: "cargo clippy".into(),
        });
        let text = String::from_utf8(sink.into_inner()).unwrap();
        assert_eq!(
            text,
            "{\"event\":\"flaky_test\",\"test\":\"tests::a\"}\n\
             {\"event\":\"gate_started\",\"gate\":\"lint\",\"command\":\"cargo clippy\"}\n"
        );
    }
}
