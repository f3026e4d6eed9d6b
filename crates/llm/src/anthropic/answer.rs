//! Reading a Messages API answer, whole (`message`) or streamed (`message_start` ...
//! `message_stop`), into a [`Draft`]: text, tool calls with the input text as streamed, usage, and
//! why it stopped (`refusal` is a [`StopReason::Refusal`]).
//!
//! A stream without `message_stop`, with an `error` event or a malformed event is an error and
//! yields nothing. Pure.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use crate::draft::{self, Assembly, Draft, DraftCall, RawArguments};
use crate::transport::Answer;
use crate::{LlmError, StopReason};

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "end_turn" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        "stop_sequence" => StopReason::StopSequence,
        "refusal" => StopReason::Refusal,
        other => StopReason::Other(other.to_string()),
    }
}

/// The answer, whole or streamed.
pub fn read_answer(answer: Answer) -> Result<Draft, LlmError> {
    draft::read::<StreamAssembly>(answer, read_whole)
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
            WireBlock::ToolUse { id, name, input } => draft.tool_calls.push(DraftCall {
                id,
                name,
                arguments: RawArguments::Parsed(input),
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

impl Assembly for StreamAssembly {
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

    fn finish(mut self) -> Result<Draft, LlmError> {
        if !self.done {
            let detail = "the stream ended before message_stop".to_string();
            return Err(LlmError::StreamCut { detail });
        }
        for block in self.blocks.into_values() {
            match block {
                Block::Text(text) => self.draft.text.push_str(&text),
                Block::Tool { id, name, json } => {
                    self.draft.tool_calls.push(DraftCall {
                        id,
                        name,
                        arguments: RawArguments::Text(json),
                    });
                }
            }
        }
        Ok(self.draft)
    }
}

impl StreamAssembly {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Usage;

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

    fn assemble(events: &[&str]) -> Draft {
        let mut stream = StreamAssembly::default();
        for event in events {
            stream.push(event).unwrap();
        }
        stream.finish().unwrap()
    }

    #[test]
    fn a_tool_use_cut_by_max_tokens_keeps_the_text_it_streamed() {
        let draft = assemble(&[
            r#"{"type":"message_start","message":{"usage":{"input_tokens":9,"output_tokens":1}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"edit_file","input":{}}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \"calc"}}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":64}}"#,
            r#"{"type":"message_stop"}"#,
        ]);
        assert_eq!(draft.stop_reason, Some(StopReason::MaxTokens));
        assert_eq!(
            draft.tool_calls[0].arguments,
            RawArguments::Text(r#"{"path": "calc"#.into())
        );
    }

    #[test]
    fn a_refusal_is_a_refusal_whole_or_streamed() {
        let whole = read_whole(serde_json::json!({
            "content": [{"type": "text", "text": ""}], "stop_reason": "refusal",
            "usage": {"input_tokens": 5, "output_tokens": 0}
        }))
        .unwrap();
        assert_eq!(whole.stop_reason, Some(StopReason::Refusal));
        assert_eq!(whole.text, "");
        let streamed = assemble(&[
            r#"{"type":"message_start","message":{"usage":{"input_tokens":9,"output_tokens":1}}}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"refusal"},"usage":{"output_tokens":1}}"#,
            r#"{"type":"message_stop"}"#,
        ]);
        assert_eq!(streamed.stop_reason, Some(StopReason::Refusal));
    }
}
