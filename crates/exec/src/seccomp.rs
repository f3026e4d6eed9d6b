//! The system-call filter of a command with the network off: it cannot create a UNIX socket, so
//! it cannot reach a path-named socket outside its sandbox (a local daemon's control socket, a
//! database's socket, a desktop bus), which neither the network namespace nor Landlock before
//! ABI 9 governs.
//!
//! Denied, with `EACCES`: `socket(AF_UNIX, …)`; `socketpair(AF_UNIX, SOCK_DGRAM, …)` (an unbound
//! datagram socket can `sendto` any path); `io_uring_setup` (io_uring creates and connects
//! sockets without these system calls). A connected stream pair (`socketpair(AF_UNIX,
//! SOCK_STREAM)`, used by runtimes for their own children) reaches nothing outside and stays
//! allowed. The program is compiled before `fork` ([`SocketFilter::new`]); applying it
//! ([`SocketFilter::apply`]) is one `prctl` and one `seccomp` call, safe between `fork` and
//! `exec`, after `no_new_privs`. It must not decide when to filter: that is the supervisor's.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// Why the filter cannot be built or applied.
#[derive(Debug, thiserror::Error)]
pub enum SeccompError {
    #[error("cannot build the system-call filter: {0}")]
    Build(#[from] seccompiler::BackendError),
}

/// A compiled filter, applied once in the child.
#[derive(Debug)]
pub struct SocketFilter {
    program: BpfProgram,
}

impl SocketFilter {
    /// Compiles the filter for this machine's architecture (x86_64, aarch64, riscv64).
    pub fn new() -> Result<Self, SeccompError> {
        let arch = TargetArch::try_from(std::env::consts::ARCH)?;
        let unix = || {
            SeccompCondition::new(
                0,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::Eq,
                libc_u64(nix::libc::AF_UNIX),
            )
        };
        let datagram = SeccompCondition::new(
            1,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::MaskedEq(0xf),
            libc_u64(nix::libc::SOCK_DGRAM),
        )?;
        let rules: BTreeMap<i64, Vec<SeccompRule>> = [
            (
                nix::libc::SYS_socket,
                vec![SeccompRule::new(vec![unix()?])?],
            ),
            (
                nix::libc::SYS_socketpair,
                vec![SeccompRule::new(vec![unix()?, datagram])?],
            ),
            (nix::libc::SYS_io_uring_setup, Vec::new()),
        ]
        .into_iter()
        .collect();
        let denied = SeccompAction::Errno(u32::try_from(nix::libc::EACCES).unwrap_or(13));
        let filter = SeccompFilter::new(rules, SeccompAction::Allow, denied, arch)?;
        Ok(SocketFilter {
            program: filter.try_into()?,
        })
    }

    /// Installs the filter on the calling process (inherited by everything it runs). Sets
    /// `no_new_privs`, which the kernel requires of an unprivileged caller.
    pub fn apply(&self) -> std::io::Result<()> {
        seccompiler::apply_filter(&self.program).map_err(std::io::Error::other)
    }
}

fn libc_u64(value: i32) -> u64 {
    u64::try_from(value).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// In a forked child with the filter applied: a UNIX socket and a datagram pair are refused,
    /// a TCP socket and a stream pair are not.
    #[test]
    fn unix_sockets_are_refused_and_stream_pairs_and_inet_sockets_are_not() {
        let filter = SocketFilter::new().unwrap();
        // SAFETY: the child only makes system calls and exits.
        match unsafe { nix::unistd::fork() }.unwrap() {
            nix::unistd::ForkResult::Child => {
                let code = (|| {
                    filter.apply().ok()?;
                    // SAFETY: plain system calls on integers and a local array.
                    unsafe {
                        use nix::libc::*;
                        let mut pair = [0i32; 2];
                        let unix =
                            socket(AF_UNIX, SOCK_STREAM, 0) < 0 && *__errno_location() == EACCES;
                        let dgram_pair = socketpair(AF_UNIX, SOCK_DGRAM, 0, pair.as_mut_ptr()) < 0;
                        let stream_pair =
                            socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair.as_mut_ptr())
                                == 0;
                        let inet = socket(AF_INET, SOCK_STREAM, 0) >= 0;
                        Some(
                            u8::from(unix)
                                + u8::from(dgram_pair)
                                + u8::from(stream_pair)
                                + u8::from(inet),
                        )
                    }
                })()
                .unwrap_or(0);
                // SAFETY: ends the forked child without running the test harness's destructors.
                unsafe { nix::libc::_exit(i32::from(code)) }
            }
            nix::unistd::ForkResult::Parent { child } => {
                let status = nix::sys::wait::waitpid(child, None).unwrap();
                assert_eq!(status, nix::sys::wait::WaitStatus::Exited(child, 4));
            }
        }
    }
}
