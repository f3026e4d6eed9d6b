//! Looking back at a recorded run: `meta-agent trace show` (the timeline at once) and `meta-agent
//! trace replay` (played back in real time, with keys, stopping at pause-point locations). Both
//! read the run's trace ([`source`]) from its directory, its artifact's zip or the file.
//!
//! [`location`] names the pause-point locations and the events that mark them; [`player`] the
//! playback loop over a clock, a keyboard and a screen (traits); [`terminal`] the real ones.

#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod location;
pub mod player;
pub mod source;
pub mod terminal;

use std::path::PathBuf;

pub use location::{Location, UnknownLocation};
pub use player::{Devices, Ending, Key, Keyboard, Play, ReplayClock, Screen, Speed, play};

/// Why a recorded run cannot be read. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no trace.jsonl in {}", path.display())]
    NoTrace { path: PathBuf },
    #[error("{}: {message}", path.display())]
    Archive { path: PathBuf, message: String },
    #[error("{}: {source}", path.display())]
    Trace {
        path: PathBuf,
        source: meta_agent_telemetry::TraceReadError,
    },
}
