//! What a finished (or stopped) run hands over: its state, the last gates' results and the
//! texts of its commit or escalation. Below the engine, which makes it, and the renderers and
//! the session layer, which read it (the renderers do not reach into the engine for it).

use meta_agent_protocol::gates::GatesSummary;
use meta_agent_protocol::state::LoopState;

/// What a finished (or stopped) run produced.
#[derive(Debug, Clone)]
pub struct RunReport {
    pub state: LoopState,
    /// The worktree's diff against the base commit at the end.
    pub diff: String,
    pub gates: Option<GatesSummary>,
    pub commit_message: Option<String>,
    pub commit: Option<String>,
    pub escalation: Option<String>,
    /// A paused run's note on the work in progress the patch gate refused (not an escalation).
    pub refused_wip: Option<String>,
}
