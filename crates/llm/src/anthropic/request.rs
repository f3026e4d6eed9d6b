//! The Messages API request body, within the rules the API enforces: system text apart; no empty
//! message and no empty text block ever (an empty turn is left out, so a refusal or an empty
//! answer never goes back as `"content": []`); consecutive turns of one role merged into one, with
//! `tool_result` blocks first; and a `tool_use` input always a JSON object — a call whose
//! arguments are not one cannot be sent ([`LlmError::Unsendable`]), never as a string.
//!
//! Pure: a [`ChatRequest`] in, JSON out.

use serde_json::{Value, json};

use crate::{ChatRequest, LlmError, Message, ToolCall, ToolResult};

/// The JSON body for `request`.
pub fn request_body(request: &ChatRequest) -> Result<Value, LlmError> {
    let mut body = json!({
        "model": request.model,
        "max_tokens": request.max_tokens,
        "messages": wire_messages(&request.messages)?,
    });
    let system: Vec<&str> = request
        .messages
        .iter()
        .filter_map(|message| match message {
            Message::System { text } if !text.is_empty() => Some(text.as_str()),
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
    Ok(body)
}

/// One turn of the conversation on the wire.
struct Turn {
    role: &'static str,
    blocks: Vec<Value>,
}

impl Turn {
    /// The turn as JSON, `tool_result` blocks first (the API refuses text before them).
    fn into_wire(mut self) -> Value {
        self.blocks
            .sort_by_key(|block| block["type"] != "tool_result");
        json!({"role": self.role, "content": self.blocks})
    }
}

/// The conversation without system messages and without empty turns; consecutive turns of one
/// role (tool results, then a note to the model) share one message.
pub(super) fn wire_messages(messages: &[Message]) -> Result<Vec<Value>, LlmError> {
    let mut turns: Vec<Turn> = Vec::new();
    for message in messages {
        let (role, blocks) = match message {
            Message::System { .. } => continue,
            Message::User { text } => ("user", text_block(text).into_iter().collect()),
            Message::Assistant { text, tool_calls } => {
                ("assistant", assistant_blocks(text, tool_calls)?)
            }
            Message::Tool(result) => ("user", vec![tool_result(result)]),
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some(last) if last.role == role => last.blocks.extend(blocks),
            _ => turns.push(Turn { role, blocks }),
        }
    }
    Ok(turns.into_iter().map(Turn::into_wire).collect())
}

/// A text block, or none for empty text (the API refuses empty text blocks).
fn text_block(text: &str) -> Option<Value> {
    (!text.is_empty()).then(|| json!({"type": "text", "text": text}))
}

fn tool_result(result: &ToolResult) -> Value {
    let mut block = json!({
        "type": "tool_result", "tool_use_id": result.call_id, "is_error": result.is_error,
    });
    if !result.content.is_empty() {
        block["content"] = json!(result.content);
    }
    block
}

fn assistant_blocks(text: &str, tool_calls: &[ToolCall]) -> Result<Vec<Value>, LlmError> {
    let calls = tool_calls.iter().map(|call| {
        if !call.arguments.is_object() {
            return Err(LlmError::Unsendable {
                detail: format!(
                    "the arguments of tool call `{}` ({}) are not a JSON object; the Messages API \
                     takes only objects as tool_use input",
                    call.id, call.name
                ),
            });
        }
        Ok(json!({
            "type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments,
        }))
    });
    text_block(text).into_iter().map(Ok).chain(calls).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(id: &str) -> Message {
        Message::Tool(ToolResult {
            call_id: id.into(),
            content: "ok".into(),
            is_error: false,
        })
    }

    fn call(id: &str, arguments: Value) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "read_file".into(),
            arguments,
        }
    }

    #[test]
    fn consecutive_tool_results_and_a_note_share_one_user_turn_results_first() {
        let messages = [
            Message::system("s"),
            Message::user("u"),
            Message::Assistant {
                text: String::new(),
                tool_calls: vec![call("a", json!({})), call("b", json!({}))],
            },
            result("a"),
            result("b"),
            Message::user("your output was cut"),
        ];
        let wire = wire_messages(&messages).unwrap();
        assert_eq!(wire.len(), 3);
        let types: Vec<&str> = wire[2]["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|block| block["type"].as_str())
            .collect();
        assert_eq!(types, ["tool_result", "tool_result", "text"]);
    }

    #[test]
    fn an_empty_answer_never_becomes_an_empty_message() {
        let messages = [
            Message::user("u"),
            Message::Assistant {
                text: String::new(),
                tool_calls: Vec::new(),
            },
            Message::user("Continue with the tools."),
        ];
        let wire = wire_messages(&messages).unwrap();
        assert_eq!(wire.len(), 1, "{wire:?}");
        assert_eq!(wire[0]["role"], "user");
        assert_eq!(wire[0]["content"].as_array().map(Vec::len), Some(2));
        let empty_user = wire_messages(&[Message::user("")]).unwrap();
        assert!(empty_user.is_empty());
    }

    #[test]
    fn a_tool_call_whose_arguments_are_not_an_object_is_never_sent() {
        let messages = [
            Message::user("u"),
            Message::Assistant {
                text: "Editing.".into(),
                tool_calls: vec![call("c", json!("{\"path\": \"calc"))],
            },
        ];
        let refused = wire_messages(&messages);
        assert!(
            matches!(&refused, Err(LlmError::Unsendable { detail }) if detail.contains("`c`")),
            "{refused:?}"
        );
    }
}
