//! Private namespaces for a command: a user namespace (our uid and gid mapped to themselves), a
//! mount namespace where chosen paths (the worktree's `.git`) are bind-mounted read-only, and,
//! when the network is off, a network namespace with only a loopback interface, down; and a PID
//! namespace, whose first process is the command ([`enter_pid_namespace`]): when it ends, the
//! kernel kills every process left in the namespace, whatever it did to hide (a thread outliving
//! its leader, `setsid`, a double fork, a ptrace stop). Hidden
//! paths are covered: a directory by an empty read-only tmpfs, a file or socket by `/dev/null`;
//! shared scratch directories (`/dev/shm`) by a fresh writable tmpfs of the command's own; the
//! toolchains' download caches by an overlay whose upper layer is the command's own and
//! discarded (read-only when the kernel refuses the overlay).
//!
//! A [`NamespacePlan`] is prepared before `fork` (all allocation happens there); [`NamespacePlan::enter`]
//! only makes system calls, so it is safe between `fork` and `exec`. It must be entered before
//! Landlock is applied (Landlock forbids mounting). It must not touch the calling process's
//! namespaces outside that window.

use std::ffi::{CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use nix::fcntl::{OFlag, open};
use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};
use nix::sys::stat::Mode;
use nix::sys::statvfs::{FsFlags, statvfs};

/// Why a namespace plan cannot be prepared.
#[derive(Debug, thiserror::Error)]
pub enum NamespaceError {
    #[error("path {0} contains a NUL byte")]
    Nul(PathBuf),
    #[error("cannot inspect the mount of {path}: {source}")]
    Statvfs {
        path: PathBuf,
        #[source]
        source: nix::errno::Errno,
    },
}

/// A path to make read-only, with the mount flags its current mount has (a remount inside a
/// user namespace must keep them).
#[derive(Debug)]
struct ReadOnly {
    path: CString,
    keep: MsFlags,
}

/// A path to cover so the command cannot read it.
#[derive(Debug)]
struct Hidden {
    path: CString,
    directory: bool,
}

/// Everything [`NamespacePlan::enter`] needs, prepared in advance.
#[derive(Debug)]
pub struct NamespacePlan {
    flags: CloneFlags,
    uid_map: CString,
    gid_map: CString,
    read_only: Vec<ReadOnly>,
    hidden: Vec<Hidden>,
    /// Directories covered by a fresh, writable, empty tmpfs (`/dev/shm`): shared with nothing.
    private: Vec<CString>,
    /// Caches seen through an overlay whose writes are discarded.
    overlays: Vec<MountedOverlay>,
}

/// A directory to see through an overlay: `target` the lower layer, writes going to `upper`.
#[derive(Debug, Clone)]
pub struct Overlay {
    pub target: PathBuf,
    pub upper: PathBuf,
    pub work: PathBuf,
}

/// An overlay ready to mount; if the kernel refuses it, the target is made read-only instead.
#[derive(Debug)]
struct MountedOverlay {
    options: CString,
    fallback: ReadOnly,
}

impl NamespacePlan {
    /// A plan that cuts the network when `network_off` and makes `read_only` paths read-only.
    pub fn new(network_off: bool, read_only: &[PathBuf]) -> Result<Self, NamespaceError> {
        let mut flags =
            CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWPID;
        if network_off {
            flags |= CloneFlags::CLONE_NEWNET;
        }
        let uid = nix::unistd::geteuid().as_raw();
        let gid = nix::unistd::getegid().as_raw();
        Ok(NamespacePlan {
            flags,
            uid_map: c_string(format!("{uid} {uid} 1"))?,
            gid_map: c_string(format!("{gid} {gid} 1"))?,
            read_only: read_only
                .iter()
                .map(|path| read_only_entry(path))
                .collect::<Result<_, _>>()?,
            hidden: Vec::new(),
            private: Vec::new(),
            overlays: Vec::new(),
        })
    }

    /// Also mounts these overlays (a cache read through, written to a discarded upper layer).
    pub fn overlaying(mut self, overlays: &[Overlay]) -> Result<Self, NamespaceError> {
        for overlay in overlays {
            let escape = |path: &Path| path.display().to_string().replace(',', "\\,");
            let options = format!(
                "lowerdir={},upperdir={},workdir={}",
                escape(&overlay.target),
                escape(&overlay.upper),
                escape(&overlay.work)
            );
            self.overlays.push(MountedOverlay {
                options: c_string(options)?,
                fallback: read_only_entry(&overlay.target)?,
            });
        }
        Ok(self)
    }

    /// Also covers these directories with a fresh writable tmpfs of the command's own (those
    /// that are not directories are skipped).
    pub fn private(mut self, dirs: &[PathBuf]) -> Result<Self, NamespaceError> {
        for dir in dirs.iter().filter(|dir| dir.is_dir()) {
            self.private.push(c_path(dir)?);
        }
        Ok(self)
    }

    /// Also covers these paths (those that do not exist are skipped).
    pub fn hiding(mut self, paths: &[PathBuf]) -> Result<Self, NamespaceError> {
        for path in paths {
            let Ok(meta) = std::fs::metadata(path) else {
                continue;
            };
            self.hidden.push(Hidden {
                path: c_path(path)?,
                directory: meta.is_dir(),
            });
        }
        Ok(self)
    }

