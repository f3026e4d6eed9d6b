//! The Observing step: the `Observer` runs the gates where the candidate plan says; the step
//! turns their failures into signatures, marks the last act's resolutions cured or not, asks the
//! memory about the signatures, and records the observation.

use super::*;
use crate::observe::elapsed_ms;
use meta_agent_protocol::clock::now_ms;
use meta_agent_protocol::gates::GatesSummary;
use meta_agent_protocol::records::{GateRecord, SignatureRecord, StepPhase};
use std::collections::BTreeSet;

impl<R: CommandRunner, G: Repository, B: Builder> Engine<'_, R, G, B> {
    /// The Observing step: the gates run by the `Observer`, their failures turned into
    /// signatures (and recalled from memory), the observation recorded.
    pub(super) async fn observe(&self, state: &mut LoopState) -> GatesSummary {
        let started = Instant::now();
        let started_ms = now_ms();
        let workdir = self.repo.workdir();
        // After an act the observation may run on the pristine checkout (its finish says so).
        let phase = if state.before_any_act() {
            StepPhase::Baseline
        } else {
            StepPhase::Test
        };
        self.events.emit(&Event::PhaseStarted {
            phase,
            iteration: state.iteration,
        });
        let observed = if state.before_any_act() {
            let model_available = self.builder.available(state.builder_calls);
            let observer = self.observer();
            observer
                .observe_baseline(state, &workdir, model_available)
                .await
        } else {
            self.observer().observe_candidate(state, &workdir).await
        };
        let summary = observed.summary;
        let signatures = improve::signatures_of(&summary, &observed.root);
        self.observer().announce(&signatures);
        mark_cured(state, &signatures);
        state.gates = summary.records();
        state.signatures = signatures;
        self.hindsight.recall(&state.signatures).await;
        let duration_ms = elapsed_ms(started);
        let outcome = match (observed.phase, summary.passed) {
            (StepPhase::Baseline, true) => "baseline: gates passed",
            (StepPhase::Baseline, false) => "baseline: gates failed",
            (StepPhase::Verify, true) => "pristine checkout: gates passed",
            (StepPhase::Verify, false) => "pristine checkout: gates failed",
            (_, true) => "gates passed",
            (_, false) => "gates failed",
        };
        self.events.emit(&Event::PhaseFinished {
            phase: observed.phase,
            iteration: state.iteration,
            duration_ms,
            outcome: outcome.into(),
            gates: state.gates.iter().map(GateRecord::outcome).collect(),
        });
        state.history.push(StepRecord::observation(
            observed.phase,
            state.iteration,
            started_ms,
            duration_ms,
            outcome,
            &state.gates,
            &state.signatures,
        ));
        self.transition(state, LoopPhase::Deciding, outcome);
        summary
    }
}

/// Marks the resolutions of the last Acting step cured or not, by whether their signature is
/// still present.
fn mark_cured(state: &mut LoopState, now: &[SignatureRecord]) {
    let present: BTreeSet<&str> = now.iter().map(|s| s.id.as_str()).collect();
    if let Some(step) = state
        .history
        .iter_mut()
        .rev()
        .find(|step| step.phase.is_act())
    {
        for resolution in step.resolutions.iter_mut().filter(|r| r.cured.is_none()) {
            resolution.cured = Some(!present.contains(resolution.signature.as_str()));
        }
    }
}
