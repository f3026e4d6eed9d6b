//! The bot's own file access inside directories untrusted code can write (the worktree, a gate's
//! report directory, the hindsight store): every path is resolved beneath a trusted directory
//! without following a single link, only regular files are read or replaced, and every read is
//! bounded in size and cannot block (a FIFO is refused, never opened for a blocking read).
//!
//! [`Beneath`] holds a descriptor of the trusted directory, opened once by a caller that knows it
//! is trustworthy (the repository root chosen at start, a directory the bot created). Paths given
//! to it are relative and plain (no `..`, no absolute start, no NUL byte, nothing a file system
//! takes for `.git`: `meta_agent_protocol::path`) and short enough
//! ([`PathLimits`]); each is resolved with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` or,
//! where the kernel lacks it, one `openat(O_NOFOLLOW)` per component. Writes go to a fresh
//! temporary file in the same directory, renamed over the target: whatever was there (a link, a
//! FIFO, a file hard-linked elsewhere) is replaced, never written through. Removal never descends
//! through a link. This module decides nothing about policy (which paths may be written): that
//! is the policy's (`policy` in the main crate).

#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod atomic;
mod resolve;

use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use nix::fcntl::{AtFlags, OFlag, renameat};
use nix::sys::stat::{FileStat, Mode, SFlag, fchmod, fstatat};
use nix::unistd::{UnlinkatFlags, unlinkat};

pub use atomic::{lock_file, write_atomic};
pub use resolve::Resolver;

/// How deep and how long a path may be. The defaults are generous for source trees and far
/// below what makes libgit2 or the kernel give up (`PATH_MAX`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathLimits {
    /// Components, the file name included.
    pub max_depth: usize,
    /// Bytes of the whole relative path.
    pub max_bytes: usize,
}

impl Default for PathLimits {
    fn default() -> Self {
        PathLimits {
            max_depth: 40,
            max_bytes: 1024,
        }
    }
}

