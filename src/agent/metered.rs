//! [`Metered`]: the provider as one act sees it, recording every call (model, tokens, cost,
//! duration, failure) so the act can report its usage and the engine can emit one `LlmCall`
//! event per call.
//!
//! A thin wrapper: it neither retries nor refuses; a call the budget refused before sending is
//! not a call and is not recorded.

use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use crate::llm::{ChatRequest, Completion, LlmError, Provider};
use crate::protocol::builder::LlmCallRecord;
use crate::protocol::records::Usage;

/// Records the calls made through it.
pub struct Metered<'a, P: Provider> {
    inner: &'a P,
    calls: Mutex<Vec<LlmCallRecord>>,
}

impl<'a, P: Provider> Metered<'a, P> {
    pub fn new(inner: &'a P) -> Self {
        Metered {
            inner,
            calls: Mutex::new(Vec::new()),
        }
    }

    /// The calls so far, in order.
    pub fn calls(&self) -> Vec<LlmCallRecord> {
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// What the calls so far used.
    pub fn usage(&self) -> Usage {
        let calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        calls.iter().fold(Usage::default(), |mut usage, call| {
            usage.llm_calls += 1;
            usage.input_tokens += call.input_tokens;
            usage.output_tokens += call.output_tokens;
            usage.cost_usd += call.cost_usd;
            usage
        })
    }

    fn record(&self, call: LlmCallRecord) {
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(call);
    }
}

impl<P: Provider> Provider for Metered<'_, P> {
    async fn chat(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        let started = Instant::now();
        let started_unix_ms = crate::engine::run::now_ms();
        let result = self.inner.chat(request).await;
        let mut call = LlmCallRecord {
            provider: self.inner.name().to_owned(),
            model: request.model.clone(),
            started_unix_ms,
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            ..LlmCallRecord::default()
        };
        match &result {
            Ok(completion) => {
                call.input_tokens = completion.usage.input_tokens;
                call.output_tokens = completion.usage.output_tokens;
                call.cost_usd = completion.cost_usd;
            }
            Err(LlmError::BudgetExceeded { .. } | LlmError::NotConfigured) => return result,
            Err(err) => call.error = err.to_string(),
        }
        self.record(call);
        result
    }

    fn name(&self) -> &str {
        self.inner.name()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{StopReason, Usage as TokenUsage};

    /// Answers, then fails, then refuses for the budget.
    struct Scripted(Mutex<u32>);

    impl Provider for Scripted {
        async fn chat(&self, _request: &ChatRequest) -> Result<Completion, LlmError> {
            let mut calls = self.0.lock().unwrap();
            *calls += 1;
            match *calls {
                1 => Ok(Completion {
                    text: "ok".into(),
                    tool_calls: Vec::new(),
                    usage: TokenUsage {
                        input_tokens: 30,
                        output_tokens: 4,
                    },
                    cost_usd: 0.5,
                    stop_reason: StopReason::EndTurn,
                    cut_call: None,
                }),
                2 => Err(LlmError::Unavailable {
                    status: 503,
                    retry_after: None,
                    message: "down".into(),
                }),
                _ => Err(LlmError::BudgetExceeded {
                    what: "1 of 1 LLM calls made".into(),
                }),
            }
        }

        fn name(&self) -> &str {
            "scripted"
        }
    }

    #[tokio::test]
    async fn answered_and_failed_calls_are_recorded_refused_ones_are_not() {
        let inner = Scripted(Mutex::new(0));
        let metered = Metered::new(&inner);
        let request = ChatRequest {
            model: "fast".into(),
            messages: Vec::new(),
            tools: Vec::new(),
            max_tokens: 10,
            temperature: None,
            stream: false,
        };
        for _ in 0..3 {
            let _ = metered.chat(&request).await;
        }
        let calls = metered.calls();
        assert_eq!(calls.len(), 2);
        assert_eq!(
            (calls[0].provider.as_str(), calls[0].model.as_str()),
            ("scripted", "fast")
        );
        assert_eq!((calls[0].input_tokens, calls[0].output_tokens), (30, 4));
        assert!(calls[0].error.is_empty());
        assert!(calls[1].error.contains("503"), "{}", calls[1].error);
        let usage = metered.usage();
        assert_eq!((usage.llm_calls, usage.input_tokens), (2, 30));
        assert!((usage.cost_usd - 0.5).abs() < 1e-9);
    }
}
