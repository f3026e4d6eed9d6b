//! Pacing decisions for the GitHub REST client, as pure functions over plain values: is this
//! answer a rate limit and how long must we wait ([`classify`]), may we wait that long within
//! the budget and the job's deadline ([`plan_wait`]), and how long to back off before re-reading
//! after a transient failure ([`backoff`]).
//!
//! Nothing here sleeps, reads a clock or draws random numbers: the caller passes the time and
//! the jitter in, so every rule is unit-tested without tokio.

use std::time::Duration;

/// How the client paces itself against GitHub's limits and transient failures.
#[derive(Debug, Clone, PartialEq)]
pub struct RatePolicy {
    /// The least wait after a secondary rate limit (GitHub asks for at least a minute).
    pub secondary_min_wait: Duration,
    /// The most the client waits on rate limits and back-offs over its whole life.
    pub max_total_wait: Duration,
    /// Time kept free before the job's deadline, so a final status can still be posted.
    pub final_reserve: Duration,
    /// Extra random wait added to a rate-limit wait, as a fraction of it (0.1 = up to 10 %).
    pub jitter_fraction: f64,
    /// How many times a read is re-sent after a connection failure or a 5xx.
    pub read_retries: u32,
    /// The first back-off before re-sending a read; doubled each attempt.
    pub backoff_base: Duration,
    /// The least time between two content-creating writes (GitHub asks for at least a second
    /// between POST/PATCH requests, or answers with a secondary rate limit).
    pub write_spacing: Duration,
    /// The longest single back-off.
    pub backoff_max: Duration,
}

impl Default for RatePolicy {
    fn default() -> Self {
        Self {
            secondary_min_wait: Duration::from_secs(60),
            max_total_wait: Duration::from_secs(15 * 60),
            final_reserve: Duration::from_secs(60),
            jitter_fraction: 0.1,
            read_retries: 3,
            backoff_base: Duration::from_millis(500),
            backoff_max: Duration::from_secs(8),
            write_spacing: Duration::from_secs(1),
        }
    }
}

/// The rate-limit headers of one answer, already parsed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RateHeaders {
    /// `retry-after`, in seconds (an HTTP date is converted by the caller).
    pub retry_after_secs: Option<u64>,
    /// `x-ratelimit-remaining`.
    pub remaining: Option<u64>,
    /// `x-ratelimit-reset`, unix seconds.
    pub reset_unix: Option<u64>,
}

/// When a successful answer says the quota is spent (`x-ratelimit-remaining: 0`), the unix time
/// until which the next request should wait (`x-ratelimit-reset`), instead of being refused.
pub fn exhausted_until(headers: &RateHeaders, now_unix: u64) -> Option<u64> {
    match (headers.remaining, headers.reset_unix) {
        (Some(0), Some(reset)) if reset > now_unix => Some(reset),
        _ => None,
    }
}

/// Which limit GitHub applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitKind {
    /// The hourly quota (`x-ratelimit-remaining: 0`), a plain `retry-after`, or a limit
    /// message without either (then waited like a secondary one).
    Primary,
    /// An abuse-detection ("secondary") limit.
    Secondary,
}

/// What an answer means for pacing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateVerdict {
    /// Not a rate limit: the status means what it says.
    NotLimited,
    /// Rate limited: the request was not performed; resend after at least `wait`.
    Limited { kind: LimitKind, wait: Duration },
}

