//! The telemetry exporters through the real binary, against loopback receivers that record what
//! they get: the Prometheus push gateway (plain HTTP, HTTPS with a private CA, refusals and dead
//! gateways as warnings) and the OTLP/HTTP trace export (the span tree and the GenAI attributes
//! of a run fixed by the agent against the mock LLM, the collector's headers kept secret, a hung
//! collector that cannot hang the run).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::{Value, json};

use crate::common::collector::{Answer, Collector, test_ca};
use crate::common::mock_llm::{MockLlm, streamed_tool_call as call};
use crate::common::{meta_agent, scratch_repo, session_file};

/// A secret header value for the collector: must reach it, and nothing else.
const OTLP_KEY: &str = "otlp-canary-5d1e9b7a3c";

/// A scratch repository (with a bare `origin`) whose one gate passes once `status.txt` says
/// `fixed`, with `extra` appended to its configuration.
fn tiny_repo(status: &str, extra: &str) -> (tempfile::TempDir, PathBuf) {
    let source = tempfile::tempdir().unwrap();
    let config = format!(
        "version: 1\npreset: none\ngates:\n  - name: check\n    run: \"grep -q fixed status.txt\"\n{extra}"
    );
    std::fs::write(source.path().join(".meta-agent.yml"), config).unwrap();
    std::fs::write(source.path().join("status.txt"), format!("{status}\n")).unwrap();
    scratch_repo(source.path())
}

/// What a run of the binary left: exit code, outcome object, stderr.
struct Ran {
    code: i32,
    outcome: Value,
    stderr: String,
    stdout: String,
}

/// Runs `meta-agent run --text ... --json` in `work` with `env`, off the test's runtime.
async fn run(work: &Path, env: Vec<(String, String)>) -> Ran {
    let work = work.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let out = meta_agent()
            .envs(env)
            .arg("--repo")
            .arg(&work)
            .args(["run", "--text", "Make the check pass", "--json"])
            .timeout(Duration::from_secs(120))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let outcome = stdout
            .lines()
            .last()
            .and_then(|line| serde_json::from_str(line).ok())
            .unwrap_or(Value::Null);
        assert!(
            outcome.get("outcome").is_some(),
            "no outcome (killed?); stdout: {stdout}\nstderr: {stderr}"
        );
        Ran {
            code: out.status.code().unwrap_or(-1),
            outcome,
            stderr,
            stdout,
        }
    })
    .await
    .unwrap()
}

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn gateway_config(url: &str) -> String {
    format!("telemetry: {{push_gateway: \"{url}\"}}\n")
}

fn sorted_lines(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    lines.sort_unstable();
    lines
}

// ---- the push gateway ----

