//! Telemetry sinks fed a realistic run (two iterations: a failing then passing test gate, a lint
//! gate that passes, a coverage gate skipped, a hindsight resolution, a commit): the exact
//! Prometheus text, the audit log's entries and actors, the trace's order, and the redaction hook
//! applied to every file.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use meta_agent::hindsight::SignatureKind;
use meta_agent::protocol::ending::DecisionKind;
use meta_agent::protocol::event::{Event, EventSink, Fanout, LoopPhase, Recorder};
use meta_agent::protocol::records::{GateStatus, RunOutcome, StepPhase};
use meta_agent::protocol::refusal::{Refusal, TamperKind, Why};
use meta_agent::telemetry::{AuditLog, Clock, JsonLines, MetricsSink, NoRedaction, TraceFile};
use serde_json::Value;

const CANARY: &str = "ghp_CANARY0123456789";

fn fixed_clock() -> Arc<dyn Clock> {
    Arc::new(|| UNIX_EPOCH + Duration::from_millis(1_795_314_548_007))
}

fn state(from: LoopPhase, to: LoopPhase, iteration: u32, reason: &str) -> Event {
    Event::StateChanged {
        from,
        to,
        iteration,
        reason: reason.into(),
    }
}

fn phase(phase: StepPhase, iteration: u32, duration_ms: u64, outcome: &str) -> Event {
    Event::PhaseFinished {
        phase,
        iteration,
        duration_ms,
        outcome: outcome.into(),
        gates: Vec::new(),
    }
}

fn command(command: &str, result: &str, duration_ms: u64) -> Event {
    Event::CommandRun {
        command: command.into(),
        cwd: "/work/repo".into(),
        result: result.into(),
        duration_ms,
    }
}

fn gate(gate: &str, passed: bool, duration_ms: u64, detail: &str) -> Vec<Event> {
    let program = if gate == "tests" {
        "cargo test"
    } else {
        "cargo clippy"
    };
    vec![
        Event::GateStarted {
            gate: gate.into(),
            command: program.into(),
        },
        command(
            program,
            if passed { "exit 0" } else { "exit 101" },
            duration_ms,
        ),
        Event::GateFinished {
            gate: gate.into(),
            status: if passed {
                GateStatus::Passed
            } else {
                GateStatus::Failed
            },
            duration_ms,
            detail: detail.into(),
            counts: Default::default(),
        },
    ]
}

fn coverage_skipped() -> Event {
    Event::GateSkipped {
        gate: "coverage".into(),
        reason: "program `cargo-llvm-cov` not found".into(),
    }
}

fn first_iteration() -> Vec<Event> {
    let mut events = vec![
        Event::RunStarted {
            session: "s-20261122-0229".into(),
            task: "parse empty input".into(),
            max_iterations: 3,
        },
        state(LoopPhase::Idle, LoopPhase::Planning, 1, "task received"),
        state(LoopPhase::Planning, LoopPhase::Acting, 1, "plan ready"),
        Event::LlmCall {
            provider: "openai".into(),
            model: "gpt-4.1".into(),
            input_tokens: 5200,
            output_tokens: 640,
            cost_usd: 0.0155,
            started_unix_ms: 1_795_314_540_000,
            duration_ms: 4100,
        },
        Event::ToolCalled {
            tool: "edit_file".into(),
            input: r#"{"path":"src/parse.rs"}"#.into(),
            success: true,
            started_unix_ms: 1_795_314_544_200,
            duration_ms: 2,
        },
        Event::FileChanged {
            path: "src/parse.rs".into(),
            diff: "@@ -1 +1 @@\n-fn parse() {}\n+fn parse(input: &str) {}\n".into(),
        },
        phase(StepPhase::Build, 1, 5300, "changed"),
        state(LoopPhase::Acting, LoopPhase::Observing, 1, "change made"),
    ];
    events.extend(gate("tests", false, 4200, "11/12 passed"));
    events.extend(gate("lint", true, 2100, ""));
    events.push(coverage_skipped());
    events.push(phase(StepPhase::Test, 1, 6400, "failed"));
    events
}

