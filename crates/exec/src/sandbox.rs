//! The isolation policy of one command, and its form on the supervisor's command line.
//!
//! [`Isolation`] says what a command may do: reach the network or not, write anywhere or only in
//! its working directory and the temporary directory (`.git` read-only), which resource limits
//! bind it, and whether a missing isolation feature refuses the command ([`Enforcement::Required`])
//! or is only reported ([`Enforcement::BestEffort`]). The supervisor enforces it; this module only
//! describes it. It also holds [`protect_this_process`], which keeps same-user children from
//! reading meta-agent's own memory and `/proc/<pid>/environ`. It must not apply anything to a
//! child itself.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// Whether the command may use the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetworkPolicy {
    /// The host's network (gates that fetch dependencies).
    On,
    /// A private network namespace with only a loopback interface, down: no connection succeeds.
    Off,
}

/// Where the command may write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WritePolicy {
    /// No confinement of writes.
    Anywhere,
    /// The working directory tree (its `.git` read-only), a private temporary directory, and
    /// `extra`; `caches` (the toolchains' download caches) through a per-command overlay whose
    /// writes are discarded (read-only without a mount namespace).
    Confined {
        extra: Vec<PathBuf>,
        caches: Vec<PathBuf>,
    },
}

/// What happens when the machine cannot provide an isolation feature the policy asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enforcement {
    /// Run anyway and report what is missing.
    BestEffort,
    /// Do not run: the command ends as not started, with the reason.
    Required,
}

/// Resource limits (`setrlimit`) applied to the command; `None` leaves the inherited limit.
/// The core-dump size is always zero.
///
/// Memory is limited by what a process allocates, not by what it maps: `RLIMIT_DATA`, which since
/// Linux 4.7 counts the heap and every private writable mapping (anonymous `mmap` included), so
/// a runaway allocation fails. Address space a runtime only reserves (`PROT_NONE`: V8's
/// WebAssembly guard regions and pointer cage, the Go heap arena, the JVM's heap reservation) is
/// not counted until it is made writable; `RLIMIT_AS` counted it, and stopped node's
/// `WebAssembly.instantiate` at 8 GiB. Not counted either: shared mappings (`MAP_SHARED`,
/// `/dev/shm`), file-backed read-only mappings (code) and the stack; and it binds each process,
/// not the command's tree as a whole (see README, "Limits").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Memory a process may allocate (`RLIMIT_DATA`), in bytes.
    pub memory: Option<u64>,
    /// Largest file a process may write, in bytes.
    pub file_size: Option<u64>,
    /// Processes of the user (not enforced by the kernel for root).
    pub processes: Option<u64>,
    /// CPU time per process; `None` means the command's wall-clock timeout.
    pub cpu: Option<Duration>,
}

/// The default memory limit of a process: 8 GiB allocated.
pub const DEFAULT_MEMORY: u64 = 8 << 30;

impl Default for Limits {
    /// Generous enough for cargo and pytest builds.
    fn default() -> Self {
        Limits {
            memory: Some(DEFAULT_MEMORY),
            file_size: Some(1 << 30),
            processes: Some(4096),
            cpu: None,
        }
    }
}

/// The isolation of one command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Isolation {
    pub network: NetworkPolicy,
    pub writes: WritePolicy,
    pub limits: Limits,
    pub enforcement: Enforcement,
    /// Files and directories to hide from the command (read as empty), on top of the container
    /// sockets and credential files always hidden (see `isolate::always_hidden`).
    pub hide: Vec<PathBuf>,
    /// Directories the command may read (and execute from) besides the system and toolchain
    /// directories and what it may write: `sandbox.read` (checked by
    /// [`super::isolate::read_refusal`] when configured).
    pub read: Vec<PathBuf>,
}

impl Default for Isolation {
    /// The gate default: network on, writes confined, default limits, best effort.
    fn default() -> Self {
        Isolation {
            network: NetworkPolicy::On,
            writes: WritePolicy::Confined {
                extra: Vec::new(),
                caches: Vec::new(),
            },
            limits: Limits::default(),
            enforcement: Enforcement::BestEffort,
            hide: Vec::new(),
            read: Vec::new(),
        }
    }
}

