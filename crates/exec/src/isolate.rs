//! The supervisor's isolation step: decide, from the policy and what the machine supports, what
//! to apply to the command; prepare it before `fork`; apply it between `fork` and `exec`.
//!
//! Order in the child: resource limits, namespaces (user, mount with `.git` read-only, container
//! sockets and credential files hidden, network when cut), `no_new_privs`, with the network off
//! the filter refusing UNIX sockets ([`super::seccomp`]), Landlock last (it
//! forbids the mounts before it). When the policy requires a feature the machine lacks,
//! [`prepare`] refuses with the reason and nothing runs; in best-effort mode it runs with what
//! there is and says what is missing. It must not run the command or decide the policy.

use std::io;
use std::path::{Path, PathBuf};

use super::landlock::WriteConfinement;
use super::namespaces::{NamespaceError, NamespacePlan};
use super::rlimits::RlimitPlan;
use super::sandbox::SandboxArgs;

/// What the machine offers, as far as this command needs to know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Offer {
    pub landlock: bool,
    pub user_namespaces: bool,
}

/// The features to use for one command, and what is missing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsolationPlan {
    pub landlock: bool,
    pub namespaces: bool,
    pub network_off: bool,
    pub git_read_only: bool,
    pub notes: Vec<String>,
}

/// Everything the child applies before `exec`, prepared in advance.
#[derive(Debug)]
pub struct Confinement {
    rlimits: RlimitPlan,
    namespaces: Option<NamespacePlan>,
    landlock: Option<WriteConfinement>,
    /// With the network off: no UNIX socket can be created ([`super::seccomp`]).
    sockets: Option<super::seccomp::SocketFilter>,
    /// Isolation asked for but missing on this machine (best effort).
    pub notes: Vec<String>,
    /// The command's throwaway `HOME` and private temporary directory (confined commands),
    /// removed when dropped.
    pub scratch: Option<Scratch>,
}

