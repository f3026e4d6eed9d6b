//! The throwaway home of a confined command, and the directories it may read.
//!
//! A confined command (a gate, a model command) never sees the real home directory: its `HOME` is
//! a fresh empty directory the supervisor creates and removes afterwards ([`FreshDir`]), as is its
//! temporary directory (`TMPDIR`: the shared `/tmp` is neither readable nor writable), and the
//! toolchains it needs are reached through their own variables (`CARGO_HOME`, `RUSTUP_HOME`,
//! `PYENV_ROOT`, ...), set to where they are today when unset, readable but not writable
//! ([`readable_dirs`]). What it may read besides: the system directories, the toolchains on its
//! `PATH`; the worktree and temporary directories come from the writable list. Pure decisions
//! and one directory; the enforcement is Landlock's (`exec/landlock.rs`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Toolchain variables and their default directory under the real home.
pub const TOOLCHAIN_VARS: &[(&str, &str)] = &[
    ("CARGO_HOME", ".cargo"),
    ("RUSTUP_HOME", ".rustup"),
    ("PYENV_ROOT", ".pyenv"),
    ("NVM_DIR", ".nvm"),
    ("GOROOT", ".go"),
    // The download caches a gate may write (see `Isolation::for_repository_commands`).
    ("XDG_CACHE_HOME", ".cache"),
    ("npm_config_cache", ".npm"),
];

/// System directories every command may read and execute from (never `/home`, `/root`,
/// `/tmp`, `/var/tmp`, `/mnt` or `/srv`: those hold people's files and other checkouts).
const SYSTEM_DIRS: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/proc",
    "/sys",
    "/dev",
    "/run",
    "/var/lib",
    "/var/cache",
    "/nix",
    "/snap",
];

/// What the command's environment says about homes and toolchains.
#[derive(Debug, Clone, Default)]
pub struct HomeEnv {
    /// The real home (`HOME` as the bot passed it on).
    pub home: Option<PathBuf>,
    pub path: OsString,
    /// Each of [`TOOLCHAIN_VARS`] with its value, when set.
    pub toolchains: Vec<(&'static str, Option<PathBuf>)>,
}

impl HomeEnv {
    /// The homes and toolchains `lookup` (an environment) names.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<OsString>) -> HomeEnv {
        HomeEnv {
            home: lookup("HOME").map(PathBuf::from),
            path: lookup("PATH").unwrap_or_default(),
            toolchains: TOOLCHAIN_VARS
                .iter()
                .map(|(name, _)| (*name, lookup(name).map(PathBuf::from)))
                .collect(),
        }
    }

    /// The toolchain variables the command gets: as set, or the default directory under the real
    /// home when it exists (so the tools still find their installation once `HOME` changes).
    pub fn toolchain_env(&self) -> Vec<(&'static str, PathBuf)> {
        TOOLCHAIN_VARS
            .iter()
            .filter_map(|(name, default)| {
                let set = self
                    .toolchains
                    .iter()
                    .find(|(var, _)| var == name)
                    .and_then(|(_, value)| value.clone());
                let dir = set.or_else(|| Some(self.home.as_ref()?.join(default)))?;
                dir.is_dir().then_some((*name, dir))
            })
            .collect()
    }
}

/// Everything a confined command may read besides what it may write: the system directories,
/// the toolchain directories, and each `PATH` directory (for one under the real home, its
/// top-level directory there, `~/.pyenv` for `~/.pyenv/shims`, but under `~/.local` only
/// [`LOCAL_PREFIX`]; for one named `bin`, its parent, where a virtual environment keeps its
/// libraries).
pub fn readable_dirs(env: &HomeEnv) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = SYSTEM_DIRS.iter().map(PathBuf::from).collect();
    dirs.extend(env.toolchain_env().into_iter().map(|(_, dir)| dir));
    for entry in std::env::split_paths(&env.path).filter(|dir| dir.is_absolute()) {
        dirs.extend(path_roots(&entry, env.home.as_deref()));
    }
    dirs.sort();
    dirs.dedup();
    dirs
}

/// What a `~/.local/bin` on `PATH` needs of `~/.local`: the programs, the libraries `pip install
/// --user` puts beside them, and the environments of pipx and uv tools. Never `~/.local/state`
/// (shell histories, editors' undo files, meta-agent's own worktrees).
pub const LOCAL_PREFIX: [&str; 3] = ["bin", "lib", "share"];

fn path_roots(entry: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    if let Some(home) = home
        && let Ok(inside) = entry.strip_prefix(home)
    {
        return match inside.components().next() {
            Some(first) if first.as_os_str() == ".local" => LOCAL_PREFIX
                .iter()
                .map(|dir| home.join(".local").join(dir))
                .collect(),
            Some(first) => vec![home.join(first)],
            // The home itself on PATH: only that directory's files, nothing below.
            None => vec![entry.to_owned()],
        };
    }
    vec![path_root(entry)]
}

