//! The programs the bot itself runs (its own binary as the supervisor, `git` for fetch and
//! push), fixed once at start-up, before any untrusted code runs, so nothing a sandboxed process
//! writes later is ever executed by the bot.
//!
//! The bot's binary is held open ([`OwnBinary`]) and re-executed through that descriptor
//! (`/proc/self/fd/N`), never by path: replacing the file afterwards changes nothing. `git` is
//! resolved to an absolute path from `PATH` at start ([`resolve_on_path`]). [`refuse_if_writable`]
//! refuses either one when it lies in a directory the sandbox would make writable (the worktree,
//! the temporary directories, the configured writable directories): a command could replace it
//! before the bot's next use. Pure path checks and one `open`; no policy.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use nix::fcntl::OFlag;
use nix::sys::stat::Mode;

/// Why a program the bot runs is not trusted.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("cannot open meta-agent's own binary: {0}")]
    OwnBinary(#[source] std::io::Error),
    #[error(
        "refusing to start: {what} {program} lies in {dir}, which sandboxed commands may write \
         (they could replace it before the bot runs it); install it elsewhere"
    )]
    Writable {
        what: &'static str,
        program: PathBuf,
        dir: PathBuf,
    },
}

/// The bot's own executable, held open since start-up.
#[derive(Debug, Clone)]
pub struct OwnBinary {
    fd: Arc<OwnedFd>,
    /// Where it was when opened (for messages and the writability check).
    path: PathBuf,
}

impl OwnBinary {
    /// Opens the running executable (`/proc/self/exe`: the file this process was started from,
    /// even if its path has been replaced since).
    pub fn open() -> Result<OwnBinary, TrustError> {
        let path = std::fs::read_link("/proc/self/exe").map_err(TrustError::OwnBinary)?;
        let fd = nix::fcntl::open(
            "/proc/self/exe",
            OFlag::O_PATH | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| TrustError::OwnBinary(e.into()))?;
        Ok(OwnBinary {
            fd: Arc::new(fd),
            path,
        })
    }

    /// The path that executes the opened file (valid in this process and its forks).
    pub fn exec_path(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.fd.as_raw_fd()))
    }

    /// Where the binary was found at start-up.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The first executable regular file named `name` in the directories of `path_env`, made
/// absolute and free of links. `None` when there is none.
pub fn resolve_on_path(name: &str, path_env: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path_env)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .filter_map(|candidate| std::fs::canonicalize(candidate).ok())
        .find(|found| {
            std::fs::metadata(found)
                .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        })
}

/// Refuses `program` when it (after links) lies beneath one of `writable`.
pub fn refuse_if_writable(
    what: &'static str,
    program: &Path,
    writable: &[PathBuf],
) -> Result<(), TrustError> {
    let real = std::fs::canonicalize(program).unwrap_or_else(|_| program.to_owned());
    for dir in writable {
        let dir_real = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone());
        if real.starts_with(&dir_real) {
            return Err(TrustError::Writable {
                what,
                program: real,
                dir: dir_real,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_in_a_writable_directory_is_refused_with_both_paths() {
        let dir = tempfile::tempdir().unwrap();
        let git = dir.path().join("bin/git");
        std::fs::create_dir_all(git.parent().unwrap()).unwrap();
        std::fs::write(&git, "#!/bin/sh\n").unwrap();
        let err = refuse_if_writable("git", &git, &[dir.path().to_owned()])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("bin/git") && err.contains("may write"),
            "{err}"
        );
        assert!(refuse_if_writable("git", &git, &[PathBuf::from("/usr")]).is_ok());
    }

    #[test]
    fn git_is_resolved_to_an_absolute_path_once() {
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("git");
        std::fs::write(&fake, "#!/bin/sh\n").unwrap();
        let not_executable = format!("{}:/usr/bin:/bin", dir.path().display());
        let found = resolve_on_path("git", &not_executable).unwrap();
        assert!(
            found.is_absolute() && !found.starts_with(dir.path()),
            "{found:?}"
        );
        assert_eq!(resolve_on_path("git", "relative/dir"), None);
    }

    /// The supervisor is re-executed through the descriptor: replacing the file at its path
    /// afterwards does not change what runs.
    #[test]
    fn the_own_binary_runs_through_its_descriptor_even_after_the_path_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let copy = dir.path().join("true-copy");
        std::fs::copy("/bin/true", &copy).unwrap();
        let fd = nix::fcntl::open(&copy, OFlag::O_PATH | OFlag::O_CLOEXEC, Mode::empty()).unwrap();
        let held = OwnBinary {
            fd: Arc::new(fd),
            path: copy.clone(),
        };
        std::fs::remove_file(&copy).unwrap();
        std::fs::write(&copy, "#!/bin/sh\nexit 42\n").unwrap();
        std::fs::set_permissions(&copy, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let status = std::process::Command::new(held.exec_path())
            .status()
            .unwrap();
        assert_eq!(status.code(), Some(0));
    }
}
