//! The Anthropic Messages API (`POST {base}/v1/messages`).
//!
//! Translates [`ChatRequest`] to the wire body (system text apart, tool results as `tool_result`
//! blocks in a user turn) and the answer, whole or streamed (`message_start` ...
//! `message_stop`), back to a [`Completion`]. A stream without `message_stop`, with an `error`
//! event or a malformed event is an error and yields nothing. HTTP and retries are
//! [`Transport`]'s.

use std::collections::BTreeMap;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;
use serde_json::{Value, json};

use super::draft::{Draft, parse_arguments};
use super::transport::{Answer, Post, Transport, secret_header};
use super::{ApiKey, ChatRequest, Completion, LlmError, Message, Provider, StopReason, ToolCall};

/// The API version this module speaks.
pub const API_VERSION: &str = "2023-06-01";

/// A Messages API service.
#[derive(Debug)]
pub struct Anthropic {
    transport: Transport,
    api_key: ApiKey,
}

impl Anthropic {
    pub fn new(transport: Transport, api_key: ApiKey) -> Self {
        Self { transport, api_key }
    }

    fn headers(&self) -> Result<HeaderMap, LlmError> {
        let (name, value) = secret_header("x-api-key", self.api_key.expose())?;
        let mut headers = HeaderMap::new();
        headers.insert(name, value);
        let version = HeaderValue::from_static(API_VERSION);
        headers.insert(HeaderName::from_static("anthropic-version"), version);
        Ok(headers)
    }
}

impl Provider for Anthropic {
    async fn chat(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        let body = request_body(request);
        let post = Post {
            path: "/v1/messages",
            headers: self.headers()?,
            body: &body,
            stream: request.stream,
        };
        let draft = self.transport.send(&post, read_answer).await?;
        Ok(draft.priced(&request.model))
    }

    fn name(&self) -> &str {
        "anthropic"
    }
}