/// Why a command's isolation could not be prepared: refused, or the kernel said no.
#[derive(Debug, thiserror::Error)]
pub enum IsolationError {
    #[error("refused: isolation required but {}", .missing.join("; "))]
    Required { missing: Vec<&'static str> },
    #[error(transparent)]
    Namespaces(#[from] NamespaceError),
    #[error(transparent)]
    Landlock(#[from] super::landlock::LandlockError),
    #[error(transparent)]
    Seccomp(#[from] super::seccomp::SeccompError),
    #[error("cannot create the command's fresh home or temporary directory: {0}")]
    Home(#[source] std::io::Error),
}

/// Decides and prepares the isolation of a command run in `cwd`.
pub fn prepare(args: &SandboxArgs, cwd: &Path) -> Result<Confinement, IsolationError> {
    let git = cwd.join(".git");
    let hidden: Vec<PathBuf> = always_hidden()
        .into_iter()
        .chain(args.hide.iter().cloned())
        .filter(|path| path.exists())
        .collect();
    let offer = Offer {
        landlock: args.confine_writes && super::detect::landlock_abi().is_some(),
        user_namespaces: super::detect::user_namespaces_work(),
    };
    let situation = Situation {
        git_exists: git.exists(),
        root: nix::unistd::geteuid().is_root(),
        secrets_exist: !hidden.is_empty(),
    };
    let mut decision = decide(args, offer, situation)?;
    let caches: Vec<PathBuf> = args
        .cache
        .iter()
        .filter(|dir| dir.is_dir())
        .cloned()
        .collect();
    let scratch = match args.confine_writes {
        true => Some(Scratch::create().map_err(IsolationError::Home)?),
        false => None,
    };
    let overlays = match (&scratch, decision.namespaces) {
        (Some(scratch), true) => scratch.overlays(&caches).map_err(IsolationError::Home)?,
        _ => Vec::new(),
    };
    if !caches.is_empty() && overlays.is_empty() && args.confine_writes {
        decision.notes.push(
            "the download caches are read-only (no mount namespace for a per-command overlay)"
                .into(),
        );
    }
    let namespaces = match decision.namespaces {
        true => Some(namespace_plan(&decision, git, &hidden)?.overlaying(&overlays)?),
        false => None,
    };
    let landlock = match decision.landlock {
        true => {
            let mut writable = writable(args, cwd);
            let mut readable = readable(args, &home_env());
            if let Some(scratch) = &scratch {
                writable.extend([scratch.home.path(), scratch.temp.path()].map(Path::to_owned));
            }
            let mounted = match overlays.is_empty() {
                true => {
                    readable.extend(caches.iter().cloned());
                    Vec::new()
                }
                false => caches.clone(),
            };
            Some(WriteConfinement::with_mounted(
                &writable, &readable, &mounted,
            )?)
        }
        false => None,
    };
    let sockets = match args.no_network {
        true => Some(super::seccomp::SocketFilter::new()?),
        false => None,
    };
    Ok(Confinement {
        rlimits: RlimitPlan::new(args),
        namespaces,
        landlock,
        sockets,
        notes: decision.notes,
        scratch,
    })
}

/// A confined command's own directories: a fresh `HOME` and a private temporary directory.
#[derive(Debug)]
pub struct Scratch {
    pub home: super::home::FreshDir,
    pub temp: super::home::FreshDir,
    /// The upper layers of the caches' overlays (not visible to the command).
    pub overlay: super::home::FreshDir,
}

impl Scratch {
    fn create() -> io::Result<Scratch> {
        Ok(Scratch {
            home: super::home::FreshDir::home()?,
            temp: super::home::FreshDir::temp()?,
            overlay: super::home::FreshDir::overlay()?,
        })
    }

    /// One overlay per cache: the cache as its lower layer, an upper and a work directory of
    /// this command's own, discarded with it.
    fn overlays(&self, caches: &[PathBuf]) -> io::Result<Vec<super::namespaces::Overlay>> {
        caches
            .iter()
            .enumerate()
            .map(|(index, cache)| {
                let layer = self.overlay.path().join(index.to_string());
                let (upper, work) = (layer.join("upper"), layer.join("work"));
                std::fs::create_dir_all(&upper)?;
                std::fs::create_dir_all(&work)?;
                Ok(super::namespaces::Overlay {
                    target: cache.clone(),
                    upper,
                    work,
                })
            })
            .collect()
    }
}

/// The command's own `HOME`, `PATH` and toolchain variables, as the supervisor received them.
pub fn home_env() -> super::home::HomeEnv {
    super::home::HomeEnv::from_lookup(|name| std::env::var_os(name))
}

fn namespace_plan(
    decision: &IsolationPlan,
    git: PathBuf,
    hidden: &[PathBuf],
) -> Result<NamespacePlan, NamespaceError> {
    let read_only = match decision.git_read_only {
        true => vec![git],
        false => Vec::new(),
    };
    NamespacePlan::new(decision.network_off, &read_only)?
        .hiding(hidden)?
        .private(&[PathBuf::from(SHARED_MEMORY)])
}

/// Shared between every process of the machine: a confined command gets its own (in a mount
/// namespace) or, without one, the shared one writable.
const SHARED_MEMORY: &str = "/dev/shm";

/// Facts about the command's surroundings that change what isolation it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Situation {
    /// The working directory has a `.git` to protect.
    pub git_exists: bool,
    /// We run as root: only a user namespace takes root's capabilities away from the child.
    pub root: bool,
    /// Container sockets or credential files exist that should be hidden.
    pub secrets_exist: bool,
}

/// The pure decision: which features to use, what to report, or why to refuse. A user namespace
/// is used whenever the machine offers one (it also drops root's capabilities).
pub fn decide(
    args: &SandboxArgs,
    offer: Offer,
    situation: Situation,
) -> Result<IsolationPlan, IsolationError> {
    let namespaces = offer.user_namespaces;
    let needs = [
        (
            args.confine_writes && !offer.landlock,
            "writes and reads cannot be confined (Landlock is not available)",
        ),
        (
            args.confine_writes && !namespaces,
            "a process may outlive its command (no PID namespace: user namespaces are not available)",
        ),
        (
            args.no_network && !namespaces,
            "the network cannot be cut (user namespaces are not available)",
        ),
        (
            args.confine_writes && situation.git_exists && !namespaces,
            ".git cannot be made read-only (user namespaces are not available)",
        ),
        (
            situation.secrets_exist && !namespaces,
            "container sockets and credential files cannot be hidden (no user namespaces)",
        ),
        (
            situation.root && !namespaces,
            "running as root without a user namespace: the child keeps root's capabilities",
        ),
    ];
    let missing: Vec<&str> = needs
        .iter()
        .filter(|(gap, _)| *gap)
        .map(|(_, why)| *why)
        .collect();
    if args.require_isolation && !missing.is_empty() {
        return Err(IsolationError::Required { missing });
    }
    Ok(IsolationPlan {
        landlock: args.confine_writes && offer.landlock,
        namespaces,
        network_off: args.no_network && namespaces,
        git_read_only: args.confine_writes && situation.git_exists && namespaces,
        notes: missing.into_iter().map(str::to_owned).collect(),
    })
}

/// Container sockets and the credential files of our user, hidden from every command (whether
/// they exist is checked later).
pub fn always_hidden() -> Vec<PathBuf> {
    let sockets = [
        "/var/run/docker.sock",
        "/run/docker.sock",
        "/run/containerd/containerd.sock",
        "/run/podman/podman.sock",
    ];
    // Not `.npmrc`: it usually carries the registry configuration that gates need.
    let in_home = [
        ".ssh",
        ".git-credentials",
        ".netrc",
        ".docker/config.json",
        ".config/gh/hosts.yml",
        ".aws/credentials",
        ".pypirc",
        ".cargo/credentials",
        ".cargo/credentials.toml",
    ];
    let mut paths: Vec<PathBuf> = sockets.iter().map(PathBuf::from).collect();
    for home in homes() {
        paths.extend(in_home.iter().map(|file| home.join(file)));
    }
    paths
}

/// `$HOME` and our user's home directory from the password database (when they differ).
pub fn homes() -> Vec<PathBuf> {
    let mut homes: Vec<PathBuf> = std::env::var_os("HOME")
        .map(PathBuf::from)
        .into_iter()
        .collect();
    let uid = nix::unistd::getuid();
    if let Ok(Some(user)) = nix::unistd::User::from_uid(uid)
        && !homes.contains(&user.dir)
    {
        homes.push(user.dir);
    }
    homes
}

/// What a confined command may read besides what it may write: the system and toolchain
/// directories of `env` and the configured `sandbox.read`.
fn readable(args: &SandboxArgs, env: &super::home::HomeEnv) -> Vec<PathBuf> {
    let mut dirs = super::home::readable_dirs(env);
    dirs.extend(args.readable.iter().cloned());
    dirs
}

/// Every directory beneath which a command run in `cwd` with `args` and the environment `env`
/// may read, besides its own home and temporary directory ([`super::home::in_scratch`]): a path
/// outside all of them is one the sandbox hides (where Landlock confines reads). Pure: the same
/// lists [`prepare`] gives Landlock.
pub fn visible_roots(args: &SandboxArgs, cwd: &Path, env: &super::home::HomeEnv) -> Vec<PathBuf> {
    let mut roots = writable(args, cwd);
    roots.extend(readable(args, env));
    roots.extend(args.cache.iter().cloned());
    roots.sort();
    roots.dedup();
    roots
}

/// Why a directory may not be given to commands to read (`sandbox.read`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadRefusal {
    #[error("must be an absolute path without `..`")]
    NotAbsolute,
    #[error(
        "would let commands read the real home {} as a whole (its credentials, its other \
         projects): name the directory inside it that the gates need",
        .0.display()
    )]
    Home(PathBuf),
    #[error(
        "is shared by every process of the machine (other checkouts, other users' files): name \
         the directory inside it that the gates need"
    )]
    Shared,
    #[error("would let commands read credentials ({})", .0.display())]
    Credentials(PathBuf),
}