#[tokio::test(flavor = "multi_thread")]
async fn the_metrics_are_put_to_the_session_path_at_the_end_of_a_run() {
    let gateway = Collector::start(Answer::Status(200)).await;
    let (_dir, work) = tiny_repo("fixed", &gateway_config(&gateway.url));
    let ran = run(&work, Vec::new()).await;
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let session = ran.outcome["session"].as_str().unwrap();
    let requests = gateway.requests();
    assert_eq!(requests.len(), 1, "one push, at the end");
    let push = &requests[0];
    assert_eq!(push.method, "PUT");
    assert_eq!(
        push.path,
        format!("/metrics/job/meta-agent/session/{session}")
    );
    assert_eq!(
        push.header("content-type"),
        Some("text/plain; version=0.0.4")
    );
    let outcome = ran.outcome["outcome"].as_str().unwrap();
    for line in [
        format!("meta_agent_loop_total{{outcome=\"{outcome}\"}} 1"),
        "meta_agent_gate_evaluations{gate=\"check\",result=\"pass\"} 1".to_owned(),
        "# TYPE meta_agent_gate_latency_ms histogram".to_owned(),
        "meta_agent_loop_iterations_count 1".to_owned(),
    ] {
        assert!(
            push.body.lines().any(|l| l == line),
            "missing `{line}`:\n{}",
            push.body
        );
    }
    let file = session_file(&work, &ran.outcome, "metrics.prom");
    assert_eq!(sorted_lines(&push.body), sorted_lines(&file));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_https_gateway_is_verified_against_the_trusted_roots() {
    let gateway = Collector::start_tls(Answer::Status(200)).await;
    assert!(gateway.url.starts_with("https://"));
    let (_dir, work) = tiny_repo("fixed", &gateway_config(&gateway.url));
    let ca = test_ca();
    let trusted = run(&work, env(&[("SSL_CERT_FILE", ca.to_str().unwrap())])).await;
    assert_eq!(trusted.code, 0, "{}", trusted.stderr);
    let requests = gateway.requests();
    assert_eq!(requests.len(), 1, "{}", trusted.stderr);
    assert!(
        requests[0]
            .path
            .starts_with("/metrics/job/meta-agent/session/")
    );
    assert!(requests[0].body.contains("meta_agent_loop_total{"));
    let untrusted = run(&work, Vec::new()).await;
    assert_eq!(untrusted.code, 0, "{}", untrusted.stderr);
    assert_eq!(
        gateway.requests().len(),
        1,
        "no push past a certificate we do not trust"
    );
    assert!(
        untrusted
            .stderr
            .contains("cannot push metrics to https://127.0.0.1:"),
        "{}",
        untrusted.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_or_unreachable_push_is_a_warning_not_a_failure() {
    let refusing = Collector::start(Answer::Status(500)).await;
    let (_dir, work) = tiny_repo("fixed", &gateway_config(&refusing.url));
    let ran = run(&work, Vec::new()).await;
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let session = ran.outcome["session"].as_str().unwrap();
    let expected = format!(
        "cannot push metrics to {}/metrics/job/meta-agent/session/{session}: the gateway answered 500",
        refusing.url
    );
    assert!(ran.stderr.contains(&expected), "{}", ran.stderr);
    assert_eq!(refusing.requests().len(), 1);
    drop(refusing);

    let closed = crate::common::mock_llm::unreachable_base_url().await;
    let (_dir, work) = tiny_repo("fixed", &gateway_config(&closed));
    let ran = run(&work, Vec::new()).await;
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(
        ran.stderr
            .contains(&format!("cannot push metrics to {closed}/metrics/job/")),
        "{}",
        ran.stderr
    );
    assert!(
        session_file(&work, &ran.outcome, "metrics.prom").contains("meta_agent_loop_total"),
        "metrics.prom is written whatever the gateway does"
    );
}

// ---- OTLP ----

/// Every span the collector received, decoded, with the resource's attributes of its batch.
fn received_spans(collector: &Collector) -> (Vec<Span>, Vec<KeyValue>) {
    let mut spans = Vec::new();
    let mut resource = Vec::new();
    for request in collector.requests() {
        assert_eq!(request.method, "POST");
        assert_eq!(request.path, "/v1/traces");
        assert_eq!(
            request.header("content-type"),
            Some("application/x-protobuf")
        );
        assert_eq!(request.header("x-otlp-key"), Some(OTLP_KEY));
        let export = ExportTraceServiceRequest::decode(request.bytes.as_slice())
            .expect("an OTLP/protobuf ExportTraceServiceRequest");
        for batch in export.resource_spans {
            resource = batch.resource.map(|r| r.attributes).unwrap_or_default();
            for scope in batch.scope_spans {
                spans.extend(scope.spans);
            }
        }
    }
    (spans, resource)
}

fn attr<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a any_value::Value> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|value| value.value.as_ref())
}

fn text(attributes: &[KeyValue], key: &str) -> String {
    match attr(attributes, key) {
        Some(any_value::Value::StringValue(text)) => text.clone(),
        other => panic!("{key}: {other:?}"),
    }
}

fn int(attributes: &[KeyValue], key: &str) -> i64 {
    match attr(attributes, key) {
        Some(any_value::Value::IntValue(value)) => *value,
        other => panic!("{key}: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_run_trace_reaches_an_otlp_collector_as_a_span_tree_with_gen_ai_attributes() {
    let mock = MockLlm::start(vec![
        call("c1", "finish", json!({"summary": "nothing to build yet"})),
        call(
            "c2",
            "edit_file",
            json!({"path": "status.txt", "old_string": "broken", "new_string": "fixed"}),
        ),
        call("c3", "finish", json!({"summary": "status fixed"})),
    ])
    .await;
    let collector = Collector::start(Answer::Status(200)).await;
    let llm = format!(
        "llm: {{provider: openai, base_url: \"{}\", model: test-model, reflect: false}}\n",
        mock.base_url
    );
    let (_dir, work) = tiny_repo("broken", &llm);
    let headers = format!("x-otlp-key={OTLP_KEY}");
    let ran = run(
        &work,
        env(&[
            ("OPENAI_API_KEY", "sk-otlp-test-0000000"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &collector.url),
            ("OTEL_EXPORTER_OTLP_HEADERS", &headers),
            ("OTEL_SERVICE_NAME", "meta-agent-ci"),
        ]),
    )
    .await;
    assert_eq!(ran.outcome["outcome"], "committed", "{}", ran.stderr);
    let (spans, resource) = received_spans(&collector);
    assert_eq!(text(&resource, "service.name"), "meta-agent-ci");

    let by_id: HashMap<&[u8], &Span> = spans.iter().map(|s| (s.span_id.as_slice(), s)).collect();
    let parent_name = |span: &Span| {
        by_id
            .get(span.parent_span_id.as_slice())
            .map(|p| p.name.as_str())
    };
    let roots: Vec<&Span> = spans
        .iter()
        .filter(|s| s.parent_span_id.is_empty())
        .collect();
    assert_eq!(roots.len(), 1, "one root: {:?}", names(&spans));
    let root = roots[0];
    assert_eq!(root.name, "meta-agent run");
    assert!(
        spans.iter().all(|s| s.trace_id == root.trace_id),
        "one trace"
    );
    assert_eq!(text(&root.attributes, "meta_agent.outcome"), "committed");
    assert_eq!(
        text(&root.attributes, "meta_agent.session"),
        ran.outcome["session"].as_str().unwrap()
    );
    assert!(root.events.iter().any(|e| e.name == "committed"));

    let phases: Vec<&str> = spans
        .iter()
        .filter(|s| s.name.starts_with("phase "))
        .inspect(|s| assert_eq!(parent_name(s), Some("meta-agent run")))
        .map(|s| s.name.as_str())
        .collect();
    for phase in [
        "phase baseline",
        "phase build",
        "phase improve",
        "phase verify",
    ] {
        assert!(phases.contains(&phase), "{phases:?}");
    }
    // After an act the change's gates run once, on its pristine checkout (phase verify), after
    // the failing tests alone in the worktree (phase test) when the measured costs say that pays:
    // a timing, so either shape may come.
    let gates: Vec<(Option<&str>, String)> = spans
        .iter()
        .filter(|s| s.name == "gate check")
        .map(|g| {
            (
                parent_name(g),
                text(&g.attributes, "meta_agent.gate.result"),
            )
        })
        .collect();
    let fail = |phase: &'static str| (Some(phase), "fail".to_owned());
    let pass = |phase: &'static str| (Some(phase), "pass".to_owned());
    let shapes = [
        vec![
            fail("phase baseline"),
            fail("phase test"),
            pass("phase verify"),
        ],
        vec![
            fail("phase baseline"),
            fail("phase verify"),
            pass("phase verify"),
        ],
        vec![
            fail("phase baseline"),
            fail("phase test"),
            pass("phase test"),
            pass("phase verify"),
        ],
        vec![
            fail("phase baseline"),
            fail("phase verify"),
            pass("phase test"),
            pass("phase verify"),
        ],
    ];
    assert!(
        shapes.contains(&gates),
        "the baseline, the failing change, then the fix's gates on its pristine checkout \
         (after its failing tests alone when that pays): {gates:?} in {:?}",
        names(&spans)
    );

    let llm_calls: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name == "chat test-model")
        .collect();
    assert_eq!(
        llm_calls.len() as u64,
        ran.outcome["llm_calls"].as_u64().unwrap(),
        "one span per model call"
    );
    assert_eq!(llm_calls.len(), mock.requests().len());
    for span in &llm_calls {
        assert!(matches!(
            parent_name(span),
            Some("phase build" | "phase improve")
        ));
        assert_eq!(text(&span.attributes, "gen_ai.operation.name"), "chat");
        assert_eq!(text(&span.attributes, "gen_ai.provider.name"), "openai");
        assert_eq!(text(&span.attributes, "gen_ai.system"), "openai");
        assert_eq!(text(&span.attributes, "gen_ai.request.model"), "test-model");
        assert_eq!(int(&span.attributes, "gen_ai.usage.input_tokens"), 100);
        assert_eq!(int(&span.attributes, "gen_ai.usage.output_tokens"), 10);
        assert!(span.start_time_unix_nano >= root.start_time_unix_nano);
        assert!(span.end_time_unix_nano <= root.end_time_unix_nano);
    }
    let edit = spans
        .iter()
        .find(|s| s.name == "execute_tool edit_file")
        .unwrap_or_else(|| panic!("no edit_file span: {:?}", names(&spans)));
    assert_eq!(parent_name(edit), Some("phase improve"));
    assert_eq!(text(&edit.attributes, "gen_ai.tool.name"), "edit_file");
    assert_eq!(
        text(&edit.attributes, "gen_ai.operation.name"),
        "execute_tool"
    );

    assert_otlp_key_stays_secret(&ran, &work, &spans);
}

fn names(spans: &[Span]) -> Vec<&str> {
    spans.iter().map(|s| s.name.as_str()).collect()
}

/// The collector's key reached the collector as a header and nowhere else: not the output, the
/// session files, or the spans themselves.
fn assert_otlp_key_stays_secret(ran: &Ran, work: &Path, spans: &[Span]) {
    assert!(!ran.stderr.contains(OTLP_KEY) && !ran.stdout.contains(OTLP_KEY));
    for file in [
        "trace.jsonl",
        "audit.jsonl",
        "report.md",
        "outcome.json",
        "metrics.prom",
    ] {
        assert!(
            !session_file(work, &ran.outcome, file).contains(OTLP_KEY),
            "{file} holds the OTLP key"
        );
    }
    let encoded: Vec<u8> = spans.iter().flat_map(Message::encode_to_vec).collect();
    assert!(
        !String::from_utf8_lossy(&encoded).contains(OTLP_KEY),
        "a span holds the OTLP key"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_collector_that_never_answers_cannot_hang_the_run() {
    let silent = Collector::start(Answer::Silence).await;
    let (_dir, work) = tiny_repo("fixed", "");
    let ran = run(
        &work,
        env(&[
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                &format!("{}/v1/traces", silent.url),
            ),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "1500"),
        ]),
    )
    .await;
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(!silent.requests().is_empty(), "the export was attempted");
    assert!(
        ran.stderr.contains(&format!(
            "cannot export the trace to {}/v1/traces",
            silent.url
        )),
        "{}",
        ran.stderr
    );
    let closed = crate::common::mock_llm::unreachable_base_url().await;
    let ran = run(
        &work,
        env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &closed),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "1500"),
        ]),
    )
    .await;
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("cannot export the trace to"),
        "{}",
        ran.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unusable_otlp_setting_is_a_warning_and_nothing_is_sent() {
    let collector = Collector::start(Answer::Status(200)).await;
    let (_dir, work) = tiny_repo("fixed", "");
    let ran = run(
        &work,
        env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &collector.url),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ]),
    )
    .await;
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(
        ran.stderr.contains(
            "OpenTelemetry export is off: OTEL_EXPORTER_OTLP_PROTOCOL=grpc: this build exports traces over http/protobuf only"
        ),
        "{}",
        ran.stderr
    );
    assert!(collector.requests().is_empty());
}
