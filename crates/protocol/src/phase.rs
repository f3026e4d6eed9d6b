//! The states of the build-test-improve loop ([`LoopPhase`]): what the events report moving
//! between, what a saved state and a pause's context record.

use serde::{Deserialize, Serialize};

/// The states of the build-test-improve loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoopPhase {
    Idle,
    Planning,
    Acting,
    Observing,
    /// Choosing what comes next from the observation (formerly `reflecting`; a saved
    /// session in that phase still loads). "Reflection" is only the requirements review.
    #[serde(alias = "reflecting")]
    Deciding,
    AwaitingGuidance,
    Complete,
    Failed,
    Escalated,
}

impl LoopPhase {
    /// The lowercase name used in logs, metrics labels and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            LoopPhase::Idle => "idle",
            LoopPhase::Planning => "planning",
            LoopPhase::Acting => "acting",
            LoopPhase::Observing => "observing",
            LoopPhase::Deciding => "deciding",
            LoopPhase::AwaitingGuidance => "awaiting_guidance",
            LoopPhase::Complete => "complete",
            LoopPhase::Failed => "failed",
            LoopPhase::Escalated => "escalated",
        }
    }

    /// A run in this phase is over (only guidance starts it again).
    pub fn is_final(self) -> bool {
        match self {
            LoopPhase::Complete | LoopPhase::Escalated | LoopPhase::Failed => true,
            LoopPhase::Idle
            | LoopPhase::Planning
            | LoopPhase::Acting
            | LoopPhase::Observing
            | LoopPhase::Deciding
            | LoopPhase::AwaitingGuidance => false,
        }
    }
}
