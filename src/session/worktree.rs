//! Where a local run works: its own linked git worktree ([`SessionWorktree`]), never the user's
//! checkout. `run` adds it at the checkout's HEAD; `resume` opens it again (or makes it anew
//! from the session's branch); when a run ends, [`fate`] decides whether the worktree has
//! anything left to give: a commit holds the whole result, so its worktree goes; paused,
//! escalated, failed and dry-run sessions keep theirs, detached, for the user and for `resume`.

use std::path::Path;

use super::SessionError;
use crate::engine::state::LoopState;
use crate::git::{Git2Repository, GitError, Repository, SessionWorktree, linked};
use crate::protocol::records::RunOutcome;

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

/// The user's checkout a local run starts from: refuses a repository without a commit, and
/// says what the run leaves out (uncommitted changes stay where they are, not in the run).
pub(super) fn starting_commit(checkout: &Git2Repository) -> Result<String, SessionError> {
    let root = checkout.workdir();
    let head = match checkout.head() {
        Ok(head) => head,
        Err(GitError::UnbornHead) => {
            return Err(SessionError::Usage(format!(
                "{} has no commit yet: commit the code the bot should work on first",
                root.display()
            )));
        }
        Err(err) => return Err(SessionError::Internal(err.to_string())),
    };
    let changed = checkout
        .changed_files()
        .map_err(|err| SessionError::Internal(err.to_string()))?;
    if !changed.is_empty() {
        tracing::warn!(
            "{} has {} uncommitted change(s): they stay where they are and are not part of this \
             run, which works from HEAD {} in its own worktree",
            root.display(),
            changed.len(),
            short(&head.commit)
        );
    }
    Ok(head.commit)
}

/// The worktree a resumed session continues in: its own, or, when that is gone, a new one at
/// the session's branch (or where the session started, when it has no branch yet).
pub(super) fn reopen(
    checkout: &Git2Repository,
    state: &LoopState,
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
    let place = SessionWorktree::open_or_add(&root, &state.session, &commit).map_err(internal)?;
    if branch.is_some()
        && let Some(path) =
            linked::branch_checked_out_elsewhere(place.path(), &state.branch).map_err(internal)?
    {
        return Err(SessionError::Usage(format!(
            "branch {} is checked out in {}: switch that checkout to another branch, then resume              (a commit of the session would move it under you)",
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
    match SessionWorktree::existing(&checkout.workdir(), &state.session).map_err(internal)? {
        Some(left) => left.remove().map_err(internal),
        None => Ok(()),
    }
}

/// Ends a run's use of its worktree as [`fate`] says; returns the worktree's path when kept.
pub(super) fn settle(
    worktree: SessionWorktree,
    state: Option<&LoopState>,
) -> Result<Option<std::path::PathBuf>, SessionError> {
    match fate(state) {
        Fate::Remove => worktree.remove().map(|()| None).map_err(internal),
        Fate::Keep => {
            worktree.detach().map_err(internal)?;
            Ok(Some(worktree.path().to_owned()))
        }
    }
}

/// The line a person reads under the report of a run whose worktree is kept: a dry run's change
/// waits there uncommitted; any other run's work continues there on `resume`.
pub fn kept_line(path: &Path, dry_run: bool) -> String {
    let why = match dry_run {
        true => "a dry run: the change is there, uncommitted",
        false => "`meta-agent resume` continues there",
    };
    format!(
        "\nThe work is in `{}` (a git worktree of this repository; {why}).\n",
        path.display()
    )
}

fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
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
