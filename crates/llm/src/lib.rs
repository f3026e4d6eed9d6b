//! The LLM provider layer: one [`Provider`] trait for chat with tool calling, its real
//! implementations (OpenAI-compatible Chat Completions and the Anthropic Messages API, whole or
//! streamed, each request shaped as the provider's reference defines it), the offline `none`
//! provider, replay and recording of transcripts, per-run budgets,
//! and the handling of faults (retries with backoff, discarded partial streams, friendly errors).
//!
//! This layer only talks to models. It holds no agent logic (tools, context, planning) and never
//! reads the process environment: the caller passes keys and URLs in [`LlmEnv`].

#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod anthropic;
mod budget;
mod connect;
mod draft;
mod error;
mod openai;
mod price;
mod replay;
pub mod retry;
mod settings;
mod sse;
pub mod tokens;
mod transport;

use std::future::Future;

pub use anthropic::{API_VERSION as ANTHROPIC_API_VERSION, Anthropic};
pub use budget::{BudgetCaps, Budgeted, Spent, first_exceeded};
pub use connect::{AnyProvider, Live, Offline, connect};
pub use error::{Fault, LlmError};
pub use meta_agent_protocol::chat::{
    ChatRequest, Completion, CutCall, Message, StopReason, ToolCall, ToolResult, ToolSpec, Usage,
};
pub use openai::{OpenAi, WireProfile, is_reasoning_model, token_field};
pub use price::cost_usd;
pub use replay::{Exchange, Recorder, Replay};
pub use retry::{RetryPolicy, Sleeper, TokioSleeper, backoff};
pub use settings::{AZURE_API_VERSION, ApiKey, Azure, LlmConfig, LlmEnv, detect_azure};
pub use transport::{Transport, TransportSettings};

/// A chat model that can call tools.
pub trait Provider: Send + Sync {
    /// Sends one request and returns the whole answer. Transient faults are retried inside; a
    /// streamed answer is returned only once complete.
    fn chat(
        &self,
        request: &ChatRequest,
    ) -> impl Future<Output = Result<Completion, LlmError>> + Send;

    /// A short name for logs and status (`openai`, `anthropic`, `none`, `replay`).
    fn name(&self) -> &str;
}
