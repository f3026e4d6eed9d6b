//! How a child process ended ([`Termination`]): what the process runner reports, the gates judge
//! and every report names. Plain data at the floor, so the renderers need not know the runner.

use serde::Serialize;

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Termination {
    /// Exited with this code.
    Exited { code: i32 },
    /// Killed by this signal (not by us).
    Signaled { signal: i32 },
    /// Ran out of time; the whole tree was killed.
    TimedOut,
    /// Stopped because meta-agent was stopping.
    Cancelled,
    /// Could not be started (e.g. the program is not installed).
    NotStarted { reason: String },
}

impl Termination {
    /// True only for exit code 0.
    pub fn success(&self) -> bool {
        matches!(self, Termination::Exited { code: 0 })
    }
}
