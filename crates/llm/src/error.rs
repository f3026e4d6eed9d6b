//! [`LlmError`]: every way a call to a model can fail, whether it is worth retrying, and what it
//! means for the run ([`Fault`]).
//!
//! The decisions live on the type ([`LlmError::is_transient`], [`LlmError::fault`]) and match
//! every variant, so a new variant forces a decision. Messages are written for the person reading
//! the final status; they never contain the API key.

use std::time::Duration;

/// What a failed call means for the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The same request may succeed later: the act may be tried again.
    Transient,
    /// The provider refused the request for good (key, model, request, context length, spend
    /// limit): the run ends as an escalation with the provider's reason.
    Refused,
    /// Our side failed (an unreadable answer, a transcript, a request we cannot send): an
    /// internal error.
    Internal,
    /// The run's own LLM budget is spent: the act ends honestly, not as a failure.
    Budget,
}

/// Why a call to the model failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
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
    /// The request does not fit the model's context window (OpenAI's
    /// `context_length_exceeded`, Anthropic's "prompt is too long", 413): the same request will
    /// stay refused, a smaller one may not.
    #[error("the request is too long for the model's context window ({status}): {message}")]
    ContextTooLong { status: u16, message: String },
    /// Any other 4xx: the request itself is wrong and will stay wrong.
    #[error("the request was refused ({status}): {message}")]
    Rejected { status: u16, message: String },
    /// A streamed answer ended early or carried a malformed event. Nothing of it is used.
    #[error("the answer stream was cut or malformed: {detail}")]
    StreamCut { detail: String },
    /// A request this provider's wire format cannot carry (e.g. a tool call whose arguments are
    /// not a JSON object, for the Messages API). Never sent.
    #[error("the request cannot be sent: {detail}")]
    Unsendable { detail: String },
    /// A whole (non-streamed) answer that cannot be read.
    #[error("the answer could not be read: {detail}")]
    Malformed { detail: String },
    /// Transient failures kept coming until the attempts ran out.
    #[error("gave up after {attempts} attempts: {last}")]
    RetriesExhausted { attempts: u32, last: Box<LlmError> },
    /// A cap on calls, tokens or cost would be passed by another call.
    #[error("LLM budget exceeded: {what}")]
    BudgetExceeded { what: String },
    /// The run's deadline (`loop.wall_clock`, the job's minutes) passed before an answer came.
    #[error("the time budget is spent: no answer before the run's deadline")]
    DeadlinePassed,
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
            | Self::ContextTooLong { .. }
            | Self::Unsendable { .. }
            | Self::Malformed { .. }
            | Self::RetriesExhausted { .. }
            | Self::BudgetExceeded { .. }
            | Self::DeadlinePassed
            | Self::ReplayExhausted { .. }
            | Self::Transcript { .. } => false,
        }
    }

    /// What this failure means for the run. Retries that ran out on a transient fault stay
    /// transient (the engine may try the act again later, a bounded number of times).
    pub fn fault(&self) -> Fault {
        match self {
            Self::Unreachable { .. }
            | Self::Timeout { .. }
            | Self::RateLimited { .. }
            | Self::Unavailable { .. }
            | Self::StreamCut { .. } => Fault::Transient,
            Self::RetriesExhausted { last, .. } => match last.fault() {
                Fault::Transient => Fault::Transient,
                Fault::Refused | Fault::Internal | Fault::Budget => Fault::Internal,
            },
            Self::NotConfigured
            | Self::MissingKey { .. }
            | Self::AuthRejected { .. }
            | Self::SpendLimit { .. }
            | Self::Rejected { .. }
            | Self::ContextTooLong { .. } => Fault::Refused,
            Self::Unsendable { .. }
            | Self::Malformed { .. }
            | Self::ReplayExhausted { .. }
            | Self::Transcript { .. } => Fault::Internal,
            Self::BudgetExceeded { .. } | Self::DeadlinePassed => Fault::Budget,
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

impl From<LlmError> for meta_agent_protocol::builder::ModelFailure {
    /// What the loop needs of a failed call: whether another act may succeed (a transient fault,
    /// or retries exhausted on one), the deadline, a refusal for good; the message as it is.
    fn from(error: LlmError) -> Self {
        use meta_agent_protocol::builder::ModelFault;
        let transient = match &error {
            LlmError::RetriesExhausted { last, .. } => last.is_transient(),
            other => other.is_transient(),
        };
        let fault = if transient {
            ModelFault::Transient
        } else if error == LlmError::DeadlinePassed {
            ModelFault::Deadline
        } else if error.fault() == Fault::Refused {
            ModelFault::Refused
        } else {
            ModelFault::Other
        };
        Self {
            fault,
            message: error.to_string(),
        }
    }
}

impl From<LlmError> for meta_agent_protocol::builder::BuildError {
    fn from(error: LlmError) -> Self {
        Self::Llm(error.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rejected(status: u16) -> LlmError {
        LlmError::Rejected {
            status,
            message: "no".into(),
        }
    }

    #[test]
    fn refusals_transient_faults_and_our_own_failures_are_told_apart() {
        let auth = LlmError::AuthRejected {
            status: 401,
            base_url: "http://x".into(),
            message: "bad key".into(),
        };
        let long = LlmError::ContextTooLong {
            status: 400,
            message: "too long".into(),
        };
        for refused in [auth, long, rejected(400), rejected(404)] {
            assert_eq!(refused.fault(), Fault::Refused, "{refused}");
        }
        let busy = LlmError::Unavailable {
            status: 503,
            retry_after: None,
            message: "busy".into(),
        };
        let exhausted = LlmError::RetriesExhausted {
            attempts: 4,
            last: Box::new(busy.clone()),
        };
        assert_eq!(busy.fault(), Fault::Transient);
        assert_eq!(exhausted.fault(), Fault::Transient);
        let unreadable = LlmError::Malformed {
            detail: "not JSON".into(),
        };
        assert_eq!(unreadable.fault(), Fault::Internal);
        let spent = LlmError::BudgetExceeded {
            what: "calls".into(),
        };
        assert_eq!(spent.fault(), Fault::Budget);
    }
}
