//! The provider-neutral shapes of a chat with tool calling: what is sent ([`ChatRequest`],
//! [`Message`], [`ToolSpec`]) and what comes back ([`Completion`]).
//!
//! Plain data with serde derives (the replay transcript stores them as JSON). Nothing here knows a
//! wire format; the provider modules translate. No I/O here.

use serde::{Deserialize, Serialize};

/// One message of the conversation, by role.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// Instructions for the model.
    System { text: String },
    /// The task, or anything the orchestrator says on the user's behalf.
    User { text: String },
    /// What the model answered earlier: text and the tool calls it made.
    Assistant {
        text: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The outcome of one tool call, answered to the model.
    Tool(ToolResult),
}

impl Message {
    /// A system message.
    pub fn system(text: impl Into<String>) -> Self {
        Self::System { text: text.into() }
    }

    /// A user message.
    pub fn user(text: impl Into<String>) -> Self {
        Self::User { text: text.into() }
    }
}

/// The answer to one tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The [`ToolCall::id`] this answers.
    pub call_id: String,
    /// What the tool produced (already trimmed by the caller).
    pub content: String,
    /// True when the tool failed; the model sees it as a failed result.
    #[serde(default)]
    pub is_error: bool,
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: serde_json::Value,
}

/// A tool call the model made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments as parsed JSON. When the model sent text that is not JSON, this holds that
    /// text as a JSON string, so the caller can reject it and tell the model.
    pub arguments: serde_json::Value,
}

/// Tokens counted by the service for one call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl Usage {
    /// Input plus output tokens.
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// It finished its answer.
    EndTurn,
    /// It wants tool results.
    ToolUse,
    /// `max_tokens` was reached; the answer is truncated.
    MaxTokens,
    /// A stop sequence matched.
    StopSequence,
    /// The service filtered the answer.
    ContentFilter,
    /// The model declined to answer (Anthropic's `refusal`, OpenAI's `refusal` text).
    Refusal,
    /// Anything else the service reported, verbatim.
    Other(String),
}

/// One answer of the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Completion {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
    /// Cost in US dollars from the price table (0 for a model not in it).
    pub cost_usd: f64,
    pub stop_reason: StopReason,
    /// The tool call the output limit cut short, if any: left out of `tool_calls`, never to be
    /// carried out nor sent back as a call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_call: Option<CutCall>,
}

/// A tool call cut short by the output limit (`max_tokens` / `length`), as far as it got.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CutCall {
    pub id: String,
    pub name: String,
    /// The argument text the model had sent when it was cut, verbatim.
    pub partial_arguments: String,
}

/// One call to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    pub model: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    pub max_tokens: u32,
    pub temperature: Option<f32>,
    /// Ask for a streamed (SSE) answer. The caller still gets one whole [`Completion`].
    pub stream: bool,
}
