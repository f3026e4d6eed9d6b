//! The event sinks of a run: the trace file, the audit log, the metrics (written as
//! `metrics.prom` and pushed to a gateway when configured), the OpenTelemetry export, and the
//! `--json` stream on stdout. Opened before the engine starts, finished after it stops.
//!
//! One test hook: `META_AGENT_TEST_KILL_AT_EVENT=N` ends the process abruptly (as a SIGKILL
//! would: no unwinding, no saving) right after the `N`th event (from 1) reached every other sink,
//! so the end-to-end tests can kill a run at every event boundary and resume it. The GitHub
//! session's publishing steps after the run (the session recorded, the branch pushed, the pull
//! request opened, the status posted) count as events too ([`published`]);
//! `META_AGENT_TEST_KILL_AT_EVENT=published:N` counts only those (a run's own event count varies
//! with the gate plan its measured costs choose).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::SessionError;
use super::run::RunContext;
use crate::protocol::event::{Event, EventSink, Fanout, TracingSink};
use crate::redact::Redactor;
use crate::telemetry::{
    AuditLog, JsonLines, MetricsSink, OtlpTrace, PUSH_TIMEOUT, PushGateway, SystemClock, TraceFile,
};

/// The event sinks of a run.
pub(super) struct Sinks {
    trace: TraceFile,
    audit: AuditLog,
    metrics: MetricsSink,
    json: Option<JsonLines<std::io::Stdout>>,
    /// The OpenTelemetry trace, when `OTEL_EXPORTER_OTLP_*` configures it.
    otlp: Option<OtlpTrace>,
    /// The push gateway of `telemetry.push_gateway`.
    push: Option<PushGateway>,
    /// The test hook of `META_AGENT_TEST_KILL_AT_EVENT`.
    kill_at: Option<&'static KillAt>,
}

/// The name of the test hook's variable.
pub const KILL_AT_EVENT: &str = "META_AGENT_TEST_KILL_AT_EVENT";

/// Ends the process right after the `at`th event: the last sink of the fan-out.
struct KillAt {
    at: u64,
    seen: AtomicU64,
    /// Which events count.
    scope: KillScope,
}

/// Which events the test hook counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KillScope {
    /// Every event of the run, then the publishing steps.
    Every,
    /// Only the GitHub session's publishing steps.
    Publishing,
}

/// The process's one hook: events of the run and publishing steps share its count.
static KILL_AT: std::sync::OnceLock<Option<KillAt>> = std::sync::OnceLock::new();

fn kill_hook(vars: &[(String, String)]) -> Option<&'static KillAt> {
    KILL_AT.get_or_init(|| KillAt::from_env(vars)).as_ref()
}

/// A publishing step of the GitHub session is done: logged, and counted by the test hook.
pub(super) fn published(vars: &[(String, String)], event: &Event) {
    TracingSink.emit(event);
    if let Some(hook) = kill_hook(vars) {
        hook.count();
    }
}

impl KillAt {
    fn from_env(vars: &[(String, String)]) -> Option<KillAt> {
        let (_, value) = vars.iter().find(|(name, _)| name == KILL_AT_EVENT)?;
        let value = value.trim();
        let (scope, number) = match value.strip_prefix("published:") {
            Some(number) => (KillScope::Publishing, number),
            None => (KillScope::Every, value),
        };
        let at = number.parse().ok().filter(|&at| at > 0)?;
        Some(KillAt {
            at,
            seen: AtomicU64::new(0),
            scope,
        })
    }

    /// One more counted event: the process ends at the `at`th.
    fn count(&self) {
        if self.seen.fetch_add(1, Ordering::SeqCst) + 1 == self.at {
            std::process::abort();
        }
    }
}

impl EventSink for KillAt {
    fn emit(&self, _event: &Event) {
        match self.scope {
            KillScope::Every => self.count(),
            KillScope::Publishing => {}
        }
    }
}

impl Sinks {
    pub(super) fn open(
        dir: &Path,
        json: bool,
        redactor: Arc<Redactor>,
        ctx: &RunContext<'_>,
    ) -> Result<Sinks, SessionError> {
        let clock = Arc::new(SystemClock);
        let internal =
            |err: crate::telemetry::TelemetryError| SessionError::Internal(err.to_string());
        Ok(Sinks {
            trace: TraceFile::open(&dir.join("trace.jsonl"), clock.clone(), redactor.clone())
                .map_err(internal)?,
            audit: AuditLog::open(&dir.join("audit.jsonl"), clock.clone(), redactor.clone())
                .map_err(internal)?,
            metrics: MetricsSink::new(redactor.clone()),
            json: json.then(|| JsonLines::new(std::io::stdout(), "stdout", redactor.clone())),
            otlp: OtlpTrace::from_env(&ctx.env.vars, redactor, clock),
            push: push_gateway(ctx),
            kill_at: kill_hook(&ctx.env.vars),
        })
    }

    pub(super) fn fanout(&self) -> Fanout<'_> {
        let mut sinks: Vec<&dyn EventSink> =
            vec![&TracingSink, &self.trace, &self.audit, &self.metrics];
        if let Some(json) = &self.json {
            sinks.push(json);
        }
        if let Some(otlp) = &self.otlp {
            sinks.push(otlp);
        }
        if let Some(kill_at) = self.kill_at {
            sinks.push(kill_at);
        }
        Fanout { sinks }
    }

    /// Writes `metrics.prom`, pushes the metrics when a gateway is configured and exports the
    /// rest of the trace (a failed push or export is a warning, not a failure of the run).
    pub(super) async fn finish(self, dir: &Path, session: &str) -> Result<(), SessionError> {
        let written = self.metrics.write_prometheus(&dir.join("metrics.prom"));
        if let Some(gateway) = &self.push
            && let Err(err) = gateway
                .push(session, self.metrics.render_prometheus())
                .await
        {
            tracing::warn!("{err}");
        }
        if let Some(otlp) = self.otlp {
            otlp.shutdown().await;
        }
        written.map_err(|err| SessionError::Internal(err.to_string()))
    }
}

/// The push gateway of the configuration, trusting `SSL_CERT_FILE`'s certificates too; `None`
/// (with a warning) when it cannot be used.
fn push_gateway(ctx: &RunContext<'_>) -> Option<PushGateway> {
    let gateway = ctx.config.telemetry.push_gateway.as_deref()?;
    let ca_file = ctx
        .env
        .get("SSL_CERT_FILE")
        .filter(|path| !path.is_empty())
        .map(Path::new);
    PushGateway::new(gateway, ca_file, PUSH_TIMEOUT)
        .inspect_err(|err| tracing::warn!("{err}"))
        .ok()
}
