//! The status comment kept current while the engine runs, as a live checklist
//! ([`crate::render::checklist`]): every event of the run reaches the poster, which folds it in
//! and edits the comment with the checklist and the session record read back from the saved
//! state, so a job cancelled at any point leaves a resumable record.
//!
//! The pacing policy, within GitHub's limits on content-creating requests (about 80 a minute
//! and 500 an hour, secondary limits): an edit at most every [`PROGRESS_SPACINGS`] write
//! spacings (ten seconds by default, so at most 6 a minute and 360 an hour, leaving room for
//! the run's other writes). Changes in between are coalesced: when the spacing has passed, the
//! latest state is written, even when no later event comes to prompt it. The final state (the
//! result) is written by the publishing step right after the run.

use std::time::Duration;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use super::*;
use crate::protocol::event::{Event, EventSink};
use crate::render::checklist::Checklist;

/// Progress edits are at least this many write spacings apart.
pub const PROGRESS_SPACINGS: u32 = 10;

/// The event sink that hands every event to the poster.
pub(super) struct Watcher {
    events: UnboundedSender<Event>,
}

impl EventSink for Watcher {
    fn emit(&self, event: &Event) {
        // The poster is gone only when the step is ending: nothing left to show.
        let _ = self.events.send(event.clone());
    }
}

/// A watcher and the receiving end its poster reads.
pub(super) fn watch() -> (Watcher, UnboundedReceiver<Event>) {
    let (events, receiver) = unbounded_channel();
    (Watcher { events }, receiver)
}

/// How long to wait before the next progress edit: the rest of the spacing since the last one.
pub fn wait_before_edit(since_last: Option<Duration>, spacing: Duration) -> Duration {
    since_last.map_or(Duration::ZERO, |since| spacing.saturating_sub(since))
}

/// The poster's side: what was folded, whether it is shown yet, when it last wrote.
struct Pending {
    checklist: Checklist,
    unshown: bool,
    last: Option<Instant>,
}

impl Pending {
    fn wait(&self, spacing: Duration) -> Duration {
        wait_before_edit(self.last.map(|at| at.elapsed()), spacing)
    }
}

impl Step<'_> {
    /// Posts progress until the watcher is dropped (the run ended).
    pub(super) async fn post_progress(
        &self,
        mut events: UnboundedReceiver<Event>,
        status: &mut Option<StatusComment>,
        sessions: &SessionStore,
        session: &str,
    ) {
        let spacing = self.spacing * PROGRESS_SPACINGS;
        let mut pending = Pending {
            checklist: Checklist::default(),
            unshown: false,
            last: None,
        };
        loop {
            let due = pending.unshown.then(|| pending.wait(spacing));
            let event = match due {
                Some(wait) => tokio::select! {
                    event = events.recv() => event,
                    () = tokio::time::sleep(wait) => {
                        self.post_checklist(&mut pending, status, sessions, session).await;
                        continue;
                    }
                },
                None => events.recv().await,
            };
            let Some(event) = event else {
                return;
            };
            pending.unshown |= pending.checklist.fold(&event);
        }
    }

    /// Edits the comment with the checklist and the saved session's record.
    async fn post_checklist(
        &self,
        pending: &mut Pending,
        status: &mut Option<StatusComment>,
        sessions: &SessionStore,
        session: &str,
    ) {
        let state = match sessions.load(Some(session)) {
            Ok(state) => state,
            Err(err) => {
                tracing::debug!("reading the session to report progress: {err}");
                pending.last = Some(Instant::now());
                return;
            }
        };
        pending.unshown = false;
        let view = View::Progress {
            trigger: self.trigger.describe(),
            checklist: pending.checklist.clone(),
        };
        let record = SessionRecord::of(&state);
        if let Err(err) = self.post_status(status, &view, Some(&record)).await {
            tracing::warn!("updating the status comment with progress: {err}");
        }
        // Counted from when GitHub answered, so the edits arrive at least the spacing apart.
        pending.last = Some(Instant::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_edit_goes_at_once_the_next_waits_out_the_spacing() {
        let spacing = Duration::from_secs(10);
        assert_eq!(wait_before_edit(None, spacing), Duration::ZERO);
        assert_eq!(
            wait_before_edit(Some(Duration::from_secs(3)), spacing),
            Duration::from_secs(7)
        );
        assert_eq!(
            wait_before_edit(Some(Duration::from_secs(30)), spacing),
            Duration::ZERO
        );
    }
}
