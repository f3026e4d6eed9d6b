//! Checks a parsed patch against the worktree before libgit2 applies it: every path plain and
//! inside the tree (no `..`, no absolute path, no `.git` component, no symlinked directory on the
//! way), files present or absent as the patch expects, and no new symlink pointing out of the tree
//! or into `.git`. libgit2 compares a worktree patch with the index, so it would miss untracked
//! files in the way and files already deleted. Reads file metadata only; never writes.

use std::path::Path;

use git2::{Delta, Diff, DiffDelta, FileMode, Patch};

use super::GitError;

/// The first reason `diff` cannot be applied to the files under `workdir`, if any.
pub(super) fn workdir_conflict(diff: &Diff<'_>, workdir: &Path) -> Option<GitError> {
    diff.deltas()
        .enumerate()
        .find_map(|(index, delta)| delta_conflict(diff, index, &delta, workdir))
}

fn delta_conflict(
    diff: &Diff<'_>,
    index: usize,
    delta: &DiffDelta<'_>,
    workdir: &Path,
) -> Option<GitError> {
    let old = delta.old_file().path();
    let new = delta.new_file().path();
    let (must_exist, must_not_exist) = match delta.status() {
        Delta::Added | Delta::Untracked => (None, new),
        Delta::Renamed | Delta::Copied if old != new => (old, new),
        _ => (old, None),
    };
    let old_is_link = delta.old_file().mode() == FileMode::Link;
    path_conflict(workdir, must_exist, Expect::Present { old_is_link })
        .or_else(|| path_conflict(workdir, must_not_exist, Expect::Absent))
        .or_else(|| new_link_conflict(diff, index, delta))
}

#[derive(Clone, Copy)]
enum Expect {
    Present { old_is_link: bool },
    Absent,
}

fn refusal(path: &Path, reason: &'static str) -> Option<GitError> {
    Some(GitError::PatchDoesNotApply {
        path: path.to_string_lossy().into_owned(),
        reason,
    })
}

fn path_conflict(workdir: &Path, path: Option<&Path>, expect: Expect) -> Option<GitError> {
    let path = path?;
    if !meta_agent_protocol::path::is_plain(path) {
        return refusal(path, "not a plain path inside the worktree");
    }
    if through_symlink(workdir, path) {
        return refusal(path, "a directory on the way is a symlink");
    }
    let meta = workdir.join(path).symlink_metadata().ok();
    match (expect, meta) {
        (Expect::Present { .. }, None) => refusal(path, "the file is missing"),
        (Expect::Present { old_is_link: false }, Some(m)) if m.file_type().is_symlink() => {
            refusal(path, "the file is a symlink in the worktree")
        }
        (Expect::Absent, Some(_)) => refusal(path, "the file already exists"),
        _ => None,
    }
}

/// Relative, no `..`, no component a file system takes for `.git` ([`meta_agent_protocol::path`]).
fn through_symlink(workdir: &Path, path: &Path) -> bool {
    path.ancestors()
        .skip(1)
        .filter(|a| !a.as_os_str().is_empty())
        .any(|a| {
            workdir
                .join(a)
                .symlink_metadata()
                .is_ok_and(|m| m.file_type().is_symlink())
        })
}

/// A symlink the patch creates must point inside the tree and not into `.git`.
fn new_link_conflict(diff: &Diff<'_>, index: usize, delta: &DiffDelta<'_>) -> Option<GitError> {
    if delta.new_file().mode() != FileMode::Link {
        return None;
    }
    let path = delta.new_file().path()?;
    let target = link_target(diff, index).unwrap_or_default();
    if meta_agent_protocol::path::link_escape(path, Path::new(&target)).is_some() {
        return refusal(path, "a symlink pointing out of the worktree or into .git");
    }
    None
}

/// The added text of the delta's patch: a symlink's target.
fn link_target(diff: &Diff<'_>, index: usize) -> Option<String> {
    let patch = Patch::from_diff(diff, index).ok()??;
    let mut target = Vec::new();
    for hunk in 0..patch.num_hunks() {
        for line in 0..patch.num_lines_in_hunk(hunk).ok()? {
            let line = patch.line_in_hunk(hunk, line).ok()?;
            if line.origin() == '+' {
                target.extend_from_slice(line.content());
            }
        }
    }
    Some(
        String::from_utf8_lossy(&target)
            .trim_end_matches('\n')
            .to_string(),
    )
}

/// Whether `target`, resolved from the directory holding `link`, leaves the tree or enters `.git`.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_targets() {
        let link_escapes = |link: &Path, target: &str| {
            meta_agent_protocol::path::link_escape(link, Path::new(target)).is_some()
        };
        assert!(!link_escapes(Path::new("a/link"), "b.txt"));
        assert!(!link_escapes(Path::new("a/link"), "../top.txt"));
        assert!(link_escapes(Path::new("a/link"), "../../outside"));
        assert!(link_escapes(Path::new("link"), "/etc/passwd"));
        assert!(link_escapes(Path::new("link"), ".git/config"));
        assert!(link_escapes(Path::new("link"), ""));
    }

    #[test]
    fn plain_paths() {
        let is_plain_relative = meta_agent_protocol::path::is_plain;
        assert!(is_plain_relative(Path::new("a/b.txt")));
        assert!(!is_plain_relative(Path::new("../b.txt")));
        assert!(!is_plain_relative(Path::new("/b.txt")));
        assert!(!is_plain_relative(Path::new("sub/.GIT/config")));
    }
}
