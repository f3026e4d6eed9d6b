//! Consumers of the event stream that leave a record (and [`read_trace`], which reads the trace
//! back for `trace show`, `trace replay` and `report.html`): Prometheus metrics (a file, and a push
//! gateway), the audit log, the trace file, the OpenTelemetry trace (OTLP) and the `--json`
//! stream on stdout. Each implements [`meta_agent_protocol::event::EventSink`]; none of them decides anything or
//! can stop a run: a sink that cannot write logs one `tracing` warning and keeps going. Every text
//! they write or send passes a [`Redact`] hook first (identity unless the caller plugs the real
//! redactor in). No globals: the metrics recorder lives in its sink, the span processor in its.

#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod audit;
mod clock;
mod http;
mod json_lines;
mod line_writer;
mod metrics_sink;
pub mod otlp;
mod push;
mod read;
mod trace;

use std::borrow::Cow;
use std::path::PathBuf;

pub use audit::{Actor, AuditLog};
pub use clock::{Clock, SystemClock, format_time};
pub use json_lines::JsonLines;
pub use metrics_sink::MetricsSink;
pub use otlp::OtlpTrace;
pub use push::{PUSH_TIMEOUT, PushGateway, push_url};
pub use read::{TraceEntry, TraceReadError, Traced, read_trace};
pub use trace::TraceFile;

/// Why a telemetry file could not be opened or written. Every variant names the destination.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("cannot push metrics to {url}: {message}")]
    Push { url: String, message: String },
    #[error("cannot export the trace to {endpoint}: {message}")]
    Otlp { endpoint: String, message: String },
    #[error("cannot use {path} as trusted certificates: {message}")]
    Certificate { path: PathBuf, message: String },
    #[error("cannot build the telemetry HTTP client: {message}")]
    Client { message: String },
    #[error("cannot open {path}: {source}")]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot serialize an event for {path}: {source}")]
    Serialize {
        path: PathBuf,
        source: serde_json::Error,
    },
}

/// Rewrites a line of outbound text before it is written (secrets out). The sandbox's redactor
/// implements it; any `Fn(&str) -> String` does too.
pub trait Redact: Send + Sync {
    fn redact<'a>(&self, text: &'a str) -> Cow<'a, str>;
}

impl Redact for meta_agent_redact::Redactor {
    fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.redact_text(text)
    }
}

impl<F> Redact for F
where
    F: Fn(&str) -> String + Send + Sync,
{
    fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        Cow::Owned(self(text))
    }
}

/// The default [`Redact`]: changes nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoRedaction;

impl Redact for NoRedaction {
    fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        Cow::Borrowed(text)
    }
}