/// Reads one answer: a 429 is always a rate limit; a 403 is one when `retry-after` is present,
/// when `x-ratelimit-remaining` is 0, or when the message says "rate limit". The wait is the
/// server's `retry-after`, else the time until `x-ratelimit-reset`, at least one second (so a
/// resend loop always makes progress against the budget), and never less than
/// `secondary_min_wait` for a secondary limit or a limit that names no time.
pub fn classify(
    status: u16,
    headers: &RateHeaders,
    body: &str,
    now_unix: u64,
    policy: &RatePolicy,
) -> RateVerdict {
    if status != 403 && status != 429 {
        return RateVerdict::NotLimited;
    }
    let message = body.to_ascii_lowercase();
    let secondary = message.contains("secondary rate limit");
    let exhausted = headers.remaining == Some(0);
    let says_limit = message.contains("rate limit");
    let too_many = status == 429;
    if !(too_many || secondary || exhausted || says_limit || headers.retry_after_secs.is_some()) {
        return RateVerdict::NotLimited;
    }
    let until_reset = headers
        .reset_unix
        .filter(|_| exhausted)
        .map(|reset| reset.saturating_sub(now_unix).max(1));
    let server_wait = headers
        .retry_after_secs
        .or(until_reset)
        .map(Duration::from_secs);
    let kind = if secondary {
        LimitKind::Secondary
    } else {
        LimitKind::Primary
    };
    let wait = match server_wait {
        Some(wait) if !secondary => wait.max(Duration::from_secs(1)),
        _ => server_wait
            .unwrap_or_default()
            .max(policy.secondary_min_wait),
    };
    RateVerdict::Limited { kind, wait }
}

/// How much waiting is still allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitBudget {
    /// Waited so far (rate limits and back-offs).
    pub waited: Duration,
    /// Time left until the job's deadline, if there is one.
    pub until_deadline: Option<Duration>,
}

impl WaitBudget {
    /// The longest wait still allowed: under `max_total_wait`, and ending `final_reserve`
    /// before the deadline.
    pub fn cap(&self, policy: &RatePolicy) -> Duration {
        let total = policy.max_total_wait.saturating_sub(self.waited);
        match self.until_deadline {
            Some(left) => total.min(left.saturating_sub(policy.final_reserve)),
            None => total,
        }
    }
}

/// Whether to wait, and how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitPlan {
    /// Sleep this long, then resend.
    Sleep(Duration),
    /// The required wait does not fit in the budget: give up.
    GiveUp { required: Duration },
}

/// Adds jitter (`jitter_unit` in `[0, 1)`, scaled by `jitter_fraction`) to a required wait and
/// fits it in the budget: never below `required`, never above the budget's cap.
pub fn plan_wait(
    required: Duration,
    jitter_unit: f64,
    budget: &WaitBudget,
    policy: &RatePolicy,
) -> WaitPlan {
    let cap = budget.cap(policy);
    if required > cap {
        return WaitPlan::GiveUp { required };
    }
    let unit = jitter_unit.clamp(0.0, 1.0);
    let fraction = policy.jitter_fraction.clamp(0.0, 1.0);
    let jitter = required.mul_f64(fraction * unit);
    WaitPlan::Sleep(required.saturating_add(jitter).min(cap))
}

/// The back-off before re-sending a read for the `attempt`-th time (0-based): exponential from
/// How long a write must still wait when the previous one ended `since_last` ago (`None`: no
/// write yet).
pub fn write_wait(since_last: Option<Duration>, policy: &RatePolicy) -> Duration {
    since_last.map_or(Duration::ZERO, |since| {
        policy.write_spacing.saturating_sub(since)
    })
}

