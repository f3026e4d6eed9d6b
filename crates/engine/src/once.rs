//! Exactly once across a kill: the commit a session makes is found again, not made twice.
//!
//! The state is saved before every step, so a run killed after its commit but before the next
//! save resumes into the step that commits. That step first asks whether the branch head already
//! is this session's commit of the worktree as it stands: a commit carrying the session's
//! `Meta-Agent-Session` trailer and the subject about to be written, whose tree is the worktree
//! (nothing left to stage), on top of the base. Such a commit is adopted (`commit` event with
//! result `adopted:<sha>`), and no second commit is made.
//!
//! A run paused by a signal ([`super::pause`]) leaves its work in a WIP commit, the session's
//! checkpoint: the verified commit goes on top of it even when the resumed run added nothing.

use super::machine::{Engine, EngineError};
use super::state::LoopState;
use meta_agent_exec::CommandRunner;
use meta_agent_git::Repository;
use meta_agent_protocol::builder::Builder;
use meta_agent_protocol::event::Event;

impl<R: CommandRunner, G: Repository, B: Builder> Engine<'_, R, G, B> {
    /// Commits the worktree with `message` on the session's branch, or adopts the commit this
    /// session already made of exactly this worktree (a run killed after its commit).
    pub(super) fn commit_once(
        &self,
        state: &LoopState,
        message: &str,
    ) -> Result<String, EngineError> {
        let (sha, result) = match self.adoptable_head(state, message)? {
            Some(sha) => (sha.clone(), format!("adopted:{sha}")),
            None if self.over_checkpoint(state)? => {
                let sha = self.repo.commit_over_checkpoint(message, &self.identity)?;
                (sha.clone(), sha)
            }
            None => {
                let sha = self.repo.commit_all(message, &self.identity)?;
                (sha.clone(), sha)
            }
        };
        self.events.emit(&Event::GitOperation {
            operation: "commit".into(),
            target: state.branch.clone(),
            result,
        });
        Ok(sha)
    }

    /// Whether the worktree adds nothing to HEAD and HEAD is this session's checkpoint (a paused
    /// run's work in progress): the verified commit then goes on top of it as it is.
    fn over_checkpoint(&self, state: &LoopState) -> Result<bool, EngineError> {
        let Some(checkpoint) = &state.checkpoint else {
            return Ok(false);
        };
        Ok(self.repo.head()?.commit == *checkpoint && self.repo.changed_files()?.is_empty())
    }

    /// The branch head, when it is this session's commit with `message`'s subject and the
    /// worktree holds nothing it does not.
    pub(super) fn adoptable_head(
        &self,
        state: &LoopState,
        message: &str,
    ) -> Result<Option<String>, EngineError> {
        let head = self.repo.head()?;
        if head.commit == state.base_commit || !self.repo.changed_files()?.is_empty() {
            return Ok(None);
        }
        let existing = self.repo.message(&head.commit)?;
        Ok(same_session_commit(&existing, message, &state.session).then_some(head.commit))
    }
}

/// Whether the commit message `existing` is the one `expected` would write for `session`: the
/// same subject and the session's trailer.
pub(super) fn same_session_commit(existing: &str, expected: &str, session: &str) -> bool {
    let subject = |text: &str| text.lines().next().unwrap_or("").trim().to_owned();
    subject(existing) == subject(expected) && carries_session(existing, session)
}

pub use meta_agent_protocol::trailer::carries_session;

#[cfg(test)]
mod tests {
    use super::same_session_commit;

    const MESSAGE: &str = "fix: make the gates pass\n\nbody\n\nMeta-Agent-Session: 1a-2b\n";

    #[test]
    fn the_same_subject_and_session_trailer_is_the_same_commit() {
        assert!(same_session_commit(MESSAGE, MESSAGE, "1a-2b"));
    }

    #[test]
    fn another_session_or_subject_is_not() {
        assert!(!same_session_commit(MESSAGE, MESSAGE, "1a-2c"));
        let wip = MESSAGE.replace("fix:", "WIP: fix:");
        assert!(!same_session_commit(&wip, MESSAGE, "1a-2b"));
        assert!(!same_session_commit(
            "fix: make the gates pass\n",
            MESSAGE,
            "1a-2b"
        ));
    }
}
