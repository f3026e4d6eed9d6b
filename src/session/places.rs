//! Where a local run's files live, and why there.
//!
//! A local run works in a linked git worktree of its own, in a directory of the bot's own,
//! **outside the user's checkout**: every tool that searches upward from its working directory
//! (cargo's workspace root, pytest's rootdir and ini files, ruff, eslint and prettier configs,
//! `node_modules` resolution, `go.work`, tox, git itself) then climbs through the bot's
//! directories, never into the user's project, which sandboxed commands may not read:
//!
//! `<root>/<checkout name>-<key>/<session>`, where `<root>` is `--worktrees-dir`
//! (`META_AGENT_WORKTREES_DIR`), else `$XDG_STATE_HOME/meta-agent/worktrees`, else
//! `~/.local/state/meta-agent/worktrees`, and `<key>` is a hash of the repository's common git
//! directory (two clones of one project never share a directory). The root is made private
//! (mode 0700). It is refused, with what to do, when it lies inside the checkout, or beneath a
//! directory sandboxed commands may read (a system or toolchain directory, a download cache):
//! one repository's commands could then read another's worktrees.
//!
//! What stays in the repository's common git directory (`.git/meta-agent/`): the sessions
//! (`sessions/<id>/`: state, report, trace, the lock a running session holds), the pristine seeds
//! (`pristine/<id>/`) and the memory queue. Older versions made the worktrees at
//! `.git/meta-agent/worktrees/<session>`; those are still found (through git's record), listed,
//! resumed and pruned.

use std::path::{Path, PathBuf};

use super::Environment;
use crate::exec::home::{HomeEnv, readable_dirs};
use crate::exec::sandbox::{Isolation, WritePolicy};

/// The variable (and global flag `--worktrees-dir`) that chooses where worktrees live.
pub const WORKTREES_VAR: &str = "META_AGENT_WORKTREES_DIR";

/// Why the worktrees cannot live where they were asked to (a usage error: the user chooses
/// another place).
#[derive(Debug, thiserror::Error)]
pub enum PlacesError {
    /// `--worktrees-dir` names a path that cannot be made absolute.
    #[error("--worktrees-dir {}: {source}", dir.display())]
    Chosen {
        dir: PathBuf,
        source: std::io::Error,
    },
    /// Neither `HOME` nor `XDG_STATE_HOME` is set, and no root was chosen.
    #[error(
        "no place for the run's worktree: neither HOME nor XDG_STATE_HOME is set; set \
         {WORKTREES_VAR} (or --worktrees-dir) to a directory of meta-agent's own"
    )]
    NoRoot,
    /// The root lies where it must not.
    #[error(
        "the worktrees directory {} cannot be used: {unfit}; set {WORKTREES_VAR} (or \
         --worktrees-dir) to a directory of meta-agent's own outside both",
        root.display()
    )]
    Unfit { root: PathBuf, unfit: Unfit },
    /// The repository's directory could not be made.
    #[error("cannot create {}: {source} (choose another place with {WORKTREES_VAR})", dir.display())]
    Create {
        dir: PathBuf,
        source: std::io::Error,
    },
}

/// Where the worktrees of one repository live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Places {
    /// The bot's directory of worktrees, every repository's.
    pub root: PathBuf,
    /// This repository's directory beneath it.
    pub repository: PathBuf,
}

impl Places {
    /// The places of the repository checked out at `checkout` (its common git directory
    /// `git_dir`), with the root `chosen` (`--worktrees-dir`) or the default.
    pub fn for_checkout(
        chosen: Option<&Path>,
        env: &Environment,
        checkout: &Path,
        git_dir: &Path,
    ) -> Result<Places, PlacesError> {
        let root = match chosen {
            Some(dir) => std::path::absolute(dir).map_err(|source| PlacesError::Chosen {
                dir: dir.to_owned(),
                source,
            })?,
            None => {
                default_root(|name| env.get(name).map(str::to_owned)).ok_or(PlacesError::NoRoot)?
            }
        };
        if let Some(unfit) = unfit(&root, checkout, &exposed_dirs(env)) {
            return Err(PlacesError::Unfit { root, unfit });
        }
        Ok(Places {
            repository: root.join(repository_name(checkout, git_dir)),
            root,
        })
    }

