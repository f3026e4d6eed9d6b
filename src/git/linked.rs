//! [`SessionWorktree`]: the linked worktree a local session works in, so the user's checkout
//! (its branch, index and files) is never touched by a run.
//!
//! It lives under the repository's common git directory, at
//! `<git dir>/meta-agent/worktrees/<session>`, and git knows it as the linked worktree named
//! after the session (`git worktree list` shows it). libgit2 creates it the way `git worktree add
//! --detach` does; no hook runs. The work branch the engine creates there is an ordinary branch
//! of the repository. Between runs the worktree's HEAD is detached at the branch's head, so the
//! user can switch to the branch in their own checkout while a paused or escalated session waits.

use std::path::{Path, PathBuf};

use git2::{BranchType, Oid, Repository, WorktreeAddOptions, WorktreePruneOptions};

use super::GitError;

/// The linked worktree of one local session.
#[derive(Debug)]
pub struct SessionWorktree {
    path: PathBuf,
    session: String,
}

/// Where session `session` works, for the repository whose common git dir is `git_dir`.
pub fn worktree_path(git_dir: &Path, session: &str) -> PathBuf {
    git_dir.join("meta-agent").join("worktrees").join(session)
}

impl SessionWorktree {
    /// Adds the worktree of `session` to the repository at `checkout`, at `commit` with a detached
    /// HEAD. A stale record of a worktree of that name (its directory gone) is pruned first.
    pub fn add(checkout: &Path, session: &str, commit: &str) -> Result<SessionWorktree, GitError> {
        let repo = open(checkout)?;
        let path = worktree_path(repo.commondir(), session);
        prune_stale(&repo, session)?;
        let oid = Oid::from_str(commit).map_err(GitError::op("parse", commit))?;
        let target = repo
            .find_commit(oid)
            .map_err(GitError::op("find commit", commit))?;
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|err| GitError::UnsafeWorktree {
                detail: format!("cannot create {}: {err}", parent.display()),
            })?;
        }
        // libgit2 checks a worktree out on a branch; a short-lived one, deleted once HEAD is
        // detached (what `git worktree add --detach` leaves).
        let scaffold = format!("meta-agent/worktree-{session}");
        let mut branch = repo
            .branch(&scaffold, &target, true)
            .map_err(GitError::op("create branch", scaffold.clone()))?;
        let mut options = WorktreeAddOptions::new();
        options.reference(Some(branch.get()));
        let added = repo
            .worktree(session, &path, Some(&options))
            .map_err(GitError::op("add worktree", path.display().to_string()));
        let detached = added.and_then(|worktree| {
            Repository::open_from_worktree(&worktree)
                .and_then(|linked| linked.set_head_detached(oid))
                .map_err(GitError::op("detach HEAD", path.display().to_string()))
        });
        let deleted = branch
            .delete()
            .map_err(GitError::op("delete branch", scaffold));
        detached.and(deleted)?;
        Ok(SessionWorktree {
            path,
            session: session.to_owned(),
        })
    }

    /// The worktree of `session` as it was left, if git still knows it and its files are there.
    pub fn existing(checkout: &Path, session: &str) -> Result<Option<SessionWorktree>, GitError> {
        let repo = open(checkout)?;
        let path = worktree_path(repo.commondir(), session);
        let usable = repo
            .find_worktree(session)
            .is_ok_and(|worktree| worktree.validate().is_ok() && path.join(".git").is_file());
        Ok(usable.then(|| SessionWorktree {
            path,
            session: session.to_owned(),
        }))
    }

    /// The worktree of `session` as it was left, or a new one at `commit` when it is gone.
    pub fn open_or_add(
        checkout: &Path,
        session: &str,
        commit: &str,
    ) -> Result<SessionWorktree, GitError> {
        match SessionWorktree::existing(checkout, session)? {
            Some(worktree) => Ok(worktree),
            None => SessionWorktree::add(checkout, session, commit),
        }
    }

    /// The worktree's root directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Detaches HEAD at the commit it is on, so the work branch is free to be checked out
    /// elsewhere (git refuses a branch another worktree has checked out).
    pub fn detach(&self) -> Result<(), GitError> {
        let repo = open(&self.path)?;
        let head = repo
            .head()
            .and_then(|head| head.peel_to_commit())
            .map_err(GitError::op("read", "HEAD"))?;
        repo.set_head_detached(head.id())
            .map_err(GitError::op("detach HEAD", self.path.display().to_string()))
    }

    /// Removes the worktree's files and git's record of it; its branch and commits stay.
    pub fn remove(self) -> Result<(), GitError> {
        let repo = open(&self.path)?;
        let main = open(repo.commondir())?;
        drop(repo);
        // Rust's `remove_dir_all` never follows a link a command may have planted.
        std::fs::remove_dir_all(&self.path).map_err(|err| GitError::UnsafeWorktree {
            detail: format!("cannot remove {}: {err}", self.path.display()),
        })?;
        prune_stale(&main, &self.session)
    }
}

