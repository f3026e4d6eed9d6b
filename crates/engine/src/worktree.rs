//! Two things the engine's units do to a worktree's files, below every unit: put one path back
//! as a commit has it ([`restore_path`], never through a symlink) and cut one file's part out of
//! a unified diff ([`file_section`]).

use std::path::Path;

/// Replaces whatever is at `path` under `root` (a file, a symlink, never followed) with `blob`,
/// or removes it when `blob` is `None`, through [`meta_agent_fsafe`]: beneath the worktree, never
/// through a link. False when a directory on the way is a symlink or the filesystem says no. (A
/// symlink in HEAD comes back as a file holding its target.)
pub(crate) fn restore_path(root: &Path, path: &str, blob: Option<Vec<u8>>) -> bool {
    let Ok(files) = meta_agent_fsafe::Beneath::open(root) else {
        return false;
    };
    let path = Path::new(path);
    files.remove(path).is_ok() && blob.is_none_or(|bytes| files.write(path, &bytes, false).is_ok())
}

/// The part of a unified diff about one file.
pub(crate) fn file_section(diff: &str, path: &str) -> String {
    let header = format!("diff --git a/{path} b/{path}");
    let Some(start) = diff.find(&header) else {
        return String::new();
    };
    let rest = &diff[start..];
    let end = rest[1..]
        .find("\ndiff --git ")
        .map_or(rest.len(), |i| i + 2);
    rest[..end].to_owned()
}