fn improvement() -> Vec<Event> {
    vec![
        state(
            LoopPhase::Observing,
            LoopPhase::Deciding,
            1,
            "1 gate failed",
        ),
        Event::SignatureFound {
            signature: "a1b2c3d4".into(),
            kind: SignatureKind::TestFailure,
            template: "assertion failed: left == right".into(),
        },
        Event::ResolutionApplied {
            signature: "a1b2c3d4".into(),
            resolution: "empty-input-guard".into(),
            description: "return early on empty input".into(),
        },
        command("sed -i s/a/b/ src/parse.rs", "exit 0", 12),
        Event::FileChanged {
            path: "src/parse.rs".into(),
            diff: "@@ -2 +2 @@\n-    todo\n+    if input.is_empty() { return; }\n".into(),
        },
        phase(StepPhase::Improve, 1, 40, "resolution_applied"),
        Event::Decided {
            iteration: 1,
            decision: DecisionKind::Continue,
            reason: "a known resolution was applied".into(),
        },
        state(LoopPhase::Deciding, LoopPhase::Observing, 2, "re-run gates"),
    ]
}

fn second_iteration_and_commit() -> Vec<Event> {
    let mut events = gate("tests", true, 3900, "12/12 passed");
    events.extend(gate("lint", true, 2000, ""));
    events.push(coverage_skipped());
    events.extend([
        phase(StepPhase::Test, 2, 5950, "passed"),
        Event::ResolutionOutcome {
            signature: "a1b2c3d4".into(),
            resolution: "empty-input-guard".into(),
            cured: true,
        },
        Event::Decided {
            iteration: 2,
            decision: DecisionKind::Complete,
            reason: "all gates green".into(),
        },
        Event::GitOperation {
            operation: "commit".into(),
            target: "meta-agent/parse-empty-input".into(),
            result: "ok".into(),
        },
        Event::Committed {
            branch: "meta-agent/parse-empty-input".into(),
            commit: "0123456789abcdef0123456789abcdef01234567".into(),
            iterations: 2,
        },
        state(LoopPhase::Observing, LoopPhase::Complete, 2, "committed"),
        Event::RunFinished {
            outcome: RunOutcome::Committed,
            iterations: 2,
            llm_calls: 1,
            duration_ms: 17_900,
        },
    ]);
    events
}

fn realistic_run() -> Vec<Event> {
    let mut events = first_iteration();
    events.extend(improvement());
    events.extend(second_iteration_and_commit());
    events
}

/// Events carrying a secret where each file would show it: a gate name (a metrics label), a
/// command line (audit and trace) and a diff.
fn leaky_events() -> Vec<Event> {
    vec![
        Event::GateSkipped {
            gate: format!("probe-{CANARY}"),
            reason: "missing".into(),
        },
        command(
            &format!("curl -H 'Authorization: token {CANARY}'"),
            "exit 0",
            80,
        ),
        Event::FileChanged {
            path: ".env".into(),
            diff: format!("+TOKEN={CANARY}\n"),
        },
    ]
}

fn emit_all(sink: &dyn EventSink, events: &[Event]) {
    for event in events {
        sink.emit(event);
    }
}

fn json_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The lines of Prometheus text in sorted order: the exporter's order of families and series is
/// not stable from one rendering to the next (their meaning is).
fn sorted_lines(text: &str) -> String {
    let mut lines: Vec<&str> = text.lines().filter(|line| !line.is_empty()).collect();
    lines.sort_unstable();
    lines.join("\n")
}

#[test]
fn prometheus_text_of_a_two_iteration_run() {
    let sink = MetricsSink::default();
    emit_all(&sink, &realistic_run());
    insta::assert_snapshot!(
        "prometheus_two_iterations",
        sorted_lines(&sink.render_prometheus())
    );
}

#[test]
fn prometheus_series_carry_the_dashboard_names_and_values() {
    let sink = MetricsSink::default();
    emit_all(&sink, &realistic_run());
    let text = sink.render_prometheus();
    let expected = [
        "meta_agent_loop_total{outcome=\"committed\"} 1",
        "meta_agent_loop_iterations_bucket{le=\"2\"} 1",
        "meta_agent_loop_iterations_bucket{le=\"1\"} 0",
        "meta_agent_loop_iterations_sum 2",
        "meta_agent_loop_duration_ms_sum 17900",
        "meta_agent_phase_total{phase=\"test\",outcome=\"failed\"} 1",
        "meta_agent_phase_total{phase=\"test\",outcome=\"passed\"} 1",
        "meta_agent_phase_duration_ms_sum{phase=\"test\"} 12350",
        "meta_agent_phase_duration_ms_count{phase=\"test\"} 2",
        "meta_agent_gate_evaluations{gate=\"tests\",result=\"fail\"} 1",
        "meta_agent_gate_evaluations{gate=\"tests\",result=\"pass\"} 1",
        "meta_agent_gate_evaluations{gate=\"lint\",result=\"pass\"} 2",
        "meta_agent_gate_evaluations{gate=\"coverage\",result=\"skip\"} 2",
        "meta_agent_gate_latency_ms_bucket{gate=\"tests\",le=\"5000\"} 2",
        "meta_agent_gate_latency_ms_sum{gate=\"tests\"} 8100",
    ];
    for line in expected {
        assert!(
            text.lines().any(|l| l == line),
            "missing `{line}` in\n{text}"
        );
    }
    assert!(
        !text.contains("gate=\"coverage\",le="),
        "a skip has no latency"
    );
}

