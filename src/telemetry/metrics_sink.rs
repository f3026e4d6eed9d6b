//! Metrics from events, under the names dashboards rely on, exported as Prometheus text: a file
//! written atomically at the end of a run, or a body and URL for a push gateway. The HTTP request
//! itself is not made here (the crate has no HTTP client); the caller sends [`MetricsSink::push_body`]
//! with `PUT` to [`push_url`].

use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;

use super::prometheus::PrometheusText;
use super::{NoRedaction, Redact, TelemetryError};
use crate::protocol::event::{Event, EventSink};

/// Iterations a run took (histogram).
pub const LOOP_ITERATIONS: &str = "meta_agent.loop.iterations";
/// Wall-clock duration of a run in milliseconds (histogram).
pub const LOOP_DURATION_MS: &str = "meta_agent.loop.duration_ms";
/// Runs finished, by `outcome` (counter).
pub const LOOP_TOTAL: &str = "meta_agent.loop.total";
/// Duration of a loop phase in milliseconds, by `phase` (histogram).
pub const PHASE_DURATION_MS: &str = "meta_agent.phase.duration_ms";
/// Phases finished, by `phase` and `outcome` (counter).
pub const PHASE_TOTAL: &str = "meta_agent.phase.total";
/// Duration of a gate's command in milliseconds, by `gate` (histogram).
pub const GATE_LATENCY_MS: &str = "meta_agent.gate.latency_ms";
/// Gate evaluations, by `gate` and `result` (`pass`, `fail`, `skip`) (counter).
pub const GATE_EVALUATIONS: &str = "meta_agent.gate.evaluations";

const ITERATION_BUCKETS: &[f64] = &[1.0, 2.0, 3.0, 4.0, 5.0, 7.0, 10.0, 15.0, 20.0];
const MILLISECOND_BUCKETS: &[f64] = &[
    10.0,
    50.0,
    100.0,
    250.0,
    500.0,
    1_000.0,
    2_500.0,
    5_000.0,
    10_000.0,
    30_000.0,
    60_000.0,
    120_000.0,
    300_000.0,
    600_000.0,
    1_800_000.0,
    3_600_000.0,
];

/// Records the metrics of a run in its own recorder (never the global one).
pub struct MetricsSink {
    recorder: PrometheusText,
    redactor: Arc<dyn Redact>,
}

impl Default for MetricsSink {
    fn default() -> Self {
        Self::new(Arc::new(NoRedaction))
    }
}

impl MetricsSink {
    /// A sink whose rendered text passes `redactor` (label values come from gate names and
    /// outcomes, which are repository data).
    pub fn new(redactor: Arc<dyn Redact>) -> Self {
        let recorder = PrometheusText::new(bucket_bounds);
        metrics::with_local_recorder(&recorder, describe_metrics);
        Self { recorder, redactor }
    }

    /// Everything recorded so far in the Prometheus text exposition format, redacted.
    pub fn render_prometheus(&self) -> String {
        self.redactor.redact(&self.recorder.render()).into_owned()
    }

    /// The body to `PUT` to a push gateway at [`push_url`]: the same text as the file.
    pub fn push_body(&self) -> String {
        self.render_prometheus()
    }

    /// Writes [`Self::render_prometheus`] to `path` atomically (a temporary file in the same
    /// directory, then a rename), so a reader never sees half a file.
    pub fn write_prometheus(&self, path: &Path) -> Result<(), TelemetryError> {
        let write_error = |source| TelemetryError::Write {
            path: path.to_path_buf(),
            source,
        };
        let dir = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        let mut temp = tempfile::NamedTempFile::new_in(dir).map_err(write_error)?;
        temp.write_all(self.render_prometheus().as_bytes())
            .and_then(|()| temp.as_file().sync_all())
            .map_err(write_error)?;
        temp.persist(path).map_err(|err| write_error(err.error))?;
        Ok(())
    }
}

impl EventSink for MetricsSink {
    fn emit(&self, event: &Event) {
        metrics::with_local_recorder(&self.recorder, || record(event));
    }
}

/// The push gateway URL for a session's metrics: `{gateway}/metrics/job/meta-agent/session/{session}`.
/// A session id with characters outside RFC 3986's unreserved set is sent in the gateway's
/// `session@base64/{base64url}` form, so no id can change the path.
pub fn push_url(gateway: &str, session: &str) -> String {
    let gateway = gateway.trim_end_matches('/');
    let unreserved = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~');
    if !session.is_empty() && session.chars().all(unreserved) && session != "." && session != ".." {
        format!("{gateway}/metrics/job/meta-agent/session/{session}")
    } else {
        let encoded = base64_url(session.as_bytes());
        format!("{gateway}/metrics/job/meta-agent/session@base64/{encoded}")
    }
}

/// RFC 4648 base64url with padding (`=` alone for empty input, as the push gateway expects).
fn base64_url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    if bytes.is_empty() {
        return "=".to_owned();
    }
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> shift) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn bucket_bounds(name: &str) -> &'static [f64] {
    if name == LOOP_ITERATIONS {
        ITERATION_BUCKETS
    } else {
        MILLISECOND_BUCKETS
    }
}