    /// Where session `session`'s worktree is made.
    pub fn session(&self, session: &str) -> PathBuf {
        self.repository.join(session)
    }

    /// Makes the repository's directory (the root private: mode 0700).
    pub fn create(&self) -> Result<(), PlacesError> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.repository)
            .map_err(|source| PlacesError::Create {
                dir: self.repository.clone(),
                source,
            })
    }
}

/// `$XDG_STATE_HOME/meta-agent/worktrees` (an absolute one), else
/// `$HOME/.local/state/meta-agent/worktrees`; `None` without either.
pub fn default_root(var: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let absolute = |name: &str| var(name).map(PathBuf::from).filter(|p| p.is_absolute());
    let state = absolute("XDG_STATE_HOME")
        .or_else(|| absolute("HOME").map(|home| home.join(".local").join("state")))?;
    Some(state.join("meta-agent").join("worktrees"))
}

/// `<checkout name>-<12 hex of the common git dir's hash>`: readable, and one per repository.
pub fn repository_name(checkout: &Path, git_dir: &Path) -> String {
    let name: String = checkout
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(
            |c| match c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                true => c,
                false => '_',
            },
        )
        .take(40)
        .collect();
    // Components, so `/src/calc/.git/` (as libgit2 spells it) and `/src/calc/.git` are one key.
    let git_dir: PathBuf = git_dir.components().collect();
    let key = crate::hindsight::store::entry::stable_hash(&git_dir.to_string_lossy());
    let name = name.trim_start_matches('.');
    match name.is_empty() {
        true => format!("repository-{}", &key[..12]),
        false => format!("{name}-{}", &key[..12]),
    }
}

/// Why a root cannot hold a repository's worktrees.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unfit {
    /// Inside the user's checkout: the worktree's ancestors would be the user's project.
    #[error(
        "it is inside the checkout {}: tools that search upward from a worktree (cargo, pytest, \
         eslint, git) would climb into your project",
        checkout.display()
    )]
    InsideCheckout { checkout: PathBuf },
    /// Beneath a directory every sandboxed command may read.
    #[error(
        "it is beneath {}, which every sandboxed command may read: one repository's commands \
         could read another's worktrees",
        dir.display()
    )]
    Readable { dir: PathBuf },
}

/// Whether `root` cannot hold the worktrees of `checkout`, given the directories sandboxed
/// commands may read (`exposed`). Pure.
pub fn unfit(root: &Path, checkout: &Path, exposed: &[PathBuf]) -> Option<Unfit> {
    if root.starts_with(checkout) {
        return Some(Unfit::InsideCheckout {
            checkout: checkout.to_owned(),
        });
    }
    exposed
        .iter()
        .find(|dir| root.starts_with(dir))
        .map(|dir| Unfit::Readable { dir: dir.clone() })
}