/// Directories every process shares, never readable as a whole.
const SHARED_DIRS: [&str; 3] = ["/tmp", "/var/tmp", "/dev/shm"];

/// Credential files and directories under a home (those always hidden, and the directories that
/// hold them), never readable through `sandbox.read`.
const HOME_CREDENTIALS: [&str; 12] = [
    ".ssh",
    ".git-credentials",
    ".netrc",
    ".docker",
    ".config/gh",
    ".aws",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".kube",
    ".gnupg",
    ".config/gcloud",
];

/// Whether commands may be let read `dir` (`sandbox.read`), the users' `homes` known: never a
/// home or what holds one (`/`, `/home`), never a directory every process shares as a whole,
/// never a credential file or what holds one. Lexical: nothing is looked up on disk.
pub fn read_refusal(dir: &Path, homes: &[PathBuf]) -> Option<ReadRefusal> {
    use std::path::Component;
    let plain = dir
        .components()
        .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
    if !dir.is_absolute() || !plain {
        return Some(ReadRefusal::NotAbsolute);
    }
    if let Some(home) = homes.iter().find(|home| home.starts_with(dir)) {
        return Some(ReadRefusal::Home(home.clone()));
    }
    if SHARED_DIRS.iter().any(|shared| dir == Path::new(shared)) {
        return Some(ReadRefusal::Shared);
    }
    homes
        .iter()
        .flat_map(|home| HOME_CREDENTIALS.iter().map(move |file| home.join(file)))
        .find(|secret| dir.starts_with(secret) || secret.starts_with(dir))
        .map(ReadRefusal::Credentials)
}

