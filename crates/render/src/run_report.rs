//! What a finished (or stopped) run hands over: its state, the last gates' results, its commit
//! and what the patch gate refused of its work in progress, all as data; the texts people read
//! of it (the escalation report, the refusal note) are rendered from it here, never carried.
//! Below the engine, which makes it, and the session layer, which reads it.

use meta_agent_protocol::ending::WipRefused;
use meta_agent_protocol::gates::GatesSummary;
use meta_agent_protocol::records::RunOutcome;
use meta_agent_protocol::state::LoopState;

/// What a finished (or stopped) run produced.
#[derive(Debug, Clone)]
pub struct RunReport {
    pub state: LoopState,
    /// The worktree's diff against the base commit at the end.
    pub diff: String,
    pub gates: Option<GatesSummary>,
    /// The message of the commit the run made (as committed).
    pub commit_message: Option<String>,
    pub commit: Option<String>,
    /// What the patch gate refused of the work in progress when the run escalated or paused.
    pub wip_refused: Option<WipRefused>,
}

impl RunReport {
    /// The escalation report for maintainers, when the run ended escalated (or awaiting
    /// guidance): its reason's report, then the patch gate's refusal of the work in progress.
    pub fn escalation(&self) -> Option<String> {
        if self.state.outcome != Some(RunOutcome::Escalated) {
            return None;
        }
        let reason = self.state.escalation.as_ref()?;
        let mut report = super::outcome::escalation_report(&self.state, reason);
        report.push_str(&self.refused_note().unwrap_or_default());
        Some(report)
    }

    /// A paused run's note on the work in progress the patch gate refused (not an escalation).
    pub fn refused_wip(&self) -> Option<String> {
        if self.state.outcome == Some(RunOutcome::Escalated) {
            return None;
        }
        self.refused_note()
    }

    fn refused_note(&self) -> Option<String> {
        let refused = self.wip_refused.as_ref()?;
        Some(super::outcome::refusal_note(
            &refused.refusals,
            refused.committed_without,
        ))
    }
}
