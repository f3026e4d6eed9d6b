//! A loopback mock LLM server for the provider tests: plays scripted HTTP replies in order
//! (JSON, complete SSE streams, streams cut mid-body, dropped connections) and records every
//! request it receives (method, path, headers, body).
//!
//! A hand-rolled HTTP/1.1 server on tokio: one request per connection, `connection: close` on
//! every reply. It speaks no wire format itself; the tests write the OpenAI and Anthropic bodies.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncWriteExt;
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
    requests: Arc<Mutex<Vec<Recorded>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for MockLlm {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl MockLlm {
    /// Starts a server on 127.0.0.1 that answers with `replies` in order (then 500s).
    pub async fn start(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base_url = format!("http://{}", listener.local_addr().expect("addr"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(Mutex::new(VecDeque::from(replies)));
        let recorded = requests.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, recorded.clone(), script.clone()));
            }
        });
        Self {
            base_url,
            requests,
            task,
        }
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().expect("lock").clone()
    }
}

/// A base URL on which nothing listens.
pub async fn unreachable_base_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("addr");
    drop(listener);
    format!("http://{address}")
}

async fn serve(
    mut stream: TcpStream,
    requests: Arc<Mutex<Vec<Recorded>>>,
    script: Arc<Mutex<VecDeque<Reply>>>,
) {
    let Some(request) = super::http::read_request(&mut stream).await else {
        return;
    };
    requests.lock().expect("lock").push(request);
    let reply = script.lock().expect("lock").pop_front();
    let reply = reply.unwrap_or_else(|| {
        Reply::status(
            500,
            serde_json::json!({"error": {"message": "no scripted reply"}}),
        )
    });
    write_reply(&mut stream, reply).await;
}

async fn write_reply(stream: &mut TcpStream, reply: Reply) {
    let (status, headers, body, declared) = match reply {
        Reply::Drop => return,
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
