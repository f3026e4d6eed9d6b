//! The run's trace as OpenTelemetry spans, assembled from the event stream. Pure: an event and the
//! time it arrived in, the spans it completes out; no I/O, no clock of its own.
//!
//! The tree: one `meta-agent run` span (from `RunStarted`, or `Recovered` for a resumed run, to
//! `RunFinished`) holding one `phase {name}` span per finished phase, which holds the gates
//! (`gate {name}`), agent tool calls (`execute_tool {tool}`) and model calls (`chat {model}`) that
//! ended during it. Events report a phase only when it ends, so its children wait here until
//! then (bounded); children left when the run ends hang from the run. Model calls carry the GenAI
//! semantic conventions' attributes; decisions, signatures, resolutions, flaky tests, refusals,
//! the commit and the escalation become events on the run span. Every name and every string
//! value passes the run's redactor.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use opentelemetry::trace::{
    Event as SpanEvent, SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{InstrumentationScope, KeyValue, Value};
use opentelemetry_sdk::trace::{IdGenerator, RandomIdGenerator, SpanData, SpanEvents, SpanLinks};

use crate::Redact;
use meta_agent_protocol::event::Event;
use meta_agent_protocol::records::RunOutcome;

/// GenAI semantic conventions (gen_ai.*), as trace backends read them.
pub mod gen_ai {
    pub const OPERATION_NAME: &str = "gen_ai.operation.name";
    pub const PROVIDER_NAME: &str = "gen_ai.provider.name";
    /// The name before `gen_ai.provider.name` (semantic conventions 1.36 and older).
    pub const SYSTEM: &str = "gen_ai.system";
    pub const REQUEST_MODEL: &str = "gen_ai.request.model";
    pub const USAGE_INPUT_TOKENS: &str = "gen_ai.usage.input_tokens";
    pub const USAGE_OUTPUT_TOKENS: &str = "gen_ai.usage.output_tokens";
    pub const TOOL_NAME: &str = "gen_ai.tool.name";
    pub const TOOL_TYPE: &str = "gen_ai.tool.type";
    pub const ERROR_TYPE: &str = "error.type";
}

/// The name of the run's span.
pub const RUN_SPAN: &str = "meta-agent run";
/// Spans waiting for their phase to end before more are dropped (counted on the phase).
const MAX_PENDING: usize = 2048;
/// Events on the run span before more are dropped (counted).
const MAX_RUN_EVENTS: usize = 128;

/// Builds spans from events; see the module documentation.
pub struct TraceAssembler {
    redactor: Arc<dyn Redact>,
    ids: RandomIdGenerator,
    scope: InstrumentationScope,
    run: Option<OpenRun>,
    /// Finished children of the phase in progress (parent not yet known).
    pending: Vec<SpanData>,
    pending_dropped: u32,
    /// Gates started and not finished: name and start.
    gates: Vec<(String, String, SystemTime)>,
}

struct OpenRun {
    trace_id: TraceId,
    span_id: SpanId,
    start: SystemTime,
    attributes: Vec<KeyValue>,
    events: Vec<SpanEvent>,
    events_dropped: u32,
}

impl TraceAssembler {
    pub fn new(redactor: Arc<dyn Redact>) -> Self {
        let scope = InstrumentationScope::builder("meta-agent")
            .with_version(env!("CARGO_PKG_VERSION"))
            .build();
        Self {
            redactor,
            ids: RandomIdGenerator::default(),
            scope,
            run: None,
            pending: Vec::new(),
            pending_dropped: 0,
            gates: Vec::new(),
        }
    }

