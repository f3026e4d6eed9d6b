//! Where the agent's tools may look and write: every path the model names is resolved inside the
//! worktree here, and nowhere else.
//!
//! On top of [`crate::engine::builder::inside`] (no `..`, no absolute path, no `.git`), this
//! refuses NUL bytes, symlinks that lead out of the tree, and writes to protected files (the bot's
//! own configuration, CI workflows and `commit.protected_paths`). It reads no file contents and never follows a path that
//! failed a check.

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use super::tools::ToolError;
use crate::engine::builder::inside;
use crate::engine::tamper::DEFAULT_PROTECTED;

/// Files the agent may read but never write (globs over repository paths): the same list the
/// orchestrator's tamper check refuses, so the model hears "no" at once instead of after the act.
#[derive(Debug, Clone)]
pub struct Protected {
    set: GlobSet,
}

impl Protected {
    /// The built-in list ([`DEFAULT_PROTECTED`]: the bot's configuration, CI workflows, `.git`)
    /// plus `extra` (`commit.protected_paths`).
    pub fn new(extra: &[String]) -> Self {
        let mut builder = GlobSetBuilder::new();
        let builtin = DEFAULT_PROTECTED.iter().map(|s| (*s).to_owned());
        for pattern in builtin.chain(extra.iter().cloned()) {
            let glob = GlobBuilder::new(&pattern)
                .literal_separator(true)
                .build()
                .or_else(|_| GlobBuilder::new(&globset::escape(&pattern)).build());
            if let Ok(glob) = glob {
                builder.add(glob);
            }
        }
        Protected {
            set: builder.build().unwrap_or_else(|_| GlobSet::empty()),
        }
    }

    fn covers(&self, relative: &Path) -> bool {
        self.set.is_match(relative)
    }
}

impl Default for Protected {
    fn default() -> Self {
        Protected::new(&[])
    }
}

/// What the resolved path is for.
#[derive(Debug, Clone, Copy)]
pub enum Access<'a> {
    Read,
    /// A write, refused for these protected paths.
    Write(&'a Protected),
}

/// `path` under `root`, checked for `access`.
pub fn resolve(root: &Path, path: &str, access: Access<'_>) -> Result<PathBuf, ToolError> {
    let rejected = |reason: String| ToolError::PathRejected {
        path: path.to_owned(),
        reason,
    };
    if path.contains('\0') {
        return Err(rejected("the path contains a NUL byte".into()));
    }
    let full = inside(root, path).map_err(rejected)?;
    let relative = full.strip_prefix(root).unwrap_or(&full);
    if let Access::Write(protected) = access
        && protected.covers(relative)
    {
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
        let protected = Protected::new(&["secrets/**".to_owned()]);
        let write = Access::Write(&protected);
        assert!(resolve(root, "a.py", write).is_ok());
        assert!(resolve(root, "new/b.py", write).is_ok());
        assert!(resolve(root, "secrets/key.pem", write).is_err());
        assert!(resolve(root, "../../etc/passwd", Access::Read).is_err());
        assert!(resolve(root, "/etc/passwd", Access::Read).is_err());
        assert!(resolve(root, "/proc/self/environ", Access::Read).is_err());
        assert!(resolve(root, ".git/config", Access::Read).is_err());
        assert!(resolve(root, "a\0b", Access::Read).is_err());
        assert!(resolve(root, ".meta-agent.yml", Access::Read).is_ok());
        assert!(resolve(root, ".meta-agent.yml", write).is_err());
        assert!(resolve(root, ".github/workflows/ci.yml", write).is_err());
    }

    #[test]
    fn symlinks_out_of_the_tree_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::os::unix::fs::symlink(outside.path(), root.join("out")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", root.join("pw")).unwrap();
        assert!(resolve(root, "out/x.txt", Access::Write(&Protected::default())).is_err());
        assert!(resolve(root, "pw", Access::Read).is_err());
    }
}
