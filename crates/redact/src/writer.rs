//! A redacting stderr for diagnostics: every formatted log event passes the redactor before it
//! reaches the terminal or the CI log. `tracing`'s formatter writes one event per `write` call,
//! so a secret is never split across two calls.

use std::io::Write;
use std::sync::Arc;

use super::Redactor;

/// Makes redacting stderr writers for `tracing_subscriber::fmt`.
#[derive(Clone)]
pub struct RedactingStderr {
    redactor: Arc<Redactor>,
}

impl RedactingStderr {
    pub fn new(redactor: Arc<Redactor>) -> Self {
        RedactingStderr { redactor }
    }
}

/// One writer per event.
pub struct RedactingWriter {
    redactor: Arc<Redactor>,
}

impl Write for RedactingWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        std::io::stderr().write_all(self.redactor.redact_text(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for RedactingStderr {
    type Writer = RedactingWriter;

    fn make_writer(&'a self) -> Self::Writer {
        RedactingWriter {
            redactor: self.redactor.clone(),
        }
    }
}
