//! Where a path the model (or a task file) names may point: beneath the worktree, never into
//! `.git`, never through a symlink out of the tree, never at a protected file for a write. Every
//! path is checked here before anything opens it.

use std::path::{Component, Path, PathBuf};

use super::{Policy, PolicyError};
use meta_agent_fsafe::PathLimits;
use meta_agent_protocol::path::{NotPlain, plain_parts};

/// The path under `root`, refusing absolute paths, `..`, `.git`, empty paths and paths deeper or
/// longer than [`PathLimits`] allows. Looks at no file.
pub fn inside(root: &Path, path: &str) -> Result<PathBuf, PolicyError> {
    within_limits(path)?;
    let parts = plain_parts(Path::new(path)).map_err(|why| match why {
        NotPlain::InsideGit => PolicyError::InsideGit(path.to_owned()),
        NotPlain::Nul => PolicyError::Nul,
        NotPlain::Climbs | NotPlain::Absolute => PolicyError::Outside(path.to_owned()),
    })?;
    if parts.is_empty() {
        return Err(PolicyError::Empty);
    }
    let clean: PathBuf = parts.iter().collect();
    Ok(root.join(clean))
}

/// Refuses a path deeper or longer than the bot's file access handles.
fn within_limits(path: &str) -> Result<(), PolicyError> {
    let limits = PathLimits::default();
    if path.len() > limits.max_bytes {
        return Err(PolicyError::TooLong {
            len: path.len(),
            max: limits.max_bytes,
        });
    }
    let depth = Path::new(path)
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .count();
    if depth > limits.max_depth {
        return Err(PolicyError::TooDeep {
            depth,
            max: limits.max_depth,
        });
    }
    Ok(())
}

/// `path` under `root` for reading: no NUL byte, inside the tree, and no symlink on its existing
/// part leading out of the tree. No policy is needed to read.
pub fn beneath(root: &Path, path: &str) -> Result<PathBuf, PolicyError> {
    if path.contains('\0') {
        return Err(PolicyError::Nul);
    }
    let full = inside(root, path)?;
    stays_inside(root, &full)?;
    Ok(full)
}

impl Policy {
    /// `path` under `root` for an act's write: as [`beneath`], and not a path the policy keeps
    /// from acts.
    pub fn writable_path(&self, root: &Path, path: &str) -> Result<PathBuf, PolicyError> {
        if path.contains('\0') {
            return Err(PolicyError::Nul);
        }
        let full = inside(root, path)?;
        let relative = full.strip_prefix(root).unwrap_or(&full).to_string_lossy();
        if let Some(glob) = self.act_may_not_change(&relative) {
            return Err(PolicyError::Protected {
                glob: glob.to_owned(),
            });
        }
        stays_inside(root, &full)?;
        Ok(full)
    }
}

/// Refuses a path whose existing part leads, through a symlink, out of the tree.
fn stays_inside(root: &Path, full: &Path) -> Result<(), PolicyError> {
    let canonical_root = root
        .canonicalize()
        .map_err(|_| PolicyError::RootUnresolvable)?;
    let existing = full
        .ancestors()
        .find(|ancestor| std::fs::symlink_metadata(ancestor).is_ok())
        .unwrap_or(root);
    match existing.canonicalize() {
        Ok(real) if real.starts_with(&canonical_root) => Ok(()),
        Ok(_) => Err(PolicyError::SymlinkOut),
        Err(err) => Err(PolicyError::Unresolvable(err.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PolicyInput;

    #[test]
    fn paths_stay_inside_the_repository() {
        let root = Path::new("/repo");
        assert_eq!(
            inside(root, "src/a.py"),
            Ok(PathBuf::from("/repo/src/a.py"))
        );
        assert!(inside(root, "../etc/passwd").is_err());
        assert!(inside(root, "/etc/passwd").is_err());
        assert!(inside(root, ".git/hooks/pre-commit").is_err());
        for git in [".GIT/config", "sub/.Git./hooks/x", "git~1/config"] {
            assert_eq!(
                inside(root, git),
                Err(PolicyError::InsideGit(git.to_owned())),
                "{git}"
            );
        }
        assert!(inside(root, "a/../../b").is_err());
        assert_eq!(inside(root, "./"), Err(PolicyError::Empty));
        let deep = "a/".repeat(150) + "f.txt";
        assert_eq!(
            inside(root, &deep),
            Err(PolicyError::TooDeep {
                depth: 151,
                max: 40
            })
        );
        let long = "n".repeat(1500);
        assert_eq!(
            inside(root, &long),
            Err(PolicyError::TooLong {
                len: 1500,
                max: 1024
            })
        );
    }

    #[test]
    fn protected_and_outside_paths_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("a.py"), "x").unwrap();
        let policy = Policy::new(PolicyInput {
            protected: vec!["secrets/**".to_owned()],
            ..PolicyInput::default()
        });
        let write = |path| policy.writable_path(root, path);
        assert!(write("a.py").is_ok());
        assert!(write("new/b.py").is_ok());
        assert!(write("secrets/key.pem").is_err());
        assert!(beneath(root, "../../etc/passwd").is_err());
        assert!(beneath(root, "/etc/passwd").is_err());
        assert!(beneath(root, "/proc/self/environ").is_err());
        assert!(beneath(root, ".git/config").is_err());
        assert_eq!(beneath(root, "a\0b"), Err(PolicyError::Nul));
        assert_eq!(write("a\0b"), Err(PolicyError::Nul));
        assert!(beneath(root, ".meta-agent.yml").is_ok());
        assert!(write(".meta-agent.yml").is_err());
        assert!(write(".github/workflows/ci.yml").is_err());
        assert!(write(".gitattributes").is_err());
        assert!(write("CODEOWNERS").is_err());
    }

    #[test]
    fn symlinks_out_of_the_tree_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::os::unix::fs::symlink(outside.path(), root.join("out")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", root.join("pw")).unwrap();
        assert_eq!(
            Policy::default().writable_path(root, "out/x.txt"),
            Err(PolicyError::SymlinkOut)
        );
        assert!(beneath(root, "pw").is_err());
    }
}