    /// The spans `event`, arriving at `now`, completes (often none).
    pub fn on_event(&mut self, event: &Event, now: SystemTime) -> Vec<SpanData> {
        match event {
            Event::RunStarted {
                session,
                task,
                max_iterations,
            } => {
                let attributes = vec![
                    self.text("meta_agent.session", session),
                    self.text("meta_agent.task", task),
                    KeyValue::new("meta_agent.max_iterations", i64::from(*max_iterations)),
                ];
                self.start_run(now, attributes)
            }
            Event::Recovered {
                session,
                phase,
                iteration,
            } => {
                let attributes = vec![
                    self.text("meta_agent.session", session),
                    KeyValue::new("meta_agent.resumed", true),
                    KeyValue::new("meta_agent.resumed_phase", phase.as_str()),
                    KeyValue::new("meta_agent.iteration", i64::from(*iteration)),
                ];
                self.start_run(now, attributes)
            }
            Event::PhaseFinished {
                phase,
                iteration,
                duration_ms,
                outcome,
                gates: _,
            } => self.finish_phase(
                Phase {
                    name: phase.as_str(),
                    iteration: *iteration,
                    outcome,
                    start: before(now, *duration_ms),
                },
                now,
            ),
            Event::GateStarted { gate, command } => {
                self.gates.retain(|(name, _, _)| name != gate);
                self.gates.push((gate.clone(), command.clone(), now));
                Vec::new()
            }
            Event::GateFinished {
                gate,
                status,
                duration_ms,
                detail,
                counts: _,
            } => {
                let started = self.take_gate(gate);
                let start = started.as_ref().map_or(before(now, *duration_ms), |s| s.1);
                let command = started.map(|s| s.0).unwrap_or_default();
                let result = status.short();
                let span = self.gate_span(gate, &command, result, detail, (start, now));
                self.hold(span)
            }
            Event::GateSkipped { gate, reason } => {
                let command = self.take_gate(gate).map(|s| s.0).unwrap_or_default();
                let span = self.gate_span(gate, &command, "skip", reason, (now, now));
                self.hold(span)
            }
            Event::ToolCalled {
                tool,
                input,
                success,
                started_unix_ms,
                duration_ms,
            } => {
                let when = window(*started_unix_ms, *duration_ms, now);
                let span = self.tool_span(tool, input, *success, when);
                self.hold(span)
            }
            Event::LlmCall {
                provider,
                model,
                input_tokens,
                output_tokens,
                cost_usd,
                started_unix_ms,
                duration_ms,
            } => {
                let call = ModelCall {
                    provider,
                    model,
                    input_tokens: *input_tokens,
                    output_tokens: *output_tokens,
                    cost_usd: *cost_usd,
                };
                let span = self.llm_span(&call, window(*started_unix_ms, *duration_ms, now));
                self.hold(span)
            }
            Event::RunFinished {
                outcome,
                iterations,
                llm_calls,
                duration_ms: _,
            } => {
                let attributes = vec![
                    self.text("meta_agent.outcome", outcome.as_str()),
                    KeyValue::new("meta_agent.iterations", i64::from(*iterations)),
                    KeyValue::new("meta_agent.llm_calls", i64::from(*llm_calls)),
                ];
                self.finish_run(now, attributes, run_status(*outcome))
            }
            Event::SignatureFound { .. }
            | Event::PhaseStarted { .. }
            | Event::ResolutionApplied { .. }
            | Event::ResolutionOutcome { .. }
            | Event::FlakyTest { .. }
            | Event::ModelExchange { .. }
            | Event::RerunRejected { .. }
            | Event::Decided { .. }
            | Event::TamperRefused { .. }
            | Event::PatchRefused { .. }
            | Event::Committed { .. }
            | Event::Escalated { .. }
            | Event::Paused { .. } => {
                self.annotate(event, now);
                Vec::new()
            }
            Event::StateChanged { .. }
            | Event::CommandRun { .. }
            | Event::FileChanged { .. }
            | Event::GitOperation { .. } => Vec::new(),
        }
    }

