//! A loopback mock LLM server for the provider tests: plays scripted HTTP replies in order
//! (JSON, complete SSE streams, streams cut mid-body, dropped connections) and records every
//! request it receives (method, path, headers, body).
//!
//! Every request is first checked against the providers' references ([`super::llmwire`]): one the
//! real API would refuse gets the 400 the API would give (the scripted reply stays for the next
//! request), and the test fails when the server is dropped, naming each refusal.
//!
//! A hand-rolled HTTP/1.1 server on tokio: one request per connection, `connection: close` on
//! every reply. It writes no wire format itself; the tests write the OpenAI and Anthropic bodies.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use super::llmwire::{self, Wire};
use tokio::net::{TcpListener, TcpStream};

/// One scripted reply.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A whole answer with a status, extra headers and a body.
    Json {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// A complete `text/event-stream` body.
    Sse(String),
    /// Sends this much of a stream, announcing a longer body, then closes the connection.
    SseCut(String),
    /// Closes the connection without answering.
    Drop,
    /// Opens a stream that never ends: an SSE keep-alive comment every 200 ms, no event, until the
    /// client goes away.
    KeepAlive,
    /// `then` when the request's messages show `shown` (the text as the model reads it), else
    /// `otherwise`: a model that can only edit lines it has been shown.
    Oracle {
        shown: String,
        then: Box<Reply>,
        otherwise: Box<Reply>,
    },
}

impl Reply {
    /// A 200 JSON answer.
    pub fn ok(body: Value) -> Self {
        Self::status(200, body)
    }

    /// A JSON answer with this status.
    pub fn status(status: u16, body: Value) -> Self {
        Self::Json {
            status,
            headers: Vec::new(),
            body: body.to_string(),
        }
    }

    /// Adds a header to a JSON answer.
    pub fn with_header(self, name: &str, value: &str) -> Self {
        match self {
            Self::Json {
                status,
                mut headers,
                body,
            } => {
                headers.push((name.to_string(), value.to_string()));
                Self::Json {
                    status,
                    headers,
                    body,
                }
            }
            other => other,
        }
    }
}

/// An SSE body from `(event name, data)` pairs.
pub fn sse(events: &[(Option<&str>, String)]) -> String {
    events
        .iter()
        .map(|(name, data)| match name {
            Some(name) => format!("event: {name}\ndata: {data}\n\n"),
            None => format!("data: {data}\n\n"),
        })
        .collect()
}

pub use super::http::Recorded;

/// The running server.
pub struct MockLlm {
    pub base_url: String,
    state: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

/// What the connections share.
struct Shared {
    requests: Mutex<Vec<Recorded>>,
    script: Mutex<VecDeque<Reply>>,
    /// Requests the reference refused: `path: reason`.
    refused: Mutex<Vec<String>>,
    /// An OpenAI-compatible server rather than OpenAI itself.
    compatible: bool,
}

impl Drop for MockLlm {
    fn drop(&mut self) {
        self.task.abort();
        let refused = self.refused();
        if refused.is_empty() {
            return;
        }
        let report = format!(
            "the mock LLM refused {} request(s) the real API would refuse:\n{}",
            refused.len(),
            refused.join("\n")
        );
        if std::thread::panicking() {
            eprintln!("{report}");
        } else {
            panic!("{report}");
        }
    }
}

impl MockLlm {
    /// Starts a server on 127.0.0.1 that answers with `replies` in order (then 500s), refusing
    /// what OpenAI's or Anthropic's API would refuse.
    pub async fn start(replies: Vec<Reply>) -> Self {
        Self::serve(replies, false).await
    }

    /// The same, as an OpenAI-compatible server (vLLM, Ollama) that still reads the deprecated
    /// `max_tokens`.
    pub async fn start_compatible(replies: Vec<Reply>) -> Self {
        Self::serve(replies, true).await
    }

    async fn serve(replies: Vec<Reply>, compatible: bool) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base_url = format!("http://{}", listener.local_addr().expect("addr"));
        let state = Arc::new(Shared {
            requests: Mutex::new(Vec::new()),
            script: Mutex::new(VecDeque::from(replies)),
            refused: Mutex::new(Vec::new()),
            compatible,
        });
        let shared = state.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, shared.clone()));
            }
        });
        Self {
            base_url,
            state,
            task,
        }
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.state.requests.lock().expect("lock").clone()
    }

    /// The requests refused as the real API would, so far (`path: reason`).
    pub fn refused(&self) -> Vec<String> {
        self.state.refused.lock().expect("lock").clone()
    }

    /// The refusals so far, forgotten (for a test that sends a bad request on purpose).
    pub fn take_refused(&self) -> Vec<String> {
        std::mem::take(&mut *self.state.refused.lock().expect("lock"))
    }
}

