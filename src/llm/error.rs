//! [`LlmError`]: every way a call to a model can fail, and whether it is worth retrying.
//!
//! The retry decision lives on the type ([`LlmError::is_transient`]) and matches every variant,
//! so a new variant forces a decision. Messages are written for the person reading the final
//! status; they never contain the API key.

use std::time::Duration;

/// Why a call to the model failed.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// The `none` provider: nothing to call.
    #[error("no LLM provider is configured; set llm.provider and the API key")]
    NotConfigured,
    /// A provider is chosen but its key is missing.
    #[error("no API key for the {provider} provider; set {variable}")]
    MissingKey {
        provider: &'static str,
        variable: &'static str,
    },
    /// The connection could not be made (refused, DNS, TLS) or was reset.
    #[error("cannot reach {base_url}: {detail}")]
    Unreachable { base_url: String, detail: String },
    /// The service did not answer in time.
    #[error("{base_url} did not answer in time")]
    Timeout { base_url: String },
    /// 401 or 403: the key is wrong, revoked or not allowed.
    #[error("the API key was rejected ({status}) by {base_url}: {message}")]
    AuthRejected {
        status: u16,
        base_url: String,
        message: String,
    },
    /// The account is out of credit or over its spend limit; waiting does not help.
    #[error("the account's spend limit or credit is exhausted ({status}): {message}")]
    SpendLimit { status: u16, message: String },
    /// 429: too many requests for now.
    #[error("rate limited (429): {message}")]
    RateLimited {
        retry_after: Option<Duration>,
        message: String,
    },
    /// 408, 409, 5xx or 529: the service is busy or failing for now.
    #[error("the service is unavailable ({status}): {message}")]
    Unavailable {
        status: u16,
        retry_after: Option<Duration>,
        message: String,
    },
    /// Any other 4xx: the request itself is wrong and will stay wrong.
    #[error("the request was refused ({status}): {message}")]
    Rejected { status: u16, message: String },
    /// A streamed answer ended early or carried a malformed event. Nothing of it is used.
    #[error("the answer stream was cut or malformed: {detail}")]
    StreamCut { detail: String },
    /// A whole (non-streamed) answer that cannot be read.
    #[error("the answer could not be read: {detail}")]
    Malformed { detail: String },
    /// Transient failures kept coming until the attempts ran out.
    #[error("gave up after {attempts} attempts: {last}")]
    RetriesExhausted { attempts: u32, last: Box<LlmError> },
    /// A cap on calls, tokens or cost would be passed by another call.
    #[error("LLM budget exceeded: {what}")]
    BudgetExceeded { what: String },
    /// The replayed run asks for more answers than were recorded.
    #[error("the transcript holds {recorded} answers and the run asked for another")]
    ReplayExhausted { recorded: usize },
    /// The transcript file cannot be read or written.
    #[error("transcript {path}: {detail}")]
    Transcript { path: String, detail: String },
}

impl LlmError {
    /// Whether the same request may succeed if sent again later.
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Unreachable { .. }
            | Self::Timeout { .. }
            | Self::RateLimited { .. }
            | Self::Unavailable { .. }
            | Self::StreamCut { .. } => true,
            Self::NotConfigured
            | Self::MissingKey { .. }
            | Self::AuthRejected { .. }
            | Self::SpendLimit { .. }
            | Self::Rejected { .. }
            | Self::Malformed { .. }
            | Self::RetriesExhausted { .. }
            | Self::BudgetExceeded { .. }
            | Self::ReplayExhausted { .. }
            | Self::Transcript { .. } => false,
        }
    }

    /// How long the service asked us to wait, when it said.
    pub fn retry_after(&self) -> Option<Duration> {
        if let Self::RateLimited { retry_after, .. } | Self::Unavailable { retry_after, .. } = self
        {
            *retry_after
        } else {
            None
        }
    }
}