fn describe_metrics() {
    metrics::describe_histogram!(LOOP_ITERATIONS, "Iterations a run took.");
    metrics::describe_histogram!(LOOP_DURATION_MS, "Wall-clock duration of a run (ms).");
    metrics::describe_counter!(LOOP_TOTAL, "Runs finished, by outcome.");
    metrics::describe_histogram!(PHASE_DURATION_MS, "Duration of a loop phase (ms).");
    metrics::describe_counter!(PHASE_TOTAL, "Loop phases finished, by phase and outcome.");
    metrics::describe_histogram!(GATE_LATENCY_MS, "Duration of a gate's command (ms).");
    metrics::describe_counter!(GATE_EVALUATIONS, "Gate evaluations, by gate and result.");
}

/// Records one event into the current (local) recorder.
fn record(event: &Event) {
    match event {
        Event::RunFinished {
            outcome,
            iterations,
            duration_ms,
            llm_calls: _,
        } => {
            metrics::histogram!(LOOP_ITERATIONS).record(f64::from(*iterations));
            metrics::histogram!(LOOP_DURATION_MS).record(*duration_ms as f64);
            metrics::counter!(LOOP_TOTAL, "outcome" => outcome.clone()).increment(1);
        }
        Event::PhaseFinished {
            phase,
            duration_ms,
            outcome,
            iteration: _,
        } => {
            metrics::histogram!(PHASE_DURATION_MS, "phase" => phase.as_str())
                .record(*duration_ms as f64);
            metrics::counter!(PHASE_TOTAL, "phase" => phase.as_str(), "outcome" => outcome.clone())
                .increment(1);
        }
        Event::GateFinished {
            gate,
            passed,
            duration_ms,
            detail: _,
        } => {
            let result = if *passed { "pass" } else { "fail" };
            metrics::histogram!(GATE_LATENCY_MS, "gate" => gate.clone())
                .record(*duration_ms as f64);
            metrics::counter!(GATE_EVALUATIONS, "gate" => gate.clone(), "result" => result)
                .increment(1);
        }
        Event::GateSkipped { gate, reason: _ } => {
            metrics::counter!(GATE_EVALUATIONS, "gate" => gate.clone(), "result" => "skip")
                .increment(1);
        }
        Event::RunStarted { .. }
        | Event::Recovered { .. }
        | Event::StateChanged { .. }
        | Event::GateStarted { .. }
        | Event::SignatureFound { .. }
        | Event::ResolutionApplied { .. }
        | Event::ResolutionOutcome { .. }
        | Event::FlakyTest { .. }
        | Event::CommandRun { .. }
        | Event::FileChanged { .. }
        | Event::GitOperation { .. }
        | Event::LlmCall { .. }
        | Event::ToolCalled { .. }
        | Event::Decided { .. }
        | Event::TamperRefused { .. }
        | Event::PatchRefused { .. }
        | Event::Committed { .. }
        | Event::Escalated { .. } => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_url_plain_and_encoded() {
        assert_eq!(
            push_url("http://gw:9091/", "s-20261122.1"),
            "http://gw:9091/metrics/job/meta-agent/session/s-20261122.1"
        );
        assert_eq!(
            push_url("http://gw:9091", "a/b"),
            "http://gw:9091/metrics/job/meta-agent/session@base64/YS9i"
        );
        assert_eq!(
            push_url("http://gw", ""),
            "http://gw/metrics/job/meta-agent/session@base64/="
        );
    }

    #[test]
    fn base64_url_matches_rfc4648_vectors() {
        let cases = [
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
        ];
        for (input, expected) in cases {
            assert_eq!(base64_url(input.as_bytes()), expected);
        }
        assert_eq!(base64_url(&[0xfb, 0xff]), "-_8=");
    }

    #[test]
    fn a_skipped_gate_counts_without_latency() {
        let sink = MetricsSink::default();
        sink.emit(&Event::GateSkipped {
            gate: "coverage".into(),
            reason: "cargo-llvm-cov missing".into(),
        });
        let text = sink.render_prometheus();
        assert!(text.contains("meta_agent_gate_evaluations{gate=\"coverage\",result=\"skip\"} 1"));
        assert!(
            !text.contains("meta_agent_gate_latency_ms_bucket"),
            "{text}"
        );
    }

    #[test]
    fn writes_the_file_atomically_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("metrics.prom");
        std::fs::write(&path, "old").unwrap();
        let sink = MetricsSink::default();
        sink.emit(&Event::GateSkipped {
            gate: "lint".into(),
            reason: "missing".into(),
        });
        sink.write_prometheus(&path).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            sink.render_prometheus()
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn write_error_names_the_file() {
        let sink = MetricsSink::default();
        let path = Path::new("/nonexistent-dir-for-telemetry/metrics.prom");
        let err = sink.write_prometheus(path).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("cannot write /nonexistent-dir-for-telemetry/metrics.prom")
        );
    }
}