/// What every sandboxed repository command may read, in this environment: the system and
/// toolchain directories, the `PATH` roots, the download caches.
pub fn exposed_dirs(env: &Environment) -> Vec<PathBuf> {
    let home = HomeEnv::from_lookup(|name| env.get(name).map(Into::into));
    let mut dirs = readable_dirs(&home);
    let vars = env.vars.iter().cloned().collect();
    if let WritePolicy::Confined { caches, .. } =
        Isolation::for_repository_commands(&vars, &[]).writes
    {
        dirs.extend(caches);
    }
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        }
    }

    #[test]
    fn the_default_root_is_the_users_state_directory() {
        assert_eq!(
            default_root(vars(&[("HOME", "/home/ada")])),
            Some(PathBuf::from("/home/ada/.local/state/meta-agent/worktrees"))
        );
        assert_eq!(
            default_root(vars(&[
                ("HOME", "/home/ada"),
                ("XDG_STATE_HOME", "/srv/state")
            ])),
            Some(PathBuf::from("/srv/state/meta-agent/worktrees"))
        );
        assert_eq!(
            default_root(vars(&[("HOME", "/home/ada"), ("XDG_STATE_HOME", "rel")])),
            Some(PathBuf::from("/home/ada/.local/state/meta-agent/worktrees")),
            "a relative XDG_STATE_HOME is ignored, as the specification says"
        );
        assert_eq!(default_root(vars(&[])), None);
    }

    #[test]
    fn a_repository_is_named_after_its_checkout_and_keyed_by_its_git_directory() {
        let one = repository_name(Path::new("/src/my calc"), Path::new("/src/my calc/.git"));
        let two = repository_name(
            Path::new("/other/my calc"),
            Path::new("/other/my calc/.git"),
        );
        assert!(
            one.starts_with("my_calc-") && one.len() == "my_calc-".len() + 12,
            "{one}"
        );
        assert_ne!(one, two, "two clones never share a directory");
        assert_eq!(
            one,
            repository_name(Path::new("/src/my calc"), Path::new("/src/my calc/.git"))
        );
        assert_eq!(
            one,
            repository_name(Path::new("/src/my calc/"), Path::new("/src/my calc/.git/"))
        );
        assert!(repository_name(Path::new("/"), Path::new("/.git")).starts_with("repository-"));
        assert!(!repository_name(Path::new("/x/.."), Path::new("/.git")).contains('/'));
    }

    #[test]
    fn a_root_inside_the_checkout_or_where_sandboxed_commands_read_is_unfit() {
        let checkout = Path::new("/home/ada/calc");
        let exposed = [PathBuf::from("/usr"), PathBuf::from("/home/ada/.cache")];
        assert_eq!(
            unfit(Path::new("/home/ada/calc/.wt"), checkout, &exposed),
            Some(Unfit::InsideCheckout {
                checkout: checkout.to_owned()
            })
        );
        assert_eq!(
            unfit(Path::new("/home/ada/.cache/meta-agent"), checkout, &exposed),
            Some(Unfit::Readable {
                dir: PathBuf::from("/home/ada/.cache")
            })
        );
        let fine = Path::new("/home/ada/.local/state/meta-agent/worktrees");
        assert_eq!(unfit(fine, checkout, &exposed), None);
        assert_eq!(
            unfit(Path::new("/home/ada/calc-worktrees"), checkout, &exposed),
            None,
            "a sibling whose name starts like the checkout's is outside it"
        );
    }

    #[test]
    fn an_unfit_root_says_why_and_what_to_do() {
        let err = PlacesError::Unfit {
            root: PathBuf::from("/home/ada/.cache/wt"),
            unfit: Unfit::Readable {
                dir: PathBuf::from("/home/ada/.cache"),
            },
        };
        assert_eq!(
            err.to_string(),
            "the worktrees directory /home/ada/.cache/wt cannot be used: it is beneath \
             /home/ada/.cache, which every sandboxed command may read: one repository's commands \
             could read another's worktrees; set META_AGENT_WORKTREES_DIR (or --worktrees-dir) \
             to a directory of meta-agent's own outside both"
        );
    }

    #[test]
    fn the_default_root_is_fit_when_a_local_bin_is_on_path() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join(".local/bin")).unwrap();
        std::fs::create_dir_all(home.path().join(".cache")).unwrap();
        let home_dir = home.path().display().to_string();
        let path = format!("{home_dir}/.local/bin:/usr/bin");
        let env = Environment::new(vec![
            ("HOME".into(), home_dir.clone()),
            ("PATH".into(), path),
        ]);
        let root = default_root(|name| env.get(name).map(str::to_owned)).unwrap();
        let exposed = exposed_dirs(&env);
        assert!(
            exposed.contains(&home.path().join(".cache")),
            "the caches count: {exposed:?}"
        );
        assert_eq!(unfit(&root, Path::new("/src/calc"), &exposed), None);
    }
}
