//! Where a local run works: its own linked git worktree ([`SessionWorktree`]), outside the
//! user's checkout ([`super::places`]), never the checkout itself. `run` adds it at the run's
//! starting point ([`super::start`]); `resume` opens it again wherever it was made (or makes it
//! anew from the session's branch); when a run ends, [`fate`] decides whether the worktree has
//! anything left to give: a commit holds the whole result, so its worktree goes; paused,
//! escalated, failed and dry-run sessions keep theirs, detached, for the user and for `resume`.
//! A run with nothing to do leaves no branch either.

use super::SessionError;
use super::places::Places;
use crate::git::{Git2Repository, GitError, Repository, SessionWorktree, linked};
use crate::protocol::records::RunOutcome;
use crate::protocol::state::LoopState;

/// What becomes of a session's worktree when a run of it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// Everything the run produced is in its branch's commits: the worktree goes.
    Remove,
    /// It holds work a person or `resume` still needs: kept, HEAD detached.
    Keep,
}

/// The fate of the worktree of a run that ended in `state` (`None`: no state was saved, the run
/// never began, so nothing is in it).
pub fn fate(state: Option<&LoopState>) -> Fate {
    state.map_or(Fate::Remove, |state| {
        fate_of(state.outcome.as_ref(), state.dry_run)
    })
}

fn fate_of(outcome: Option<&RunOutcome>, dry_run: bool) -> Fate {
    match (outcome, dry_run) {
        (_, true) => Fate::Keep,
        (Some(RunOutcome::Committed) | Some(RunOutcome::NothingToDo), false) => Fate::Remove,
        (
            Some(RunOutcome::Escalated)
            | Some(RunOutcome::Interrupted)
            | Some(RunOutcome::Failed)
            | None,
            false,
        ) => Fate::Keep,
    }
}

/// The worktree a resumed session continues in: its own, or, when that is gone, a new one at
/// the session's branch (or where the session started, when it has no branch yet).
pub(super) fn reopen(
    checkout: &Git2Repository,
    state: &LoopState,
    places: &Places,
) -> Result<SessionWorktree, SessionError> {
    let root = checkout.workdir();
    let branch = match state.dry_run {
        true => None,
        false => linked::branch_head(&root, &state.branch).map_err(internal)?,
    };
    let commit = branch
        .clone()
        .or_else(|| state.checkpoint.clone())
        .unwrap_or_else(|| state.base_commit.clone());
    places.create()?;
    let path = places.session(&state.session);
    let place =
        SessionWorktree::open_or_add(&root, &state.session, &commit, &path).map_err(internal)?;
    if branch.is_some()
        && let Some(path) =
            linked::branch_checked_out_elsewhere(place.path(), &state.branch).map_err(internal)?
    {
        return Err(SessionError::Usage(format!(
            "branch {} is checked out in {}: switch that checkout to another branch, then resume \
             (a commit of the session would move it under you)",
            state.branch,
            path.display()
        )));
    }
    Ok(place)
}

/// Removes the worktree of an ended session when [`fate`] says it has nothing left to give (a
/// run killed between its commit and its clean-up leaves it behind).
pub(super) fn tidy_ended(checkout: &Git2Repository, state: &LoopState) -> Result<(), SessionError> {
    if fate(Some(state)) == Fate::Keep {
        return Ok(());
    }
    let root = checkout.workdir();
    if let Some(left) = SessionWorktree::existing(&root, &state.session).map_err(internal)? {
        left.remove().map_err(internal)?;
    }
    forget_branch(&root, state)
}

/// Deletes the branch of a run that ended with nothing to do (it holds nothing of the bot's).
fn forget_branch(checkout: &std::path::Path, state: &LoopState) -> Result<(), SessionError> {
    if nothing_done(state) {
        linked::delete_branch_at(checkout, &state.branch, &state.base_commit).map_err(internal)?;
    }
    Ok(())
}

/// Ends a run's use of its worktree as [`fate`] says; returns the worktree's path when kept. A
/// run that ended with nothing to do leaves no branch behind either (its branch holds nothing of
/// the bot's).
pub(super) fn settle(
    worktree: SessionWorktree,
    state: Option<&LoopState>,
    checkout: &std::path::Path,
) -> Result<Option<std::path::PathBuf>, SessionError> {
    match fate(state) {
        Fate::Remove => {
            worktree.remove().map_err(internal)?;
            state.map_or(Ok(()), |state| forget_branch(checkout, state))?;
            Ok(None)
        }
        Fate::Keep => {
            worktree.detach().map_err(internal)?;
            Ok(Some(worktree.path().to_owned()))
        }
    }
}

/// A real run that ended with nothing to do: its branch is the bot's and holds nothing new.
fn nothing_done(state: &LoopState) -> bool {
    !state.dry_run && state.outcome == Some(RunOutcome::NothingToDo)
}

fn internal(err: GitError) -> SessionError {
    SessionError::Internal(err.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_real_commit_or_nothing_to_do_lets_the_worktree_go() {
        use RunOutcome::*;
        assert_eq!(fate(None), Fate::Remove);
        assert_eq!(fate_of(Some(&Committed), false), Fate::Remove);
        assert_eq!(fate_of(Some(&NothingToDo), false), Fate::Remove);
        for kept in [Some(Escalated), Some(Interrupted), Some(Failed), None] {
            assert_eq!(fate_of(kept.as_ref(), false), Fate::Keep);
        }
        assert_eq!(fate_of(Some(&Committed), true), Fate::Keep);
    }
}
