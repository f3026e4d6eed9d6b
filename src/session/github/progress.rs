//! The status comment kept current while the engine runs: after each observation (the loop
//! entering `deciding`), the saved state is read back and the comment shows the iteration and
//! the gate table so far, with the session record, so a job cancelled at any point leaves a
//! resumable record. Updates are paced (at least [`PROGRESS_SPACINGS`] write spacings apart,
//! ten seconds by default) and coalesced: only the latest iteration is shown.

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use super::*;
use crate::protocol::event::{Event, EventSink, LoopPhase};

/// Progress updates are at least this many write spacings apart.
pub const PROGRESS_SPACINGS: u32 = 10;

/// The event sink that notes each finished observation for the poster.
pub(super) struct Watcher {
    observed: UnboundedSender<u32>,
}

impl EventSink for Watcher {
    fn emit(&self, event: &Event) {
        if let Event::StateChanged {
            to: LoopPhase::Deciding,
            iteration,
            ..
        } = event
        {
            // The poster is gone only when the step is ending: nothing left to show.
            let _ = self.observed.send(*iteration);
        }
    }
}

/// A watcher and the receiving end its poster reads.
pub(super) fn watch() -> (Watcher, UnboundedReceiver<u32>) {
    let (observed, receiver) = unbounded_channel();
    (Watcher { observed }, receiver)
}

impl Step<'_> {
    /// Posts progress until the watcher is dropped (the run ended).
    pub(super) async fn post_progress(
        &self,
        mut observed: UnboundedReceiver<u32>,
        status: &mut Option<StatusComment>,
        sessions: &SessionStore,
        session: &str,
    ) {
        let spacing = self.spacing * PROGRESS_SPACINGS;
        let mut last: Option<Instant> = None;
        while let Some(mut iteration) = observed.recv().await {
            while let Ok(later) = observed.try_recv() {
                iteration = later;
            }
            if last.is_some_and(|at| at.elapsed() < spacing) {
                continue;
            }
            let state = match sessions.load(Some(session)) {
                Ok(state) => state,
                Err(err) => {
                    tracing::warn!("reading the session to report progress: {err}");
                    continue;
                }
            };
            let view = View::Progress {
                trigger: self.trigger.describe(),
                iteration,
                max_iterations: state.max_iterations,
                gates: summary::gate_table(&state),
            };
            let record = SessionRecord::of(&state);
            if let Err(err) = self.post_status(status, &view, Some(&record)).await {
                tracing::warn!("updating the status comment with progress: {err}");
            }
            last = Some(Instant::now());
        }
    }
}
