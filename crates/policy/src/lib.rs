//! One policy for what may be read, written and run, built once from the configuration and used
//! by every part that enforces it: the agent's tools (what the model may write), the tamper guard
//! (what an act may change), the patch gate (what may be committed), the hindsight writes (where
//! the bot records what it learned) and the sandbox (where commands may write).
//!
//! Three sets of repository paths, globs with `*` never crossing `/`:
//! - **protected**: nobody changes them through the bot — the bot's configuration (wherever
//!   `--config` points inside the repository), CI workflows and actions, `.git`, `.gitmodules`,
//!   `.gitattributes` (can hide a diff from reviewers), CODEOWNERS (decides who reviews), and
//!   `commit.protected_paths`;
//! - **bot-only**: the bot writes them itself, the model never does — the hindsight store (an
//!   entry the model planted could become an automatic resolution once merged);
//! - **tests**: where tests live, by each ecosystem's rules (`protocol::test_path`), so the tamper
//!   guard knows a test from code.
//!
//! Pure: no I/O except [`paths::beneath`]'s look at the filesystem.

#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod paths;

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use meta_agent_config::Config;

/// Paths no change may touch, whatever the configuration adds.
pub const DEFAULT_PROTECTED: [&str; 12] = [
    ".meta-agent.yml",
    ".meta-agent.yaml",
    ".github/workflows/**",
    ".github/actions/**",
    ".git/**",
    "**/.git/**",
    ".gitmodules",
    ".gitattributes",
    "**/.gitattributes",
    "CODEOWNERS",
    ".github/CODEOWNERS",
    "docs/CODEOWNERS",
];

/// Why a path is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    #[error("empty path")]
    Empty,
    #[error("the path contains a NUL byte")]
    Nul,
    #[error("`{0}` is outside the repository")]
    Outside(String),
    #[error("`{0}` is inside .git")]
    InsideGit(String),
    #[error("the file is protected: the agent may not change it (matches {glob})")]
    Protected { glob: String },
    #[error("a symlink leads out of the repository")]
    SymlinkOut,
    #[error("the repository root cannot be resolved")]
    RootUnresolvable,
    #[error("cannot resolve the path: {0}")]
    Unresolvable(String),
    #[error("the path is {depth} levels deep; at most {max} are allowed")]
    TooDeep { depth: usize, max: usize },
    #[error("the path is {len} bytes long; at most {max} are allowed")]
    TooLong { len: usize, max: usize },
}

/// Size limits on one change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PatchLimits {
    /// Changed paths (additions, modifications, deletions, renames).
    pub max_files: usize,
    /// Added lines over the whole diff.
    pub max_added_lines: usize,
    /// Bytes of added lines over the whole diff.
    pub max_added_bytes: usize,
    /// Size of any one changed file in the worktree.
    pub max_file_bytes: u64,
    /// Size of any one changed binary file (NUL bytes in its first 8 KiB).
    pub max_binary_bytes: u64,
}

impl Default for PatchLimits {
    /// Generous for a fix with a regenerated lockfile; far below a vendored tree or a dataset.
    fn default() -> Self {
        PatchLimits {
            max_files: 200,
            max_added_lines: 20_000,
            max_added_bytes: 2 << 20,
            max_file_bytes: 1 << 20,
            max_binary_bytes: 256 << 10,
        }
    }
}

/// A set of globs, compiled once, that can say which pattern matched.
#[derive(Debug, Clone)]
struct Globs {
    patterns: Vec<String>,
    set: GlobSet,
}

impl Globs {
    fn new(patterns: Vec<String>) -> Globs {
        let set = glob_set(&patterns);
        Globs { patterns, set }
    }

    fn matched_by(&self, path: &str) -> Option<&str> {
        let index = *self.set.matches(path).first()?;
        self.patterns.get(index).map(String::as_str)
    }
}

/// The compiled policy of a run.
#[derive(Debug, Clone)]
pub struct Policy {
    protected: Globs,
    bot_only: Globs,
    /// Limits on one committed change.
    pub limits: PatchLimits,
    /// Directories besides the worktree and the temporary directory that commands may write
    /// (`sandbox.writable`, relative ones under the repository root).
    writable: Vec<PathBuf>,
    /// Directories commands may read besides the worktree, the system and the toolchains
    /// (`sandbox.read`, absolute, checked when the configuration was read).
    readable: Vec<PathBuf>,
}

impl Default for Policy {
    /// The built-in sets, nothing configured.
    fn default() -> Self {
        Policy::new(PolicyInput::default())
    }
}

/// What a policy is built from.
#[derive(Debug, Clone, Default)]
pub struct PolicyInput {
    /// `commit.protected_paths`, and the configuration file's own path when it is inside the
    /// repository.
    pub protected: Vec<String>,
    /// Repository-relative directories only the bot writes (the hindsight store).
    pub bot_only_dirs: Vec<PathBuf>,
    /// `sandbox.writable`.
    pub writable: Vec<PathBuf>,
    /// `sandbox.read`.
    pub readable: Vec<PathBuf>,
}

