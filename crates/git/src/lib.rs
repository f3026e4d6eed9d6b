//! The bot's own git: a narrow [`Repository`] trait over the working repository, with one real
//! implementation on git2 ([`Git2Repository`]), plus the pure helpers around it (branch names,
//! commit trailers, the unified-diff reader).
//!
//! Everything here runs in-process through libgit2, so no hook, no `core.fsmonitor` program and no
//! clean/smudge filter driver from the repository's configuration ever runs: git2 has no support
//! for them. This module must not shell out to the `git` CLI and must not talk to a network (git2
//! is built without https/ssh; pushing belongs to the publishing layer).

#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod linked;
mod names;
mod patch_check;
mod render;
mod repo;
mod snapshot;
pub mod unified;
pub mod workspace;

use std::path::{Path, PathBuf};

pub use linked::SessionWorktree;
pub use meta_agent_protocol::trailer::commit_message_trailers;
pub use names::{branch_slug, validate_branch_name};
pub use repo::Git2Repository;

/// Where HEAD is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// The checked-out branch's short name, `None` when HEAD is detached.
    pub branch: Option<String>,
    /// The commit HEAD points at, in hex.
    pub commit: String,
}

/// How one path differs from HEAD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChangeStatus {
    Added,
    Modified,
    Deleted,
    Renamed { from: String },
    TypeChange,
}

/// One changed path in the working tree (index and worktree together) compared with HEAD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// The path relative to the worktree root, `/`-separated (the new path for a rename).
    pub path: String,
    pub status: ChangeStatus,
}

/// One path that differs between two trees, with its bytes on each side (`None`: absent there,
/// or not a file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeChange {
    pub path: String,
    pub before: Option<Vec<u8>>,
    pub after: Option<Vec<u8>>,
}

/// A commit as the check before a push reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitSummary {
    /// The commit's id, in hex.
    pub id: String,
    /// Its whole message.
    pub message: String,
    /// Its committer's e-mail address.
    pub committer_email: String,
}

/// What the worktree holds beyond HEAD (see [`Repository::uncommitted`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Uncommitted {
    /// Untracked, not ignored entries; a directory once, without its trailing `/`.
    pub untracked: Vec<String>,
    /// Tracked paths whose worktree file differs from the index (changed, deleted, retyped).
    pub changed: Vec<String>,
}

/// Who the bot's commits are authored and committed by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub name: String,
    pub email: String,
}

impl Default for Identity {
    fn default() -> Self {
        Self {
            name: "meta-agent".into(),
            email: "meta-agent@users.noreply.github.com".into(),
        }
    }
}

