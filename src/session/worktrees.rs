//! `meta-agent worktrees list` and `meta-agent worktrees prune`: the worktrees local runs kept
//! (escalated, paused, dry-run, failed sessions), wherever they were made (the bot's directory,
//! or `.git/meta-agent/worktrees/` for older versions).
//!
//! A worktree is the bot's when git names it after a session of this repository (it has a
//! directory in `.git/meta-agent/sessions/`) or it lies in one of the bot's places; the user's
//! own linked worktrees are never listed or touched. `prune` removes those whose session ended
//! and forgets those whose directory is gone ([`prune_reason`], pure); it never removes one in
//! use: it holds the session's lock ([`super::lock`]) while it removes.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::lock::{LockError, SessionLock};
use super::places::Places;
use super::{Done, Environment, Overrides, SessionError};
use crate::engine::state::SessionStore;
use crate::git::linked::{self, LinkedWorktree};
use crate::git::{Repository, SessionWorktree};
use crate::protocol::records::RunOutcome;
use crate::protocol::state::LoopState;
use crate::render::local::{Pruned, SessionView, WorktreeRow};

/// `meta-agent worktrees list`: every kept worktree, its session, branch, state, age and place.
pub fn list(overrides: &Overrides, env: &Environment, json: bool) -> Result<Done, SessionError> {
    let found = kept(overrides, env)?;
    let rows: Vec<WorktreeRow> = found.into_iter().map(|kept| kept.row).collect();
    let stdout = match json {
        true => format!("{}\n", crate::render::local::worktrees_json(&rows)),
        false => crate::render::local::worktrees_table(&rows),
    };
    Ok(Done::ok(stdout))
}

/// `meta-agent worktrees prune`: removes what [`prune_reason`] says may go, says what it
/// removed and what it kept.
pub fn prune(overrides: &Overrides, env: &Environment) -> Result<Done, SessionError> {
    let checkout = super::prepared::repo_root(overrides)?;
    let mut removed = Vec::new();
    let mut left = Vec::new();
    for kept in kept(overrides, env)? {
        match prune_reason(&kept.row) {
            Some(why) => {
                remove(&checkout, &kept.row)?;
                removed.push((kept.row, why));
            }
            None => left.push(kept.row),
        }
        // The session's lock (when this process holds it) is released here, after the removal.
    }
    Ok(Done::ok(crate::render::local::prune_report(
        &removed, &left,
    )))
}

/// Whether a kept worktree may go, and why. Never one in use; one whose directory is gone is
/// forgotten; one whose session ended (any outcome, a dry run included) or that no session
/// record names is removed; a paused session's, or one awaiting guidance, stays for `resume`.
pub fn prune_reason(row: &WorktreeRow) -> Option<Pruned> {
    match row.view {
        SessionView::InUse => None,
        _ if !row.present => Some(Pruned::DirectoryGone),
        SessionView::Ended { outcome, dry_run } => Some(Pruned::Ended { outcome, dry_run }),
        SessionView::Unknown => Some(Pruned::NoSession),
        SessionView::Waiting { .. } => None,
    }
}

/// A kept worktree, with its session's lock when this process could take it (not in use).
struct Kept {
    row: WorktreeRow,
    _lock: Option<SessionLock>,
}

/// The bot's worktrees of the repository at `--repo`.
fn kept(overrides: &Overrides, env: &Environment) -> Result<Vec<Kept>, SessionError> {
    let checkout = super::run::open_repo(&super::prepared::repo_root(overrides)?)?;
    let git_dir = checkout.git_dir();
    let sessions = SessionStore::for_git_dir(&git_dir);
    // The legacy place always counts; the configured one when it can be had.
    let mut places = vec![git_dir.join("meta-agent").join("worktrees")];
    let configured = Places::for_checkout(
        overrides.worktrees_dir.as_deref(),
        env,
        &checkout.workdir(),
        &git_dir,
    );
    places.extend(configured.map(|places| places.repository));
    let worktrees = linked::linked_worktrees(&checkout.workdir())
        .map_err(|err| SessionError::Internal(err.to_string()))?;
    let now = SystemTime::now();
    worktrees
        .into_iter()
        .filter(|worktree| ours(worktree, &sessions, &places))
        .map(|worktree| observe(worktree, &sessions, now))
        .collect()
}

