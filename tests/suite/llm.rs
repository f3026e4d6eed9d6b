//! The LLM provider layer against a loopback mock server speaking the OpenAI Chat Completions and
//! Anthropic Messages wire formats, whole and streamed: what is sent (model, tools, messages, the
//! key only in its header), what comes back, every fault class (retried or not), budgets, the
//! `none` provider, and a recorded transcript replayed.
//!
//! The wire bodies below are written by hand in the shapes the providers document (OpenAI's
//! Chat Completions and streaming chunk objects, Anthropic's Messages and streaming events): no
//! real service is reachable from here to record them.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use meta_agent::config::LlmSettings;
use meta_agent::config::raw::LlmProvider;
use meta_agent::llm::{
    AnyProvider, BudgetCaps, Budgeted, ChatRequest, LlmConfig, LlmEnv, LlmError, Message, Provider,
    Recorder, Replay, RetryPolicy, Sleeper, StopReason, ToolResult, ToolSpec, Usage, connect,
};
use serde_json::{Value, json};

use crate::common::mock_llm::{MockLlm, Reply, sse, unreachable_base_url};

const KEY: &str = "sk-CANARY-0123456789abcdef";

/// Records the delays asked for and returns at once.
#[derive(Debug, Default)]
struct RecordingSleeper(Mutex<Vec<Duration>>);

impl Sleeper for RecordingSleeper {
    fn sleep(&self, delay: Duration) -> futures::future::BoxFuture<'static, ()> {
        self.0.lock().unwrap().push(delay);
        Box::pin(async {})
    }
}

struct Setup {
    provider: AnyProvider,
    sleeper: Arc<RecordingSleeper>,
}

fn settings(provider: LlmProvider, model: &str, base_url: &str) -> LlmSettings {
    LlmSettings {
        provider,
        model: Some(model.to_string()),
        base_url: Some(base_url.to_string()),
        ..LlmSettings::default()
    }
}

fn env_with_keys() -> LlmEnv {
    LlmEnv::from_lookup(&settings(LlmProvider::None, "", ""), |name| match name {
        "OPENAI_API_KEY" | "ANTHROPIC_API_KEY" => Some(KEY.to_string()),
        _ => None,
    })
}

fn setup(provider: LlmProvider, model: &str, base_url: &str, max_attempts: u32) -> Setup {
    let mut config =
        LlmConfig::from_settings(&settings(provider, model, base_url), &env_with_keys());
    config.max_attempts = max_attempts;
    config.connect_timeout = Duration::from_secs(2);
    config.timeout = Duration::from_secs(10);
    let sleeper = Arc::new(RecordingSleeper::default());
    let retry = RetryPolicy {
        max_attempts,
        sleeper: sleeper.clone(),
        jitter: false,
        deadline: Default::default(),
    };
    let provider = connect(&config, retry).unwrap();
    Setup { provider, sleeper }
}

fn openai(base_url: &str) -> Setup {
    setup(LlmProvider::Openai, "gpt-4o-mini", base_url, 4)
}

fn anthropic(base_url: &str) -> Setup {
    setup(LlmProvider::Anthropic, "claude-sonnet-4-5", base_url, 4)
}

fn read_file_tool() -> ToolSpec {
    ToolSpec {
        name: "read_file".into(),
        description: "Read a file of the repository".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    }
}

fn request(model: &str, stream: bool) -> ChatRequest {
    ChatRequest {
        model: model.into(),
        messages: vec![
            Message::system("You fix bugs."),
            Message::user("Fix the failing test."),
        ],
        tools: vec![read_file_tool()],
        max_tokens: 512,
        temperature: Some(0.0),
        stream,
    }
}

fn openai_tool_answer() -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": "Reading it.",
            "tool_calls": [{"id": "call_1", "type": "function",
                "function": {"name": "read_file", "arguments": "{\"path\":\"src/calc.py\"}"}}]}}],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100}
    })
}

fn openai_text_answer(text: &str) -> Value {
    json!({
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
    })
}

fn openai_chunk(delta: Value, finish: Option<&str>) -> String {
    json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}).to_string()
}

/// The first half of an OpenAI stream: text and the start of a tool call.
fn openai_stream_head() -> Vec<(Option<&'static str>, String)> {
    vec![
        (
            None,
            openai_chunk(json!({"role": "assistant", "content": "Let me "}), None),
        ),
        (None, openai_chunk(json!({"content": "look."}), None)),
        (
            None,
            openai_chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_9", "type": "function",
            "function": {"name": "read_file", "arguments": "{\"pa"}}]}),
                None,
            ),
        ),
    ]
}