/// A base URL on which nothing listens.
pub async fn unreachable_base_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("addr");
    drop(listener);
    format!("http://{address}")
}

async fn serve(mut stream: TcpStream, state: Arc<Shared>) {
    let Some(request) = super::http::read_request(&mut stream).await else {
        return;
    };
    let refusal = conformance(&request, state.compatible);
    state.requests.lock().expect("lock").push(request.clone());
    if let Some((wire, reason)) = refusal {
        state
            .refused
            .lock()
            .expect("lock")
            .push(format!("{} {}: {reason}", request.method, request.path));
        write_reply(&mut stream, refusal_reply(wire, &reason)).await;
        return;
    }
    let reply = state.script.lock().expect("lock").pop_front();
    let reply = reply.map(|reply| answer_of(reply, &request));
    let reply = reply.unwrap_or_else(|| {
        Reply::status(
            500,
            serde_json::json!({"error": {"message": "no scripted reply"}}),
        )
    });
    write_reply(&mut stream, reply).await;
}

/// An oracle's answer for this request; any other reply as it is.
fn answer_of(reply: Reply, request: &Recorded) -> Reply {
    let Reply::Oracle {
        shown,
        then,
        otherwise,
    } = reply
    else {
        return reply;
    };
    let body: Value = serde_json::from_str(&request.body).unwrap_or(Value::Null);
    let shows = body["messages"].as_array().is_some_and(|messages| {
        messages
            .iter()
            .filter_map(|m| m["content"].as_str())
            .any(|text| text.contains(&shown))
    });
    if shows { *then } else { *otherwise }
}

/// The API a request is for, by its path.
fn wire_of(path: &str, compatible: bool) -> Option<Wire> {
    if path.starts_with("/v1/messages") {
        Some(Wire::Anthropic)
    } else if path.contains("/chat/completions") {
        Some(if compatible {
            Wire::OpenAiCompatible
        } else {
            Wire::OpenAi
        })
    } else {
        None
    }
}

/// Why the real API would refuse `request`, if it would.
fn conformance(request: &Recorded, compatible: bool) -> Option<(Wire, String)> {
    let wire = wire_of(&request.path, compatible)?;
    let reference = llmwire::reference()?;
    let body: Value = match serde_json::from_str(&request.body) {
        Ok(body) => body,
        Err(err) => return Some((wire, format!("the body is not JSON: {err}"))),
    };
    reference
        .check(wire, &body)
        .err()
        .map(|reason| (wire, reason))
}

/// The 400 the API gives, in its error shape.
fn refusal_reply(wire: Wire, reason: &str) -> Reply {
    let body = match wire {
        Wire::Anthropic => json!({"type": "error",
            "error": {"type": "invalid_request_error", "message": reason}}),
        Wire::OpenAi | Wire::OpenAiCompatible => json!({"error": {"message": reason,
            "type": "invalid_request_error", "param": null, "code": null}}),
    };
    Reply::status(400, body)
}

