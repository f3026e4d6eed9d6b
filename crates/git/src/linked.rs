//! [`SessionWorktree`]: the linked worktree a local session works in, so the user's checkout
//! (its branch, index and files) is never touched by a run.
//!
//! Its directory is the caller's choice (the session layer puts it outside the checkout, see
//! `session::places`); git knows it as the linked worktree named after the session (`git worktree
//! list` shows it), and this module always finds it again through git's record, wherever it was
//! made (older versions made it at `<git dir>/meta-agent/worktrees/<session>`). libgit2 creates
//! it the way `git worktree add --detach` does; no hook runs. The work branch the engine creates
//! there is an ordinary branch of the repository. Between runs the worktree's HEAD is detached at
//! the branch's head, so the user can switch to the branch in their own checkout while a paused
//! or escalated session waits.

use std::path::{Path, PathBuf};

use git2::{BranchType, Oid, Repository, WorktreeAddOptions, WorktreePruneOptions};

use super::GitError;

/// The linked worktree of one local session.
#[derive(Debug)]
pub struct SessionWorktree {
    path: PathBuf,
    session: String,
}

/// Where older versions put the worktree of `session`, for the repository whose common git dir
/// is `git_dir` (inside the checkout's `.git`): still found, listed and resumed, never made.
pub fn legacy_path(git_dir: &Path, session: &str) -> PathBuf {
    git_dir.join("meta-agent").join("worktrees").join(session)
}

/// A linked worktree git knows of a repository, as `git worktree list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkedWorktree {
    /// Git's name for it (a session's worktree is named after the session).
    pub name: String,
    pub path: PathBuf,
    /// Its directory is there (with its `.git` file); false when someone removed it.
    pub present: bool,
}