fn openai_stream_full() -> String {
    let mut events = openai_stream_head();
    events.push((None, openai_chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "th\": \"src/calc.py\"}"}}]}), None)));
    events.push((None, openai_chunk(json!({}), Some("tool_calls"))));
    events.push((None, json!({"id": "c", "choices": [], "usage": {"prompt_tokens": 40, "completion_tokens": 9, "total_tokens": 49}}).to_string()));
    events.push((None, "[DONE]".to_string()));
    sse(&events)
}

fn anthropic_tool_answer() -> Value {
    json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [
            {"type": "text", "text": "Reading it."},
            {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "src/calc.py"}}
        ],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 1000, "output_tokens": 100}
    })
}

fn anthropic_stream_head() -> Vec<(Option<&'static str>, String)> {
    let event = |name: &'static str, data: Value| (Some(name), data.to_string());
    vec![
        event(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_2", "type": "message", "role": "assistant",
            "content": [], "model": "claude-sonnet-4-5", "stop_reason": null, "usage": {"input_tokens": 50, "output_tokens": 1}}}),
        ),
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        event("ping", json!({"type": "ping"})),
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Let me look."}}),
        ),
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 1,
            "content_block": {"type": "tool_use", "id": "toolu_9", "name": "read_file", "input": {}}}),
        ),
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"path\": \"src/"}}),
        ),
    ]
}

fn anthropic_stream_full() -> String {
    let event = |name: &'static str, data: Value| (Some(name), data.to_string());
    let mut events = anthropic_stream_head();
    events.extend([
        event("content_block_delta", json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "calc.py\"}"}})),
        event("content_block_stop", json!({"type": "content_block_stop", "index": 1})),
        event("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 30}})),
        event("message_stop", json!({"type": "message_stop"})),
    ]);
    sse(&events)
}

fn assert_no_key_in_bodies(mock: &MockLlm) {
    for request in mock.requests() {
        assert!(!request.body.contains(KEY), "the key leaked into a body");
        assert!(
            !request.body.contains("CANARY"),
            "the key leaked into a body"
        );
    }
}

#[tokio::test]
async fn openai_whole_answer_with_a_tool_call() {
    let mock = MockLlm::start(vec![Reply::ok(openai_tool_answer())]).await;
    let completion = openai(&mock.base_url)
        .provider
        .chat(&request("gpt-4o-mini", false))
        .await
        .unwrap();

    let sent = &mock.requests()[0];
    assert_eq!(
        (sent.method.as_str(), sent.path.as_str()),
        ("POST", "/chat/completions")
    );
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let body = sent.json();
    assert_eq!(body["model"], "gpt-4o-mini");
    assert_eq!(
        body["messages"][0],
        json!({"role": "system", "content": "You fix bugs."})
    );
    assert_eq!(
        body["messages"][1],
        json!({"role": "user", "content": "Fix the failing test."})
    );
    assert_eq!(body["tools"][0]["type"], "function");
    assert_eq!(body["tools"][0]["function"]["name"], "read_file");
    assert_eq!(
        body["tools"][0]["function"]["parameters"]["required"],
        json!(["path"])
    );
    assert_eq!(body.get("stream"), None);
    assert_no_key_in_bodies(&mock);

    assert_eq!(completion.text, "Reading it.");
    assert_eq!(completion.tool_calls[0].id, "call_1");
    assert_eq!(
        completion.tool_calls[0].arguments,
        json!({"path": "src/calc.py"})
    );
    assert_eq!(completion.stop_reason, StopReason::ToolUse);
    assert_eq!(
        completion.usage,
        Usage {
            input_tokens: 1000,
            output_tokens: 100
        }
    );
    assert!(
        (completion.cost_usd - 0.00021).abs() < 1e-12,
        "{}",
        completion.cost_usd
    );
}

#[tokio::test]
async fn openai_sends_history_with_tool_calls_and_results() {
    let mock = MockLlm::start(vec![Reply::ok(openai_text_answer("done"))]).await;
    let mut chat = request("gpt-4o-mini", false);
    let call = meta_agent::llm::ToolCall {
        id: "call_1".into(),
        name: "read_file".into(),
        arguments: json!({"path": "a.py"}),
    };
    chat.messages.push(Message::Assistant {
        text: String::new(),
        tool_calls: vec![call],
    });
    chat.messages.push(Message::Tool(ToolResult {
        call_id: "call_1".into(),
        content: "x = 1".into(),
        is_error: false,
    }));
    openai(&mock.base_url).provider.chat(&chat).await.unwrap();

    let body = mock.requests()[0].json();
    assert_eq!(
        body["messages"][2]["tool_calls"][0]["function"]["arguments"],
        "{\"path\":\"a.py\"}"
    );
    assert_eq!(
        body["messages"][3],
        json!({"role": "tool", "tool_call_id": "call_1", "content": "x = 1"})
    );
}

