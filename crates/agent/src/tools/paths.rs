//! Where the agent's tools may look and write: every path the model names goes through the run's
//! [`Policy`] (inside the worktree, no `.git`, no NUL byte, no symlink out of the tree; for a
//! write, not a protected or bot-only file), and a refusal becomes a tool error the model reads.
//! It reads no file contents and never follows a path that failed a check.

use std::path::{Path, PathBuf};

use super::ToolError;
use meta_agent_policy::Policy;
use meta_agent_policy::paths::beneath;

/// What the resolved path is for.
#[derive(Debug, Clone, Copy)]
pub enum Access<'a> {
    Read,
    /// A write, checked against the run's policy.
    Write(&'a Policy),
}

/// `path` under `root`, checked for `access`.
pub fn resolve(root: &Path, path: &str, access: Access<'_>) -> Result<PathBuf, ToolError> {
    let checked = match access {
        Access::Read => beneath(root, path),
        Access::Write(policy) => policy.writable_path(root, path),
    };
    checked.map_err(|reason| ToolError::PathRejected {
        path: path.to_owned(),
        reason,
    })
}

/// The directory to walk for an optional prefix (`""` or `.` is the whole tree).
pub fn resolve_dir(root: &Path, prefix: Option<&str>) -> Result<PathBuf, ToolError> {
    match prefix.map(str::trim) {
        None | Some("") | Some(".") => Ok(root.to_path_buf()),
        Some(prefix) => resolve(root, prefix, Access::Read),
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
    fn a_refused_path_is_a_tool_error_naming_the_path_and_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let policy = Policy::default();
        let err = resolve(
            dir.path(),
            ".github/workflows/ci.yml",
            Access::Write(&policy),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains(".github/workflows/ci.yml"), "{err}");
        assert!(err.contains("protected"), "{err}");
        assert!(resolve(dir.path(), "../x", Access::Read).is_err());
        assert!(resolve(dir.path(), "ok.txt", Access::Read).is_ok());
    }
}
