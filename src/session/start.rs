//! Where a new local run starts: by default `HEAD` plus the user's uncommitted work (tracked
//! changes, staged or not, and untracked files that are not ignored), taken as a snapshot commit
//! of its own that is the run's base; with `--from-head`, `HEAD` alone. The user's checkout is
//! never touched (branch, HEAD, index and files stay byte for byte): the snapshot is staged in
//! memory and written to the object database only.
//!
//! How the result relates to the snapshot: the run's branch holds the snapshot commit (labelled
//! as the user's, authored by the user's configured identity, its trailer
//! `Meta-Agent-Snapshot: user-changes`) and, on top of it, the bot's own commits, whose message
//! and trailers (`Meta-Agent-User-Changes`, `Meta-Agent-Bot-Changes`) say which paths were
//! whose. The snapshot is never committed or pushed on its own: local runs push nothing, and a
//! run that ends with nothing to do deletes its branch. One line on stderr names the paths taken
//! (or, with `--from-head`, left out).

use super::SessionError;
use crate::git::{FileChange, Git2Repository, GitError, Identity, Repository};
use crate::protocol::records::UserSnapshot;
use crate::redact::Redactor;
use crate::render::local::{SnapshotMessage, Start, snapshot_message, start_line};

/// The largest file a snapshot takes: a bigger uncommitted file is a usage error naming it
/// (ignore it, commit it, or run with `--from-head`).
pub const SNAPSHOT_FILE_LIMIT: u64 = 50 << 20;

/// What a new run asks of its start.
#[derive(Debug, Clone, Copy)]
pub struct StartRequest<'a> {
    /// `--from-head`: leave uncommitted work out.
    pub from_head: bool,
    pub session: &'a str,
    /// The snapshot's message is outbound text.
    pub redactor: &'a Redactor,
}

/// Where the run starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartPoint {
    /// The commit the run's worktree is checked out at (the snapshot, or `HEAD`).
    pub commit: String,
    pub snapshot: Option<UserSnapshot>,
}

/// The run's starting point in `checkout`: refuses a repository without a commit; takes the
/// uncommitted work as a snapshot unless `--from-head`; says on stderr which paths it took or
/// left out.
pub fn starting_point(
    checkout: &Git2Repository,
    request: StartRequest<'_>,
) -> Result<StartPoint, SessionError> {
    let head = match checkout.head() {
        Ok(head) => head,
        Err(GitError::UnbornHead) => {
            return Err(SessionError::Usage(format!(
                "{} has no commit yet: commit the code the bot should work on first",
                checkout.workdir().display()
            )));
        }
        Err(err) => return Err(SessionError::Internal(err.to_string())),
    };
    let changes = checkout.changed_files().map_err(internal)?;
    let paths = changed_paths(&changes);
    let from_head = StartPoint {
        commit: head.commit.clone(),
        snapshot: None,
    };
    if paths.is_empty() {
        return Ok(from_head);
    }
    if request.from_head {
        let line = start_line(Start::FromHead {
            head: &head.commit,
            paths: &paths,
        });
        tracing::warn!("{line}");
        return Ok(from_head);
    }
    refuse_too_large(checkout, &changes)?;
    let message = snapshot_message(SnapshotMessage {
        session: request.session,
        head: &head.commit,
        branch: head.branch.as_deref(),
        paths: &paths,
    });
    let message = request.redactor.redact_text(&message);
    let commit = checkout
        .snapshot_commit(&message, &Identity::default())
        .map_err(internal)?;
    let line = start_line(Start::Snapshot {
        head: &head.commit,
        snapshot: &commit,
        paths: &paths,
    });
    tracing::warn!("{line}");
    Ok(StartPoint {
        commit: commit.clone(),
        snapshot: Some(UserSnapshot {
            commit,
            head: head.commit,
            paths,
        }),
    })
}

/// Every path the changes touch (a rename's both ends), sorted, once each.
pub fn changed_paths(changes: &[FileChange]) -> Vec<String> {
    let mut paths: Vec<String> = changes
        .iter()
        .flat_map(|change| {
            let from = match &change.status {
                crate::git::ChangeStatus::Renamed { from } => Some(from.clone()),
                crate::git::ChangeStatus::Added
                | crate::git::ChangeStatus::Modified
                | crate::git::ChangeStatus::Deleted
                | crate::git::ChangeStatus::TypeChange => None,
            };
            from.into_iter().chain([change.path.clone()])
        })
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

/// A usage error naming the first uncommitted file larger than [`SNAPSHOT_FILE_LIMIT`].
fn refuse_too_large(checkout: &Git2Repository, changes: &[FileChange]) -> Result<(), SessionError> {
    let root = checkout.workdir();
    let too_large = changes.iter().find_map(|change| {
        let size = std::fs::symlink_metadata(root.join(&change.path))
            .ok()
            .filter(std::fs::Metadata::is_file)?
            .len();
        (size > SNAPSHOT_FILE_LIMIT).then_some((&change.path, size))
    });
    match too_large {
        Some((path, size)) => Err(SessionError::Usage(format!(
            "{path} is uncommitted and {} MiB, more than a run takes from your uncommitted work \
             ({} MiB): add it to .gitignore, commit it, or run with --from-head",
            size >> 20,
            SNAPSHOT_FILE_LIMIT >> 20
        ))),
        None => Ok(()),
    }
}

fn internal(err: GitError) -> SessionError {
    SessionError::Internal(err.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::ChangeStatus;

    #[test]
    fn a_rename_counts_both_of_its_paths_and_every_path_counts_once() {
        let change = |path: &str, status| FileChange {
            path: path.into(),
            status,
        };
        let paths = changed_paths(&[
            change("b.py", ChangeStatus::Modified),
            change(
                "new.py",
                ChangeStatus::Renamed {
                    from: "old.py".into(),
                },
            ),
            change("a.py", ChangeStatus::Added),
            change("b.py", ChangeStatus::Modified),
        ]);
        assert_eq!(paths, ["a.py", "b.py", "new.py", "old.py"]);
    }
}