impl Isolation {
    /// For gates and repository commands: the default, plus the configured `writable` paths,
    /// with the toolchains' download caches (`$CARGO_HOME/registry` and `/git`, `~/.cache`,
    /// `~/.npm`, `GOCACHE`, `GOMODCACHE`, `~/.m2/repository`, `~/.gradle/caches`) seen through a
    /// per-command overlay: a command reads them and may write, but its writes are discarded when
    /// it ends (without a mount namespace they are read-only). Never a toolchain's own directory
    /// or its `bin` (`~/.cargo/bin`, `~/.local/bin`): nothing a command writes may be run later by
    /// the bot or a toolchain proxy. Only the setup phase writes the real caches
    /// ([`Isolation::with_caches_writable`]).
    pub fn for_repository_commands(env: &BTreeMap<String, String>, writable: &[PathBuf]) -> Self {
        let home = env.get("HOME").map(PathBuf::from);
        let cargo_home = env
            .get("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|home| home.join(".cargo")));
        let mut extra: Vec<PathBuf> = ["GOCACHE", "GOMODCACHE", "NPM_CONFIG_CACHE"]
            .iter()
            .filter_map(|name| env.get(*name).map(PathBuf::from))
            .collect();
        if let Some(cargo) = &cargo_home {
            extra.extend(["registry", "git", ".package-cache"].map(|dir| cargo.join(dir)));
        }
        if let Some(home) = &home {
            extra.extend(
                [".cache", ".npm", ".m2/repository", ".gradle/caches"]
                    .iter()
                    .map(|dir| home.join(dir)),
            );
        }
        let usable = |mut dirs: Vec<PathBuf>| {
            dirs.retain(|path| path.is_absolute() && path.exists());
            dirs.sort();
            dirs.dedup();
            dirs
        };
        Isolation {
            writes: WritePolicy::Confined {
                extra: usable(writable.to_vec()),
                caches: usable(extra),
            },
            ..Isolation::default()
        }
    }

    /// Also lets the command read `dirs` (`sandbox.read`).
    pub fn reading(mut self, dirs: &[PathBuf]) -> Self {
        self.read.extend(dirs.iter().cloned());
        self
    }

    /// The caches written for real (the setup phase, which fetches dependencies before any
    /// code the model wrote runs).
    pub fn with_caches_writable(mut self) -> Self {
        if let WritePolicy::Confined { extra, caches } = &mut self.writes {
            extra.append(caches);
        }
        self
    }

    /// For commands the model proposed: network off, writes confined, every feature required.
    pub fn strict() -> Self {
        Isolation {
            network: NetworkPolicy::Off,
            enforcement: Enforcement::Required,
            ..Isolation::default()
        }
    }
}

/// The policy as the supervisor receives it (flattened into its command line).
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args)]
pub struct SandboxArgs {
    /// Run the command without network.
    #[arg(long)]
    pub no_network: bool,
    /// Confine writes to the working directory and the temporary directory.
    #[arg(long)]
    pub confine_writes: bool,
    /// A further directory the command may write (with --confine-writes).
    #[arg(long)]
    pub writable: Vec<PathBuf>,
    /// A download cache the command sees through an overlay whose writes are discarded (with
    /// --confine-writes; read-only without a mount namespace).
    #[arg(long)]
    pub cache: Vec<PathBuf>,
    /// A file or directory to hide from the command, on top of the defaults.
    #[arg(long)]
    pub hide: Vec<PathBuf>,
    /// A further directory the command may read and execute from (with --confine-writes).
    #[arg(long)]
    pub readable: Vec<PathBuf>,
    /// Refuse to run when an isolation feature asked for is missing.
    #[arg(long)]
    pub require_isolation: bool,
    /// RLIMIT_DATA (memory a process may allocate), in bytes.
    #[arg(long)]
    pub rlimit_data: Option<u64>,
    /// RLIMIT_FSIZE, in bytes.
    #[arg(long)]
    pub rlimit_fsize: Option<u64>,
    /// RLIMIT_NPROC.
    #[arg(long)]
    pub rlimit_nproc: Option<u64>,
    /// RLIMIT_CPU, in seconds.
    #[arg(long)]
    pub rlimit_cpu: Option<u64>,
}

