//! Path resolution beneath a directory descriptor without following links: one `openat2` with
//! `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS` where the kernel has it (Linux 5.6), else one
//! `openat(O_NOFOLLOW)` per component. Components reaching here are already plain (no `..`, no
//! `/`, no NUL), so either way nothing outside the directory and no link is ever reached. Also the
//! link-safe recursive removal. Only system calls on descriptors; no policy.

use std::ffi::{CString, OsStr, OsString};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::OnceLock;

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, OpenHow, ResolveFlag, openat, openat2};
use nix::sys::stat::{Mode, SFlag, fstatat, mkdirat};
use nix::unistd::{UnlinkatFlags, unlinkat};

use super::{FsError, shown};

/// Directories deeper than this are not removed recursively (an error instead of a deep stack).
const MAX_REMOVE_DEPTH: usize = 512;

/// How paths are resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolver {
    /// `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`.
    Openat2,
    /// `openat` with `O_NOFOLLOW`, one component at a time.
    PerComponent,
}

impl Resolver {
    /// `Openat2` when this kernel (and any seccomp filter) allows it, probed once.
    pub fn detect() -> Resolver {
        static FOUND: OnceLock<Resolver> = OnceLock::new();
        *FOUND.get_or_init(|| {
            let how = OpenHow::new()
                .flags(OFlag::O_PATH | OFlag::O_CLOEXEC)
                .resolve(beneath());
            match openat2(nix::fcntl::AT_FDCWD, c".", how) {
                Ok(_) => Resolver::Openat2,
                Err(_) => Resolver::PerComponent,
            }
        })
    }

    /// Opens the last of `parts` with `flags` (never following a link), beneath `dir`.
    pub(super) fn open(
        self,
        dir: &OwnedFd,
        parts: &[OsString],
        flags: OFlag,
        shown_as: &Path,
    ) -> Result<OwnedFd, FsError> {
        let flags = flags | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        // openat2 refuses a mode without O_CREAT.
        let mode = match flags.contains(OFlag::O_CREAT) {
            true => Mode::from_bits_truncate(0o644),
            false => Mode::empty(),
        };
        let Some((name, dirs)) = parts.split_last() else {
            return Err(FsError::NotPlain {
                path: shown(shown_as),
            });
        };
        match self {
            Resolver::Openat2 => {
                let how = OpenHow::new().flags(flags).mode(mode).resolve(beneath());
                match openat2(dir, joined(parts)?.as_c_str(), how) {
                    // A link met as a directory says "not a directory": walk to name it.
                    Err(Errno::ENOTDIR) => Resolver::PerComponent.open(dir, parts, flags, shown_as),
                    opened => opened.map_err(|e| error(e, shown_as)),
                }
            }
            Resolver::PerComponent => {
                let parent = self.walk(dir, dirs, false, shown_as)?;
                openat(&parent, c_name(name)?.as_c_str(), flags, mode)
                    .map_err(|e| error(e, shown_as))
            }
        }
    }

    /// The directory `parts` beneath `dir`, opened; missing ones created when `create`.
    pub(super) fn walk(
        self,
        dir: &OwnedFd,
        parts: &[OsString],
        create: bool,
        shown_as: &Path,
    ) -> Result<OwnedFd, FsError> {
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        if self == Resolver::Openat2 && !create && !parts.is_empty() {
            let how = OpenHow::new().flags(flags).resolve(beneath());
            return match openat2(dir, joined(parts)?.as_c_str(), how) {
                Err(Errno::ENOTDIR) => Resolver::PerComponent.walk(dir, parts, create, shown_as),
                opened => opened.map_err(|e| error(e, shown_as)),
            };
        }
        let mut current = dir.try_clone().map_err(|e| FsError::io(shown_as, e))?;
        for part in parts {
            let name = c_name(part)?;
            let opened = match openat(&current, name.as_c_str(), flags, Mode::empty()) {
                Err(Errno::ENOENT) if create => {
                    match mkdirat(&current, name.as_c_str(), Mode::from_bits_truncate(0o755)) {
                        Ok(()) | Err(Errno::EEXIST) => {}
                        Err(err) => return Err(error(err, shown_as)),
                    }
                    openat(&current, name.as_c_str(), flags, Mode::empty())
                }
                other => other,
            };
            current = opened.map_err(|e| match e {
                Errno::ENOTDIR if is_link(&current, &name) => FsError::Link {
                    path: shown(shown_as),
                },
                other => error(other, shown_as),
            })?;
        }
        Ok(current)
    }
}

