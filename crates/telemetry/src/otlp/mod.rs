//! OpenTelemetry export of the run's trace over OTLP/HTTP (protobuf): one more consumer of the
//! event stream, beside the trace file and the audit log. Off unless the standard
//! `OTEL_EXPORTER_OTLP_*` variables name an endpoint ([`settings`]); then [`spans`] turns events
//! into spans, the SDK's batch processor queues them (bounded, in a thread of its own) and
//! `opentelemetry-otlp` encodes and sends them through the telemetry HTTP client (`telemetry/http.rs`).
//!
//! [`OtlpTrace::shutdown`] exports what is left when the run ends and waits at most the export
//! timeout plus a second, so a dead or silent collector delays the end of a run by that much and
//! never fails it. The tracer provider and the global tracer are not used: spans are built
//! whole, with the times the events report, and handed to the processor directly.

mod http;
pub mod settings;
pub mod spans;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{BatchSpanProcessor, SpanExporter as _, SpanProcessor};

use self::settings::OtlpSettings;
use self::spans::TraceAssembler;
use super::{Clock, Redact, TelemetryError};
use meta_agent_protocol::event::{Event, EventSink};

/// What [`OtlpTrace::shutdown`] waits beyond the export timeout.
const SHUTDOWN_MARGIN: Duration = Duration::from_secs(1);

/// The OTLP trace sink; see the module documentation.
pub struct OtlpTrace {
    assembler: Mutex<TraceAssembler>,
    processor: Arc<BatchSpanProcessor>,
    clock: Arc<dyn Clock>,
    timeout: Duration,
}

impl OtlpTrace {
    /// The sink the environment `env` configures; `None` when export is off, or when the
    /// variables cannot be used (then a warning says why: telemetry never stops a run).
    pub fn from_env(
        env: &[(String, String)],
        redactor: Arc<dyn Redact>,
        clock: Arc<dyn Clock>,
    ) -> Option<OtlpTrace> {
        let lookup = |name: &str| {
            env.iter()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.clone())
        };
        let settings = match OtlpSettings::from_env(lookup) {
            Ok(settings) => settings?,
            Err(err) => {
                tracing::warn!("OpenTelemetry export is off: {err}");
                return None;
            }
        };
        match OtlpTrace::start(&settings, redactor, clock) {
            Ok(trace) => {
                tracing::info!("exporting the run's trace to {}", settings.endpoint);
                Some(trace)
            }
            Err(err) => {
                tracing::warn!("OpenTelemetry export is off: {err}");
                None
            }
        }
    }

    /// Starts the exporter and its batch processor. Must be called inside a tokio runtime (the
    /// requests run on it).
    pub fn start(
        settings: &OtlpSettings,
        redactor: Arc<dyn Redact>,
        clock: Arc<dyn Clock>,
    ) -> Result<OtlpTrace, TelemetryError> {
        let otlp = |message: String| TelemetryError::Otlp {
            endpoint: settings.endpoint.clone(),
            message,
        };
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| otlp("no async runtime to send from".into()))?;
        let client = super::http::client(settings.timeout, settings.certificate.as_deref())?;
        let headers: HashMap<String, String> = settings.headers.iter().cloned().collect();
        let mut exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(http::OtlpHttp::new(client, runtime, &settings.endpoint))
            .with_endpoint(settings.endpoint.clone())
            .with_protocol(Protocol::HttpBinary)
            .with_timeout(settings.timeout)
            .with_headers(headers)
            .build()
            .map_err(|err| otlp(err.to_string()))?;
        exporter.set_resource(&resource(&settings.service_name));
        Ok(OtlpTrace {
            assembler: Mutex::new(TraceAssembler::new(redactor)),
            processor: Arc::new(BatchSpanProcessor::builder(exporter).build()),
            clock,
            timeout: settings.timeout,
        })
    }

    /// Exports the spans still queued and stops the processor, waiting at most the export
    /// timeout plus `SHUTDOWN_MARGIN`. Failures were warned about by the transport already.
    pub async fn shutdown(self) {
        let processor = self.processor;
        let budget = self.timeout + SHUTDOWN_MARGIN;
        let stopped = tokio::task::spawn_blocking(move || processor.shutdown_with_timeout(budget));
        match stopped.await {
            Ok(Ok(())) => {}
            Ok(Err(err)) => tracing::warn!("the trace export did not finish: {err}"),
            Err(err) => tracing::warn!("the trace export did not finish: {err}"),
        }
    }
}

impl EventSink for OtlpTrace {
    fn emit(&self, event: &Event) {
        let now = self.clock.now();
        let spans = self
            .assembler
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .on_event(event, now);
        for span in spans {
            self.processor.on_end(span);
        }
    }
}

/// `service.name` and `service.version`.
fn resource(service_name: &str) -> Resource {
    Resource::builder_empty()
        .with_service_name(service_name.to_owned())
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NoRedaction, SystemClock};

    #[tokio::test]
    async fn without_an_endpoint_there_is_no_exporter() {
        let env = vec![
            ("OTEL_SERVICE_NAME".to_owned(), "x".to_owned()),
            ("OTEL_EXPORTER_OTLP_HEADERS".to_owned(), "k=v".to_owned()),
        ];
        let trace = OtlpTrace::from_env(&env, Arc::new(NoRedaction), Arc::new(SystemClock));
        assert!(trace.is_none());
    }

    #[test]
    fn outside_a_runtime_the_exporter_refuses_to_start() {
        let settings = OtlpSettings::from_env(|name| {
            (name == "OTEL_EXPORTER_OTLP_ENDPOINT").then(|| "http://127.0.0.1:9".to_owned())
        })
        .unwrap()
        .unwrap();
        let err = OtlpTrace::start(&settings, Arc::new(NoRedaction), Arc::new(SystemClock))
            .err()
            .unwrap();
        assert_eq!(
            err.to_string(),
            "cannot export the trace to http://127.0.0.1:9/v1/traces: no async runtime to send from"
        );
    }
}