impl SandboxArgs {
    /// The supervisor's view of `isolation` for a command with this wall-clock `timeout`.
    pub fn from_policy(isolation: &Isolation, timeout: Duration) -> Self {
        let (confine_writes, writable, cache) = match &isolation.writes {
            WritePolicy::Anywhere => (false, Vec::new(), Vec::new()),
            WritePolicy::Confined { extra, caches } => (true, extra.clone(), caches.clone()),
        };
        let cpu = isolation.limits.cpu.unwrap_or(timeout);
        SandboxArgs {
            no_network: isolation.network == NetworkPolicy::Off,
            confine_writes,
            writable,
            cache,
            hide: isolation.hide.clone(),
            readable: isolation.read.clone(),
            require_isolation: isolation.enforcement == Enforcement::Required,
            rlimit_data: isolation.limits.memory,
            rlimit_fsize: isolation.limits.file_size,
            rlimit_nproc: isolation.limits.processes,
            rlimit_cpu: Some(cpu.as_secs().saturating_add(1)),
        }
    }

    /// The command-line arguments that parse back into `self`.
    pub fn to_argv(&self) -> Vec<OsString> {
        let mut argv: Vec<OsString> = Vec::new();
        let flags = [
            (self.no_network, "--no-network"),
            (self.confine_writes, "--confine-writes"),
            (self.require_isolation, "--require-isolation"),
        ];
        argv.extend(flags.iter().filter(|(on, _)| *on).map(|(_, f)| f.into()));
        for dir in &self.writable {
            argv.extend(["--writable".into(), dir.clone().into_os_string()]);
        }
        for dir in &self.cache {
            argv.extend(["--cache".into(), dir.clone().into_os_string()]);
        }
        for path in &self.hide {
            argv.extend(["--hide".into(), path.clone().into_os_string()]);
        }
        for dir in &self.readable {
            argv.extend(["--readable".into(), dir.clone().into_os_string()]);
        }
        let limits = [
            ("--rlimit-data", self.rlimit_data),
            ("--rlimit-fsize", self.rlimit_fsize),
            ("--rlimit-nproc", self.rlimit_nproc),
            ("--rlimit-cpu", self.rlimit_cpu),
        ];
        for (flag, value) in limits {
            if let Some(value) = value {
                argv.extend([flag.into(), value.to_string().into()]);
            }
        }
        argv
    }
}

/// Marks this process non-dumpable, so a child of the same user cannot read its memory or
/// `/proc/<pid>/environ` (those files become root-owned; children in their own user namespace
/// lack the capability even when meta-agent runs as root). Call first thing in `main`.
pub fn protect_this_process() -> Result<(), nix::errno::Errno> {
    nix::sys::prctl::set_dumpable(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrapper {
        #[command(flatten)]
        sandbox: SandboxArgs,
    }

    #[test]
    fn the_command_line_round_trips() {
        let mut isolation = Isolation::strict();
        isolation.writes = WritePolicy::Confined {
            extra: vec!["/opt/shared".into()],
            caches: vec!["/opt/cache".into()],
        };
        isolation.hide = vec!["/srv/secret".into()];
        isolation.read = vec!["/opt/venv".into()];
        let args = SandboxArgs::from_policy(&isolation, Duration::from_millis(2500));
        assert_eq!(args.rlimit_cpu, Some(3));
        let mut argv: Vec<OsString> = vec!["x".into()];
        argv.extend(args.to_argv());
        let parsed = Wrapper::try_parse_from(argv).unwrap().sandbox;
        assert_eq!(parsed, args);
        assert!(parsed.no_network && parsed.require_isolation && parsed.confine_writes);
    }

    #[test]
    fn the_default_is_best_effort_with_network_and_confined_writes() {
        let args = SandboxArgs::from_policy(&Isolation::default(), Duration::from_secs(60));
        assert!(!args.no_network && args.confine_writes && !args.require_isolation);
        assert_eq!(args.rlimit_nproc, Some(4096));
    }
}
