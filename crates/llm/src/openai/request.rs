//! The Chat Completions request body as OpenAI's current reference defines it: the output cap as
//! `max_completion_tokens` (`max_tokens` is deprecated there and refused by the o-series), and for
//! reasoning models no `temperature` (they refuse it) and `reasoning_effort` when configured.
//! Servers that still need `max_tokens` (older vLLM and Ollama) get it through their
//! [`LlmCompat`] profile.
//!
//! Pure: a [`ChatRequest`] in, JSON out.

use serde_json::{Value, json};

use crate::{ChatRequest, Message, ToolCall};
use meta_agent_config::raw::{LlmCompat, ReasoningEffort};

/// How a server wants its requests shaped (from `llm.compat` and `llm.reasoning_effort`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WireProfile {
    pub compat: LlmCompat,
    pub reasoning_effort: Option<ReasoningEffort>,
}

/// The JSON body for `request`.
pub fn request_body(request: &ChatRequest, profile: &WireProfile) -> Value {
    let reasoning = is_reasoning_model(&request.model);
    let mut body = json!({
        "model": request.model,
        "messages": request.messages.iter().map(wire_message).collect::<Vec<_>>(),
    });
    body[token_field(profile.compat)] = json!(request.max_tokens);
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request.tools.iter().map(|tool| json!({
            "type": "function",
            "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
        })).collect();
        body["tools"] = Value::Array(tools);
    }
    if let Some(temperature) = request.temperature.filter(|_| !reasoning) {
        body["temperature"] = json!(temperature);
    }
    if let Some(effort) = profile.reasoning_effort.filter(|_| reasoning) {
        body["reasoning_effort"] = json!(effort);
    }
    if request.stream {
        body["stream"] = json!(true);
        body["stream_options"] = json!({"include_usage": true});
    }
    body
}

/// The name of the output cap for this profile.
pub fn token_field(compat: LlmCompat) -> &'static str {
    match compat {
        LlmCompat::Openai => "max_completion_tokens",
        LlmCompat::Vllm | LlmCompat::Ollama => "max_tokens",
    }
}

/// OpenAI's reasoning models, which refuse `temperature` and take `reasoning_effort`: the
/// o-series (`o1`, `o3-mini`, `o4-mini`...) and gpt-5 (not its `-chat` variants), also behind a
/// router's `vendor/` prefix.
pub fn is_reasoning_model(model: &str) -> bool {
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    let o_series = name
        .strip_prefix('o')
        .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()));
    let gpt5 = name.starts_with("gpt-5") && !name.contains("-chat");
    o_series || gpt5
}

fn wire_message(message: &Message) -> Value {
    match message {
        Message::System { text } => json!({"role": "system", "content": text}),
        Message::User { text } => json!({"role": "user", "content": text}),
        Message::Assistant { text, tool_calls } => wire_assistant(text, tool_calls),
        Message::Tool(result) => json!({
            "role": "tool", "tool_call_id": result.call_id, "content": result.content,
        }),
    }
}

fn wire_assistant(text: &str, tool_calls: &[ToolCall]) -> Value {
    let mut message = json!({"role": "assistant", "content": text});
    if !tool_calls.is_empty() {
        let calls: Vec<Value> = tool_calls
            .iter()
            .map(|call| {
                json!({
                    "id": call.id, "type": "function",
                    "function": {"name": call.name, "arguments": argument_text(&call.arguments)},
                })
            })
            .collect();
        message["tool_calls"] = Value::Array(calls);
    }
    message
}

/// The arguments as text: an object serialized; text that was not JSON as the model sent it
/// (never quoted again).
fn argument_text(arguments: &Value) -> String {
    match arguments {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(model: &str, temperature: Option<f32>) -> ChatRequest {
        ChatRequest {
            model: model.into(),
            messages: vec![Message::system("s"), Message::user("u")],
            tools: Vec::new(),
            max_tokens: 512,
            temperature,
            stream: false,
        }
    }

    #[test]
    fn openai_gets_max_completion_tokens_never_the_deprecated_max_tokens() {
        let body = request_body(&request("gpt-4.1", Some(0.2)), &WireProfile::default());
        assert_eq!(body["max_completion_tokens"], 512);
        assert_eq!(body.get("max_tokens"), None);
        assert!(
            (body["temperature"].as_f64().unwrap() - 0.2).abs() < 1e-6,
            "{body}"
        );
    }

    #[test]
    fn servers_that_need_max_tokens_get_it_through_their_profile() {
        for compat in [LlmCompat::Vllm, LlmCompat::Ollama] {
            let profile = WireProfile {
                compat,
                ..WireProfile::default()
            };
            let body = request_body(&request("qwen2.5-coder", None), &profile);
            assert_eq!(body["max_tokens"], 512);
            assert_eq!(body.get("max_completion_tokens"), None);
        }
    }

    #[test]
    fn reasoning_models_get_no_temperature_and_the_configured_effort() {
        let profile = WireProfile {
            reasoning_effort: Some(ReasoningEffort::High),
            ..WireProfile::default()
        };
        let body = request_body(&request("o4-mini", Some(0.0)), &profile);
        assert_eq!(body.get("temperature"), None);
        assert_eq!(body.get("top_p"), None);
        assert_eq!(body["reasoning_effort"], "high");
        assert_eq!(body["max_completion_tokens"], 512);
        let plain = request_body(&request("gpt-4.1-mini", Some(0.0)), &profile);
        assert_eq!(
            plain.get("reasoning_effort"),
            None,
            "other models refuse it"
        );
        assert_eq!(plain["temperature"], 0.0);
        let unset = request_body(&request("o3", None), &WireProfile::default());
        assert_eq!(unset.get("reasoning_effort"), None);
    }

    #[test]
    fn reasoning_models_are_told_by_name() {
        for model in [
            "o1",
            "o3-mini",
            "o4-mini",
            "openai/o4-mini",
            "gpt-5",
            "gpt-5-mini",
        ] {
            assert!(is_reasoning_model(model), "{model}");
        }
        for model in [
            "gpt-4.1",
            "gpt-4o-mini",
            "gpt-5-chat-latest",
            "omni-moderation",
            "llama3",
        ] {
            assert!(!is_reasoning_model(model), "{model}");
        }
    }

    #[test]
    fn arguments_that_were_not_json_go_back_as_the_model_sent_them() {
        let call = |arguments: Value| ToolCall {
            id: "c".into(),
            name: "read_file".into(),
            arguments,
        };
        let message = wire_assistant("", &[call(json!("{\"path\": src")), call(json!({"a": 1}))]);
        assert_eq!(
            message["tool_calls"][0]["function"]["arguments"],
            "{\"path\": src"
        );
        assert_eq!(
            message["tool_calls"][1]["function"]["arguments"],
            "{\"a\":1}"
        );
    }
}