    /// Opens the run span (closing one left open, with its spans).
    fn start_run(&mut self, now: SystemTime, attributes: Vec<KeyValue>) -> Vec<SpanData> {
        let unfinished = if self.run.is_some() {
            self.finish_run(now, Vec::new(), Status::error("the run did not finish"))
        } else {
            Vec::new()
        };
        self.run = Some(OpenRun {
            trace_id: self.ids.new_trace_id(),
            span_id: self.ids.new_span_id(),
            start: now,
            attributes,
            events: Vec::new(),
            events_dropped: 0,
        });
        unfinished
    }

    /// The open run, opened now if events came before its start.
    fn run(&mut self, now: SystemTime) -> &mut OpenRun {
        let ids = &self.ids;
        self.run.get_or_insert_with(|| OpenRun {
            trace_id: ids.new_trace_id(),
            span_id: ids.new_span_id(),
            start: now,
            attributes: Vec::new(),
            events: Vec::new(),
            events_dropped: 0,
        })
    }

    fn finish_phase(&mut self, phase: Phase<'_>, now: SystemTime) -> Vec<SpanData> {
        let mut attributes = vec![
            self.text("meta_agent.phase", phase.name),
            KeyValue::new("meta_agent.iteration", i64::from(phase.iteration)),
            self.text("meta_agent.outcome", phase.outcome),
        ];
        if self.pending_dropped > 0 {
            attributes.push(KeyValue::new(
                "meta_agent.spans_dropped",
                i64::from(self.pending_dropped),
            ));
        }
        let name = format!("phase {}", phase.name);
        let span = self.span(SpanParts {
            name: &name,
            kind: SpanKind::Internal,
            when: (phase.start, now),
            attributes,
            status: Status::Unset,
        });
        let run_id = self.run(now).span_id;
        let mut spans = self.adopt(span.span_context.span_id());
        spans.push(self.with_parent(span, run_id));
        spans
    }

    fn finish_run(
        &mut self,
        now: SystemTime,
        attributes: Vec<KeyValue>,
        status: Status,
    ) -> Vec<SpanData> {
        let run_id = self.run(now).span_id;
        let mut spans = self.adopt(run_id);
        self.gates.clear();
        if let Some(run) = self.run.take() {
            spans.push(self.run_span(run, attributes, status, now));
        }
        spans
    }

    fn run_span(
        &self,
        run: OpenRun,
        extra: Vec<KeyValue>,
        status: Status,
        now: SystemTime,
    ) -> SpanData {
        let mut events = SpanEvents::default();
        events.events = run.events;
        events.dropped_count = run.events_dropped;
        let mut attributes = run.attributes;
        attributes.extend(extra);
        SpanData {
            span_context: context(run.trace_id, run.span_id),
            parent_span_id: SpanId::INVALID,
            parent_span_is_remote: false,
            span_kind: SpanKind::Internal,
            name: Cow::Borrowed(RUN_SPAN),
            start_time: run.start,
            end_time: now.max(run.start),
            attributes,
            dropped_attributes_count: 0,
            events,
            links: SpanLinks::default(),
            status,
            instrumentation_scope: self.scope.clone(),
        }
    }

    /// The pending spans, now children of `parent`.
    fn adopt(&mut self, parent: SpanId) -> Vec<SpanData> {
        self.pending_dropped = 0;
        std::mem::take(&mut self.pending)
            .into_iter()
            .map(|span| self.with_parent(span, parent))
            .collect()
    }

    fn with_parent(&self, mut span: SpanData, parent: SpanId) -> SpanData {
        span.parent_span_id = parent;
        span
    }

    /// Keeps a finished child until its phase ends.
    fn hold(&mut self, span: SpanData) -> Vec<SpanData> {
        if self.pending.len() < MAX_PENDING {
            self.pending.push(span);
        } else {
            self.pending_dropped = self.pending_dropped.saturating_add(1);
        }
        Vec::new()
    }

    fn take_gate(&mut self, gate: &str) -> Option<(String, SystemTime)> {
        let index = self.gates.iter().position(|(name, _, _)| name == gate)?;
        let (_, command, start) = self.gates.remove(index);
        Some((command, start))
    }