/// Why a path was refused or could not be used. Every variant names the path as given.
#[derive(Debug, thiserror::Error)]
pub enum FsError {
    #[error(
        "`{path}` is not a plain relative path (absolute, `..`, empty, a NUL byte or into .git)"
    )]
    NotPlain { path: String },
    #[error("`{path}` is {depth} directories deep; at most {max} are allowed")]
    TooDeep {
        path: String,
        depth: usize,
        max: usize,
    },
    #[error("`{path}` is {len} bytes long; at most {max} are allowed")]
    TooLong {
        path: String,
        len: usize,
        max: usize,
    },
    #[error("`{path}`: a symbolic link on the way (links are never followed)")]
    Link { path: String },
    #[error("`{path}` is {kind}, not a regular file")]
    NotRegular { path: String, kind: &'static str },
    #[error("`{path}` has other hard links (it may belong outside this directory)")]
    HardLinked { path: String },
    #[error("`{path}` is {size} bytes; files over {limit} bytes are not read")]
    TooLarge { path: String, size: u64, limit: u64 },
    #[error("`{path}` does not exist")]
    NotFound { path: String },
    #[error("`{path}`: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

impl FsError {
    fn io(path: &Path, source: impl Into<std::io::Error>) -> FsError {
        FsError::Io {
            path: shown(path),
            source: source.into(),
        }
    }
}

fn shown(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// A trusted directory, held open; every path below it is resolved without following links.
#[derive(Debug)]
pub struct Beneath {
    dir: OwnedFd,
    root: PathBuf,
    limits: PathLimits,
    resolver: Resolver,
}

impl Beneath {
    /// Opens `root` itself (through links, if its own path has any: the caller trusts it).
    pub fn open(root: &Path) -> Result<Beneath, FsError> {
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
        let dir = nix::fcntl::open(root, flags, Mode::empty()).map_err(|e| FsError::io(root, e))?;
        Ok(Beneath {
            dir,
            root: root.to_owned(),
            limits: PathLimits::default(),
            resolver: Resolver::detect(),
        })
    }

    /// The same directory with other path limits.
    pub fn with_limits(mut self, limits: PathLimits) -> Beneath {
        self.limits = limits;
        self
    }

    /// The same directory resolved with `resolver` (tests exercise both ways).
    pub fn with_resolver(mut self, resolver: Resolver) -> Beneath {
        self.resolver = resolver;
        self
    }

    /// The trusted directory's path.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `relative`, checked to be plain and within the limits: its normal components.
    pub fn check(&self, relative: &Path) -> Result<Vec<OsString>, FsError> {
        plain_components(relative, self.limits)
    }

    /// Opens a regular file for reading (a FIFO, a device, a directory or a link is refused
    /// before anything could block) and returns it with its size.
    pub fn open_regular(&self, relative: &Path) -> Result<(File, u64), FsError> {
        let parts = self.check(relative)?;
        let flags = OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_NOCTTY | OFlag::O_CLOEXEC;
        let fd = self.resolver.open(&self.dir, &parts, flags, relative)?;
        let file = File::from(fd);
        let meta = file.metadata().map_err(|e| FsError::io(relative, e))?;
        if !meta.file_type().is_file() {
            return Err(FsError::NotRegular {
                path: shown(relative),
                kind: kind_of(meta.mode()),
            });
        }
        if meta.nlink() > 1 {
            return Err(FsError::HardLinked {
                path: shown(relative),
            });
        }
        Ok((file, meta.len()))
    }

    /// Opens a regular file for writing without truncating it, creating it when missing (its
    /// directory must exist): for lock files.
    pub fn open_or_create(&self, relative: &Path) -> Result<File, FsError> {
        let parts = self.check(relative)?;
        let flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_NONBLOCK | OFlag::O_NOCTTY;
        let fd = self.resolver.open(&self.dir, &parts, flags, relative)?;
        let file = File::from(fd);
        let meta = file.metadata().map_err(|e| FsError::io(relative, e))?;
        if !meta.file_type().is_file() || meta.nlink() > 1 {
            return Err(FsError::NotRegular {
                path: shown(relative),
                kind: kind_of(meta.mode()),
            });
        }
        Ok(file)
    }

    /// The bytes of a regular file of at most `limit` bytes.
    pub fn read(&self, relative: &Path, limit: u64) -> Result<Vec<u8>, FsError> {
        let (file, size) = self.open_regular(relative)?;
        let too_large = |size| FsError::TooLarge {
            path: shown(relative),
            size,
            limit,
        };
        if size > limit {
            return Err(too_large(size));
        }
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        file.take(limit.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| FsError::io(relative, e))?;
        if bytes.len() as u64 > limit {
            return Err(too_large(bytes.len() as u64));
        }
        Ok(bytes)
    }

    /// What is at `relative`, not following a link there (`None` when nothing is).
    pub fn kind(&self, relative: &Path) -> Result<Option<EntryKind>, FsError> {
        let parts = self.check(relative)?;
        let Some((name, dirs)) = parts.split_last() else {
            return Ok(Some(EntryKind::Directory));
        };
        let parent = match self.resolver.walk(&self.dir, dirs, false, relative) {
            Ok(parent) => parent,
            Err(FsError::NotFound { .. }) => return Ok(None),
            Err(err) => return Err(err),
        };
        match stat_at(&parent, name) {
            Ok(stat) => Ok(Some(EntryKind::of(stat.st_mode))),
            Err(nix::errno::Errno::ENOENT) => Ok(None),
            Err(err) => Err(FsError::io(relative, err)),
        }
    }

    /// Creates the directory `relative` and its missing parents (a link on the way is refused).
    pub fn create_dir_all(&self, relative: &Path) -> Result<(), FsError> {
        let parts = self.check(relative)?;
        self.resolver.walk(&self.dir, &parts, true, relative)?;
        Ok(())
    }

    /// Replaces `relative` with `bytes` (parents created): a new file renamed over whatever was
    /// there. An existing regular file keeps its permissions; `durable` also syncs the file and
    /// its directory.
    pub fn write(&self, relative: &Path, bytes: &[u8], durable: bool) -> Result<(), FsError> {
        let parts = self.check(relative)?;
        let Some((name, dirs)) = parts.split_last() else {
            return Err(FsError::NotPlain {
                path: shown(relative),
            });
        };
        let parent = self.resolver.walk(&self.dir, dirs, true, relative)?;
        let mode = match stat_at(&parent, name) {
            Ok(stat) if EntryKind::of(stat.st_mode) == EntryKind::File => stat.st_mode & 0o777,
            _ => 0o644,
        };
        let (temp_name, temp) = create_temp(&parent, relative)?;
        let written = fill(temp, bytes, mode, durable)
            .and_then(|()| rename_in(&parent, &temp_name, name))
            .map_err(|e| FsError::io(relative, e));
        if written.is_err() {
            let _ = unlinkat(&parent, temp_name.as_c_str(), UnlinkatFlags::NoRemoveDir);
            return written;
        }
        if durable {
            File::from(parent)
                .sync_all()
                .map_err(|e| FsError::io(relative, e))?;
        }
        Ok(())
    }

    /// Removes whatever is at `relative` (a directory with everything in it), never following a
    /// link; nothing there is fine.
    pub fn remove(&self, relative: &Path) -> Result<(), FsError> {
        let parts = self.check(relative)?;
        let Some((name, dirs)) = parts.split_last() else {
            return Err(FsError::NotPlain {
                path: shown(relative),
            });
        };
        let parent = match self.resolver.walk(&self.dir, dirs, false, relative) {
            Ok(parent) => parent,
            Err(FsError::NotFound { .. }) => return Ok(()),
            Err(err) => return Err(err),
        };
        resolve::remove_entry(&parent, name).map_err(|e| FsError::io(relative, e))
    }
}

/// What a directory entry is, as `lstat` sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Directory,
    Link,
    /// A FIFO, socket or device.
    Special,
}

impl EntryKind {
    fn of(mode: u32) -> EntryKind {
        match SFlag::from_bits_truncate(mode & SFlag::S_IFMT.bits()) {
            SFlag::S_IFREG => EntryKind::File,
            SFlag::S_IFDIR => EntryKind::Directory,
            SFlag::S_IFLNK => EntryKind::Link,
            _ => EntryKind::Special,
        }
    }
}

fn kind_of(mode: u32) -> &'static str {
    match SFlag::from_bits_truncate(mode & SFlag::S_IFMT.bits()) {
        SFlag::S_IFDIR => "a directory",
        SFlag::S_IFIFO => "a FIFO",
        SFlag::S_IFSOCK => "a socket",
        SFlag::S_IFCHR | SFlag::S_IFBLK => "a device",
        SFlag::S_IFLNK => "a symbolic link",
        _ => "not a regular file",
    }
}

