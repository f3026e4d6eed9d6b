//! Resource limits for a command, applied in the supervisor's child just before `exec`.
//!
//! Only `setrlimit` calls (async-signal-safe, no allocation), so [`apply`] is safe between `fork`
//! and `exec`. Soft and hard limits are set together, so the command cannot raise them again.
//! It must not decide the values: they come from the policy in [`super::sandbox`].

use nix::sys::resource::{Resource, setrlimit};

use super::sandbox::SandboxArgs;

/// The limits to apply, copied out of the supervisor's arguments before `fork`.
#[derive(Debug, Clone, Copy)]
pub struct RlimitPlan {
    limits: [(Resource, Option<u64>); 5],
}

impl RlimitPlan {
    pub fn new(args: &SandboxArgs) -> Self {
        RlimitPlan {
            limits: [
                (Resource::RLIMIT_DATA, args.rlimit_data),
                (Resource::RLIMIT_FSIZE, args.rlimit_fsize),
                (Resource::RLIMIT_NPROC, args.rlimit_nproc),
                (Resource::RLIMIT_CPU, args.rlimit_cpu),
                (Resource::RLIMIT_CORE, Some(0)),
            ],
        }
    }

    /// Sets every limit on the calling process.
    pub fn apply(&self) -> nix::Result<()> {
        for (resource, value) in self.limits {
            if let Some(value) = value {
                setrlimit(resource, value, value)?;
            }
        }
        Ok(())
    }
}