    fn gate_span(
        &mut self,
        gate: &str,
        command: &str,
        result: &str,
        detail: &str,
        when: (SystemTime, SystemTime),
    ) -> SpanData {
        let mut attributes = vec![
            self.text("meta_agent.gate.name", gate),
            KeyValue::new("meta_agent.gate.result", result.to_owned()),
            self.text("meta_agent.gate.detail", detail),
        ];
        if !command.is_empty() {
            attributes.push(self.text("meta_agent.gate.command", command));
        }
        let status = if result == "fail" {
            Status::error(self.redactor.redact(detail).into_owned())
        } else {
            Status::Unset
        };
        let name = format!("gate {gate}");
        self.span(SpanParts {
            name: &name,
            kind: SpanKind::Internal,
            when,
            attributes,
            status,
        })
    }

    fn tool_span(
        &mut self,
        tool: &str,
        input: &str,
        success: bool,
        when: (SystemTime, SystemTime),
    ) -> SpanData {
        let mut attributes = vec![
            KeyValue::new(gen_ai::OPERATION_NAME, "execute_tool"),
            self.text(gen_ai::TOOL_NAME, tool),
            KeyValue::new(gen_ai::TOOL_TYPE, "function"),
            self.text("meta_agent.tool.input", input),
        ];
        let status = if success {
            Status::Unset
        } else {
            attributes.push(KeyValue::new(gen_ai::ERROR_TYPE, "tool_error"));
            Status::error("the tool call failed")
        };
        let name = format!("execute_tool {tool}");
        self.span(SpanParts {
            name: &name,
            kind: SpanKind::Internal,
            when,
            attributes,
            status,
        })
    }

    fn llm_span(&mut self, call: &ModelCall<'_>, when: (SystemTime, SystemTime)) -> SpanData {
        let attributes = vec![
            KeyValue::new(gen_ai::OPERATION_NAME, "chat"),
            self.text(gen_ai::PROVIDER_NAME, call.provider),
            self.text(gen_ai::SYSTEM, call.provider),
            self.text(gen_ai::REQUEST_MODEL, call.model),
            KeyValue::new(gen_ai::USAGE_INPUT_TOKENS, int(call.input_tokens)),
            KeyValue::new(gen_ai::USAGE_OUTPUT_TOKENS, int(call.output_tokens)),
            KeyValue::new("meta_agent.llm.cost_usd", call.cost_usd),
        ];
        let name = format!("chat {}", call.model);
        self.span(SpanParts {
            name: &name,
            kind: SpanKind::Client,
            when,
            attributes,
            status: Status::Unset,
        })
    }

    /// A finished span in the current run, its parent to be set.
    fn span(&mut self, parts: SpanParts<'_>) -> SpanData {
        let trace_id = self.run(parts.when.0).trace_id;
        let name = self.redactor.redact(parts.name).into_owned();
        SpanData {
            span_context: context(trace_id, self.ids.new_span_id()),
            parent_span_id: SpanId::INVALID,
            parent_span_is_remote: false,
            span_kind: parts.kind,
            name: Cow::Owned(name),
            start_time: parts.when.0,
            end_time: parts.when.1.max(parts.when.0),
            attributes: parts.attributes,
            dropped_attributes_count: 0,
            events: SpanEvents::default(),
            links: SpanLinks::default(),
            status: parts.status,
            instrumentation_scope: self.scope.clone(),
        }
    }

    /// Records `event` as an event of the run span, its fields as attributes.
    fn annotate(&mut self, event: &Event, now: SystemTime) {
        let (name, attributes) = event_attributes(event, self.redactor.as_ref());
        let run = self.run(now);
        if run.events.len() < MAX_RUN_EVENTS {
            run.events.push(SpanEvent::new(name, now, attributes, 0));
        } else {
            run.events_dropped = run.events_dropped.saturating_add(1);
        }
    }

    fn text(&self, key: &'static str, value: &str) -> KeyValue {
        KeyValue::new(key, self.redactor.redact(value).into_owned())
    }
}