#[tokio::test]
async fn openai_streamed_answer_assembles_the_tool_call() {
    let mock = MockLlm::start(vec![Reply::Sse(openai_stream_full())]).await;
    let completion = openai(&mock.base_url)
        .provider
        .chat(&request("gpt-4o-mini", true))
        .await
        .unwrap();

    let body = mock.requests()[0].json();
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(completion.text, "Let me look.");
    assert_eq!(completion.tool_calls.len(), 1);
    assert_eq!(completion.tool_calls[0].id, "call_9");
    assert_eq!(
        completion.tool_calls[0].arguments,
        json!({"path": "src/calc.py"})
    );
    assert_eq!(
        completion.usage,
        Usage {
            input_tokens: 40,
            output_tokens: 9
        }
    );
    assert_eq!(completion.stop_reason, StopReason::ToolUse);
}

#[tokio::test]
async fn anthropic_whole_answer_with_a_tool_use_block() {
    let mock = MockLlm::start(vec![Reply::ok(anthropic_tool_answer())]).await;
    let completion = anthropic(&mock.base_url)
        .provider
        .chat(&request("claude-sonnet-4-5", false))
        .await
        .unwrap();

    let sent = &mock.requests()[0];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some(KEY));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.header("authorization"), None);
    let body = sent.json();
    assert_eq!(body["model"], "claude-sonnet-4-5");
    assert_eq!(body["max_tokens"], 512);
    assert_eq!(body["system"], "You fix bugs.");
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "Fix the failing test."}]}])
    );
    assert_eq!(body["tools"][0]["name"], "read_file");
    assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
    assert_no_key_in_bodies(&mock);

    assert_eq!(completion.text, "Reading it.");
    assert_eq!(completion.tool_calls[0].id, "toolu_1");
    assert_eq!(
        completion.tool_calls[0].arguments,
        json!({"path": "src/calc.py"})
    );
    assert_eq!(completion.stop_reason, StopReason::ToolUse);
    assert!(
        (completion.cost_usd - 0.0045).abs() < 1e-12,
        "{}",
        completion.cost_usd
    );
}

#[tokio::test]
async fn anthropic_sends_tool_results_as_user_blocks() {
    let answer = json!({"content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}});
    let mock = MockLlm::start(vec![Reply::ok(answer)]).await;
    let mut chat = request("claude-sonnet-4-5", false);
    let call = meta_agent::llm::ToolCall {
        id: "toolu_1".into(),
        name: "read_file".into(),
        arguments: json!({"path": "a.py"}),
    };
    chat.messages.push(Message::Assistant {
        text: "Reading.".into(),
        tool_calls: vec![call],
    });
    chat.messages.push(Message::Tool(ToolResult {
        call_id: "toolu_1".into(),
        content: "no such file".into(),
        is_error: true,
    }));
    let completion = anthropic(&mock.base_url)
        .provider
        .chat(&chat)
        .await
        .unwrap();
    assert_eq!(completion.stop_reason, StopReason::EndTurn);

    let body = mock.requests()[0].json();
    assert_eq!(
        body["messages"][1]["content"][1],
        json!({"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.py"}})
    );
    assert_eq!(
        body["messages"][2],
        json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "no such file", "is_error": true}]})
    );
}

#[tokio::test]
async fn anthropic_streamed_answer_assembles_the_tool_use() {
    let mock = MockLlm::start(vec![Reply::Sse(anthropic_stream_full())]).await;
    let completion = anthropic(&mock.base_url)
        .provider
        .chat(&request("claude-sonnet-4-5", true))
        .await
        .unwrap();

    assert_eq!(mock.requests()[0].json()["stream"], true);
    assert_eq!(completion.text, "Let me look.");
    assert_eq!(completion.tool_calls[0].id, "toolu_9");
    assert_eq!(
        completion.tool_calls[0].arguments,
        json!({"path": "src/calc.py"})
    );
    assert_eq!(
        completion.usage,
        Usage {
            input_tokens: 50,
            output_tokens: 30
        }
    );
    assert_eq!(completion.stop_reason, StopReason::ToolUse);
}

#[tokio::test]
async fn rate_limit_429_waits_for_retry_after_then_succeeds() {
    let limited = Reply::status(
        429,
        json!({"error": {"message": "Rate limit reached", "type": "requests"}}),
    )
    .with_header("retry-after", "7");
    let mock = MockLlm::start(vec![limited, Reply::ok(openai_text_answer("hi"))]).await;
    let setup = openai(&mock.base_url);
    let completion = setup
        .provider
        .chat(&request("gpt-4o-mini", false))
        .await
        .unwrap();
    assert_eq!(completion.text, "hi");
    assert_eq!(mock.requests().len(), 2);
    assert_eq!(*setup.sleeper.0.lock().unwrap(), [Duration::from_secs(7)]);
}