async fn write_reply(stream: &mut TcpStream, reply: Reply) {
    let (status, headers, body, declared) = match reply {
        Reply::Drop => return,
        Reply::KeepAlive => return keep_alive(stream).await,
        Reply::Oracle { .. } => {
            let body = r#"{"error": {"message": "an oracle answers through answer_of"}}"#;
            let headers = vec![("content-type".into(), "application/json".into())];
            (500, headers, body.to_owned(), body.len())
        }
        Reply::Json {
            status,
            headers,
            body,
        } => {
            let mut headers = headers;
            headers.push(("content-type".into(), "application/json".into()));
            let length = body.len();
            (status, headers, body, length)
        }
        Reply::Sse(body) => {
            let length = body.len();
            (
                200,
                vec![("content-type".into(), "text/event-stream".into())],
                body,
                length,
            )
        }
        Reply::SseCut(body) => {
            let length = body.len() + 1000;
            (
                200,
                vec![("content-type".into(), "text/event-stream".into())],
                body,
                length,
            )
        }
    };
    let mut head =
        format!("HTTP/1.1 {status} Mock\r\ncontent-length: {declared}\r\nconnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body.as_bytes()).await;
    let _ = stream.flush().await;
    tokio::time::sleep(Duration::from_millis(10)).await;
    let _ = stream.shutdown().await;
}

/// A stream that stays open with keep-alive comments only, until the client hangs up.
async fn keep_alive(stream: &mut TcpStream) {
    let head = "HTTP/1.1 200 Mock\r\ncontent-length: 100000000\r\nconnection: close\r\ncontent-type: text/event-stream\r\n\r\n";
    if stream.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    loop {
        if stream.write_all(b": keep-alive\n\n").await.is_err() || stream.flush().await.is_err() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A streamed (SSE) OpenAI Chat Completions answer calling one tool, with usage.
pub fn streamed_tool_call(id: &str, name: &str, args: Value) -> Reply {
    let chunk = |delta: Value, finish: Option<&str>| {
        serde_json::json!({"id": "c", "object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        .to_string()
    };
    let events = vec![
        (
            None,
            chunk(
                serde_json::json!({"role": "assistant", "content": "",
                    "tool_calls": [{"index": 0, "id": id, "type": "function",
                    "function": {"name": name, "arguments": args.to_string()}}]}),
                None,
            ),
        ),
        (None, chunk(serde_json::json!({}), Some("tool_calls"))),
        (
            None,
            serde_json::json!({"id": "c", "choices": [],
                   "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}})
            .to_string(),
        ),
        (None, "[DONE]".to_string()),
    ];
    Reply::Sse(sse(&events))
}

/// A whole (non-streamed) OpenAI Chat Completions answer: `text`, the tool calls `(id, name, raw
/// argument text)`, and its `finish_reason`.
pub fn openai_answer(text: &str, calls: &[(&str, &str, &str)], finish: &str) -> Reply {
    let wire: Vec<Value> = calls
        .iter()
        .map(|(id, name, args)| {
            json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}})
        })
        .collect();
    let mut message = json!({"role": "assistant", "content": text});
    if !wire.is_empty() {
        message["tool_calls"] = Value::Array(wire);
    }
    Reply::ok(json!({
        "id": "chatcmpl-w", "object": "chat.completion", "created": 0, "model": "test-model",
        "choices": [{"index": 0, "finish_reason": finish, "message": message, "logprobs": null}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
    }))
}

/// The content blocks of an Anthropic answer: `text` (when not empty), then one `tool_use`.
fn anthropic_blocks(text: &str, tool: Option<(&str, &str, Value)>) -> Vec<Value> {
    let text = (!text.is_empty()).then(|| json!({"type": "text", "text": text}));
    let tool = tool.map(
        |(id, name, input)| json!({"type": "tool_use", "id": id, "name": name, "input": input}),
    );
    text.into_iter().chain(tool).collect()
}

/// A whole (non-streamed) Anthropic Messages answer.
pub fn anthropic_answer(text: &str, tool: Option<(&str, &str, Value)>, stop: &str) -> Reply {
    Reply::ok(json!({
        "id": "msg_w", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": anthropic_blocks(text, tool), "stop_reason": stop, "stop_sequence": null,
        "usage": {"input_tokens": 100, "output_tokens": 10}
    }))
}

/// A streamed Anthropic Messages answer: `text` (when not empty), then one `tool_use` whose
/// input text (`(id, name, raw input text)`, which may be cut short) arrives in two
/// `input_json_delta` pieces, then `message_delta` with `stop`.
pub fn anthropic_stream(text: &str, tool: Option<(&str, &str, &str)>, stop: &str) -> Reply {
    let event = |name: &'static str, data: Value| (Some(name), data.to_string());
    let mut events = vec![event(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_s", "type": "message",
            "role": "assistant", "content": [], "model": "claude-sonnet-4-5", "stop_reason": null,
            "usage": {"input_tokens": 100, "output_tokens": 1}}}),
    )];
    let mut index = 0;
    if !text.is_empty() {
        events.extend([
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}}),
            ),
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": text}}),
            ),
            event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            ),
        ]);
        index = 1;
    }
    if let Some((id, name, input)) = tool {
        let (first, second) = input.split_at(input.len() / 2);
        events.push(event("content_block_start", json!({"type": "content_block_start",
            "index": index, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}})));
        for piece in [first, second] {
            events.push(event(
                "content_block_delta",
                json!({"type": "content_block_delta",
                "index": index, "delta": {"type": "input_json_delta", "partial_json": piece}}),
            ));
        }
        if stop != "max_tokens" {
            events.push(event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": index}),
            ));
        }
    }
    events.extend([
        event(
            "message_delta",
            json!({"type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 10}}),
        ),
        event("message_stop", json!({"type": "message_stop"})),
    ]);
    Reply::Sse(sse(&events))
}