/// Whether `name` in `dir` is a symbolic link (`O_NOFOLLOW | O_DIRECTORY` reports one as "not a
/// directory").
fn is_link(dir: &OwnedFd, name: &CString) -> bool {
    fstatat(dir, name.as_c_str(), AtFlags::AT_SYMLINK_NOFOLLOW)
        .is_ok_and(|stat| stat.st_mode & SFlag::S_IFMT.bits() == SFlag::S_IFLNK.bits())
}

fn beneath() -> ResolveFlag {
    ResolveFlag::RESOLVE_BENEATH
        | ResolveFlag::RESOLVE_NO_SYMLINKS
        | ResolveFlag::RESOLVE_NO_MAGICLINKS
}

fn joined(parts: &[OsString]) -> Result<CString, FsError> {
    let mut bytes = Vec::new();
    for (index, part) in parts.iter().enumerate() {
        if index > 0 {
            bytes.push(b'/');
        }
        bytes.extend_from_slice(part.as_bytes());
    }
    CString::new(bytes).map_err(|_| FsError::NotPlain {
        path: "(NUL byte)".into(),
    })
}

fn c_name(name: &OsStr) -> Result<CString, FsError> {
    CString::new(name.as_bytes()).map_err(|_| FsError::NotPlain {
        path: name.to_string_lossy().into_owned(),
    })
}

/// The error for a failed resolution: a link met on the way, nothing there, or the system's.
fn error(errno: Errno, shown_as: &Path) -> FsError {
    match errno {
        Errno::ELOOP => FsError::Link {
            path: shown(shown_as),
        },
        Errno::ENOENT => FsError::NotFound {
            path: shown(shown_as),
        },
        Errno::EXDEV => FsError::NotPlain {
            path: shown(shown_as),
        },
        other => FsError::io(shown_as, other),
    }
}

/// Removes `name` in `parent`: a directory with all it holds, anything else by unlinking it.
pub(super) fn remove_entry(parent: &OwnedFd, name: &OsStr) -> std::io::Result<()> {
    remove_at(parent, &CString::new(name.as_bytes())?, 0)
}

fn remove_at(parent: &OwnedFd, name: &CString, depth: usize) -> std::io::Result<()> {
    let stat = match fstatat(parent, name.as_c_str(), AtFlags::AT_SYMLINK_NOFOLLOW) {
        Ok(stat) => stat,
        Err(Errno::ENOENT) => return Ok(()),
        Err(err) => return Err(err.into()),
    };
    let is_dir = stat.st_mode & SFlag::S_IFMT.bits() == SFlag::S_IFDIR.bits();
    if !is_dir {
        return unlinkat(parent, name.as_c_str(), UnlinkatFlags::NoRemoveDir).map_err(Into::into);
    }
    if depth >= MAX_REMOVE_DEPTH {
        return Err(std::io::Error::other("directory tree too deep to remove"));
    }
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let fd = openat(parent, name.as_c_str(), flags, Mode::empty())?;
    let listing = fd.try_clone()?;
    let mut dir = nix::dir::Dir::from_fd(listing)?;
    let names: Vec<CString> = dir
        .iter()
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_owned())
        .filter(|entry| entry.as_bytes() != b"." && entry.as_bytes() != b"..")
        .collect();
    for child in &names {
        remove_at(&fd, child, depth + 1)?;
    }
    match unlinkat(parent, name.as_c_str(), UnlinkatFlags::RemoveDir) {
        Ok(()) | Err(Errno::ENOENT) => Ok(()),
        Err(err) => Err(err.into()),
    }
}
