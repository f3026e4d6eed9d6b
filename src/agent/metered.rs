//! [`Metered`]: the provider as one act sees it: every call (model, tokens, cost, duration) is
//! reported on the run's event stream as an `LlmCall` event the moment it answers or fails, and
//! summed up so the act can report its usage.
//!
//! A thin wrapper: it neither retries nor refuses; a call the budget refused before sending is
//! not a call and is neither reported nor counted.

use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use crate::llm::{ChatRequest, Completion, LlmError, Provider};
use crate::protocol::builder::Progress;
use crate::protocol::event::Event;
use crate::protocol::records::Usage;

/// Reports and counts the calls made through it.
pub struct Metered<'a, P: Provider> {
    inner: &'a P,
    progress: Progress<'a>,
    usage: Mutex<Usage>,
}

impl<'a, P: Provider> Metered<'a, P> {
    pub fn new(inner: &'a P, progress: Progress<'a>) -> Self {
        Metered {
            inner,
            progress,
            usage: Mutex::new(Usage::default()),
        }
    }

    /// What the calls so far used.
    pub fn usage(&self) -> Usage {
        self.usage
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn record(&self, call: &Event) {
        if let Event::LlmCall {
            input_tokens,
            output_tokens,
            cost_usd,
            ..
        } = call
        {
            let mut usage = self.usage.lock().unwrap_or_else(PoisonError::into_inner);
            usage.llm_calls += 1;
            usage.input_tokens += input_tokens;
            usage.output_tokens += output_tokens;
            usage.cost_usd += cost_usd;
        }
        self.progress.emit(call);
    }
}

impl<P: Provider> Provider for Metered<'_, P> {
    async fn chat(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        let started = Instant::now();
        let started_unix_ms = crate::engine::run::now_ms();
        let result = self.inner.chat(request).await;
        let (input_tokens, output_tokens, cost_usd) = match &result {
            Ok(completion) => (
                completion.usage.input_tokens,
                completion.usage.output_tokens,
                completion.cost_usd,
            ),
            Err(LlmError::BudgetExceeded { .. } | LlmError::NotConfigured) => return result,
            Err(_) => (0, 0, 0.0),
        };
        self.record(&Event::LlmCall {
            provider: self.inner.name().to_owned(),
            model: request.model.clone(),
            input_tokens,
            output_tokens,
            cost_usd,
            started_unix_ms,
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        });
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
        let events = crate::protocol::event::Recorder::default();
        let metered = Metered::new(&inner, Progress::to(&events));
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
        let calls = events.events();
        assert_eq!(calls.len(), 2, "{calls:?}");
        let Event::LlmCall {
            provider,
            model,
            input_tokens,
            output_tokens,
            ..
        } = &calls[0]
        else {
            panic!("{calls:?}");
        };
        assert_eq!((provider.as_str(), model.as_str()), ("scripted", "fast"));
        assert_eq!((*input_tokens, *output_tokens), (30, 4));
        assert!(matches!(
            &calls[1],
            Event::LlmCall {
                input_tokens: 0,
                ..
            }
        ));
        let usage = metered.usage();
        assert_eq!((usage.llm_calls, usage.input_tokens), (2, 30));
        assert!((usage.cost_usd - 0.5).abs() < 1e-9);
    }
}
