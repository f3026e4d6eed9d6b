//! Turning a git2 [`git2::Diff`] into what callers read: the git-format patch text and the list
//! of changed paths. No repository access happens here beyond what the diff already holds.

use git2::{Delta, Diff, DiffDelta, DiffFormat};

use super::{ChangeStatus, FileChange, GitError};

/// The patch text of `diff`, exactly as `git diff` would print it (lossy for non-UTF-8 content).
pub(super) fn patch_text(diff: &Diff<'_>) -> Result<String, GitError> {
    let mut bytes = Vec::new();
    diff.print(DiffFormat::Patch, |_delta, _hunk, line| {
        if matches!(line.origin(), '+' | '-' | ' ') {
            bytes.push(line.origin() as u8);
        }
        bytes.extend_from_slice(line.content());
        true
    })
    .map_err(GitError::op("diff print", "patch"))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// One [`FileChange`] per delta that is an actual change.
pub(super) fn file_changes(diff: &Diff<'_>) -> Vec<FileChange> {
    diff.deltas()
        .filter_map(|delta| file_change(&delta))
        .collect()
}

fn file_change(delta: &DiffDelta<'_>) -> Option<FileChange> {
    let new_path = path_of(delta.new_file().path());
    let old_path = path_of(delta.old_file().path());
    let (path, status) = match delta.status() {
        Delta::Added | Delta::Untracked | Delta::Copied => (new_path, ChangeStatus::Added),
        Delta::Modified | Delta::Conflicted => (new_path, ChangeStatus::Modified),
        Delta::Deleted => (old_path, ChangeStatus::Deleted),
        Delta::Renamed => (new_path, ChangeStatus::Renamed { from: old_path }),
        Delta::Typechange => (new_path, ChangeStatus::TypeChange),
        Delta::Unmodified | Delta::Ignored | Delta::Unreadable => {
            return None;
        }
    };
    Some(FileChange { path, status })
}

fn path_of(path: Option<&std::path::Path>) -> String {
    path.map(|p| p.to_string_lossy().replace('\\', "/"))
        .unwrap_or_default()
}