/// The JSON body for `request`.
pub fn request_body(request: &ChatRequest) -> Value {
    let mut body = json!({
        "model": request.model,
        "max_tokens": request.max_tokens,
        "messages": wire_messages(&request.messages),
    });
    let system: Vec<&str> = request
        .messages
        .iter()
        .filter_map(|message| match message {
            Message::System { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    if !system.is_empty() {
        body["system"] = json!(system.join("\n\n"));
    }
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request.tools.iter().map(|tool| json!({
            "name": tool.name, "description": tool.description, "input_schema": tool.parameters,
        })).collect();
        body["tools"] = Value::Array(tools);
    }
    if let Some(temperature) = request.temperature {
        body["temperature"] = json!(temperature);
    }
    if request.stream {
        body["stream"] = json!(true);
    }
    body
}

/// The conversation without system messages; consecutive tool results share one user turn.
fn wire_messages(messages: &[Message]) -> Vec<Value> {
    let mut wire: Vec<Value> = Vec::new();
    for message in messages {
        let (role, blocks) = match message {
            Message::System { .. } => continue,
            Message::User { text } => ("user", vec![json!({"type": "text", "text": text})]),
            Message::Assistant { text, tool_calls } => {
                ("assistant", assistant_blocks(text, tool_calls))
            }
            Message::Tool(result) => (
                "user",
                vec![json!({
                    "type": "tool_result", "tool_use_id": result.call_id,
                    "content": result.content, "is_error": result.is_error,
                })],
            ),
        };
        match wire.last_mut() {
            Some(last)
                if role == "user" && ends_with_tool_result(last) && is_tool_result(&blocks) =>
            {
                if let Some(content) = last["content"].as_array_mut() {
                    content.extend(blocks);
                }
            }
            _ => wire.push(json!({"role": role, "content": blocks})),
        }
    }
    wire
}

fn is_tool_result(blocks: &[Value]) -> bool {
    blocks
        .first()
        .is_some_and(|block| block["type"] == "tool_result")
}

fn ends_with_tool_result(message: &Value) -> bool {
    message["content"]
        .as_array()
        .and_then(|blocks| blocks.last())
        .is_some_and(|block| block["type"] == "tool_result")
}

fn assistant_blocks(text: &str, tool_calls: &[ToolCall]) -> Vec<Value> {
    let text = (!text.is_empty()).then(|| json!({"type": "text", "text": text}));
    let calls = tool_calls.iter().map(|call| {
        json!({
            "type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments,
        })
    });
    text.into_iter().chain(calls).collect()
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "end_turn" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        "stop_sequence" => StopReason::StopSequence,
        "refusal" => StopReason::ContentFilter,
        other => StopReason::Other(other.to_string()),
    }
}

fn read_answer(answer: Answer) -> Result<Draft, LlmError> {
    match answer {
        Answer::Whole(value) => read_whole(value),
        Answer::Events(events) => {
            let mut stream = StreamAssembly::default();
            events
                .iter()
                .try_for_each(|event| stream.push(&event.data))?;
            stream.finish()
        }
    }
}

#[derive(Deserialize)]
struct WireResponse {
    content: Vec<WireBlock>,
    stop_reason: Option<String>,
    #[serde(default)]
    usage: WireUsage,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireBlock {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize, Default)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
}

fn read_whole(value: Value) -> Result<Draft, LlmError> {
    let response: WireResponse =
        serde_json::from_value(value).map_err(|error| LlmError::Malformed {
            detail: error.to_string(),
        })?;
    let mut draft = Draft {
        stop_reason: response.stop_reason.as_deref().map(stop_reason),
        ..Draft::default()
    };
    draft.usage.input_tokens = response.usage.input_tokens.unwrap_or_default();
    draft.usage.output_tokens = response.usage.output_tokens.unwrap_or_default();
    for block in response.content {
        match block {
            WireBlock::Text { text } => draft.text.push_str(&text),
            WireBlock::ToolUse { id, name, input } => draft.tool_calls.push(ToolCall {
                id,
                name,
                arguments: input,
            }),
            WireBlock::Other => {}
        }
    }
    Ok(draft)
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StreamEvent {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        index: u64,
        content_block: WireBlock,
    },
    ContentBlockDelta {
        index: u64,
        delta: BlockDelta,
    },
    ContentBlockStop,
    MessageDelta {
        delta: MessageDeltaBody,
        #[serde(default)]
        usage: WireUsage,
    },
    MessageStop,
    Ping,
    Error {
        error: Value,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize)]
struct StartMessage {
    #[serde(default)]
    usage: WireUsage,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockDelta {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct MessageDeltaBody {
    stop_reason: Option<String>,
}

/// A content block being assembled.
enum Block {
    Text(String),
    Tool {
        id: String,
        name: String,
        json: String,
    },
}

/// The streamed events folded into one answer.
#[derive(Default)]
struct StreamAssembly {
    draft: Draft,
    blocks: BTreeMap<u64, Block>,
    done: bool,
}

impl StreamAssembly {
    fn push(&mut self, data: &str) -> Result<(), LlmError> {
        let cut = |detail: String| LlmError::StreamCut { detail };
        if self.done {
            return Err(cut("an event after message_stop".into()));
        }
        let event: StreamEvent =
            serde_json::from_str(data).map_err(|error| cut(format!("bad event: {error}")))?;
        match event {
            StreamEvent::MessageStart { message } => self.usage(message.usage),
            StreamEvent::ContentBlockStart {
                index,
                content_block,
            } => self.start(index, content_block),
            StreamEvent::ContentBlockDelta { index, delta } => self.delta(index, delta)?,
            StreamEvent::MessageDelta { delta, usage } => {
                self.usage(usage);
                self.draft.stop_reason = delta.stop_reason.as_deref().map(stop_reason);
            }
            StreamEvent::MessageStop => self.done = true,
            StreamEvent::Error { error } => return Err(cut(format!("error event: {error}"))),
            StreamEvent::ContentBlockStop | StreamEvent::Ping | StreamEvent::Unknown => {}
        }
        Ok(())
    }

    /// Usage figures are cumulative; a later event overrides what it reports.
    fn usage(&mut self, usage: WireUsage) {
        if let Some(input) = usage.input_tokens {
            self.draft.usage.input_tokens = input;
        }
        if let Some(output) = usage.output_tokens {
            self.draft.usage.output_tokens = output;
        }
    }

    fn start(&mut self, index: u64, block: WireBlock) {
        let block = match block {
            WireBlock::Text { text } => Block::Text(text),
            WireBlock::ToolUse { id, name, .. } => Block::Tool {
                id,
                name,
                json: String::new(),
            },
            WireBlock::Other => return,
        };
        self.blocks.insert(index, block);
    }

    fn delta(&mut self, index: u64, delta: BlockDelta) -> Result<(), LlmError> {
        match (self.blocks.get_mut(&index), delta) {
            (Some(Block::Text(text)), BlockDelta::TextDelta { text: more }) => text.push_str(&more),
            (Some(Block::Tool { json, .. }), BlockDelta::InputJsonDelta { partial_json }) => {
                json.push_str(&partial_json)
            }
            (_, BlockDelta::Other) | (None, _) => {}
            (Some(_), _) => {
                let detail = format!("a delta of the wrong kind for block {index}");
                return Err(LlmError::StreamCut { detail });
            }
        }
        Ok(())
    }

    fn finish(mut self) -> Result<Draft, LlmError> {
        if !self.done {
            let detail = "the stream ended before message_stop".to_string();
            return Err(LlmError::StreamCut { detail });
        }
        for block in self.blocks.into_values() {
            match block {
                Block::Text(text) => self.draft.text.push_str(&text),
                Block::Tool { id, name, json } => {
                    self.draft.tool_calls.push(ToolCall {
                        id,
                        name,
                        arguments: parse_arguments(&json),
                    });
                }
            }
        }
        Ok(self.draft)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{ToolResult, Usage};

    #[test]
    fn consecutive_tool_results_share_one_user_turn() {
        let result = |id: &str| {
            Message::Tool(ToolResult {
                call_id: id.into(),
                content: "ok".into(),
                is_error: false,
            })
        };
        let messages = [
            Message::system("s"),
            Message::user("u"),
            result("a"),
            result("b"),
        ];
        let wire = wire_messages(&messages);
        assert_eq!(wire.len(), 2);
        assert_eq!(wire[1]["content"].as_array().map(Vec::len), Some(2));
    }

    #[test]
    fn stream_without_message_stop_is_a_cut() {
        let mut stream = StreamAssembly::default();
        stream.push(r#"{"type":"message_start","message":{"usage":{"input_tokens":3,"output_tokens":1}}}"#).unwrap();
        stream.push(r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#).unwrap();
        stream.push(r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}"#).unwrap();
        assert_eq!(
            stream.draft.usage,
            Usage {
                input_tokens: 3,
                output_tokens: 1
            }
        );
        assert!(matches!(stream.finish(), Err(LlmError::StreamCut { .. })));
    }
}
