//! [`Metered`]: the provider as one act sees it, recording every call (model, tokens, cost,
//! duration, failure) so the act can report its usage and the engine can emit one `LlmCall`
//! event per call.
//!
//! A thin wrapper: it neither retries nor refuses; a call the budget refused before sending is
//! not a call and is not recorded.

use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use crate::engine::builder::LlmCallRecord;
use crate::engine::state::Usage;
use crate::llm::{ChatRequest, Completion, LlmError, Provider};

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
        let result = self.inner.chat(request).await;
        let mut call = LlmCallRecord {
            provider: self.inner.name().to_owned(),
            model: request.model.clone(),
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
