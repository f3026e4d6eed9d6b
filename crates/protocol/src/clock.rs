//! The two readings of the clock every layer shares: now in milliseconds, and a new session's
//! id (time and process).

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