impl SessionWorktree {
    /// Adds the worktree of `session` to the repository at `checkout`, at `path` (its parent is
    /// created when missing), at `commit` with a detached HEAD. A stale record of a worktree of
    /// that name (its directory gone) is pruned first.
    pub fn add(
        checkout: &Path,
        session: &str,
        commit: &str,
        path: &Path,
    ) -> Result<SessionWorktree, GitError> {
        let repo = open(checkout)?;
        let path = path.to_owned();
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

    /// The worktree of `session` as it was left, wherever git's record says it is, if its files
    /// are there.
    pub fn existing(checkout: &Path, session: &str) -> Result<Option<SessionWorktree>, GitError> {
        let repo = open(checkout)?;
        let found = repo.find_worktree(session).ok().filter(|worktree| {
            worktree.validate().is_ok() && worktree.path().join(".git").is_file()
        });
        Ok(found.map(|worktree| SessionWorktree {
            path: worktree.path().to_owned(),
            session: session.to_owned(),
        }))
    }

    /// The worktree of `session` as it was left, or a new one at `path`, at `commit`, when it is
    /// gone.
    pub fn open_or_add(
        checkout: &Path,
        session: &str,
        commit: &str,
        path: &Path,
    ) -> Result<SessionWorktree, GitError> {
        match SessionWorktree::existing(checkout, session)? {
            Some(worktree) => Ok(worktree),
            None => SessionWorktree::add(checkout, session, commit, path),
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
        if let Some(parent) = self.path.parent() {
            // The repository's directory of worktrees goes with its last one (a directory that
            // still holds anything is never removed).
            let _still_used = std::fs::remove_dir(parent);
        }
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

/// Every linked worktree git knows of the repository at `checkout` (not the checkout itself).
pub fn linked_worktrees(checkout: &Path) -> Result<Vec<LinkedWorktree>, GitError> {
    let repo = open(checkout)?;
    let names = repo.worktrees().map_err(GitError::op(
        "list worktrees",
        checkout.display().to_string(),
    ))?;
    Ok(names
        .iter()
        .flatten()
        .flatten()
        .filter_map(|name| {
            let worktree = repo.find_worktree(name).ok()?;
            let path = worktree.path().to_owned();
            Some(LinkedWorktree {
                name: name.to_owned(),
                present: path.join(".git").is_file(),
                path,
            })
        })
        .collect())
}

/// Forgets the worktree named `name` of the repository at `checkout` when its directory is gone
/// (what `git worktree prune` does for it); a live one is left alone.
pub fn forget_if_gone(checkout: &Path, name: &str) -> Result<(), GitError> {
    prune_stale(&open(checkout)?, name)
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

/// Deletes the local branch `name` of the repository at `checkout` when it points at `commit`
/// and no worktree has it checked out (a run that ended with nothing to do leaves no branch).
/// Returns whether it was deleted.
pub fn delete_branch_at(checkout: &Path, name: &str, commit: &str) -> Result<bool, GitError> {
    let repo = open(checkout)?;
    let Ok(mut branch) = repo.find_branch(name, BranchType::Local) else {
        return Ok(false);
    };
    let here = branch.get().target().map(|id| id.to_string());
    let checked_out = branch.is_head() || checked_out_elsewhere(&repo, name).is_some();
    if here.as_deref() != Some(commit) || checked_out {
        return Ok(false);
    }
    branch
        .delete()
        .map_err(GitError::op("delete branch", name))?;
    Ok(true)
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
        let places = tempfile::tempdir().unwrap();
        let commit = repo_with_commit(dir.path());
        let at = places.path().join("repo/s1");
        let worktree = SessionWorktree::add(dir.path(), "s1", &commit, &at).unwrap();
        assert_eq!(worktree.path(), at);
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
        let listed = linked_worktrees(dir.path()).unwrap();
        assert_eq!(
            listed,
            [LinkedWorktree {
                name: "s1".into(),
                path: at.clone(),
                present: true
            }]
        );
        worktree.remove().unwrap();
        assert!(!at.exists());
        assert!(repo.find_worktree("s1").is_err());
        assert!(linked_worktrees(dir.path()).unwrap().is_empty());
    }

    #[test]
    fn a_worktree_whose_directory_was_deleted_is_made_again() {
        let dir = tempfile::tempdir().unwrap();
        let places = tempfile::tempdir().unwrap();
        let commit = repo_with_commit(dir.path());
        let at = places.path().join("s2");
        let worktree = SessionWorktree::add(dir.path(), "s2", &commit, &at).unwrap();
        std::fs::remove_dir_all(worktree.path()).unwrap();
        assert!(!linked_worktrees(dir.path()).unwrap()[0].present);
        let again = SessionWorktree::open_or_add(dir.path(), "s2", &commit, &at).unwrap();
        assert!(again.path().join("a.txt").is_file());
    }

    #[test]
    fn a_worktree_made_where_older_versions_made_it_is_found_through_gits_record() {
        let dir = tempfile::tempdir().unwrap();
        let commit = repo_with_commit(dir.path());
        let old = legacy_path(&dir.path().join(".git"), "s3");
        SessionWorktree::add(dir.path(), "s3", &commit, &old).unwrap();
        let found = SessionWorktree::existing(dir.path(), "s3")
            .unwrap()
            .unwrap();
        assert_eq!(found.path(), old);
    }

    #[test]
    fn a_branch_is_deleted_only_where_it_was_left_and_when_no_worktree_has_it() {
        let dir = tempfile::tempdir().unwrap();
        let commit = repo_with_commit(dir.path());
        let repo = Repository::open(dir.path()).unwrap();
        let head = repo.find_commit(Oid::from_str(&commit).unwrap()).unwrap();
        repo.branch("meta-agent/x", &head, false).unwrap();
        assert!(!delete_branch_at(dir.path(), "meta-agent/x", &"0".repeat(40)).unwrap());
        assert!(delete_branch_at(dir.path(), "meta-agent/x", &commit).unwrap());
        assert!(repo.find_branch("meta-agent/x", BranchType::Local).is_err());
        let checked_out = repo.head().unwrap().shorthand().unwrap().to_owned();
        assert!(!delete_branch_at(dir.path(), &checked_out, &commit).unwrap());
    }
}