/// What went wrong in a git operation; each variant names the operation and its target.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("cannot open a git repository at {path}: {source}")]
    Open {
        path: PathBuf,
        #[source]
        source: git2::Error,
    },
    #[error("the repository has no commit yet (HEAD is unborn)")]
    UnbornHead,
    #[error("invalid branch name {name:?}: {reason}")]
    InvalidBranchName { name: String, reason: &'static str },
    #[error("branch {name:?} already exists at {existing}, not at HEAD {head}")]
    BranchExists {
        name: String,
        existing: String,
        head: String,
    },
    #[error("branch {name:?} is checked out in {path}: a commit there would move it")]
    BranchCheckedOut { name: String, path: PathBuf },
    #[error("refusing to create the default branch {name:?} as a work branch")]
    DefaultBranch { name: String },
    #[error("branch {name:?} does not exist")]
    BranchNotFound { name: String },
    #[error("revision {rev:?} not found: {source}")]
    RevisionNotFound {
        rev: String,
        #[source]
        source: git2::Error,
    },
    #[error("nothing to commit: the tree is the same as HEAD's")]
    NothingToCommit,
    #[error("not a valid patch: {source}")]
    PatchParse {
        #[source]
        source: git2::Error,
    },
    #[error("the patch does not apply to {path}: {reason}")]
    PatchDoesNotApply { path: String, reason: &'static str },
    #[error("git {operation} failed on {target}: {source}")]
    Operation {
        operation: &'static str,
        target: String,
        #[source]
        source: git2::Error,
    },
    #[error("the worktree cannot be restored safely: {detail}")]
    UnsafeWorktree { detail: String },
    /// A directory nests deeper than libgit2 reads (a command made it); see
    /// [`Repository::prune_too_deep`].
    #[error("the worktree holds a directory nested deeper than git reads: {source}")]
    TooDeep {
        #[source]
        source: git2::Error,
    },
}

impl GitError {
    fn op(operation: &'static str, target: impl Into<String>) -> impl FnOnce(git2::Error) -> Self {
        let target = target.into();
        move |source| GitError::Operation {
            operation,
            target,
            source,
        }
    }
}

/// The repository the bot works in. One real implementation ([`Git2Repository`]); tests may fake it.
pub trait Repository: Send + Sync {
    /// The current branch (if any) and commit.
    fn head(&self) -> Result<Head, GitError>;
    /// `origin/HEAD`'s target branch, else `main` or `master` when present locally.
    fn default_branch(&self) -> Result<Option<String>, GitError>;
    /// Creates `name` at HEAD and switches to it, keeping uncommitted changes. Switching to an
    /// existing branch already at HEAD is allowed (a resumed run); a branch elsewhere, an invalid
    /// name and the default branch are refused.
    fn checkout_new_branch(&self, name: &str) -> Result<(), GitError>;
    /// Switches to an existing local branch; refuses to overwrite conflicting local changes.
    fn checkout_existing(&self, name: &str) -> Result<(), GitError>;
    /// Paths that differ from HEAD (index and worktree), untracked included, ignored excluded.
    fn changed_files(&self) -> Result<Vec<FileChange>, GitError>;
    /// A git-format unified diff of the worktree against HEAD, untracked files as additions and
    /// binary files noted as `Binary files ... differ`.
    fn diff(&self) -> Result<String, GitError>;
    /// A git-format unified diff between two revisions' trees.
    fn diff_between(&self, from: &str, to: &str) -> Result<String, GitError>;
    /// Stages everything (additions, modifications, deletions; ignored files stay out) and commits
    /// on the current branch. Returns the new commit's hex id. Never runs hooks.
    fn commit_all(&self, message: &str, identity: &Identity) -> Result<String, GitError>;
    /// Like [`Repository::commit_all`], but commits even when the worktree adds nothing to HEAD:
    /// the verified commit on top of the session's own work-in-progress checkpoint.
    fn commit_over_checkpoint(
        &self,
        message: &str,
        identity: &Identity,
    ) -> Result<String, GitError>;
    /// Stages everything exactly as [`Repository::commit_all`] would (additions, modifications,
    /// deletions; ignored files stay out) and returns the staged tree's id, committing nothing:
    /// the candidate tree of a commit.
    fn stage_tree(&self) -> Result<String, GitError>;
    /// The id of the tree of revision `rev`.
    fn tree_of(&self, rev: &str) -> Result<String, GitError>;
    /// Writes the tree `tree` into `dest`, an empty directory outside the worktree, through
    /// libgit2's checkout (no filter driver runs): exactly the tree's files, nothing else. The
    /// repository's index, HEAD and worktree are left alone.
    fn export_tree(&self, tree: &str, dest: &Path) -> Result<(), GitError>;
    /// `tree` with everything beneath the directory `dir` taken from `from` instead (the bot's own
    /// records added after a verification); returns the new tree's id.
    fn graft(&self, tree: &str, from: &str, dir: &Path) -> Result<String, GitError>;
    /// Every file path that differs between the trees `from` and `to` (ids), with its bytes on
    /// each side: what a candidate tree changes from the base commit's, whatever commits (a
    /// run's own checkpoints) lie between them.
    fn tree_changes(&self, from: &str, to: &str) -> Result<Vec<TreeChange>, GitError>;
    /// `tree` with each of `paths` (files, `/`-separated) as the tree `from` has it, removed
    /// where `from` has none: the existing tests' tree beside a change's product code. Returns
    /// the new tree's id.
    fn overlay(&self, tree: &str, from: &str, paths: &[String]) -> Result<String, GitError>;
    /// Commits the tree `tree` itself on the current branch (parent: HEAD), whatever the worktree
    /// holds, and makes the index that tree (the worktree's differences stay uncommitted).
    /// Returns the new commit's hex id. Never runs hooks.
    fn commit_tree(
        &self,
        tree: &str,
        message: &str,
        identity: &Identity,
    ) -> Result<String, GitError>;
    /// The worktree's ignored entries, `/`-separated (an ignored directory once, not its
    /// contents).
    fn ignored_paths(&self) -> Result<Vec<String>, GitError>;
    /// What the worktree holds beyond HEAD, without reading any content: untracked entries (an
    /// untracked directory once) and tracked paths changed in the worktree.
    fn uncommitted(&self) -> Result<Uncommitted, GitError>;
    /// Leaves `paths` (worktree-relative, `/`-separated) out of every later diff, stage and
    /// commit made through this object, as if ignored: files the environment wrote (the setup
    /// commands, the baseline gates), never part of the change. Replaces the earlier set; lasts
    /// as long as this object.
    fn leave_out(&self, paths: &[String]) -> Result<(), GitError>;
    /// Puts the tracked `paths` back in the worktree as the commit `rev` holds them.
    fn restore_paths(&self, rev: &str, paths: &[String]) -> Result<(), GitError>;
    /// Whether `patch` would apply cleanly to the worktree (nothing is written).
    fn patch_applies(&self, patch: &str) -> Result<bool, GitError>;
    /// Applies `patch` to the worktree (the index is left alone).
    fn apply_patch(&self, patch: &str) -> Result<(), GitError>;
    /// Makes the worktree and index match `to_commit`'s tree, discarding uncommitted changes and
    /// removing untracked files that are not ignored. HEAD does not move.
    fn restore_worktree(&self, to_commit: &str) -> Result<(), GitError>;
    /// The bytes of `path` in revision `rev`, `None` when the path is not there.
    fn read_blob(&self, rev: &str, path: &str) -> Result<Option<Vec<u8>>, GitError>;
    /// Every file path (blobs and links, `/`-separated) in the tree of the commit at `rev`.
    fn tracked_files(&self, rev: &str) -> Result<Vec<String>, GitError>;
    /// Every regular file (modes `100644` and `100755`: no link, no submodule) in the tree of the
    /// commit at `rev`, `/`-separated: what may be read as a file's text without following links.
    fn regular_files(&self, rev: &str) -> Result<Vec<String>, GitError>;
    /// The full message of the commit at `rev`.
    fn message(&self, rev: &str) -> Result<String, GitError>;
    /// The id (hex) of the commit `rev` names.
    fn commit_of(&self, rev: &str) -> Result<String, GitError>;
    /// The commits reachable from `tip` and from none of `hidden`, newest first: at most
    /// `limit + 1`, so a caller can tell that there were more than `limit`.
    fn commits_not_in(
        &self,
        tip: &str,
        hidden: &[&str],
        limit: usize,
    ) -> Result<Vec<CommitSummary>, GitError>;
    /// Switches the worktree, the index and a detached HEAD to the commit `rev`; refuses when
    /// local changes would be overwritten.
    fn checkout_detached(&self, rev: &str) -> Result<(), GitError>;
    /// The subjects of the last `limit` commits before `rev` on its first-parent line, merges
    /// left out, newest first.
    fn recent_subjects(&self, rev: &str, limit: usize) -> Result<Vec<String>, GitError>;
    /// The repository's common git directory (the main `.git`, also from a linked worktree):
    /// where sessions, pristine seeds and the memory queue live.
    fn git_dir(&self) -> PathBuf;
    fn workdir(&self) -> PathBuf;
    /// Removes every directory of the worktree nested [`PRUNE_DEPTH`] levels deep or more (never
    /// following a link; `.git` untouched), after [`GitError::TooDeep`]: git cannot read them, so
    /// nothing there can be diffed, checked or committed. Returns the removed paths.
    fn prune_too_deep(&self) -> Result<Vec<String>, GitError>;
    /// Removes every `.git` entry below the worktree's root (a nested repository, a `gitdir:`
    /// pointer; never following a link): git cannot commit one, and a pointer would let git
    /// commands reach another repository. Returns the removed paths.
    fn prune_nested_git(&self) -> Result<Vec<String>, GitError>;
}

/// Depth from which a directory is removed by [`Repository::prune_too_deep`] (libgit2 stops at
/// 100; the agent's tools at 40).
pub const PRUNE_DEPTH: usize = 64;
