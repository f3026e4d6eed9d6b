//! One line of a trace as read back ([`TraceEntry`]): when it was written, its number and its
//! event, known to this version or only by name ([`Traced`]). The telemetry layer writes and reads
//! traces; the renderers and replay only read these.

use std::time::{Duration, SystemTime};

use crate::event::Event;

/// One line of a trace.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceEntry {
    /// When the event was written.
    pub time: SystemTime,
    /// The line's number in the file (counting from 1, across resumed runs).
    pub seq: u64,
    pub event: Traced,
}

/// An event of a trace: known to this version, or only by name.
#[derive(Debug, Clone, PartialEq)]
pub enum Traced {
    Known(Event),
    /// An event this version does not read (the name of its `event` tag).
    Unknown {
        name: String,
    },
}

impl TraceEntry {
    /// How long after `start` this entry was written (zero if before it).
    pub fn since(&self, start: SystemTime) -> Duration {
        self.time.duration_since(start).unwrap_or_default()
    }
}