/// The normal components of a plain relative path within `limits`.
pub fn plain_components(path: &Path, limits: PathLimits) -> Result<Vec<OsString>, FsError> {
    let not_plain = || FsError::NotPlain { path: shown(path) };
    let bytes = path.as_os_str().as_bytes();
    if bytes.contains(&0) {
        return Err(not_plain());
    }
    if bytes.len() > limits.max_bytes {
        return Err(FsError::TooLong {
            path: shown(path),
            len: bytes.len(),
            max: limits.max_bytes,
        });
    }
    // One rule of what a plain path is: relative, never climbing, never into `.git` (in any
    // spelling a file system takes for it).
    let parts: Vec<OsString> = meta_agent_protocol::path::plain_parts(path)
        .map_err(|_| not_plain())?
        .into_iter()
        .map(OsStr::to_owned)
        .collect();
    if parts.len() > limits.max_depth {
        return Err(FsError::TooDeep {
            path: shown(path),
            depth: parts.len(),
            max: limits.max_depth,
        });
    }
    Ok(parts)
}

fn c_name(name: &OsStr) -> Result<CString, nix::errno::Errno> {
    CString::new(name.as_bytes()).map_err(|_| nix::errno::Errno::EINVAL)
}

fn stat_at(dir: &OwnedFd, name: &OsStr) -> nix::Result<FileStat> {
    fstatat(dir, c_name(name)?.as_c_str(), AtFlags::AT_SYMLINK_NOFOLLOW)
}

/// A new, empty file with a random name in `dir` (never an existing one).
fn create_temp(dir: &OwnedFd, shown_as: &Path) -> Result<(CString, File), FsError> {
    let flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW;
    for _ in 0..16 {
        let name = format!(".meta-agent-tmp-{:016x}", fastrand::u64(..));
        let name = c_name(OsStr::new(&name)).map_err(|e| FsError::io(shown_as, e))?;
        match nix::fcntl::openat(
            dir,
            name.as_c_str(),
            flags | OFlag::O_CLOEXEC,
            Mode::from_bits_truncate(0o600),
        ) {
            Ok(fd) => return Ok((name, File::from(fd))),
            Err(nix::errno::Errno::EEXIST) => continue,
            Err(err) => return Err(FsError::io(shown_as, err)),
        }
    }
    Err(FsError::io(
        shown_as,
        std::io::Error::other("no free temporary name"),
    ))
}

fn fill(mut file: File, bytes: &[u8], mode: u32, durable: bool) -> std::io::Result<()> {
    file.write_all(bytes)?;
    fchmod(file.as_fd(), Mode::from_bits_truncate(mode))?;
    if durable {
        file.sync_all()?;
    }
    Ok(())
}

fn rename_in(dir: &OwnedFd, from: &CString, to: &OsStr) -> std::io::Result<()> {
    let to = c_name(to)?;
    renameat(dir, from.as_c_str(), dir, to.as_c_str())?;
    Ok(())
}

#[cfg(test)]
mod tests;
