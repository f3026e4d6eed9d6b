//! The store's directory as the file backend reaches it: beneath a trusted anchor (the worktree
//! during a run, where commands the model proposed have written), through [`meta_agent_fsafe`], so no
//! link planted on the way (a symlinked shard directory, a linked `.lock`) is ever followed by
//! the bot's reads or writes. Knows nothing of entries.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::StoreError;
use meta_agent_fsafe::{Beneath, EntryKind, FsError};

/// Largest store file read (an entry, the load cache).
const MAX_FILE_BYTES: u64 = 64 << 20;

/// The store directory, resolved beneath a trusted anchor.
#[derive(Debug)]
pub struct StoreDir {
    beneath: Beneath,
    /// The store directory relative to the anchor (empty when it is the anchor).
    relative: PathBuf,
    /// The store directory's full path (for messages and entry paths).
    dir: PathBuf,
}

impl StoreDir {
    /// `dir` beneath `anchor`; without one, beneath the nearest existing ancestor of `dir` (the
    /// caller trusts the path it named, as `meta-agent hindsight` does).
    pub fn open(dir: &Path, anchor: Option<&Path>) -> Result<StoreDir, StoreError> {
        let anchor = match anchor {
            Some(anchor) => anchor.to_owned(),
            None => dir
                .ancestors()
                .find(|a| a.is_dir())
                .unwrap_or(Path::new("/"))
                .to_owned(),
        };
        let relative = dir
            .strip_prefix(&anchor)
            .map_err(|_| StoreError::Io {
                path: dir.to_owned(),
                source: std::io::Error::other(format!(
                    "the store is not inside {}",
                    anchor.display()
                )),
            })?
            .to_owned();
        let beneath = Beneath::open(&anchor).map_err(|e| fs_error(&anchor, e))?;
        Ok(StoreDir {
            beneath,
            relative,
            dir: dir.to_owned(),
        })
    }

    /// The store directory's path.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    fn inside(&self, path: &Path) -> PathBuf {
        self.relative
            .join(path.strip_prefix(&self.dir).unwrap_or(path))
    }

    /// Whether anything is at `path` (a file under the store directory); a link counts.
    pub fn exists(&self, path: &Path) -> Result<bool, StoreError> {
        match self.beneath.kind(&self.inside(path)) {
            Ok(kind) => Ok(kind.is_some()),
            Err(FsError::Link { .. }) => Ok(true),
            Err(err) => Err(fs_error(path, err)),
        }
    }

    /// Whether `path` is a directory (not a link to one).
    pub fn is_dir(&self, path: &Path) -> bool {
        matches!(
            self.beneath.kind(&self.inside(path)),
            Ok(Some(EntryKind::Directory))
        )
    }

    /// The bytes of a regular file under the store directory.
    pub fn read(&self, path: &Path) -> Result<Vec<u8>, FsError> {
        self.beneath.read(&self.inside(path), MAX_FILE_BYTES)
    }

    /// Replaces a file under the store directory, durably (parents created).
    pub fn write(&self, path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
        self.beneath
            .write(&self.inside(path), bytes, true)
            .map_err(|e| fs_error(path, e))
    }

    /// Removes a file under the store directory (missing is fine).
    pub fn remove(&self, path: &Path) -> Result<(), StoreError> {
        self.beneath
            .remove(&self.inside(path))
            .map_err(|e| fs_error(path, e))
    }

    /// Creates the store directory.
    pub fn create(&self) -> Result<(), StoreError> {
        if self.relative.as_os_str().is_empty() {
            return Ok(());
        }
        self.beneath
            .create_dir_all(&self.relative)
            .map_err(|e| fs_error(&self.dir, e))
    }

    /// Opens (creating it when missing) a regular file to hold a lock on.
    pub fn lock_file(&self, path: &Path) -> Result<File, StoreError> {
        self.beneath
            .open_or_create(&self.inside(path))
            .map_err(|e| fs_error(path, e))
    }
}

fn fs_error(path: &Path, err: FsError) -> StoreError {
    StoreError::Io {
        path: path.to_owned(),
        source: std::io::Error::other(err),
    }
}
