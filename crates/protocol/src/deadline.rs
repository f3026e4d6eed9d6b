//! The run's one deadline: `loop.wall_clock` from the start of a run (less what a resumed session
//! already spent), and on GitHub no later than the job's remaining minutes less a margin. Every
//! LLM request (its whole-request and idle-stream timeouts), every retry wait and the loop itself
//! are bounded by what remains; running out ends the run escalated ("the time budget is spent").

use std::time::{Duration, Instant};

/// When the run's time is up; `None` is no deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Deadline {
    at: Option<Instant>,
}

impl Deadline {
    /// No deadline.
    pub fn none() -> Deadline {
        Deadline { at: None }
    }

    /// `budget` from now.
    pub fn after(budget: Duration) -> Deadline {
        Deadline {
            at: Instant::now().checked_add(budget),
        }
    }

    /// The earlier of the two.
    pub fn min(self, other: Deadline) -> Deadline {
        let at = match (self.at, other.at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Deadline { at }
    }

    /// What remains, `None` without a deadline.
    pub fn remaining(&self) -> Option<Duration> {
        self.at
            .map(|at| at.saturating_duration_since(Instant::now()))
    }

    /// Whether the time is up.
    pub fn is_spent(&self) -> bool {
        self.remaining().is_some_and(|left| left.is_zero())
    }

    /// `limit`, or what remains when that is shorter.
    pub fn bound(&self, limit: Duration) -> Duration {
        self.remaining().map_or(limit, |left| left.min(limit))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_what_remains_when_shorter() {
        let deadline = Deadline::after(Duration::from_secs(60));
        assert!(deadline.bound(Duration::from_secs(300)) <= Duration::from_secs(60));
        assert_eq!(
            deadline.bound(Duration::from_secs(1)),
            Duration::from_secs(1)
        );
        assert_eq!(
            Deadline::none().bound(Duration::from_secs(300)),
            Duration::from_secs(300)
        );
        assert!(!deadline.is_spent());
        assert!(Deadline::after(Duration::ZERO).is_spent());
        assert!(!Deadline::none().is_spent());
    }

    #[test]
    fn the_earlier_deadline_wins() {
        let soon = Deadline::after(Duration::from_secs(1));
        let late = Deadline::after(Duration::from_secs(100));
        assert_eq!(soon.min(late), soon);
        assert_eq!(late.min(soon), soon);
        assert_eq!(Deadline::none().min(soon), soon);
    }
}