#[test]
fn prometheus_file_is_the_rendered_text_and_rendering_twice_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("metrics.prom");
    let sink = MetricsSink::default();
    emit_all(&sink, &realistic_run());
    sink.write_prometheus(&path).unwrap();
    let written = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        sorted_lines(&written),
        sorted_lines(&sink.render_prometheus())
    );
    let families = written.matches("# TYPE ").count();
    assert_eq!(families, 7, "{written}");
}

#[test]
fn audit_log_has_exactly_the_auditable_events_with_their_actors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let audit = AuditLog::open(&path, fixed_clock(), Arc::new(NoRedaction)).unwrap();
    emit_all(&audit, &realistic_run());
    let lines = json_lines(&path);
    let summary: Vec<(&str, &str, &str, &str)> = lines
        .iter()
        .map(|l| {
            let field = |name: &str| l[name].as_str().unwrap();
            (
                field("actor"),
                field("action"),
                field("target"),
                field("result"),
            )
        })
        .collect();
    let branch = "meta-agent/parse-empty-input";
    let expected = vec![
        ("meta-agent", "llm.call", "gpt-4.1", "completed"),
        ("agent", "tool.call", "edit_file", "success"),
        ("agent", "file.change", "src/parse.rs", "changed"),
        ("meta-agent", "command.run", "cargo test", "exit 101"),
        ("meta-agent", "command.run", "cargo clippy", "exit 0"),
        ("meta-agent", "resolution.apply", "a1b2c3d4", "applied"),
        (
            "meta-agent",
            "command.run",
            "sed -i s/a/b/ src/parse.rs",
            "exit 0",
        ),
        ("agent", "file.change", "src/parse.rs", "changed"),
        ("meta-agent", "command.run", "cargo test", "exit 0"),
        ("meta-agent", "command.run", "cargo clippy", "exit 0"),
        ("meta-agent", "git.commit", branch, "ok"),
        ("meta-agent", "commit", branch, "committed"),
    ];
    assert_eq!(summary, expected);
    assert!(
        lines
            .iter()
            .all(|l| l["time"] == "2026-11-22T02:29:08.007Z")
    );
    assert_eq!(
        lines[2]["detail"]["diff"],
        "@@ -1 +1 @@\n-fn parse() {}\n+fn parse(input: &str) {}\n"
    );
    assert_eq!(lines[0]["detail"]["input_tokens"], 5200);
}

#[test]
fn audit_log_appends_to_an_existing_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    std::fs::write(&path, "{\"earlier\":true}\n").unwrap();
    let audit = AuditLog::open(&path, fixed_clock(), Arc::new(NoRedaction)).unwrap();
    audit.emit(&Event::TamperRefused {
        findings: vec![Refusal::of(
            "tests/parse.rs",
            Why::Tampered {
                tamper: TamperKind::TestRemoved,
                seen: "test `empty` deleted".into(),
            },
        )],
    });
    let lines = json_lines(&path);
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["earlier"], true);
    assert_eq!(lines[1]["actor"], "gate");
    assert_eq!(lines[1]["result"], "refused");
    let finding = &lines[1]["detail"]["findings"][0];
    assert_eq!(finding["path"], "tests/parse.rs");
    assert_eq!(finding["why"]["kind"], "tampered");
    assert_eq!(finding["why"]["seen"], "test `empty` deleted");
}

#[test]
fn trace_has_every_event_in_order_with_increasing_seq() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    let events = realistic_run();
    let trace = TraceFile::open(&path, fixed_clock(), Arc::new(NoRedaction)).unwrap();
    emit_all(&trace, &events);
    let lines = json_lines(&path);
    assert_eq!(lines.len(), events.len());
    for (index, (line, event)) in lines.iter().zip(&events).enumerate() {
        let mut expected = serde_json::to_value(event).unwrap();
        expected["seq"] = (index as u64 + 1).into();
        expected["time"] = "2026-11-22T02:29:08.007Z".into();
        assert_eq!(line, &expected);
    }
}

