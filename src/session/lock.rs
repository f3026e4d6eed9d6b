//! [`SessionLock`]: the mark of a session in use. A local `run` or `resume` holds an exclusive
//! lock (`flock`) on `.git/meta-agent/sessions/<id>/lock` for as long as it works in the session's
//! worktree; `worktrees prune` takes the same lock before removing one, so a worktree in use is
//! never pruned, and two processes never work in one session at once. The kernel drops the lock
//! when its process ends, however it ends (SIGKILL included): a lock is never left stale. It must
//! not decide anything about the session itself.

use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};

/// The name of the lock file in a session's directory.
pub const LOCK_FILE: &str = "lock";

/// An exclusive lock on one session, held until dropped.
#[derive(Debug)]
pub struct SessionLock {
    /// Locked; closing it (on drop) releases the lock.
    _held: File,
}

/// Why a session's lock could not be had.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds it: the session is in use.
    #[error("session {session} is in use by another meta-agent process")]
    InUse { session: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl SessionLock {
    /// Takes the lock of the session whose directory is `dir` (created when missing), without
    /// waiting.
    pub fn acquire(dir: &Path) -> Result<SessionLock, LockError> {
        let path = dir.join(LOCK_FILE);
        let io = |source| LockError::Io {
            path: path.clone(),
            source,
        };
        let file = crate::fsafe::lock_file(&path).map_err(io)?;
        match file.try_lock() {
            Ok(()) => Ok(SessionLock { _held: file }),
            Err(TryLockError::WouldBlock) => Err(LockError::InUse {
                session: session_name(dir),
            }),
            Err(TryLockError::Error(source)) => Err(io(source)),
        }
    }
}

fn session_name(dir: &Path) -> String {
    dir.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_lock_refuses_a_second_holder_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let session = dir.path().join("s-1");
        let held = SessionLock::acquire(&session).unwrap();
        let again = SessionLock::acquire(&session).unwrap_err();
        assert!(matches!(again, LockError::InUse { ref session } if session == "s-1"));
        drop(held);
        SessionLock::acquire(&session).unwrap();
    }
}
