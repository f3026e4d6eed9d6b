//! [`Budgeted`]: a provider wrapper that enforces per-run caps on calls, tokens and cost before
//! each call and counts what each call used.
//!
//! The check is a pure function over the caps and the spend so far ([`first_exceeded`]). The
//! wrapper does not retry and does not estimate the next call's size: a call is refused once a cap
//! is reached.

use std::sync::{Mutex, PoisonError};

use super::{ChatRequest, Completion, LlmError, Provider};
use meta_agent_config::LlmSettings;

/// Per-run caps; `None` means no cap.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BudgetCaps {
    pub max_calls: Option<u32>,
    pub max_tokens: Option<u64>,
    pub max_cost_usd: Option<f64>,
}

impl BudgetCaps {
    /// `llm.max_calls`, `llm.max_tokens`, `llm.max_cost_usd`.
    pub fn from_settings(settings: &LlmSettings) -> Self {
        Self {
            max_calls: settings.max_calls,
            max_tokens: settings.max_tokens,
            max_cost_usd: settings.max_cost_usd,
        }
    }
}

/// What the run has used so far.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spent {
    /// Calls started, failed ones included.
    pub calls: u32,
    pub tokens: u64,
    pub cost_usd: f64,
}

/// The first cap that `spent` has reached, described for the final status.
pub fn first_exceeded(caps: &BudgetCaps, spent: &Spent) -> Option<String> {
    if let Some(max) = caps.max_calls.filter(|&max| spent.calls >= max) {
        return Some(format!("{} of {max} LLM calls made", spent.calls));
    }
    if let Some(max) = caps.max_tokens.filter(|&max| spent.tokens >= max) {
        return Some(format!("{} of {max} tokens used", spent.tokens));
    }
    let max = caps.max_cost_usd.filter(|&max| spent.cost_usd >= max)?;
    Some(format!("${:.4} of ${max:.4} spent", spent.cost_usd))
}

/// A provider under caps.
#[derive(Debug)]
pub struct Budgeted<P> {
    inner: P,
    caps: BudgetCaps,
    spent: Mutex<Spent>,
}

impl<P: Provider> Budgeted<P> {
    pub fn new(inner: P, caps: BudgetCaps) -> Self {
        Self {
            inner,
            caps,
            spent: Mutex::new(Spent::default()),
        }
    }

    /// What the run has used so far.
    pub fn spent(&self) -> Spent {
        *self.spent.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Refuses when a cap is reached; otherwise counts the call.
    fn admit(&self) -> Result<(), LlmError> {
        let mut spent = self.spent.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(what) = first_exceeded(&self.caps, &spent) {
            return Err(LlmError::BudgetExceeded { what });
        }
        spent.calls += 1;
        Ok(())
    }

    fn record(&self, completion: &Completion) {
        let mut spent = self.spent.lock().unwrap_or_else(PoisonError::into_inner);
        spent.tokens += completion.usage.total();
        spent.cost_usd += completion.cost_usd;
    }
}

impl<P: Provider> Provider for Budgeted<P> {
    async fn chat(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        self.admit()?;
        let completion = self.inner.chat(request).await?;
        self.record(&completion);
        Ok(completion)
    }

    fn name(&self) -> &str {
        self.inner.name()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cap_is_reported_when_reached() {
        let caps = BudgetCaps {
            max_calls: Some(3),
            max_tokens: Some(100),
            max_cost_usd: Some(0.5),
        };
        let under = Spent {
            calls: 2,
            tokens: 99,
            cost_usd: 0.49,
        };
        assert_eq!(first_exceeded(&caps, &under), None);
        let calls = first_exceeded(&caps, &Spent { calls: 3, ..under });
        assert_eq!(calls.as_deref(), Some("3 of 3 LLM calls made"));
        assert!(
            first_exceeded(
                &caps,
                &Spent {
                    tokens: 100,
                    ..under
                }
            )
            .is_some()
        );
        assert!(
            first_exceeded(
                &caps,
                &Spent {
                    cost_usd: 0.5,
                    ..under
                }
            )
            .is_some()
        );
        assert_eq!(
            first_exceeded(&BudgetCaps::default(), &Spent { calls: 99, ..under }),
            None
        );
    }
}
