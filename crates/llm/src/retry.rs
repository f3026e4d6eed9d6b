//! Retrying transient failures: the backoff schedule, `retry-after` parsing, and the loop that
//! re-sends a request.
//!
//! [`backoff`] and [`parse_retry_after`] are pure and unit-tested; waiting goes through a
//! [`Sleeper`] so tests never wait for real. This module decides nothing about which errors are
//! transient: that is [`LlmError::is_transient`].

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;

use super::LlmError;
use meta_agent_protocol::deadline::Deadline;

/// First backoff delay.
const BASE_DELAY: Duration = Duration::from_millis(500);
/// Longest computed backoff delay.
const MAX_DELAY: Duration = Duration::from_secs(30);
/// Longest `retry-after` honoured; a longer wait is cut to this.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(120);
/// Default number of attempts, the first included.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 4;

/// The delay before attempt `attempt + 1`, after attempt `attempt` (1-based) failed: the
/// service's `retry-after` when it gave one (capped at two minutes), otherwise 0.5 s doubled per
/// attempt, capped at 30 s. Jitter is applied separately by [`with_jitter`].
pub fn backoff(attempt: u32, retry_after: Option<Duration>) -> Duration {
    if let Some(wait) = retry_after {
        return wait.min(MAX_RETRY_AFTER);
    }
    let doublings = attempt.saturating_sub(1).min(16);
    BASE_DELAY.saturating_mul(1 << doublings).min(MAX_DELAY)
}

/// "Equal jitter": half of `delay` fixed, the other half scaled by `unit` (in `[0, 1]`).
pub fn with_jitter(delay: Duration, unit: f64) -> Duration {
    let half = delay / 2;
    half + half.mul_f64(unit.clamp(0.0, 1.0))
}

/// Reads a `retry-after` header value: whole seconds or an HTTP-date (relative to `now`).
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    if let Ok(seconds) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(seconds).ok();
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Waits. The real one sleeps on tokio's timer; tests record the delays and return at once.
pub trait Sleeper: Send + Sync + fmt::Debug {
    fn sleep(&self, delay: Duration) -> BoxFuture<'static, ()>;
}

/// The real sleeper.
#[derive(Debug, Default)]
pub struct TokioSleeper;

impl Sleeper for TokioSleeper {
    fn sleep(&self, delay: Duration) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(delay))
    }
}

/// How often to try, and how to wait in between.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// Attempts, the first included (at least 1).
    pub max_attempts: u32,
    pub sleeper: Arc<dyn Sleeper>,
    /// Whether to add jitter to computed delays (never to a `retry-after`).
    pub jitter: bool,
    /// The run's deadline: no wait passes it, no attempt starts after it.
    pub deadline: Deadline,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            sleeper: Arc::new(TokioSleeper),
            jitter: true,
            deadline: Deadline::none(),
        }
    }
}

impl RetryPolicy {
    /// The wait after attempt `attempt` failed with `error`.
    fn delay(&self, attempt: u32, error: &LlmError) -> Duration {
        let retry_after = error.retry_after();
        let delay = backoff(attempt, retry_after);
        if self.jitter && retry_after.is_none() {
            with_jitter(delay, fastrand::f64())
        } else {
            delay
        }
    }

    /// Runs `attempt` until it succeeds, fails for good, or the attempts run out.
    pub async fn run<T, F, Fut>(&self, mut attempt: F) -> Result<T, LlmError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, LlmError>>,
    {
        let max = self.max_attempts.max(1);
        let mut n = 1;
        loop {
            let error = match attempt().await {
                Ok(value) => return Ok(value),
                Err(error) if !error.is_transient() => return Err(error),
                Err(error) => error,
            };
            if n >= max {
                let last = Box::new(error);
                return Err(LlmError::RetriesExhausted { attempts: n, last });
            }
            let delay = self.delay(n, &error);
            if self.deadline.bound(delay) < delay {
                return Err(LlmError::DeadlinePassed);
            }
            tracing::warn!(attempt = n, ?delay, %error, "LLM call failed; retrying");
            self.sleeper.sleep(delay).await;
            n += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_caps() {
        assert_eq!(backoff(1, None), Duration::from_millis(500));
        assert_eq!(backoff(2, None), Duration::from_secs(1));
        assert_eq!(backoff(3, None), Duration::from_secs(2));
        assert_eq!(backoff(7, None), Duration::from_secs(30));
        assert_eq!(backoff(u32::MAX, None), Duration::from_secs(30));
    }

    #[test]
    fn backoff_honours_retry_after_within_a_cap() {
        assert_eq!(
            backoff(1, Some(Duration::from_secs(7))),
            Duration::from_secs(7)
        );
        assert_eq!(backoff(1, Some(Duration::from_secs(9999))), MAX_RETRY_AFTER);
    }

    #[test]
    fn jitter_stays_between_half_and_whole() {
        let delay = Duration::from_secs(2);
        assert_eq!(with_jitter(delay, 0.0), Duration::from_secs(1));
        assert_eq!(with_jitter(delay, 1.0), delay);
        assert_eq!(with_jitter(delay, 7.0), delay);
    }

    #[test]
    fn retry_after_seconds_and_http_date() {
        let now = httpdate::parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        assert_eq!(parse_retry_after(" 3 ", now), Some(Duration::from_secs(3)));
        assert_eq!(
            parse_retry_after("1.5", now),
            Some(Duration::from_millis(1500))
        );
        let later = "Sun, 06 Nov 1994 08:49:47 GMT";
        assert_eq!(parse_retry_after(later, now), Some(Duration::from_secs(10)));
        let past = "Sun, 06 Nov 1994 08:49:00 GMT";
        assert_eq!(parse_retry_after(past, now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-1", now), None);
    }
}