#[tokio::test]
async fn overloaded_529_is_retried_with_backoff() {
    let overloaded = Reply::status(
        529,
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    );
    let mock = MockLlm::start(vec![overloaded, Reply::ok(anthropic_tool_answer())]).await;
    let setup = anthropic(&mock.base_url);
    let completion = setup
        .provider
        .chat(&request("claude-sonnet-4-5", false))
        .await
        .unwrap();
    assert_eq!(completion.tool_calls.len(), 1);
    assert_eq!(mock.requests().len(), 2);
    assert_eq!(
        *setup.sleeper.0.lock().unwrap(),
        [Duration::from_millis(500)]
    );
}

#[tokio::test]
async fn server_errors_exhaust_the_attempts() {
    let failing = Reply::status(
        500,
        json!({"error": {"message": "The server had an error"}}),
    );
    let mock = MockLlm::start(vec![failing.clone(), failing.clone(), failing]).await;
    let setup = setup(LlmProvider::Openai, "gpt-4o-mini", &mock.base_url, 3);
    let error = setup
        .provider
        .chat(&request("gpt-4o-mini", false))
        .await
        .unwrap_err();
    let LlmError::RetriesExhausted { attempts, last } = &error else {
        panic!("{error:?}")
    };
    assert_eq!(*attempts, 3);
    assert!(
        matches!(**last, LlmError::Unavailable { status: 500, .. }),
        "{last:?}"
    );
    assert!(!error.is_transient());
    assert_eq!(mock.requests().len(), 3);
    let delays = setup.sleeper.0.lock().unwrap().clone();
    assert_eq!(delays, [Duration::from_millis(500), Duration::from_secs(1)]);
}

#[tokio::test]
async fn a_rejected_key_is_not_retried_and_says_so() {
    let denied = Reply::status(
        401,
        json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}}),
    );
    let mock = MockLlm::start(vec![denied, Reply::ok(openai_text_answer("never"))]).await;
    let error = openai(&mock.base_url)
        .provider
        .chat(&request("gpt-4o-mini", false))
        .await
        .unwrap_err();
    assert!(
        matches!(error, LlmError::AuthRejected { status: 401, .. }),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.starts_with("the API key was rejected (401)"),
        "{message}"
    );
    assert!(!message.contains(KEY));
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn bad_requests_are_not_retried() {
    for status in [400, 403, 404] {
        let refused = Reply::status(
            status,
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": "nope"}}),
        );
        let mock = MockLlm::start(vec![refused, Reply::ok(anthropic_tool_answer())]).await;
        let error = anthropic(&mock.base_url)
            .provider
            .chat(&request("claude-sonnet-4-5", false))
            .await
            .unwrap_err();
        assert!(!error.is_transient(), "{status}: {error:?}");
        assert_eq!(mock.requests().len(), 1, "{status}");
    }
}

#[tokio::test]
async fn a_spend_limit_429_is_not_retried() {
    let quota = Reply::status(429, json!({"error": {"message": "You exceeded your current quota, please check your plan and billing details.",
        "type": "insufficient_quota", "code": "insufficient_quota"}})).with_header("retry-after", "1");
    let mock = MockLlm::start(vec![quota, Reply::ok(openai_text_answer("never"))]).await;
    let setup = openai(&mock.base_url);
    let error = setup
        .provider
        .chat(&request("gpt-4o-mini", false))
        .await
        .unwrap_err();
    assert!(
        matches!(error, LlmError::SpendLimit { status: 429, .. }),
        "{error:?}"
    );
    assert_eq!(mock.requests().len(), 1);
    assert!(setup.sleeper.0.lock().unwrap().is_empty());
}