struct Phase<'a> {
    name: &'a str,
    iteration: u32,
    outcome: &'a str,
    start: SystemTime,
}

struct ModelCall<'a> {
    provider: &'a str,
    model: &'a str,
    input_tokens: u64,
    output_tokens: u64,
    cost_usd: f64,
}

struct SpanParts<'a> {
    name: &'a str,
    kind: SpanKind,
    when: (SystemTime, SystemTime),
    attributes: Vec<KeyValue>,
    status: Status,
}

fn context(trace_id: TraceId, span_id: SpanId) -> SpanContext {
    SpanContext::new(
        trace_id,
        span_id,
        TraceFlags::SAMPLED,
        false,
        TraceState::default(),
    )
}

/// `now` minus `ms` (`now` if that is before the epoch).
fn before(now: SystemTime, ms: u64) -> SystemTime {
    now.checked_sub(Duration::from_millis(ms)).unwrap_or(now)
}

/// When a call that took `duration_ms` ran: from its recorded start, or ending `now` when the
/// start is unknown (0).
fn window(started_unix_ms: u64, duration_ms: u64, now: SystemTime) -> (SystemTime, SystemTime) {
    if started_unix_ms == 0 {
        return (before(now, duration_ms), now);
    }
    let start = UNIX_EPOCH + Duration::from_millis(started_unix_ms);
    (start, start + Duration::from_millis(duration_ms))
}