/// The directories a confined command may write beneath (besides its own home and temporary
/// directory): never the shared `/tmp`, where other checkouts and other processes' files live.
fn writable(args: &SandboxArgs, cwd: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![cwd.to_owned(), PathBuf::from(SHARED_MEMORY)];
    dirs.extend(args.writable.iter().cloned());
    dirs
}

impl Confinement {
    /// Applies everything to the calling process (the child, between `fork` and `exec`).
    pub fn apply(&mut self) -> io::Result<()> {
        self.rlimits.apply()?;
        if let Some(namespaces) = &self.namespaces {
            namespaces.enter()?;
            super::namespaces::enter_pid_namespace()?;
        }
        nix::sys::prctl::set_no_new_privs()?;
        if let Some(sockets) = &self.sockets {
            sockets.apply()?;
        }
        if let Some(landlock) = &mut self.landlock {
            landlock.restrict().map_err(io::Error::other)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_and_container_sockets_are_always_hidden() {
        let hidden = always_hidden();
        assert!(hidden.iter().any(|p| p.ends_with(".ssh")), "{hidden:?}");
        assert!(hidden.iter().any(|p| p.ends_with(".git-credentials")));
        assert!(hidden.contains(&PathBuf::from("/var/run/docker.sock")));
    }

    #[test]
    fn sandbox_read_refuses_homes_shared_dirs_and_credentials() {
        let homes = [PathBuf::from("/home/ci"), PathBuf::from("/root")];
        let refused = |dir: &str| read_refusal(Path::new(dir), &homes);
        for allowed in [
            "/opt/venv",
            "/home/ci/venvs/calc",
            "/tmp/tools/venv",
            "/srv/cache",
        ] {
            assert_eq!(refused(allowed), None, "{allowed}");
        }
        assert_eq!(refused("venv"), Some(ReadRefusal::NotAbsolute));
        assert_eq!(refused("/opt/../home/ci"), Some(ReadRefusal::NotAbsolute));
        for home in ["/", "/home", "/home/ci", "/root"] {
            assert!(
                matches!(refused(home), Some(ReadRefusal::Home(_))),
                "{home}"
            );
        }
        assert_eq!(refused("/tmp"), Some(ReadRefusal::Shared));
        for secret in [
            "/home/ci/.ssh",
            "/home/ci/.aws/sso",
            "/root/.config",
            "/root/.cargo",
        ] {
            assert!(
                matches!(refused(secret), Some(ReadRefusal::Credentials(_))),
                "{secret}"
            );
        }
    }

    #[test]
    fn the_visible_roots_are_what_landlock_gets() {
        let env = crate::home::HomeEnv {
            home: Some(PathBuf::from("/home/ci")),
            path: "/usr/bin:/opt/venv/bin".into(),
            toolchains: vec![],
        };
        let args = SandboxArgs {
            confine_writes: true,
            writable: vec![PathBuf::from("/srv/out")],
            readable: vec![PathBuf::from("/opt/tools")],
            ..SandboxArgs::default()
        };
        let roots = visible_roots(&args, Path::new("/work/repo"), &env);
        for root in ["/work/repo", "/srv/out", "/opt/tools", "/opt/venv", "/usr"] {
            assert!(roots.contains(&PathBuf::from(root)), "{root}: {roots:?}");
        }
        assert!(
            !roots.iter().any(|r| r == Path::new("/home/ci")),
            "{roots:?}"
        );
        assert!(!roots.iter().any(|r| r == Path::new("/tmp")), "{roots:?}");
    }

    const NOTHING: Offer = Offer {
        landlock: false,
        user_namespaces: false,
    };
    const EVERYTHING: Offer = Offer {
        landlock: true,
        user_namespaces: true,
    };

    const BARE: Situation = Situation {
        git_exists: false,
        root: false,
        secrets_exist: false,
    };
    const WITH_GIT: Situation = Situation {
        git_exists: true,
        root: false,
        secrets_exist: true,
    };

    fn strict() -> SandboxArgs {
        SandboxArgs {
            no_network: true,
            confine_writes: true,
            require_isolation: true,
            ..SandboxArgs::default()
        }
    }

    #[test]
    fn required_isolation_on_a_bare_machine_is_refused_with_every_reason() {
        let reason = decide(&strict(), NOTHING, WITH_GIT)
            .unwrap_err()
            .to_string();
        assert!(reason.contains("Landlock"), "{reason}");
        assert!(reason.contains("network cannot be cut"), "{reason}");
        assert!(reason.contains(".git"), "{reason}");
        assert!(reason.contains("credential files"), "{reason}");
    }

    #[test]
    fn best_effort_on_a_bare_machine_runs_and_reports() {
        let args = SandboxArgs {
            require_isolation: false,
            ..strict()
        };
        let decision = decide(&args, NOTHING, BARE).unwrap();
        assert!(!decision.landlock && !decision.namespaces && !decision.network_off);
        assert_eq!(decision.notes.len(), 3, "{:?}", decision.notes);
        assert!(
            decision.notes.iter().any(|n| n.contains("outlive")),
            "{:?}",
            decision.notes
        );
    }

    #[test]
    fn a_capable_machine_uses_everything_asked_for() {
        let decision = decide(&strict(), EVERYTHING, WITH_GIT).unwrap();
        assert!(decision.landlock && decision.network_off && decision.git_read_only);
        assert!(decision.notes.is_empty());
    }

    #[test]
    fn root_without_namespaces_is_reported_and_refused_when_required() {
        let root = Situation { root: true, ..BARE };
        let only_landlock = Offer {
            landlock: true,
            user_namespaces: false,
        };
        let args = SandboxArgs {
            confine_writes: true,
            ..SandboxArgs::default()
        };
        let decision = decide(&args, only_landlock, root).unwrap();
        assert!(decision.landlock && !decision.namespaces);
        assert!(
            decision.notes.iter().any(|n| n.contains("root")),
            "{:?}",
            decision.notes
        );
        let required = SandboxArgs {
            require_isolation: true,
            ..args
        };
        assert!(decide(&required, only_landlock, root).is_err());
    }
}
