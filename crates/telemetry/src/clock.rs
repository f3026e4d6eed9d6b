//! Where the time stamps of the audit log and the trace come from: the system clock in a run, a
//! fixed clock in tests. Formats RFC 3339 in UTC with milliseconds; nothing else.

use std::time::SystemTime;

/// A source of the current time, injected into the sinks that stamp their lines.
pub trait Clock: Send + Sync {
    fn now(&self) -> SystemTime;
}

impl<F> Clock for F
where
    F: Fn() -> SystemTime + Send + Sync,
{
    fn now(&self) -> SystemTime {
        self()
    }
}

/// The real clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// `2026-11-22T02:29:08.123Z`: RFC 3339, UTC, milliseconds.
pub fn format_time(time: SystemTime) -> String {
    humantime::format_rfc3339_millis(time).to_string()
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    #[test]
    fn formats_utc_with_millis() {
        let time = UNIX_EPOCH + Duration::from_millis(1_795_314_548_007);
        assert_eq!(format_time(time), "2026-11-22T02:29:08.007Z");
    }

    #[test]
    fn closures_are_clocks() {
        let fixed = || UNIX_EPOCH;
        assert_eq!(Clock::now(&fixed), UNIX_EPOCH);
    }
}
