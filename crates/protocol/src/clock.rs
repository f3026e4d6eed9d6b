//! The two readings of the clock every layer shares: now in milliseconds, and a new session's
//! id (time and process); and how a length of time is written for people ([`human_ms`]).

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, in milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A short, unique-enough session id: time and process.
pub fn new_session_id() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{:x}-{:x}",
        (nanos / 1_000_000) as u64,
        (nanos as u64 ^ u64::from(std::process::id())) & 0xffff
    )
}

/// `1500` → `1.5s`, `600000` → `10m`.
pub fn human_ms(ms: u64) -> String {
    if ms >= 60_000 && ms.is_multiple_of(60_000) {
        format!("{}m", ms / 60_000)
    } else if ms >= 1000 {
        format!("{:.1}s", ms as f64 / 1000.0)
    } else {
        format!("{ms}ms")
    }
}