/// Whether git's worktree is a session's of this repository, or lies in one of the bot's places.
fn ours(worktree: &LinkedWorktree, sessions: &SessionStore, places: &[PathBuf]) -> bool {
    sessions.session_dir(&worktree.name).is_dir()
        || places.iter().any(|place| worktree.path.starts_with(place))
}

/// The row of one worktree: its session's state, and whether a process holds the session.
fn observe(
    worktree: LinkedWorktree,
    sessions: &SessionStore,
    now: SystemTime,
) -> Result<Kept, SessionError> {
    let dir = sessions.session_dir(&worktree.name);
    // A running session holds its lock from before its worktree exists: no session directory,
    // no process in it.
    let (in_use, lock) = match dir.is_dir() {
        false => (false, None),
        true => match SessionLock::acquire(&dir) {
            Ok(lock) => (false, Some(lock)),
            Err(LockError::InUse { .. }) => (true, None),
            Err(err @ LockError::Io { .. }) => {
                return Err(SessionError::Internal(err.to_string()));
            }
        },
    };
    let state = sessions.load(Some(&worktree.name)).ok();
    let view = match (in_use, &state) {
        (true, _) => SessionView::InUse,
        (false, None) => SessionView::Unknown,
        (false, Some(state)) => view_of(state),
    };
    let row = WorktreeRow {
        branch: state
            .as_ref()
            .filter(|s| !s.dry_run)
            .map(|s| s.branch.clone()),
        age: state.as_ref().and_then(|s| since(s.started_unix_ms, now)),
        session: worktree.name,
        view,
        path: worktree.path,
        present: worktree.present,
    };
    Ok(Kept { row, _lock: lock })
}

/// What a session not in use is doing.
fn view_of(state: &LoopState) -> SessionView {
    match state.phase.is_final() {
        true => SessionView::Ended {
            outcome: state.outcome.unwrap_or(RunOutcome::Failed),
            dry_run: state.dry_run,
        },
        false => SessionView::Waiting { phase: state.phase },
    }
}

fn since(started_unix_ms: u64, now: SystemTime) -> Option<Duration> {
    let started = UNIX_EPOCH.checked_add(Duration::from_millis(started_unix_ms))?;
    now.duration_since(started).ok()
}

/// Removes a kept worktree's directory and git's record of it (its branch and commits stay).
fn remove(checkout: &Path, row: &WorktreeRow) -> Result<(), SessionError> {
    let internal = |err: crate::git::GitError| SessionError::Internal(err.to_string());
    match SessionWorktree::existing(checkout, &row.session).map_err(internal)? {
        Some(worktree) => worktree.remove().map_err(internal),
        None => {
            if row.present {
                // Rust's `remove_dir_all` never follows a link a command may have planted.
                std::fs::remove_dir_all(&row.path).map_err(|err| {
                    SessionError::Internal(format!("cannot remove {}: {err}", row.path.display()))
                })?;
            }
            linked::forget_if_gone(checkout, &row.session).map_err(internal)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::event::LoopPhase;

    fn row(view: SessionView, present: bool) -> WorktreeRow {
        WorktreeRow {
            session: "s".into(),
            branch: None,
            view,
            age: None,
            path: PathBuf::from("/w/s"),
            present,
        }
    }

    #[test]
    fn only_what_no_one_needs_is_pruned_and_never_one_in_use() {
        let ended = SessionView::Ended {
            outcome: RunOutcome::Escalated,
            dry_run: false,
        };
        let waiting = SessionView::Waiting {
            phase: LoopPhase::AwaitingGuidance,
        };
        assert_eq!(prune_reason(&row(SessionView::InUse, true)), None);
        assert_eq!(prune_reason(&row(SessionView::InUse, false)), None);
        assert_eq!(
            prune_reason(&row(ended, true)),
            Some(Pruned::Ended {
                outcome: RunOutcome::Escalated,
                dry_run: false
            })
        );
        assert_eq!(prune_reason(&row(waiting, true)), None);
        assert_eq!(
            prune_reason(&row(waiting, false)),
            Some(Pruned::DirectoryGone)
        );
        assert_eq!(
            prune_reason(&row(SessionView::Unknown, true)),
            Some(Pruned::NoSession)
        );
    }
}
