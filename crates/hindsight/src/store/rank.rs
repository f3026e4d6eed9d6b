//! How much to trust a resolution: pure functions over its outcome counts and last use.
//!
//! Confidence is the Wilson score lower bound of the success rate (z = 1.96), so one lucky success
//! (1/1) ranks below a long record (9/10), times an exponential recency factor on the last use.
//! Nothing here reads a clock or touches the store.

use super::entry::{Outcomes, Timestamp};

/// z for a 95% interval.
pub const WILSON_Z: f64 = 1.96;

/// Default half-life of the recency factor, in days.
pub const DEFAULT_HALF_LIFE_DAYS: f64 = 90.0;

/// The lower bound of the Wilson score interval for `succeeded` out of `applied` at `z`.
/// Zero when nothing was applied.
pub fn wilson_lower_bound(succeeded: u64, applied: u64, z: f64) -> f64 {
    if applied == 0 {
        return 0.0;
    }
    let n = applied as f64;
    let p = (succeeded.min(applied) as f64) / n;
    let z2 = z * z;
    let centre = p + z2 / (2.0 * n);
    let margin = z * ((p * (1.0 - p) + z2 / (4.0 * n)) / n).sqrt();
    ((centre - margin) / (1.0 + z2 / n)).max(0.0)
}

/// Exponential decay on the time since `last_used`: 1 when used now (or never), 0.5 after one
/// half-life. Never-used resolutions are not penalized; their Wilson bound is already zero.
pub fn recency_factor(last_used: Option<Timestamp>, now: Timestamp, half_life_days: f64) -> f64 {
    let Some(last) = last_used else {
        return 1.0;
    };
    if half_life_days <= 0.0 {
        return 1.0;
    }
    let age = last.days_until(now);
    0.5_f64.powf(age / half_life_days)
}

/// The score resolutions are ranked by: Wilson lower bound times recency.
pub fn confidence(outcomes: &Outcomes, now: Timestamp, half_life_days: f64) -> f64 {
    let bound = wilson_lower_bound(outcomes.succeeded, outcomes.applied, WILSON_Z);
    bound * recency_factor(outcomes.last_used, now, half_life_days)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcomes(succeeded: u64, applied: u64, last_used: Option<u64>) -> Outcomes {
        Outcomes {
            applied,
            succeeded,
            failed: applied - succeeded,
            last_used: last_used.map(Timestamp::from_unix_secs),
        }
    }

    const NOW: u64 = 1_800_000_000;
    const DAY: u64 = 86_400;

    #[test]
    fn one_lucky_success_ranks_below_nine_of_ten_and_above_nothing() {
        let now = Timestamp::from_unix_secs(NOW);
        let lucky = confidence(&outcomes(1, 1, Some(NOW)), now, 90.0);
        let steady = confidence(&outcomes(9, 10, Some(NOW)), now, 90.0);
        let untried = confidence(&outcomes(0, 0, None), now, 90.0);
        assert!(steady > lucky, "9/10 ({steady}) must outrank 1/1 ({lucky})");
        assert!(lucky > untried);
        assert_eq!(untried, 0.0);
    }

    #[test]
    fn wilson_bound_matches_known_values() {
        assert!((wilson_lower_bound(1, 1, WILSON_Z) - 0.2065).abs() < 1e-3);
        assert!((wilson_lower_bound(9, 10, WILSON_Z) - 0.5958).abs() < 1e-3);
        assert_eq!(wilson_lower_bound(0, 5, WILSON_Z), 0.0);
        assert!(wilson_lower_bound(100, 100, WILSON_Z) > 0.96);
    }

    #[test]
    fn recency_halves_after_one_half_life() {
        let now = Timestamp::from_unix_secs(NOW);
        let old = Some(Timestamp::from_unix_secs(NOW - 90 * DAY));
        assert!((recency_factor(old, now, 90.0) - 0.5).abs() < 1e-9);
        assert_eq!(recency_factor(None, now, 90.0), 1.0);
        let recent = confidence(&outcomes(9, 10, Some(NOW)), now, 90.0);
        let stale = confidence(&outcomes(9, 10, Some(NOW - 365 * DAY)), now, 90.0);
        assert!(recent > stale);
    }
}