fn open(path: &Path) -> Result<Repository, GitError> {
    Repository::open(path).map_err(|source| GitError::Open {
        path: path.to_path_buf(),
        source,
    })
}

/// Forgets the worktree named `name` when its directory is gone; a live one is left alone.
fn prune_stale(repo: &Repository, name: &str) -> Result<(), GitError> {
    let Ok(worktree) = repo.find_worktree(name) else {
        return Ok(());
    };
    if worktree.path().join(".git").exists() {
        return Ok(());
    }
    worktree
        .prune(Some(WorktreePruneOptions::new().valid(true).locked(false)))
        .map_err(GitError::op("prune worktree", name))
}

/// The commit the local branch `name` of the repository at `checkout` points at, if it exists
/// (a resume whose worktree is gone starts again from the branch).
pub fn branch_head(checkout: &Path, name: &str) -> Result<Option<String>, GitError> {
    let repo = open(checkout)?;
    let found = repo.find_branch(name, BranchType::Local);
    Ok(found
        .ok()
        .and_then(|branch| branch.get().target())
        .map(|id| id.to_string()))
}

/// The worktree, other than `repo`'s own, that has branch `name` checked out (the user's
/// checkout, or another session's worktree): a commit there would move their branch.
pub(super) fn checked_out_elsewhere(repo: &git2::Repository, name: &str) -> Option<PathBuf> {
    let wanted = format!("refs/heads/{name}");
    let on_branch = |other: &git2::Repository| {
        other.path() != repo.path()
            && other
                .head()
                .is_ok_and(|head| head.name().is_ok_and(|name| name == wanted))
    };
    let linked = repo.worktrees().ok()?;
    let others = linked
        .iter()
        .filter_map(|name| name.ok().flatten())
        .filter_map(|name| repo.find_worktree(name).ok())
        .filter_map(|worktree| git2::Repository::open_from_worktree(&worktree).ok());
    let main = git2::Repository::open(repo.commondir()).ok();
    main.into_iter()
        .chain(others)
        .find(|other| on_branch(other))
        .map(|other| other.workdir().unwrap_or(other.path()).to_path_buf())
}

/// The worktree, other than the one at `worktree`, that has branch `name` checked out.
pub fn branch_checked_out_elsewhere(
    worktree: &Path,
    name: &str,
) -> Result<Option<PathBuf>, GitError> {
    Ok(checked_out_elsewhere(&open(worktree)?, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo_with_commit(dir: &Path) -> String {
        let repo = Repository::init(dir).unwrap();
        std::fs::write(dir.join("a.txt"), "one\n").unwrap();
        let mut index = repo.index().unwrap();
        index.add_path(Path::new("a.txt")).unwrap();
        index.write().unwrap();
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        repo.commit(Some("HEAD"), &sig, &sig, "first", &tree, &[])
            .unwrap()
            .to_string()
    }

    #[test]
    fn a_worktree_is_added_detached_without_a_leftover_branch_and_removed_cleanly() {
        let dir = tempfile::tempdir().unwrap();
        let commit = repo_with_commit(dir.path());
        let worktree = SessionWorktree::add(dir.path(), "s1", &commit).unwrap();
        assert_eq!(
            worktree.path(),
            dir.path().join(".git/meta-agent/worktrees/s1")
        );
        assert_eq!(
            std::fs::read_to_string(worktree.path().join("a.txt")).unwrap(),
            "one\n"
        );
        let linked = Repository::open(worktree.path()).unwrap();
        assert!(linked.head_detached().unwrap());
        let repo = Repository::open(dir.path()).unwrap();
        let branches: Vec<String> = repo
            .branches(Some(BranchType::Local))
            .unwrap()
            .map(|b| b.unwrap().0.name().unwrap().unwrap().to_owned())
            .collect();
        assert!(
            !branches.iter().any(|b| b.contains("worktree-")),
            "{branches:?}"
        );
        worktree.remove().unwrap();
        assert!(!dir.path().join(".git/meta-agent/worktrees/s1").exists());
        assert!(repo.find_worktree("s1").is_err());
    }

    #[test]
    fn a_worktree_whose_directory_was_deleted_is_made_again() {
        let dir = tempfile::tempdir().unwrap();
        let commit = repo_with_commit(dir.path());
        let worktree = SessionWorktree::add(dir.path(), "s2", &commit).unwrap();
        std::fs::remove_dir_all(worktree.path()).unwrap();
        let again = SessionWorktree::open_or_add(dir.path(), "s2", &commit).unwrap();
        assert!(again.path().join("a.txt").is_file());
    }
}