/// `backoff_base`, capped at `backoff_max`, scaled by `0.5 + jitter_unit / 2` (equal jitter).
pub fn backoff(attempt: u32, jitter_unit: f64, policy: &RatePolicy) -> Duration {
    let factor = 2u32.saturating_pow(attempt.min(16));
    let full = policy
        .backoff_base
        .saturating_mul(factor)
        .min(policy.backoff_max);
    full.mul_f64(0.5 + jitter_unit.clamp(0.0, 1.0) / 2.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_wait_out_the_rest_of_the_spacing() {
        let policy = RatePolicy::default();
        assert_eq!(write_wait(None, &policy), Duration::ZERO);
        assert_eq!(
            write_wait(Some(Duration::from_millis(300)), &policy),
            Duration::from_millis(700)
        );
        assert_eq!(
            write_wait(Some(Duration::from_secs(2)), &policy),
            Duration::ZERO
        );
    }
    use proptest::prelude::*;

    const NOW: u64 = 1_800_000_000;

    fn limited(wait_secs: u64, kind: LimitKind) -> RateVerdict {
        RateVerdict::Limited {
            kind,
            wait: Duration::from_secs(wait_secs),
        }
    }

    #[test]
    fn ordinary_errors_are_not_limits() {
        let policy = RatePolicy::default();
        let none = RateHeaders::default();
        for status in [200, 401, 404, 422, 500, 502] {
            assert_eq!(
                classify(status, &none, "{}", NOW, &policy),
                RateVerdict::NotLimited
            );
        }
        let forbidden = r#"{"message":"Resource not accessible by integration"}"#;
        assert_eq!(
            classify(403, &none, forbidden, NOW, &policy),
            RateVerdict::NotLimited
        );
    }

    #[test]
    fn a_bare_429_waits_the_minimum() {
        let verdict = classify(
            429,
            &RateHeaders::default(),
            "",
            NOW,
            &RatePolicy::default(),
        );
        assert_eq!(verdict, limited(60, LimitKind::Primary));
    }

    #[test]
    fn retry_after_is_the_wait() {
        let headers = RateHeaders {
            retry_after_secs: Some(7),
            ..RateHeaders::default()
        };
        let verdict = classify(429, &headers, "", NOW, &RatePolicy::default());
        assert_eq!(verdict, limited(7, LimitKind::Primary));
    }

    #[test]
    fn exhausted_quota_waits_until_the_reset() {
        let headers = RateHeaders {
            retry_after_secs: None,
            remaining: Some(0),
            reset_unix: Some(NOW + 42),
        };
        let body = r#"{"message":"API rate limit exceeded for installation ID 1."}"#;
        let verdict = classify(403, &headers, body, NOW, &RatePolicy::default());
        assert_eq!(verdict, limited(42, LimitKind::Primary));
    }

    #[test]
    fn a_reset_in_the_past_still_waits_a_second() {
        let headers = RateHeaders {
            retry_after_secs: None,
            remaining: Some(0),
            reset_unix: Some(NOW - 5),
        };
        let verdict = classify(429, &headers, "", NOW, &RatePolicy::default());
        assert_eq!(verdict, limited(1, LimitKind::Primary));
    }

    #[test]
    fn remaining_quota_with_a_reset_is_not_a_limit() {
        let headers = RateHeaders {
            retry_after_secs: None,
            remaining: Some(12),
            reset_unix: Some(NOW + 100),
        };
        let body = r#"{"message":"Must have admin rights to Repository."}"#;
        let verdict = classify(403, &headers, body, NOW, &RatePolicy::default());
        assert_eq!(verdict, RateVerdict::NotLimited);
    }

    #[test]
    fn secondary_limits_wait_at_least_the_policy_minimum() {
        let body = r#"{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}"#;
        let policy = RatePolicy::default();
        let bare = classify(403, &RateHeaders::default(), body, NOW, &policy);
        assert_eq!(bare, limited(60, LimitKind::Secondary));
        let short = RateHeaders {
            retry_after_secs: Some(3),
            ..RateHeaders::default()
        };
        let verdict = classify(403, &short, body, NOW, &policy);
        assert_eq!(verdict, limited(60, LimitKind::Secondary));
        let long = RateHeaders {
            retry_after_secs: Some(120),
            ..RateHeaders::default()
        };
        let verdict = classify(403, &long, body, NOW, &policy);
        assert_eq!(verdict, limited(120, LimitKind::Secondary));
    }

    #[test]
    fn a_limit_message_without_headers_waits_the_minimum() {
        let body = r#"{"message":"API rate limit exceeded"}"#;
        let verdict = classify(
            403,
            &RateHeaders::default(),
            body,
            NOW,
            &RatePolicy::default(),
        );
        assert_eq!(verdict, limited(60, LimitKind::Primary));
    }

    #[test]
    fn the_deadline_reserve_caps_the_wait() {
        let policy = RatePolicy::default();
        let budget = WaitBudget {
            waited: Duration::ZERO,
            until_deadline: Some(Duration::from_secs(90)),
        };
        assert_eq!(budget.cap(&policy), Duration::from_secs(30));
        let plan = plan_wait(Duration::from_secs(31), 0.0, &budget, &policy);
        assert_eq!(
            plan,
            WaitPlan::GiveUp {
                required: Duration::from_secs(31)
            }
        );
        let plan = plan_wait(Duration::from_secs(29), 0.99, &budget, &policy);
        assert_eq!(plan, WaitPlan::Sleep(Duration::from_secs(30)));
    }

    #[test]
    fn the_total_cap_counts_what_was_already_waited() {
        let policy = RatePolicy {
            max_total_wait: Duration::from_secs(100),
            ..RatePolicy::default()
        };
        let budget = WaitBudget {
            waited: Duration::from_secs(95),
            until_deadline: None,
        };
        let plan = plan_wait(Duration::from_secs(6), 0.0, &budget, &policy);
        assert!(matches!(plan, WaitPlan::GiveUp { .. }));
    }

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let policy = RatePolicy::default();
        assert_eq!(backoff(0, 1.0, &policy), Duration::from_millis(500));
        assert_eq!(backoff(1, 1.0, &policy), Duration::from_secs(1));
        assert_eq!(backoff(2, 0.0, &policy), Duration::from_secs(1));
        assert_eq!(backoff(30, 1.0, &policy), Duration::from_secs(8));
    }

    proptest! {
        #[test]
        fn waits_respect_the_server_and_the_cap(
            retry_after in proptest::option::of(0u64..10_000),
            remaining in proptest::option::of(0u64..3),
            reset_offset in proptest::option::of(0u64..10_000),
            secondary in any::<bool>(),
            status in prop_oneof![Just(403u16), Just(429u16)],
            jitter in 0.0f64..1.0,
            waited in 0u64..2_000,
            until_deadline in proptest::option::of(0u64..5_000),
        ) {
            let policy = RatePolicy::default();
            let headers = RateHeaders {
                retry_after_secs: retry_after,
                remaining,
                reset_unix: reset_offset.map(|offset| NOW + offset),
            };
            let body = if secondary { "You have exceeded a secondary rate limit" } else { "" };
            let budget = WaitBudget {
                waited: Duration::from_secs(waited),
                until_deadline: until_deadline.map(Duration::from_secs),
            };
            if let RateVerdict::Limited { wait, .. } = classify(status, &headers, body, NOW, &policy) {
                if let Some(seconds) = retry_after {
                    prop_assert!(wait >= Duration::from_secs(seconds));
                }
                if secondary {
                    prop_assert!(wait >= policy.secondary_min_wait);
                }
                match plan_wait(wait, jitter, &budget, &policy) {
                    WaitPlan::Sleep(sleep) => {
                        prop_assert!(sleep >= wait);
                        prop_assert!(sleep <= budget.cap(&policy));
                    }
                    WaitPlan::GiveUp { required } => {
                        prop_assert!(required > budget.cap(&policy));
                    }
                }
            } else {
                prop_assert!(retry_after.is_none() && remaining != Some(0) && !secondary);
            }
        }
    }
    #[test]
    fn a_spent_quota_on_a_success_paces_the_next_request() {
        let spent = RateHeaders {
            retry_after_secs: None,
            remaining: Some(0),
            reset_unix: Some(1_000),
        };
        assert_eq!(exhausted_until(&spent, 990), Some(1_000));
        assert_eq!(exhausted_until(&spent, 1_000), None);
        let left = RateHeaders {
            remaining: Some(3),
            ..spent
        };
        assert_eq!(exhausted_until(&left, 990), None);
    }
}