#[test]
fn a_resumed_trace_keeps_counting() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    let events = realistic_run();
    let (before, after) = events.split_at(10);
    emit_all(
        &TraceFile::open(&path, fixed_clock(), Arc::new(NoRedaction)).unwrap(),
        before,
    );
    emit_all(
        &TraceFile::open(&path, fixed_clock(), Arc::new(NoRedaction)).unwrap(),
        after,
    );
    let seqs: Vec<u64> = json_lines(&path)
        .iter()
        .map(|l| l["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, (1..=events.len() as u64).collect::<Vec<_>>());
}

#[test]
fn json_lines_stream_is_the_events_own_form() {
    let sink = JsonLines::new(Vec::new(), "<stdout>", Arc::new(NoRedaction));
    let events = realistic_run();
    emit_all(&sink, &events);
    let text = String::from_utf8(sink.into_inner()).unwrap();
    let parsed: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let expected: Vec<Value> = events
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect();
    assert_eq!(parsed, expected);
}

#[test]
fn redaction_removes_the_canary_from_every_file() {
    let dir = tempfile::tempdir().unwrap();
    let redact = Arc::new(|line: &str| line.replace(CANARY, "[REDACTED]"));
    let audit_path = dir.path().join("audit.jsonl");
    let trace_path = dir.path().join("trace.jsonl");
    let prom_path = dir.path().join("metrics.prom");
    let audit = AuditLog::open(&audit_path, fixed_clock(), redact.clone()).unwrap();
    let trace = TraceFile::open(&trace_path, fixed_clock(), redact.clone()).unwrap();
    let metrics = MetricsSink::new(redact.clone());
    let stdout = JsonLines::new(Vec::new(), "<stdout>", redact);
    let fanout = Fanout {
        sinks: vec![&audit, &trace, &metrics, &stdout],
    };
    let mut events = realistic_run();
    events.extend(leaky_events());
    emit_all(&fanout, &events);
    metrics.write_prometheus(&prom_path).unwrap();
    let stdout = String::from_utf8(stdout.into_inner()).unwrap();
    for (name, text) in [
        ("audit", std::fs::read_to_string(&audit_path).unwrap()),
        ("trace", std::fs::read_to_string(&trace_path).unwrap()),
        ("metrics", std::fs::read_to_string(&prom_path).unwrap()),
        ("stdout", stdout),
    ] {
        assert!(!text.contains(CANARY), "{name} leaks the canary:\n{text}");
        assert!(
            text.contains("[REDACTED]"),
            "{name} was not redacted:\n{text}"
        );
    }
}

#[test]
fn an_unwritable_sink_never_stops_the_run() {
    let full = Path::new("/dev/full");
    let audit = AuditLog::open(full, fixed_clock(), Arc::new(NoRedaction)).unwrap();
    let trace = TraceFile::open(full, fixed_clock(), Arc::new(NoRedaction)).unwrap();
    let device = std::fs::OpenOptions::new().write(true).open(full).unwrap();
    let stdout = JsonLines::new(device, "/dev/full", Arc::new(NoRedaction));
    let after = Recorder::default();
    let events = realistic_run();
    emit_all(
        &Fanout {
            sinks: vec![&audit, &trace, &stdout, &after],
        },
        &events,
    );
    assert_eq!(after.events(), events);
}

#[test]
fn opening_fails_naming_the_file() {
    let blocker = tempfile::NamedTempFile::new().unwrap();
    let path = blocker.path().join("audit.jsonl");
    let err = AuditLog::open(&path, fixed_clock(), Arc::new(NoRedaction))
        .err()
        .unwrap();
    assert!(
        err.to_string()
            .starts_with(&format!("cannot open {}", path.display())),
        "{err}"
    );
}

#[test]
fn clock_is_injected() {
    let later: Arc<dyn Clock> = Arc::new(|| SystemTime::UNIX_EPOCH + Duration::from_secs(86_400));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    TraceFile::open(&path, later, Arc::new(NoRedaction))
        .unwrap()
        .emit(&coverage_skipped());
    assert_eq!(json_lines(&path)[0]["time"], "1970-01-02T00:00:00.000Z");
}