impl Policy {
    pub fn new(input: PolicyInput) -> Policy {
        let protected = DEFAULT_PROTECTED
            .iter()
            .map(|s| (*s).to_owned())
            .chain(input.protected)
            .collect();
        let bot_only = input
            .bot_only_dirs
            .iter()
            .filter(|dir| dir.is_relative() && !dir.as_os_str().is_empty())
            .map(|dir| {
                let dir = globset::escape(dir.to_string_lossy().trim_end_matches('/'));
                format!("{dir}/**")
            })
            .collect();
        Policy {
            protected: Globs::new(protected),
            bot_only: Globs::new(bot_only),
            limits: PatchLimits::default(),
            writable: input.writable,
            readable: input.readable,
        }
    }

    /// The policy of a configuration, for the repository at `repo_root`.
    pub fn from_config(config: &Config, repo_root: &Path) -> Policy {
        let mut protected = config.commit.protected_paths.clone();
        if let Some(own) = config
            .source
            .as_deref()
            .and_then(|source| source.strip_prefix(repo_root).ok())
        {
            protected.push(globset::escape(&own.to_string_lossy()));
        }
        Policy::new(PolicyInput {
            protected,
            bot_only_dirs: vec![config.hindsight.path.clone()],
            writable: config.sandbox.writable.clone(),
            readable: config.sandbox.read.clone(),
        })
    }

    /// The protected glob `path` matches, if any: no change through the bot may touch it. Case
    /// does not help (`.GITHUB/workflows` on a case-insensitive checkout is the same directory).
    pub fn protected_by(&self, path: &str) -> Option<&str> {
        self.protected
            .matched_by(path)
            .or_else(|| self.protected.matched_by(&path.to_ascii_lowercase()))
    }

    /// The glob that keeps the model (and so an act) from changing `path`: protected, or written
    /// by the bot only.
    pub fn act_may_not_change(&self, path: &str) -> Option<&str> {
        self.protected_by(path)
            .or_else(|| self.bot_only.matched_by(path))
    }

    /// Whether `path` holds tests, by each ecosystem's rules ([`meta_agent_protocol::test_path`]).
    pub fn is_test_path(&self, path: &str) -> bool {
        meta_agent_protocol::test_path::is_test_path(path)
    }

    /// The directories a command may write besides the worktree and the temporary directory,
    /// relative ones under `repo_root`.
    pub fn writable_dirs(&self, repo_root: &Path) -> Vec<PathBuf> {
        self.writable
            .iter()
            .map(|dir| repo_root.join(dir))
            .collect()
    }

    /// The directories commands may read besides the worktree, the system and the toolchains
    /// (`sandbox.read`).
    pub fn readable_dirs(&self) -> &[PathBuf] {
        &self.readable
    }
}

/// Globs compiled; a glob that does not compile is matched as a literal path.
fn glob_set(patterns: &[String]) -> GlobSet {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        let glob = GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .or_else(|_| GlobBuilder::new(&globset::escape(pattern)).build());
        if let Ok(glob) = glob {
            builder.add(glob);
        }
    }
    builder.build().unwrap_or_else(|_| GlobSet::empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configured() -> Policy {
        Policy::new(PolicyInput {
            protected: vec!["secrets/**".into(), "ci/meta.yml".into()],
            bot_only_dirs: vec![PathBuf::from(".meta-agent/hindsight")],
            writable: vec![PathBuf::from("cache"), PathBuf::from("/opt/c")],
            readable: Vec::new(),
        })
    }

    #[test]
    fn every_protected_path_is_one_set() {
        let policy = configured();
        for path in [
            ".meta-agent.yml",
            ".github/workflows/ci.yml",
            ".gitattributes",
            "sub/.gitattributes",
            "CODEOWNERS",
            ".github/CODEOWNERS",
            "secrets/key.pem",
            "ci/meta.yml",
            ".gitmodules",
        ] {
            assert!(policy.protected_by(path).is_some(), "{path}");
            assert!(policy.act_may_not_change(path).is_some(), "{path}");
        }
        assert_eq!(policy.protected_by("src/lib.rs"), None);
    }

    #[test]
    fn the_store_is_written_by_the_bot_only() {
        let policy = configured();
        let entry = ".meta-agent/hindsight/entries/ab/abcd.yaml";
        assert_eq!(policy.protected_by(entry), None);
        assert_eq!(
            policy.act_may_not_change(entry),
            Some(".meta-agent/hindsight/**")
        );
    }

    #[test]
    fn tests_are_known_by_their_paths() {
        let policy = Policy::default();
        assert!(policy.is_test_path("tests/test_calc.py"));
        assert!(policy.is_test_path("pkg/calc_test.go"));
        assert!(policy.is_test_path("web/a.spec.ts"));
        assert!(!policy.is_test_path("src/calc.py"));
    }

    #[test]
    fn writable_dirs_are_rooted_at_the_repository() {
        let dirs = configured().writable_dirs(Path::new("/repo"));
        assert_eq!(
            dirs,
            [PathBuf::from("/repo/cache"), PathBuf::from("/opt/c")]
        );
    }
}
