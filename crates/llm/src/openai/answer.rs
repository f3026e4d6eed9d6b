//! Reading a Chat Completions answer, whole (`chat.completion`) or streamed (`chat.completion.chunk`
//! events ending in `[DONE]`), into a [`Draft`]: text, tool calls with their argument text as the
//! model sent it, usage, and why it stopped (a `refusal` is a [`StopReason::Refusal`]).
//!
//! A stream without `[DONE]` or with a malformed chunk is an error and yields nothing. Pure.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use crate::draft::{self, Assembly, Draft, DraftCall, RawArguments};
use crate::transport::Answer;
use crate::{LlmError, StopReason, Usage};

/// The answer, whole or streamed.
pub fn read_answer(answer: Answer) -> Result<Draft, LlmError> {
    draft::read::<StreamAssembly>(answer, read_whole)
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "stop" => StopReason::EndTurn,
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "length" => StopReason::MaxTokens,
        "content_filter" => StopReason::ContentFilter,
        other => StopReason::Other(other.to_string()),
    }
}

#[derive(Deserialize)]
struct WireResponse {
    choices: Vec<WireChoice>,
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct WireChoice {
    message: WireMessage,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireMessage {
    content: Option<String>,
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Vec<WireToolCall>,
}

#[derive(Deserialize)]
struct WireToolCall {
    id: String,
    function: WireFunction,
}

#[derive(Deserialize)]
struct WireFunction {
    name: String,
    arguments: String,
}

#[derive(Deserialize, Clone, Copy)]
struct WireUsage {
    prompt_tokens: u64,
    completion_tokens: u64,
}

impl From<WireUsage> for Usage {
    fn from(usage: WireUsage) -> Self {
        Usage {
            input_tokens: usage.prompt_tokens,
            output_tokens: usage.completion_tokens,
        }
    }
}

fn read_whole(value: Value) -> Result<Draft, LlmError> {
    let malformed = |detail: String| LlmError::Malformed { detail };
    let response: WireResponse =
        serde_json::from_value(value).map_err(|error| malformed(error.to_string()))?;
    let choice = response
        .choices
        .into_iter()
        .next()
        .ok_or_else(|| malformed("no choices".into()))?;
    let tool_calls = choice.message.tool_calls.into_iter().map(|call| DraftCall {
        id: call.id,
        name: call.function.name,
        arguments: RawArguments::Text(call.function.arguments),
    });
    let mut draft = Draft {
        text: choice.message.content.unwrap_or_default(),
        tool_calls: tool_calls.collect(),
        usage: response.usage.map(Usage::from).unwrap_or_default(),
        stop_reason: choice.finish_reason.as_deref().map(stop_reason),
    };
    refused(&mut draft, choice.message.refusal.unwrap_or_default());
    Ok(draft)
}

/// A non-empty `refusal` makes the answer a refusal; its text is the answer's when there is no
/// other.
fn refused(draft: &mut Draft, refusal: String) {
    if refusal.is_empty() {
        return;
    }
    if draft.text.is_empty() {
        draft.text = refusal;
    }
    draft.stop_reason = Some(StopReason::Refusal);
}

#[derive(Deserialize)]
struct WireChunk {
    #[serde(default)]
    choices: Vec<ChunkChoice>,
    usage: Option<WireUsage>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    delta: Delta,
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct Delta {
    content: Option<String>,
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Vec<DeltaCall>,
}

#[derive(Deserialize)]
struct DeltaCall {
    index: u64,
    id: Option<String>,
    function: Option<DeltaFunction>,
}

#[derive(Deserialize)]
struct DeltaFunction {
    name: Option<String>,
    arguments: Option<String>,
}

/// A tool call being assembled from fragments.
#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// The streamed chunks folded into one answer.
#[derive(Default)]
struct StreamAssembly {
    draft: Draft,
    calls: BTreeMap<u64, PartialCall>,
    refusal: String,
    done: bool,
}

impl Assembly for StreamAssembly {
    fn push(&mut self, data: &str) -> Result<(), LlmError> {
        let cut = |detail: String| LlmError::StreamCut { detail };
        if self.done {
            return Err(cut("data after [DONE]".into()));
        }
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk: WireChunk =
            serde_json::from_str(data).map_err(|error| cut(format!("bad chunk: {error}")))?;
        if let Some(error) = chunk.error {
            return Err(cut(format!("error event: {error}")));
        }
        if let Some(usage) = chunk.usage {
            self.draft.usage = usage.into();
        }
        chunk
            .choices
            .into_iter()
            .for_each(|choice| self.choice(choice));
        Ok(())
    }

    fn finish(mut self) -> Result<Draft, LlmError> {
        if !self.done {
            let detail = "the stream ended before [DONE]".to_string();
            return Err(LlmError::StreamCut { detail });
        }
        self.draft.tool_calls = self
            .calls
            .into_values()
            .map(|call| DraftCall {
                id: call.id,
                name: call.name,
                arguments: RawArguments::Text(call.arguments),
            })
            .collect();
        refused(&mut self.draft, self.refusal);
        Ok(self.draft)
    }
}

impl StreamAssembly {
    fn choice(&mut self, choice: ChunkChoice) {
        if let Some(text) = choice.delta.content {
            self.draft.text.push_str(&text);
        }
        if let Some(refusal) = choice.delta.refusal {
            self.refusal.push_str(&refusal);
        }
        for fragment in choice.delta.tool_calls {
            let call = self.calls.entry(fragment.index).or_default();
            call.id.push_str(fragment.id.as_deref().unwrap_or_default());
            if let Some(function) = fragment.function {
                call.name
                    .push_str(function.name.as_deref().unwrap_or_default());
                call.arguments
                    .push_str(function.arguments.as_deref().unwrap_or_default());
            }
        }
        if let Some(reason) = choice.finish_reason {
            self.draft.stop_reason = Some(stop_reason(&reason));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn assemble(lines: &[&str]) -> Result<Draft, LlmError> {
        let mut stream = StreamAssembly::default();
        lines.iter().try_for_each(|line| stream.push(line))?;
        stream.finish()
    }

    #[test]
    fn fragments_make_whole_tool_calls() {
        let draft = assemble(&[
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"Look"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"read_file","arguments":"{\"pa"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\":\"a\"}"}}]},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}"#,
            "[DONE]",
        ])
        .unwrap();
        assert_eq!(draft.text, "Look");
        assert_eq!(
            draft.tool_calls[0].arguments,
            RawArguments::Text(r#"{"path":"a"}"#.into())
        );
        assert_eq!(
            draft.usage,
            Usage {
                input_tokens: 5,
                output_tokens: 7
            }
        );
        assert_eq!(draft.stop_reason, Some(StopReason::ToolUse));
    }

    #[test]
    fn no_done_or_bad_chunk_is_a_cut() {
        let half = r#"{"choices":[{"index":0,"delta":{"content":"x"}}]}"#;
        assert!(matches!(assemble(&[half]), Err(LlmError::StreamCut { .. })));
        assert!(matches!(
            assemble(&[half, "{not json", "[DONE]"]),
            Err(LlmError::StreamCut { .. })
        ));
    }

    #[test]
    fn a_refusal_whole_or_streamed_is_a_refusal_with_its_text() {
        let whole = read_whole(json!({
            "choices": [{"index": 0, "finish_reason": "stop", "message": {
                "role": "assistant", "content": null, "refusal": "I can't help with that."}}]
        }))
        .unwrap();
        assert_eq!(whole.stop_reason, Some(StopReason::Refusal));
        assert_eq!(whole.text, "I can't help with that.");
        let streamed = assemble(&[
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"refusal":"I can't "}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"refusal":"help."},"finish_reason":"stop"}]}"#,
            "[DONE]",
        ])
        .unwrap();
        assert_eq!(streamed.stop_reason, Some(StopReason::Refusal));
        assert_eq!(streamed.text, "I can't help.");
    }
}
