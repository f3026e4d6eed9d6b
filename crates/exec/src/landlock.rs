//! Confinement with Landlock: the command may write only beneath the directories it is given (and
//! to a few harmless device files such as `/dev/null`), and read or execute only beneath those
//! and the read-only directories it is given (system and toolchain directories): never the real
//! home directory, never the checkout's siblings;
//! where the kernel has scopes (ABI 6), it cannot signal processes or reach abstract UNIX sockets
//! outside its sandbox either.
//!
//! The ruleset is built before `fork` (it opens the directories); [`WriteConfinement::restrict`]
//! only makes system calls (and opens the mount points made in the child: the supervisor is
//! single-threaded, so that allocation is safe there), between `fork` and `exec`. Landlock is stacked and
//! inherited, so the command and all its descendants stay confined. Newer access rights are
//! used when the kernel has them (best-effort compatibility inside Landlock itself). It must not
//! decide which directories are writable: that is the supervisor's policy.

use std::path::{Path, PathBuf};

use landlock::{
    ABI, AccessFs, BitFlags, PathBeneath, PathFd, PathFdError, Ruleset, RulesetAttr,
    RulesetCreated, RulesetCreatedAttr, RulesetError, RulesetStatus, Scope,
};

/// Devices every program may write to.
const WRITABLE_DEVICES: [&str; 6] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/random",
    "/dev/urandom",
];

/// Why Landlock could not be set up or applied.
#[derive(Debug, thiserror::Error)]
pub enum LandlockError {
    #[error("cannot build the Landlock ruleset: {0}")]
    Ruleset(#[from] RulesetError),
    #[error("cannot open a path for the Landlock ruleset: {0}")]
    Open(#[from] PathFdError),
    #[error("the Landlock ruleset was already applied")]
    Spent,
    #[error("Landlock is not enforced by this kernel")]
    NotEnforced,
}

/// A ready ruleset, applied once in the child.
#[derive(Debug)]
pub struct WriteConfinement {
    ruleset: Option<RulesetCreated>,
    /// Writable directories whose rule is added in the child, just before the ruleset is
    /// applied: mount points made there (the caches' overlays), which a rule on the directory
    /// beneath them would not cover (Landlock ignores rules on hidden mount points).
    mounted: Vec<PathBuf>,
    handled: BitFlags<AccessFs>,
}

impl WriteConfinement {
    /// Writes (and reads) allowed beneath `writable`, reads and execution beneath `readable`
    /// (missing directories are skipped).
    /// `mounted` are writable too: directories where the child mounts something before the
    /// ruleset is applied.
    pub fn with_mounted(
        writable: &[PathBuf],
        readable: &[PathBuf],
        mounted: &[PathBuf],
    ) -> Result<Self, LandlockError> {
        let read = read_access();
        let handled = write_access() | read;
        // Scoped (ABI 6 and later; dropped on older kernels): the command can neither signal a
        // process outside its sandbox (the bot, the supervisor, the CI runner) nor connect to an
        // abstract UNIX socket created outside it.
        let mut ruleset = Ruleset::default()
            .handle_access(handled)?
            .scope(Scope::Signal | Scope::AbstractUnixSocket)?
            .create()?;
        for path in writable.iter().filter(|path| path.exists()) {
            let rights = match path.is_dir() {
                true => handled,
                // A lock file such as `$CARGO_HOME/.package-cache`.
                false => handled & (AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate),
            };
            ruleset = ruleset.add_rule(beneath(path, rights)?)?;
        }
        for path in readable.iter().filter(|path| path.exists()) {
            let rights = match path.is_dir() {
                true => read,
                false => read & (AccessFs::ReadFile | AccessFs::Execute),
            };
            ruleset = ruleset.add_rule(beneath(path, rights)?)?;
        }
        let device = write_access() & !(AccessFs::RemoveDir | AccessFs::MakeDir);
        for path in WRITABLE_DEVICES
            .iter()
            .map(Path::new)
            .filter(|p| p.exists())
        {
            let file_rights = device & (AccessFs::WriteFile | AccessFs::Truncate);
            ruleset = ruleset.add_rule(beneath(path, file_rights)?)?;
        }
        Ok(WriteConfinement {
            ruleset: Some(ruleset),
            mounted: mounted.to_vec(),
            handled,
        })
    }

    /// Confines the calling process (and so everything it execs and forks). Also sets
    /// `no_new_privs`.
    pub fn restrict(&mut self) -> Result<(), LandlockError> {
        let mut ruleset = self.ruleset.take().ok_or(LandlockError::Spent)?;
        for path in &self.mounted {
            ruleset = ruleset.add_rule(beneath(path, self.handled)?)?;
        }
        match ruleset.restrict_self()?.ruleset {
            RulesetStatus::FullyEnforced | RulesetStatus::PartiallyEnforced => Ok(()),
            RulesetStatus::NotEnforced => Err(LandlockError::NotEnforced),
        }
    }
}

/// Reading files, listing directories, executing.
fn read_access() -> BitFlags<AccessFs> {
    AccessFs::ReadFile | AccessFs::ReadDir | AccessFs::Execute
}

/// The write rights Landlock can handle, with the newest ABI the crate knows (downgraded to what
/// the kernel supports). Device ioctls are left alone (terminals and pipes keep working).
fn write_access() -> BitFlags<AccessFs> {
    AccessFs::from_write(ABI::V9) & !AccessFs::IoctlDev
}

fn beneath(path: &Path, access: BitFlags<AccessFs>) -> Result<PathBeneath<PathFd>, LandlockError> {
    let fd = PathFd::new(path)?;
    Ok(PathBeneath::new(fd, access))
}