fn path_root(entry: &Path) -> PathBuf {
    match (entry.file_name(), entry.parent()) {
        // Never `/` itself (for `/bin`).
        (Some(name), Some(parent)) if name == "bin" && parent.parent().is_some() => {
            parent.to_owned()
        }
        _ => entry.to_owned(),
    }
}

/// A fresh, empty, private directory (the command's `HOME`, or its temporary directory),
/// removed (without following any link planted in it) when dropped.
#[derive(Debug)]
pub struct FreshDir {
    dir: tempfile::TempDir,
}

impl FreshDir {
    /// A throwaway home, in the temporary directory.
    pub fn home() -> std::io::Result<FreshDir> {
        FreshDir::with_prefix(SCRATCH_PREFIXES[0])
    }

    /// A private temporary directory (the command's `TMPDIR`), in the temporary directory.
    pub fn temp() -> std::io::Result<FreshDir> {
        FreshDir::with_prefix(SCRATCH_PREFIXES[1])
    }

    /// The upper layers of a command's cache overlays.
    pub fn overlay() -> std::io::Result<FreshDir> {
        FreshDir::with_prefix(SCRATCH_PREFIXES[2])
    }

    fn with_prefix(prefix: &str) -> std::io::Result<FreshDir> {
        let dir = tempfile::Builder::new().prefix(prefix).tempdir()?;
        Ok(FreshDir { dir })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// The names a command's own directories start with, in the temporary directory: its home, its
/// `TMPDIR`, its overlays' upper layers.
const SCRATCH_PREFIXES: [&str; 3] = ["meta-agent-home-", "meta-agent-tmp-", "meta-agent-overlay-"];

/// Whether `path` lies in a command's own home or temporary directory (made per command, so
/// never among the roots the bot can list beforehand), by its name under the temporary
/// directory `temp`.
pub fn in_scratch(path: &Path, temp: &Path) -> bool {
    let Ok(inside) = path.strip_prefix(temp) else {
        return false;
    };
    inside
        .components()
        .next()
        .and_then(|first| first.as_os_str().to_str())
        .is_some_and(|name| {
            SCRATCH_PREFIXES
                .iter()
                .any(|prefix| name.starts_with(prefix))
        })
}

/// The variables that name the temporary directory, set to the command's private one.
pub const TEMP_VARS: [&str; 4] = ["TMPDIR", "TMP", "TEMP", "TEMPDIR"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_real_home_is_never_readable_only_its_toolchains() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join(".cargo/bin")).unwrap();
        std::fs::create_dir_all(home.path().join(".pyenv/shims")).unwrap();
        let path = std::env::join_paths([
            home.path().join(".pyenv/shims"),
            PathBuf::from("/work/venv/bin"),
            PathBuf::from("/usr/bin"),
            PathBuf::from("/bin"),
        ])
        .unwrap();
        let env = HomeEnv {
            home: Some(home.path().to_owned()),
            path,
            toolchains: vec![],
        };
        let dirs = readable_dirs(&env);
        assert!(dirs.contains(&home.path().join(".cargo")), "{dirs:?}");
        assert!(dirs.contains(&home.path().join(".pyenv")), "{dirs:?}");
        assert!(dirs.contains(&PathBuf::from("/work/venv")), "{dirs:?}");
        assert!(!dirs.iter().any(|d| d == home.path()), "{dirs:?}");
        for never in ["/", "/tmp", "/root", "/home"] {
            assert!(
                !dirs.iter().any(|d| d == Path::new(never)),
                "{never} in {dirs:?}"
            );
        }
        let toolchains = env.toolchain_env();
        assert_eq!(
            toolchains,
            [
                ("CARGO_HOME", home.path().join(".cargo")),
                ("PYENV_ROOT", home.path().join(".pyenv"))
            ]
        );
    }

    #[test]
    fn a_local_bin_on_path_opens_its_programs_and_libraries_never_local_state() {
        let home = tempfile::tempdir().unwrap();
        let path = std::env::join_paths([home.path().join(".local/bin")]).unwrap();
        let env = HomeEnv::from_lookup(|name| match name {
            "HOME" => Some(home.path().as_os_str().to_owned()),
            "PATH" => Some(path.clone()),
            _ => None,
        });
        let dirs = readable_dirs(&env);
        for opened in ["bin", "lib", "share"] {
            assert!(
                dirs.contains(&home.path().join(".local").join(opened)),
                "{dirs:?}"
            );
        }
        let state = home.path().join(".local/state/meta-agent/worktrees");
        assert!(!dirs.iter().any(|dir| state.starts_with(dir)), "{dirs:?}");
    }

    #[test]
    fn a_fresh_home_is_empty_and_gone_afterwards() {
        let home = FreshDir::home().unwrap();
        let path = home.path().to_owned();
        assert_eq!(std::fs::read_dir(&path).unwrap().count(), 0);
        std::fs::write(path.join("planted"), "x").unwrap();
        drop(home);
        assert!(!path.exists());
    }
}
