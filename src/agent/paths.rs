//! Where the agent's tools may look and write: every path the model names is resolved inside the
//! worktree here, and nowhere else.
//!
//! On top of [`crate::engine::builder::inside`] (no `..`, no absolute path, no `.git`), this
//! refuses NUL bytes, symlinks that lead out of the tree, and writes to protected files (the bot's
//! own configuration and CI workflows). It reads no file contents and never follows a path that
//! failed a check.

use std::path::{Path, PathBuf};

use super::tools::ToolError;
use crate::engine::builder::inside;

/// Files the agent may read but never write: the bot's configuration and CI workflows.
pub const PROTECTED: &[&str] = &[".meta-agent.yml", ".meta-agent.yaml", ".github/workflows"];

/// What the resolved path is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

/// `path` under `root`, checked for `access`.
pub fn resolve(root: &Path, path: &str, access: Access) -> Result<PathBuf, ToolError> {
    let rejected = |reason: String| ToolError::PathRejected {
        path: path.to_owned(),
        reason,
    };
    if path.contains('\0') {
        return Err(rejected("the path contains a NUL byte".into()));
    }
    let full = inside(root, path).map_err(rejected)?;
    let relative = full.strip_prefix(root).unwrap_or(&full);
    if access == Access::Write && is_protected(relative) {
        return Err(rejected(
            "the file is protected: the agent may not change it".into(),
        ));
    }
    stays_inside(root, &full).map_err(rejected)?;
    Ok(full)
}

/// The directory to walk for an optional prefix (`""` or `.` is the whole tree).
pub fn resolve_dir(root: &Path, prefix: Option<&str>) -> Result<PathBuf, ToolError> {
    match prefix.map(str::trim) {
        None | Some("") | Some(".") => Ok(root.to_path_buf()),
        Some(prefix) => resolve(root, prefix, Access::Read),
    }
}

fn is_protected(relative: &Path) -> bool {
    PROTECTED
        .iter()
        .any(|protected| relative.starts_with(protected))
}

/// Refuses a path whose existing part leads, through a symlink, out of the tree.
fn stays_inside(root: &Path, full: &Path) -> Result<(), String> {
    let Ok(canonical_root) = root.canonicalize() else {
        return Err("the repository root cannot be resolved".into());
    };
    let existing = full
        .ancestors()
        .find(|ancestor| std::fs::symlink_metadata(ancestor).is_ok())
        .unwrap_or(root);
    match existing.canonicalize() {
        Ok(real) if real.starts_with(&canonical_root) => Ok(()),
        Ok(_) => Err("a symlink leads out of the repository".into()),
        Err(err) => Err(format!("cannot resolve the path: {err}")),
    }
}

/// The path relative to `root`, with `/` separators (for the model's eyes).
pub fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protected_and_outside_paths_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("a.py"), "x").unwrap();
        assert!(resolve(root, "a.py", Access::Write).is_ok());
        assert!(resolve(root, "new/b.py", Access::Write).is_ok());
        assert!(resolve(root, "../../etc/passwd", Access::Read).is_err());
        assert!(resolve(root, "/etc/passwd", Access::Read).is_err());
        assert!(resolve(root, ".git/config", Access::Read).is_err());
        assert!(resolve(root, "a\0b", Access::Read).is_err());
        assert!(resolve(root, ".meta-agent.yml", Access::Read).is_ok());
        assert!(resolve(root, ".meta-agent.yml", Access::Write).is_err());
        assert!(resolve(root, ".github/workflows/ci.yml", Access::Write).is_err());
    }

    #[test]
    fn symlinks_out_of_the_tree_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::os::unix::fs::symlink(outside.path(), root.join("out")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", root.join("pw")).unwrap();
        assert!(resolve(root, "out/x.txt", Access::Write).is_err());
        assert!(resolve(root, "pw", Access::Read).is_err());
    }
}