fn int(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn run_status(outcome: RunOutcome) -> Status {
    match outcome {
        RunOutcome::Committed | RunOutcome::NothingToDo => Status::Ok,
        RunOutcome::Failed => Status::error("the run failed"),
        RunOutcome::Escalated | RunOutcome::Interrupted => Status::Unset,
    }
}

/// The event's tag and its other fields as attributes (strings redacted, lists joined by `; `).
fn event_attributes(event: &Event, redactor: &dyn Redact) -> (String, Vec<KeyValue>) {
    let serde_json::Value::Object(fields) = serde_json::to_value(event).unwrap_or_default() else {
        return ("event".to_owned(), Vec::new());
    };
    let mut name = "event".to_owned();
    let mut attributes = Vec::new();
    for (key, value) in fields {
        if key == "event" {
            name = value.as_str().unwrap_or("event").to_owned();
            continue;
        }
        if let Some(value) = attribute_value(&value, redactor) {
            attributes.push(KeyValue::new(key, value));
        }
    }
    (name, attributes)
}

fn attribute_value(value: &serde_json::Value, redactor: &dyn Redact) -> Option<Value> {
    use serde_json::Value as Json;
    let text = |text: &str| Value::from(redactor.redact(text).into_owned());
    match value {
        Json::Null => None,
        Json::Bool(flag) => Some(Value::Bool(*flag)),
        Json::Number(number) => number
            .as_i64()
            .map(Value::I64)
            .or_else(|| number.as_f64().map(Value::F64)),
        Json::String(string) => Some(text(string)),
        Json::Array(items) => {
            let joined: Vec<String> = items
                .iter()
                .map(|item| {
                    item.as_str()
                        .map_or_else(|| item.to_string(), str::to_owned)
                })
                .collect();
            Some(text(&joined.join("; ")))
        }
        Json::Object(_) => Some(text(&value.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NoRedaction;

    const T0: u64 = 1_795_314_540_000;

    fn at(ms: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(T0 + ms)
    }

    fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
        span.attributes
            .iter()
            .find(|kv| kv.key.as_str() == key)
            .map(|kv| &kv.value)
    }

    fn named<'a>(spans: &'a [SpanData], name: &str) -> &'a SpanData {
        spans
            .iter()
            .find(|span| span.name == name)
            .unwrap_or_else(|| panic!("no span {name}"))
    }

    fn llm_call(model: &str, started: u64) -> Event {
        Event::LlmCall {
            provider: "openai".into(),
            model: model.into(),
            input_tokens: 1200,
            output_tokens: 80,
            cost_usd: 0.01,
            started_unix_ms: T0 + started,
            duration_ms: 900,
        }
    }

    fn run_of(events: &[(u64, Event)], redactor: Arc<dyn Redact>) -> Vec<SpanData> {
        let mut assembler = TraceAssembler::new(redactor);
        events
            .iter()
            .flat_map(|(ms, event)| assembler.on_event(event, at(*ms)))
            .collect()
    }

    fn two_phases() -> Vec<(u64, Event)> {
        vec![
            (
                0,
                Event::RunStarted {
                    session: "s-1".into(),
                    task: "fix mean".into(),
                    max_iterations: 3,
                },
            ),
            (1_000, llm_call("gpt-4.1", 100)),
            (
                1_000,
                Event::ToolCalled {
                    tool: "edit_file".into(),
                    input: "{\"path\":\"calc.py\"}".into(),
                    success: false,
                    started_unix_ms: T0 + 950,
                    duration_ms: 20,
                },
            ),
            (
                1_100,
                Event::PhaseFinished {
                    phase: meta_agent_protocol::records::StepPhase::Build,
                    iteration: 1,
                    duration_ms: 1_100,
                    outcome: "changed".into(),
                    gates: Vec::new(),
                },
            ),
            (
                1_200,
                Event::GateStarted {
                    gate: "tests".into(),
                    command: "pytest".into(),
                },
            ),
            (
                1_250,
                Event::GateSkipped {
                    gate: "coverage".into(),
                    reason: "no cargo-llvm-cov".into(),
                },
            ),
            (
                4_200,
                Event::GateFinished {
                    gate: "tests".into(),
                    status: meta_agent_protocol::records::GateStatus::Failed,
                    duration_ms: 2_990,
                    detail: "1 failed".into(),
                    counts: Default::default(),
                },
            ),
            (
                4_300,
                Event::PhaseFinished {
                    phase: meta_agent_protocol::records::StepPhase::Test,
                    iteration: 1,
                    duration_ms: 3_150,
                    outcome: "failed".into(),
                    gates: Vec::new(),
                },
            ),
            (
                4_400,
                Event::Committed {
                    branch: "meta-agent/fix".into(),
                    commit: "abc".into(),
                    iterations: 1,
                },
            ),
            (
                4_500,
                Event::RunFinished {
                    outcome: RunOutcome::Committed,
                    iterations: 1,
                    llm_calls: 1,
                    duration_ms: 4_500,
                },
            ),
        ]
    }

    #[test]
    fn spans_nest_run_phase_children_with_their_times() {
        let spans = run_of(&two_phases(), Arc::new(NoRedaction));
        let names: Vec<&str> = spans.iter().map(|span| span.name.as_ref()).collect();
        assert_eq!(
            names,
            [
                "chat gpt-4.1",
                "execute_tool edit_file",
                "phase build",
                "gate coverage",
                "gate tests",
                "phase test",
                RUN_SPAN
            ]
        );
        let run = named(&spans, RUN_SPAN);
        let trace = run.span_context.trace_id();
        assert!(spans.iter().all(|s| s.span_context.trace_id() == trace));
        assert_eq!(run.parent_span_id, SpanId::INVALID);
        assert_eq!((run.start_time, run.end_time), (at(0), at(4_500)));
        assert_eq!(run.status, Status::Ok);
        let build = named(&spans, "phase build");
        let test = named(&spans, "phase test");
        assert_eq!(build.parent_span_id, run.span_context.span_id());
        assert_eq!(test.parent_span_id, run.span_context.span_id());
        assert_eq!((build.start_time, build.end_time), (at(0), at(1_100)));
        let chat = named(&spans, "chat gpt-4.1");
        assert_eq!(chat.parent_span_id, build.span_context.span_id());
        assert_eq!((chat.start_time, chat.end_time), (at(100), at(1_000)));
        assert_eq!(chat.span_kind, SpanKind::Client);
        let tool = named(&spans, "execute_tool edit_file");
        assert_eq!(tool.parent_span_id, build.span_context.span_id());
        assert!(matches!(tool.status, Status::Error { .. }));
        let gate = named(&spans, "gate tests");
        assert_eq!(gate.parent_span_id, test.span_context.span_id());
        assert_eq!((gate.start_time, gate.end_time), (at(1_200), at(4_200)));
        assert_eq!(
            attribute(gate, "meta_agent.gate.command"),
            Some(&Value::from("pytest"))
        );
        assert_eq!(
            attribute(named(&spans, "gate coverage"), "meta_agent.gate.result"),
            Some(&Value::from("skip"))
        );
        let committed: Vec<&str> = run.events.iter().map(|e| e.name.as_ref()).collect();
        assert_eq!(committed, ["committed"]);
    }

    #[test]
    fn model_calls_carry_the_gen_ai_attributes() {
        let spans = run_of(&two_phases(), Arc::new(NoRedaction));
        let chat = named(&spans, "chat gpt-4.1");
        let expected: [(&str, Value); 6] = [
            (gen_ai::OPERATION_NAME, "chat".into()),
            (gen_ai::PROVIDER_NAME, "openai".into()),
            (gen_ai::SYSTEM, "openai".into()),
            (gen_ai::REQUEST_MODEL, "gpt-4.1".into()),
            (gen_ai::USAGE_INPUT_TOKENS, 1200_i64.into()),
            (gen_ai::USAGE_OUTPUT_TOKENS, 80_i64.into()),
        ];
        for (key, value) in expected {
            assert_eq!(attribute(chat, key), Some(&value), "{key}");
        }
        let tool = named(&spans, "execute_tool edit_file");
        assert_eq!(
            attribute(tool, gen_ai::OPERATION_NAME),
            Some(&Value::from("execute_tool"))
        );
        assert_eq!(
            attribute(tool, gen_ai::TOOL_NAME),
            Some(&Value::from("edit_file"))
        );
    }

    #[test]
    fn children_without_a_finished_phase_hang_from_the_run() {
        let events = [
            (0, llm_call("m", 0)),
            (
                50,
                Event::RunFinished {
                    outcome: RunOutcome::Failed,
                    iterations: 0,
                    llm_calls: 1,
                    duration_ms: 50,
                },
            ),
        ];
        let spans = run_of(&events, Arc::new(NoRedaction));
        assert_eq!(spans.len(), 2);
        assert_eq!(spans[0].parent_span_id, spans[1].span_context.span_id());
        assert!(matches!(spans[1].status, Status::Error { .. }));
    }

    #[test]
    fn every_name_and_value_is_redacted() {
        const CANARY: &str = "ghp_CANARY0123456789";
        let hide: Arc<dyn Redact> = Arc::new(|text: &str| text.replace(CANARY, "[REDACTED]"));
        let mut events = two_phases();
        events.insert(
            1,
            (
                10,
                Event::GateStarted {
                    gate: format!("probe-{CANARY}"),
                    command: format!("curl -H 'token {CANARY}'"),
                },
            ),
        );
        events.insert(
            2,
            (
                20,
                Event::GateFinished {
                    gate: format!("probe-{CANARY}"),
                    status: meta_agent_protocol::records::GateStatus::Failed,
                    duration_ms: 10,
                    detail: CANARY.into(),
                    counts: Default::default(),
                },
            ),
        );
        events.insert(3, (30, llm_call(CANARY, 25)));
        events.insert(
            4,
            (
                40,
                Event::Decided {
                    iteration: 1,
                    decision: meta_agent_protocol::ending::DecisionKind::Continue,
                    reason: format!("saw {CANARY}"),
                },
            ),
        );
        let spans = run_of(&events, hide);
        let text = format!("{spans:?}");
        assert!(!text.contains(CANARY), "{text}");
        assert!(text.contains("[REDACTED]"), "{text}");
    }
}