#[tokio::test]
async fn openai_stream_cut_mid_tool_call_is_discarded_and_retried() {
    let cut = Reply::SseCut(sse(&openai_stream_head()));
    let answer = openai_text_answer("Nothing to do.");
    let whole = sse(&[
        (
            None,
            openai_chunk(json!({"content": "Nothing to do."}), Some("stop")),
        ),
        (
            None,
            json!({"choices": [], "usage": answer["usage"]}).to_string(),
        ),
        (None, "[DONE]".into()),
    ]);
    let mock = MockLlm::start(vec![cut, Reply::Sse(whole)]).await;
    let setup = openai(&mock.base_url);
    let completion = setup
        .provider
        .chat(&request("gpt-4o-mini", true))
        .await
        .unwrap();
    assert_eq!(completion.text, "Nothing to do.");
    assert!(
        completion.tool_calls.is_empty(),
        "a partial tool call survived: {completion:?}"
    );
    assert_eq!(mock.requests().len(), 2);
    assert_eq!(setup.sleeper.0.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn anthropic_stream_cut_or_without_message_stop_is_retried() {
    let cut = Reply::SseCut(sse(&anthropic_stream_head()));
    let unfinished = Reply::Sse(sse(&anthropic_stream_head()));
    let mock = MockLlm::start(vec![cut, unfinished, Reply::Sse(anthropic_stream_full())]).await;
    let completion = anthropic(&mock.base_url)
        .provider
        .chat(&request("claude-sonnet-4-5", true))
        .await
        .unwrap();
    assert_eq!(completion.tool_calls.len(), 1);
    assert_eq!(completion.text, "Let me look.");
    assert_eq!(mock.requests().len(), 3);
}

#[tokio::test]
async fn a_stream_cut_every_time_ends_in_an_error_with_nothing_returned() {
    let cut = Reply::SseCut(sse(&openai_stream_head()));
    let mock = MockLlm::start(vec![cut.clone(), cut]).await;
    let setup = setup(LlmProvider::Openai, "gpt-4o-mini", &mock.base_url, 2);
    let error = setup
        .provider
        .chat(&request("gpt-4o-mini", true))
        .await
        .unwrap_err();
    let LlmError::RetriesExhausted { last, .. } = &error else {
        panic!("{error:?}")
    };
    assert!(matches!(**last, LlmError::StreamCut { .. }), "{last:?}");
}

#[tokio::test]
async fn a_dropped_connection_is_retried() {
    let mock = MockLlm::start(vec![Reply::Drop, Reply::ok(openai_text_answer("back"))]).await;
    let completion = openai(&mock.base_url)
        .provider
        .chat(&request("gpt-4o-mini", false))
        .await
        .unwrap();
    assert_eq!(completion.text, "back");
    assert_eq!(mock.requests().len(), 2);
}

#[tokio::test]
async fn an_unreachable_service_gets_a_friendly_error() {
    let base_url = unreachable_base_url().await;
    let setup = setup(LlmProvider::Openai, "gpt-4o-mini", &base_url, 2);
    let error = setup
        .provider
        .chat(&request("gpt-4o-mini", false))
        .await
        .unwrap_err();
    let LlmError::RetriesExhausted { last, .. } = &error else {
        panic!("{error:?}")
    };
    assert!(matches!(**last, LlmError::Unreachable { .. }), "{last:?}");
    let message = error.to_string();
    assert!(
        message.contains(&format!("cannot reach {base_url}")),
        "{message}"
    );
}

#[tokio::test]
async fn budgets_refuse_calls_before_they_are_made() {
    let answers = (0..5)
        .map(|_| Reply::ok(openai_text_answer("ok")))
        .collect();
    let mock = MockLlm::start(answers).await;
    let caps = BudgetCaps {
        max_calls: Some(2),
        ..BudgetCaps::default()
    };
    let budgeted = Budgeted::new(openai(&mock.base_url).provider, caps);
    for _ in 0..2 {
        budgeted.chat(&request("gpt-4o-mini", false)).await.unwrap();
    }
    let error = budgeted
        .chat(&request("gpt-4o-mini", false))
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "LLM budget exceeded: 2 of 2 LLM calls made"
    );
    assert_eq!(mock.requests().len(), 2);
    assert_eq!(budgeted.spent().tokens, 24);

    let caps = BudgetCaps {
        max_tokens: Some(20),
        ..BudgetCaps::default()
    };
    let budgeted = Budgeted::new(openai(&mock.base_url).provider, caps);
    budgeted.chat(&request("gpt-4o-mini", false)).await.unwrap();
    budgeted.chat(&request("gpt-4o-mini", false)).await.unwrap();
    let error = budgeted
        .chat(&request("gpt-4o-mini", false))
        .await
        .unwrap_err();
    assert!(
        matches!(error, LlmError::BudgetExceeded { .. }),
        "{error:?}"
    );
    assert_eq!(mock.requests().len(), 4);
}

#[tokio::test]
async fn the_cost_cap_counts_priced_usage() {
    let mock = MockLlm::start(vec![
        Reply::ok(anthropic_tool_answer()),
        Reply::ok(anthropic_tool_answer()),
    ])
    .await;
    let caps = BudgetCaps {
        max_cost_usd: Some(0.004),
        ..BudgetCaps::default()
    };
    let budgeted = Budgeted::new(anthropic(&mock.base_url).provider, caps);
    budgeted
        .chat(&request("claude-sonnet-4-5", false))
        .await
        .unwrap();
    let error = budgeted
        .chat(&request("claude-sonnet-4-5", false))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("spent"), "{error}");
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn the_none_provider_explains_itself() {
    let setup = setup(LlmProvider::None, "", "", 4);
    assert_eq!(setup.provider.name(), "none");
    let error = setup
        .provider
        .chat(&request("any", false))
        .await
        .unwrap_err();
    assert!(matches!(error, LlmError::NotConfigured));
    assert!(!error.is_transient());
    assert_eq!(
        error.to_string(),
        "no LLM provider is configured; set llm.provider and the API key"
    );
}

#[test]
fn openai_itself_without_a_key_names_the_variable_but_a_local_server_needs_none() {
    let mut openai = settings(LlmProvider::Openai, "gpt-4o", "");
    openai.base_url = None;
    let config = LlmConfig::from_settings(&openai, &LlmEnv::default());
    let error = connect(&config, RetryPolicy::default()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "no API key for the openai provider; set OPENAI_API_KEY"
    );
    let local = settings(LlmProvider::Openai, "llama3", "http://127.0.0.1:11434/v1");
    let config = LlmConfig::from_settings(&local, &LlmEnv::default());
    assert_eq!(
        connect(&config, RetryPolicy::default()).unwrap().name(),
        "openai"
    );
}

#[tokio::test]
async fn a_local_server_gets_no_authorization_header() {
    let mock = MockLlm::start(vec![Reply::ok(openai_text_answer("hi"))]).await;
    let local = settings(LlmProvider::Openai, "llama3", &mock.base_url);
    let config = LlmConfig::from_settings(&local, &LlmEnv::default());
    let provider = connect(&config, RetryPolicy::default()).unwrap();
    assert_eq!(
        provider
            .chat(&request("llama3", false))
            .await
            .unwrap()
            .cost_usd,
        0.0
    );
    assert_eq!(mock.requests()[0].header("authorization"), None);
}

#[tokio::test]
async fn retry_after_ms_is_honoured() {
    let limited = Reply::status(429, json!({"error": {"message": "slow down"}}))
        .with_header("retry-after-ms", "1500")
        .with_header("retry-after", "2");
    let mock = MockLlm::start(vec![limited, Reply::ok(openai_text_answer("hi"))]).await;
    let setup = openai(&mock.base_url);
    setup
        .provider
        .chat(&request("gpt-4o-mini", false))
        .await
        .unwrap();
    assert_eq!(
        *setup.sleeper.0.lock().unwrap(),
        [Duration::from_millis(1500)]
    );
}

#[test]
fn anthropic_without_a_key_names_the_variable() {
    let config = LlmConfig::from_settings(
        &settings(LlmProvider::Anthropic, "m", "http://x"),
        &LlmEnv::default(),
    );
    let error = connect(&config, RetryPolicy::default()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "no API key for the anthropic provider; set ANTHROPIC_API_KEY"
    );
}

#[test]
fn config_takes_base_url_and_key_from_the_passed_environment() {
    let mut openai = settings(LlmProvider::Openai, "gpt-4o", "");
    openai.base_url = None;
    openai.api_key_env = Some("MY_KEY".into());
    let env = LlmEnv::from_lookup(&openai, |name| match name {
        "OPENAI_BASE_URL" => Some("http://localhost:11434/v1".into()),
        "OPENAI_API_KEY" => Some("standard".into()),
        "MY_KEY" => Some("configured".into()),
        _ => None,
    });
    let config = LlmConfig::from_settings(&openai, &env);
    assert_eq!(config.base_url, "http://localhost:11434/v1");
    assert_eq!(
        config.api_key.as_ref().map(|key| key.expose()),
        Some("configured")
    );
    assert_eq!(
        config.fast_model, config.model,
        "the fast model is the primary model unless configured"
    );
    assert!(
        !format!("{config:?}").contains("configured"),
        "the key shows in Debug"
    );
}

#[tokio::test]
async fn a_recorded_transcript_replays_the_exchange() {
    let mock = MockLlm::start(vec![
        Reply::Sse(openai_stream_full()),
        Reply::ok(openai_text_answer("Fixed.")),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("transcript.jsonl");
    let recorder = Recorder::create(openai(&mock.base_url).provider, &path, None).unwrap();
    let first = recorder.chat(&request("gpt-4o-mini", true)).await.unwrap();
    let second = recorder.chat(&request("gpt-4o-mini", false)).await.unwrap();
    drop(recorder);

    let transcript = std::fs::read_to_string(&path).unwrap();
    assert_eq!(transcript.lines().count(), 2);
    assert!(!transcript.contains(KEY));

    let mut replay_settings = settings(LlmProvider::Replay, "gpt-4o-mini", path.to_str().unwrap());
    replay_settings.api_key_env = None;
    let config = LlmConfig::from_settings(&replay_settings, &LlmEnv::default());
    let replay = connect(&config, RetryPolicy::default()).unwrap();
    assert_eq!(replay.name(), "replay");
    assert_eq!(
        replay.chat(&request("gpt-4o-mini", true)).await.unwrap(),
        first
    );
    assert_eq!(
        replay.chat(&request("gpt-4o-mini", false)).await.unwrap(),
        second
    );
    let error = replay
        .chat(&request("gpt-4o-mini", false))
        .await
        .unwrap_err();
    assert!(
        matches!(error, LlmError::ReplayExhausted { recorded: 2 }),
        "{error:?}"
    );

    let direct = Replay::open(&path).unwrap();
    assert_eq!(
        direct.chat(&request("x", false)).await.unwrap().tool_calls[0].name,
        "read_file"
    );
}

#[tokio::test]
async fn an_error_event_mid_stream_is_discarded_and_retried() {
    let mut events = anthropic_stream_head();
    let overloaded =
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
    events.push((Some("error"), overloaded.to_string()));
    let mock = MockLlm::start(vec![
        Reply::Sse(sse(&events)),
        Reply::Sse(anthropic_stream_full()),
    ])
    .await;
    let completion = anthropic(&mock.base_url)
        .provider
        .chat(&request("claude-sonnet-4-5", true))
        .await
        .unwrap();
    assert_eq!(completion.tool_calls.len(), 1);
    assert_eq!(mock.requests().len(), 2);
}

#[tokio::test]
async fn tool_arguments_that_are_not_json_reach_the_caller_as_text() {
    let mut answer = openai_tool_answer();
    answer["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] =
        json!("{\"path\": src/calc.py");
    let mock = MockLlm::start(vec![Reply::ok(answer)]).await;
    let completion = openai(&mock.base_url)
        .provider
        .chat(&request("gpt-4o-mini", false))
        .await
        .unwrap();
    assert_eq!(
        completion.tool_calls[0].arguments,
        json!("{\"path\": src/calc.py")
    );
}

#[tokio::test]
async fn a_five_megabyte_answer_is_read_whole() {
    let text = "x".repeat(5 << 20);
    let mock = MockLlm::start(vec![Reply::ok(openai_text_answer(&text))]).await;
    let completion = openai(&mock.base_url)
        .provider
        .chat(&request("gpt-4o-mini", false))
        .await
        .unwrap();
    assert_eq!(completion.text.len(), 5 << 20);
}

// ---- Azure deployments, replay and record as configuration ----

#[tokio::test]
async fn an_azure_deployment_gets_its_path_api_version_and_api_key_header() {
    let mock = MockLlm::start(vec![
        Reply::ok(openai_text_answer("one")),
        Reply::ok(openai_text_answer("two")),
    ])
    .await;
    let in_url = format!("{}/openai/deployments/gpt4o-prod", mock.base_url);
    let mut pinned = settings(LlmProvider::Openai, "gpt-4o", &mock.base_url);
    pinned.api_version = Some("2025-01-01-preview".into());
    for settings in [settings(LlmProvider::Openai, "gpt-4o", &in_url), pinned] {
        let config = LlmConfig::from_settings(&settings, &env_with_keys());
        assert!(config.azure.is_some());
        let provider = connect(&config, RetryPolicy::default()).unwrap();
        provider.chat(&request("gpt-4o", false)).await.unwrap();
    }
    let requests = mock.requests();
    assert_eq!(
        requests[0].path,
        "/openai/deployments/gpt4o-prod/chat/completions?api-version=2024-10-21"
    );
    assert_eq!(
        requests[1].path,
        "/openai/deployments/gpt-4o/chat/completions?api-version=2025-01-01-preview"
    );
    for request in &requests {
        assert_eq!(request.header("api-key"), Some(KEY));
        assert_eq!(request.header("authorization"), None);
        assert!(!request.body.contains(KEY));
    }
}

#[tokio::test]
async fn llm_record_writes_the_transcript_that_llm_replay_plays_back() {
    let mock = MockLlm::start(vec![Reply::ok(openai_tool_answer())]).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.jsonl");
    let mut recording = settings(LlmProvider::Openai, "gpt-4o-mini", &mock.base_url);
    recording.record = Some(path.to_string_lossy().into_owned());
    let config = LlmConfig::from_settings(&recording, &env_with_keys());
    let provider = connect(&config, RetryPolicy::default()).unwrap();
    assert_eq!(provider.name(), "openai");
    let live = provider.chat(&request("gpt-4o-mini", false)).await.unwrap();
    drop(provider);
    let transcript = std::fs::read_to_string(&path).unwrap();
    assert_eq!(transcript.lines().count(), 1);
    assert!(!transcript.contains(KEY));

    let raw = meta_agent::config::parse_raw(
        &format!("version: 1\nllm:\n  replay: {}\n", path.display()),
        std::path::Path::new(".meta-agent.yml"),
    )
    .unwrap();
    let replay_settings = raw.llm.unwrap();
    assert_eq!(replay_settings.provider, None, "no provider written");
    let mut replaying = settings(LlmProvider::Replay, "", "");
    replaying.base_url = None;
    replaying.replay = replay_settings.replay;
    let config = LlmConfig::from_settings(&replaying, &LlmEnv::default());
    let replay = connect(&config, RetryPolicy::default()).unwrap();
    assert_eq!(replay.name(), "replay");
    assert_eq!(replay.chat(&request("other", true)).await.unwrap(), live);
    assert_eq!(mock.requests().len(), 1, "replay never calls the service");
}

#[test]
fn the_schema_documents_the_new_llm_keys() {
    let schema = meta_agent::config::json_schema().to_string();
    for key in [
        "context_tokens",
        "replay",
        "record",
        "api_version",
        "reflect",
        "stream",
        "compat",
        "reasoning_effort",
    ] {
        assert!(schema.contains(&format!("\"{key}\"")), "{key}");
    }
    assert!(schema.contains("Replay this recorded transcript"));
    for value in ["\"vllm\"", "\"ollama\"", "\"xhigh\""] {
        assert!(schema.contains(value), "{value}");
    }
}

/// `llm.compat: vllm` (or `ollama`) sends the older `max_tokens` to a compatible server, which
/// the mock accepts as such a server does; the default sends `max_completion_tokens`.
#[tokio::test]
async fn a_compatible_server_profile_sends_max_tokens_and_openai_gets_max_completion_tokens() {
    let compatible = MockLlm::start_compatible(vec![Reply::ok(openai_text_answer("hi"))]).await;
    let mut vllm = settings(LlmProvider::Openai, "qwen2.5-coder", &compatible.base_url);
    vllm.compat = meta_agent::config::raw::LlmCompat::Vllm;
    let config = LlmConfig::from_settings(&vllm, &env_with_keys());
    let provider = connect(&config, RetryPolicy::default()).unwrap();
    provider
        .chat(&request("qwen2.5-coder", false))
        .await
        .unwrap();
    let body = compatible.requests()[0].json();
    assert_eq!(body["max_tokens"], 512);
    assert_eq!(body.get("max_completion_tokens"), None);

    let openai_mock = MockLlm::start(vec![Reply::ok(openai_text_answer("hi"))]).await;
    openai(&openai_mock.base_url)
        .provider
        .chat(&request("gpt-4o-mini", false))
        .await
        .unwrap();
    let body = openai_mock.requests()[0].json();
    assert_eq!(body["max_completion_tokens"], 512);
    assert_eq!(body.get("max_tokens"), None);
}

/// Every request body leaves through the run's redactor, and so does the recorded transcript:
/// prompts quote task text, tool results and the model's own words.
#[tokio::test]
async fn request_bodies_and_transcripts_pass_the_redactor() {
    const HELD: &str = "HeldSecretValue-4f7c2a9e1b";
    let mock = MockLlm::start(vec![
        Reply::ok(openai_text_answer("first")),
        Reply::ok(openai_text_answer("second")),
    ])
    .await;
    let redactor = Arc::new(meta_agent::redact::Redactor::from_env([(
        "DEPLOY_TOKEN".to_owned(),
        HELD.to_owned(),
    )]));
    let dir = tempfile::tempdir().unwrap();
    let transcript = dir.path().join("run.jsonl");
    let mut config = LlmConfig::from_settings(
        &settings(LlmProvider::Openai, "gpt-4o-mini", &mock.base_url),
        &env_with_keys(),
    )
    .with_redactor(redactor);
    config.record = Some(transcript.clone());
    let provider = connect(&config, RetryPolicy::default()).unwrap();
    let mut asked = request("gpt-4o-mini", false);
    asked.messages.push(Message::user(format!(
        "the log said token={HELD} and ghp_{}",
        "a".repeat(36)
    )));
    provider.chat(&asked).await.unwrap();
    let body = &mock.requests()[0].body;
    assert!(!body.contains(HELD), "{body}");
    assert!(!body.contains(&format!("ghp_{}", "a".repeat(36))), "{body}");
    let sent: Value = serde_json::from_str(body).expect("still JSON");
    assert_eq!(sent["model"], "gpt-4o-mini");
    drop(provider);
    let recorded = std::fs::read_to_string(&transcript).unwrap();
    assert!(!recorded.contains(HELD), "{recorded}");
}