    /// Enters the namespaces and applies the read-only mounts (system calls only).
    pub fn enter(&self) -> nix::Result<()> {
        unshare(self.flags)?;
        // A non-dumpable process's /proc/self files belong to root: a non-root caller could not
        // write its own id maps. Callers are a fresh child about to exec, or a short-lived probe.
        nix::sys::prctl::set_dumpable(true)?;
        write_proc(c"/proc/self/setgroups", c"deny")?;
        write_proc(c"/proc/self/uid_map", &self.uid_map)?;
        write_proc(c"/proc/self/gid_map", &self.gid_map)?;
        let private = MsFlags::MS_REC | MsFlags::MS_PRIVATE;
        mount(None::<&CStr>, c"/", None::<&CStr>, private, None::<&CStr>)?;
        for entry in &self.read_only {
            bind_read_only(entry)?;
        }
        for entry in &self.hidden {
            cover(entry)?;
        }
        for dir in &self.private {
            let fresh = MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
            mount(
                Some(c"tmpfs"),
                dir.as_c_str(),
                Some(c"tmpfs"),
                fresh,
                None::<&CStr>,
            )?;
        }
        for overlay in &self.overlays {
            let target = overlay.fallback.path.as_c_str();
            let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
            let options = Some(overlay.options.as_c_str());
            if mount(Some(c"overlay"), target, Some(c"overlay"), flags, options).is_err() {
                bind_read_only(&overlay.fallback)?;
            }
        }
        Ok(())
    }
}

/// After [`NamespacePlan::enter`] (which unshared the PID namespace for the caller's children):
/// forks, and returns in the child, the namespace's first process, which goes on to `exec` the
/// command. The caller becomes a relay that never returns: it closes every descriptor it does not
/// need (so the command's output pipes and the exec-error pipe see only the command), waits for
/// the command and ends as it ended. If the relay is killed, the command is killed with it
/// (parent-death signal), which ends the namespace. System calls only: safe between `fork` and
/// `exec` of a single-threaded parent.
pub fn enter_pid_namespace() -> nix::Result<()> {
    use nix::sys::signal::{SigHandler, Signal, signal};
    use nix::sys::wait::{WaitStatus, waitpid};
    // SAFETY: called between fork and exec of the single-threaded supervisor's child.
    match unsafe { nix::unistd::fork() }? {
        nix::unistd::ForkResult::Child => {
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)?;
            Ok(())
        }
        nix::unistd::ForkResult::Parent { child } => {
            // SAFETY: close_range takes plain integers; the relay needs no descriptor.
            unsafe { nix::libc::syscall(nix::libc::SYS_close_range, 0u32, u32::MAX, 0u32) };
            for sig in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
                // SAFETY: ignoring a signal installs no handler code.
                let _ = unsafe { signal(sig, SigHandler::SigIgn) };
            }
            let code = loop {
                match waitpid(child, None) {
                    Ok(WaitStatus::Exited(_, code)) => break code,
                    Ok(WaitStatus::Signaled(_, sig, _)) => {
                        // SAFETY: restoring the default action, then dying of the same signal.
                        let _ = unsafe { signal(sig, SigHandler::SigDfl) };
                        let _ = nix::sys::signal::raise(sig);
                        break 128 + sig as i32;
                    }
                    Err(nix::errno::Errno::EINTR) | Ok(_) => continue,
                    Err(_) => break 127,
                }
            };
            // SAFETY: `_exit` ends the relay without running the parent's destructors.
            unsafe { nix::libc::_exit(code) }
        }
    }
}

fn cover(entry: &Hidden) -> nix::Result<()> {
    let path = entry.path.as_c_str();
    if entry.directory {
        let empty = MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
        mount(Some(c"tmpfs"), path, Some(c"tmpfs"), empty, None::<&CStr>)
    } else {
        let bind = MsFlags::MS_BIND;
        mount(Some(c"/dev/null"), path, None::<&CStr>, bind, None::<&CStr>)
    }
}

fn bind_read_only(entry: &ReadOnly) -> nix::Result<()> {
    let path = entry.path.as_c_str();
    let bind = MsFlags::MS_BIND | MsFlags::MS_REC;
    mount(Some(path), path, None::<&CStr>, bind, None::<&CStr>)?;
    let remount = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | entry.keep;
    mount(None::<&CStr>, path, None::<&CStr>, remount, None::<&CStr>)
}

fn write_proc(path: &CStr, text: &CStr) -> nix::Result<()> {
    let fd = open(path, OFlag::O_WRONLY | OFlag::O_CLOEXEC, Mode::empty())?;
    let written = nix::unistd::write(&fd, text.to_bytes())?;
    if written == text.to_bytes().len() {
        Ok(())
    } else {
        Err(nix::errno::Errno::EIO)
    }
}

fn c_string(text: String) -> Result<CString, NamespaceError> {
    CString::new(text.clone()).map_err(|_| NamespaceError::Nul(text.into()))
}

fn read_only_entry(path: &Path) -> Result<ReadOnly, NamespaceError> {
    let stat = statvfs(path).map_err(|source| NamespaceError::Statvfs {
        path: path.to_owned(),
        source,
    })?;
    Ok(ReadOnly {
        path: c_path(path)?,
        keep: locked_flags(stat.flags()),
    })
}

fn c_path(path: &Path) -> Result<CString, NamespaceError> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| NamespaceError::Nul(path.to_owned()))
}

/// `statvfs`'s relatime bit as the kernel reports it (nix names it `ST_RELATIME` only where the C
/// library's headers do, which musl's do not: the static release builds need the value).
const ST_RELATIME: FsFlags = FsFlags::from_bits_retain(4096);

/// The mount flags a user namespace may not drop on remount.
fn locked_flags(flags: FsFlags) -> MsFlags {
    let pairs = [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (ST_RELATIME, MsFlags::MS_RELATIME),
    ];
    pairs
        .into_iter()
        .filter(|(fs, _)| flags.contains(*fs))
        .fold(MsFlags::empty(), |acc, (_, ms)| acc | ms)
}
