//! The OpenAI-compatible Chat Completions API (`POST {base}/chat/completions`): OpenAI, Azure-style
//! deployments, OpenRouter, Gemini's OpenAI endpoint, Ollama, vLLM, llama.cpp.
//!
//! Translates [`ChatRequest`] to the wire body and the answer (whole or streamed as SSE chunks
//! ending in `[DONE]`) back to a [`Completion`]. A stream without `[DONE]` or with a malformed
//! chunk is an error and yields nothing. HTTP and retries are [`Transport`]'s.

use std::collections::BTreeMap;

use reqwest::header::HeaderMap;
use serde::Deserialize;
use serde_json::{Value, json};

use super::draft::{Draft, parse_arguments};
use super::transport::{Answer, Post, Transport, secret_header};
use super::{
    ApiKey, Azure, ChatRequest, Completion, LlmError, Message, Provider, StopReason, ToolCall,
    Usage,
};

/// A Chat Completions service.
#[derive(Debug)]
pub struct OpenAi {
    transport: Transport,
    api_key: Option<ApiKey>,
    azure: Option<AzureShape>,
}

/// Azure's shape of the same API.
#[derive(Debug)]
struct AzureShape {
    api_version: String,
    /// The base URL already ends in `/openai/deployments/{name}`; otherwise the model names the
    /// deployment.
    deployment_in_base: bool,
}

impl OpenAi {
    /// A provider over `transport`; without a key no `authorization` header is sent (local
    /// servers).
    pub fn new(transport: Transport, api_key: Option<ApiKey>) -> Self {
        Self {
            transport,
            api_key,
            azure: None,
        }
    }

    /// Azure OpenAI: the deployment path, the `api-version` query parameter and the key in an
    /// `api-key` header. `base_url` is the transport's.
    pub fn azure(self, azure: &Azure, base_url: &str) -> Self {
        Self {
            azure: Some(AzureShape {
                api_version: azure.api_version.clone(),
                deployment_in_base: base_url.contains("/openai/deployments/"),
            }),
            ..self
        }
    }

    fn headers(&self) -> Result<HeaderMap, LlmError> {
        let mut headers = HeaderMap::new();
        if let Some(key) = &self.api_key {
            let (name, value) = match &self.azure {
                Some(_) => secret_header("api-key", key.expose())?,
                None => secret_header("authorization", &format!("Bearer {}", key.expose()))?,
            };
            headers.insert(name, value);
        }
        Ok(headers)
    }

    /// `/chat/completions`, or Azure's deployment path with its `api-version`.
    fn path(&self, model: &str) -> String {
        match &self.azure {
            None => "/chat/completions".to_owned(),
            Some(azure) if azure.deployment_in_base => {
                format!("/chat/completions?api-version={}", azure.api_version)
            }
            Some(azure) => format!(
                "/openai/deployments/{model}/chat/completions?api-version={}",
                azure.api_version
            ),
        }
    }
}

impl Provider for OpenAi {
    async fn chat(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        let body = request_body(request);
        let path = self.path(&request.model);
        let post = Post {
            path: &path,
            headers: self.headers()?,
            body: &body,
            stream: request.stream,
        };
        let draft = self.transport.send(&post, read_answer).await?;
        Ok(draft.priced(&request.model))
    }

    fn name(&self) -> &str {
        "openai"
    }
}

/// The JSON body for `request`.
pub fn request_body(request: &ChatRequest) -> Value {
    let mut body = json!({
        "model": request.model,
        "messages": request.messages.iter().map(wire_message).collect::<Vec<_>>(),
        "max_tokens": request.max_tokens,
    });
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request.tools.iter().map(|tool| json!({
            "type": "function",
            "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
        })).collect();
        body["tools"] = Value::Array(tools);
    }
    if let Some(temperature) = request.temperature {
        body["temperature"] = json!(temperature);
    }
    if request.stream {
        body["stream"] = json!(true);
        body["stream_options"] = json!({"include_usage": true});
    }
    body
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
                    "function": {"name": call.name, "arguments": call.arguments.to_string()},
                })
            })
            .collect();
        message["tool_calls"] = Value::Array(calls);
    }
    message
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
    let tool_calls = choice.message.tool_calls.into_iter().map(|call| ToolCall {
        id: call.id,
        name: call.function.name,
        arguments: parse_arguments(&call.function.arguments),
    });
    Ok(Draft {
        text: choice.message.content.unwrap_or_default(),
        tool_calls: tool_calls.collect(),
        usage: response.usage.map(Usage::from).unwrap_or_default(),
        stop_reason: choice.finish_reason.as_deref().map(stop_reason),
    })
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
    done: bool,
}

impl StreamAssembly {
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

    fn choice(&mut self, choice: ChunkChoice) {
        if let Some(text) = choice.delta.content {
            self.draft.text.push_str(&text);
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

    fn finish(mut self) -> Result<Draft, LlmError> {
        if !self.done {
            let detail = "the stream ended before [DONE]".to_string();
            return Err(LlmError::StreamCut { detail });
        }
        self.draft.tool_calls = self
            .calls
            .into_values()
            .map(|call| ToolCall {
                arguments: parse_arguments(&call.arguments),
                id: call.id,
                name: call.name,
            })
            .collect();
        Ok(self.draft)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(draft.tool_calls[0].arguments, json!({"path": "a"}));
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
}
