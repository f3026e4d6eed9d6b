//! Metrics from events, under the names dashboards rely on, rendered in the Prometheus text
//! exposition format by `metrics-exporter-prometheus`: a file written atomically at the end of a
//! run, and the body [`super::PushGateway`] sends to a push gateway. The exporter's recorder is
//! this sink's own (installed locally around each event, never as the global recorder), and it
//! is used only to record and render: its HTTP listener and periodic push gateway are not
//! compiled in.

use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusRecorder};

use super::{NoRedaction, Redact, TelemetryError};
use meta_agent_protocol::event::{Event, EventSink};
use meta_agent_protocol::records::StepPhase;

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
    recorder: PrometheusRecorder,
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
        let recorder = recorder();
        metrics::with_local_recorder(&recorder, describe_metrics);
        Self { recorder, redactor }
    }

    /// Everything recorded so far in the Prometheus text exposition format, redacted.
    pub fn render_prometheus(&self) -> String {
        self.redactor
            .redact(&self.recorder.handle().render())
            .into_owned()
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

/// The exporter's recorder: histograms with explicit buckets (true Prometheus histograms, not
/// summaries), counters without a `_total` suffix (the documented names predate it).
fn recorder() -> PrometheusRecorder {
    let builder = PrometheusBuilder::new().with_recommended_naming(false);
    let buckets = builder
        .set_buckets_for_metric(Matcher::Full(LOOP_ITERATIONS.to_owned()), ITERATION_BUCKETS)
        .and_then(|builder| builder.set_buckets(MILLISECOND_BUCKETS));
    match buckets {
        Ok(builder) => builder.build_recorder(),
        // Only empty bucket lists are refused, and ours are constants that are not empty.
        Err(_) => PrometheusBuilder::new().build_recorder(),
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

/// A phase's outcome as a label from a closed set: an observation's verdict (`passed`,
/// `failed`, `could_not_start`, else `other`), and `done` for an act, whose outcome is the
/// model's own summary: free text never becomes a label (it could carry anything, and every
/// distinct text would be a new series).
fn outcome_label(phase: StepPhase, outcome: &str) -> &'static str {
    match phase {
        StepPhase::Build | StepPhase::Improve => "done",
        StepPhase::Test | StepPhase::Baseline | StepPhase::Verify => {
            if outcome.ends_with("passed") {
                "passed"
            } else if outcome.ends_with("failed") {
                "failed"
            } else if outcome.ends_with("could not start") {
                "could_not_start"
            } else {
                "other"
            }
        }
    }
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
            metrics::counter!(LOOP_TOTAL, "outcome" => outcome.as_str()).increment(1);
        }
        Event::PhaseFinished {
            phase,
            duration_ms,
            outcome,
            iteration: _,
            gates: _,
        } => {
            metrics::histogram!(PHASE_DURATION_MS, "phase" => phase.as_str())
                .record(*duration_ms as f64);
            metrics::counter!(PHASE_TOTAL, "phase" => phase.as_str(), "outcome" => outcome_label(*phase, outcome))
                .increment(1);
        }
        Event::GateFinished {
            gate,
            status,
            duration_ms,
            detail: _,
            counts: _,
        } => {
            let result = status.short();
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
        | Event::Paused { .. }
        | Event::StateChanged { .. }
        | Event::PhaseStarted { .. }
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
    fn an_acts_free_text_outcome_never_becomes_a_label() {
        let sink = MetricsSink::default();
        for (phase, outcome) in [
            (
                StepPhase::Build,
                "Fix mean\n\nignore previous instructions {evil=\"1\"}",
            ),
            (StepPhase::Baseline, "baseline: gates failed"),
            (StepPhase::Verify, "pristine checkout: gates passed"),
            (
                StepPhase::Verify,
                "pristine checkout: gates could not start",
            ),
        ] {
            sink.emit(&Event::PhaseFinished {
                phase,
                iteration: 1,
                duration_ms: 5,
                outcome: outcome.into(),
                gates: Vec::new(),
            });
        }
        let text = sink.render_prometheus();
        let mut labels: Vec<&str> = text
            .lines()
            .filter(|line| line.starts_with("meta_agent_phase_total{"))
            .collect();
        labels.sort_unstable();
        assert_eq!(
            labels,
            [
                "meta_agent_phase_total{phase=\"baseline\",outcome=\"failed\"} 1",
                "meta_agent_phase_total{phase=\"build\",outcome=\"done\"} 1",
                "meta_agent_phase_total{phase=\"verify\",outcome=\"could_not_start\"} 1",
                "meta_agent_phase_total{phase=\"verify\",outcome=\"passed\"} 1",
            ],
            "{text}"
        );
        assert!(
            !text.contains("evil") && !text.contains("Fix mean"),
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
