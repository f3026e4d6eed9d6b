//! What isolation this machine supports, found at runtime.
//!
//! [`detect`] asks the kernel for its Landlock ABI and tries, in a short-lived forked probe, the
//! exact namespace setup the supervisor uses (user, mount and network namespaces, id maps, a
//! private mount tree). The caller reports the result at start; the supervisor uses the same
//! probes per command to decide between isolating, reporting, and refusing. It must not change
//! the calling process.

use meta_agent_render::environment::Isolation;
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::ForkResult;

use super::namespaces::NamespacePlan;

/// The isolation features available here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// The Landlock ABI version, when Landlock is enabled.
    pub landlock_abi: Option<u32>,
    /// Unprivileged user namespaces with mount and network namespaces work.
    pub user_namespaces: bool,
    /// The kernel enforces RLIMIT_NPROC on our processes (it does not for root).
    pub nproc_enforced: bool,
}

impl Capabilities {
    /// One line for logs and job summaries (render writes it).
    pub fn describe(&self) -> String {
        meta_agent_render::environment::isolation(&Isolation {
            landlock_abi: self.landlock_abi,
            user_namespaces: self.user_namespaces,
            nproc_enforced: self.nproc_enforced,
            memory_gib: super::sandbox::DEFAULT_MEMORY >> 30,
        })
    }
}

/// Probes the machine.
pub fn detect() -> Capabilities {
    Capabilities {
        landlock_abi: landlock_abi(),
        user_namespaces: user_namespaces_work(),
        nproc_enforced: !nix::unistd::geteuid().is_root(),
    }
}

/// The kernel's Landlock ABI version (`landlock_create_ruleset` with the version flag).
pub fn landlock_abi() -> Option<u32> {
    const LANDLOCK_CREATE_RULESET_VERSION: u32 = 1;
    // SAFETY: with a null attribute pointer and size 0, the version query reads no memory.
    let version = unsafe {
        nix::libc::syscall(
            nix::libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(version).ok().filter(|&v| v > 0)
}

/// True when a forked probe can enter the namespaces the supervisor would create. The probe
/// is a copy of the caller and is briefly dumpable (to write its id maps) before it exits: call
/// this at start, before any command runs, or from the supervisor (which holds no secrets).
pub fn user_namespaces_work() -> bool {
    let Ok(plan) = NamespacePlan::new(true, &[]) else {
        return false;
    };
    // SAFETY: the child only makes system calls (no allocation, no locks) and then `_exit`s.
    match unsafe { nix::unistd::fork() } {
        Ok(ForkResult::Child) => {
            let code = if plan.enter().is_ok() { 0 } else { 1 };
            // SAFETY: `_exit` ends the child without running the parent's destructors.
            unsafe { nix::libc::_exit(code) }
        }
        Ok(ForkResult::Parent { child }) => {
            matches!(waitpid(child, None), Ok(WaitStatus::Exited(_, 0)))
        }
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_description_names_every_feature() {
        let caps = Capabilities {
            landlock_abi: None,
            user_namespaces: false,
            nproc_enforced: true,
        };
        let line = caps.describe();
        assert!(
            line.contains("no Landlock") && line.contains("no user namespaces"),
            "{line}"
        );
        assert!(line.contains("RLIMIT_DATA"), "{line}");
    }
}
