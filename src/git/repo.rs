//! [`Git2Repository`]: the one real [`Repository`], on libgit2. Runs no hooks, no fsmonitor and
//! no filter drivers (libgit2 has none of them); must not spawn processes or touch the network.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use git2::build::CheckoutBuilder;
use git2::{
    ApplyLocation, ApplyOptions, BranchType, Commit, Diff, DiffFindOptions, DiffOptions, ErrorCode,
    IndexAddOption, Oid, Signature, Tree,
};

use super::patch_check::workdir_conflict;
use super::render::{file_changes, patch_text};
use super::{FileChange, GitError, Head, Identity, Repository, validate_branch_name};

/// Names tried, in order, when `origin/HEAD` is not set.
const FALLBACK_DEFAULT_BRANCHES: [&str; 2] = ["main", "master"];

/// A repository opened with git2. `git2::Repository` is `Send` but not `Sync`, so it sits behind a
/// mutex; every operation holds the lock for its whole duration.
pub struct Git2Repository {
    repo: Mutex<git2::Repository>,
}

impl Git2Repository {
    /// Opens the repository whose worktree (or git dir) is exactly `path`; no upward search.
    pub fn open(path: &Path) -> Result<Self, GitError> {
        let repo = git2::Repository::open(path).map_err(|source| GitError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(Self {
            repo: Mutex::new(repo),
        })
    }

    fn repo(&self) -> MutexGuard<'_, git2::Repository> {
        // No git2 state is left half-updated by a panic in our code, so a poisoned lock is usable.
        self.repo.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn head_commit(repo: &git2::Repository) -> Result<Option<Commit<'_>>, GitError> {
    match repo.head() {
        Ok(head) => head
            .peel_to_commit()
            .map(Some)
            .map_err(GitError::op("peel", "HEAD")),
        Err(e) if matches!(e.code(), ErrorCode::UnbornBranch | ErrorCode::NotFound) => Ok(None),
        Err(e) => Err(GitError::op("read", "HEAD")(e)),
    }
}

fn head_tree(repo: &git2::Repository) -> Result<Option<Tree<'_>>, GitError> {
    match head_commit(repo)? {
        Some(commit) => commit
            .tree()
            .map(Some)
            .map_err(GitError::op("tree", "HEAD")),
        None => Ok(None),
    }
}

fn resolve_commit<'r>(repo: &'r git2::Repository, rev: &str) -> Result<Commit<'r>, GitError> {
    let object = repo
        .revparse_single(rev)
        .map_err(|source| GitError::RevisionNotFound {
            rev: rev.into(),
            source,
        })?;
    object
        .peel_to_commit()
        .map_err(|source| GitError::RevisionNotFound {
            rev: rev.into(),
            source,
        })
}

fn resolve_tree<'r>(repo: &'r git2::Repository, rev: &str) -> Result<Tree<'r>, GitError> {
    resolve_commit(repo, rev)?
        .tree()
        .map_err(GitError::op("tree", rev))
}

fn find_renames(diff: &mut Diff<'_>) -> Result<(), GitError> {
    let mut find = DiffFindOptions::new();
    find.renames(true).for_untracked(true);
    diff.find_similar(Some(&mut find))
        .map_err(GitError::op("rename detection", "diff"))
}

/// The worktree (through the index) against HEAD, untracked files as additions.
fn worktree_diff(repo: &git2::Repository) -> Result<Diff<'_>, GitError> {
    let tree = head_tree(repo)?;
    let mut opts = DiffOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .show_untracked_content(true)
        .include_typechange(true);
    let mut diff = repo
        .diff_tree_to_workdir_with_index(tree.as_ref(), Some(&mut opts))
        .map_err(GitError::op("diff", "worktree"))?;
    find_renames(&mut diff)?;
    Ok(diff)
}

fn default_branch(repo: &git2::Repository) -> Option<String> {
    let origin_head = repo.find_reference("refs/remotes/origin/HEAD").ok();
    let from_origin = origin_head
        .as_ref()
        .and_then(|r| r.symbolic_target().ok().flatten())
        .and_then(|t| t.strip_prefix("refs/remotes/origin/"))
        .map(str::to_string);
    from_origin.or_else(|| {
        FALLBACK_DEFAULT_BRANCHES.iter().find_map(|name| {
            let local = repo.find_branch(name, BranchType::Local).is_ok();
            let remote = repo
                .find_branch(&format!("origin/{name}"), BranchType::Remote)
                .is_ok();
            (local || remote).then(|| name.to_string())
        })
    })
}

fn switch_to_new_branch(repo: &git2::Repository, name: &str) -> Result<(), GitError> {
    let head = head_commit(repo)?.ok_or(GitError::UnbornHead)?;
    match repo.find_branch(name, BranchType::Local) {
        Ok(existing) => {
            let at = existing.get().target();
            if at != Some(head.id()) {
                return Err(GitError::BranchExists {
                    name: name.into(),
                    existing: at.map(|id| id.to_string()).unwrap_or_default(),
                    head: head.id().to_string(),
                });
            }
        }
        Err(e) if e.code() == ErrorCode::NotFound => {
            repo.branch(name, &head, false)
                .map_err(GitError::op("create branch", name))?;
        }
        Err(e) => return Err(GitError::op("find branch", name)(e)),
    }
    repo.set_head(&format!("refs/heads/{name}"))
        .map_err(GitError::op("set HEAD", name))
}

fn switch_to_existing(repo: &git2::Repository, name: &str) -> Result<(), GitError> {
    let branch = repo
        .find_branch(name, BranchType::Local)
        .map_err(|_| GitError::BranchNotFound { name: name.into() })?;
    let commit = branch
        .get()
        .peel_to_commit()
        .map_err(GitError::op("peel", name))?;
    repo.checkout_tree(commit.as_object(), Some(CheckoutBuilder::new().safe()))
        .map_err(GitError::op("checkout", name))?;
    repo.set_head(&format!("refs/heads/{name}"))
        .map_err(GitError::op("set HEAD", name))
}

/// Stages every change (ignored files stay out) and returns the staged tree's id.
fn stage_everything(repo: &git2::Repository) -> Result<Oid, GitError> {
    let mut index = repo.index().map_err(GitError::op("open", "index"))?;
    index
        .add_all(["*"], IndexAddOption::DEFAULT, None)
        .map_err(GitError::op("add", "index"))?;
    index
        .update_all(["*"], None)
        .map_err(GitError::op("update", "index"))?;
    index.write().map_err(GitError::op("write", "index"))?;
    index
        .write_tree()
        .map_err(GitError::op("write tree", "index"))
}

fn commit_staged(
    repo: &git2::Repository,
    message: &str,
    identity: &Identity,
) -> Result<String, GitError> {
    let tree_id = stage_everything(repo)?;
    let parent = head_commit(repo)?;
    let unchanged = match &parent {
        Some(parent) => parent.tree_id() == tree_id,
        None => repo
            .find_tree(tree_id)
            .map_err(GitError::op("find tree", tree_id.to_string()))?
            .is_empty(),
    };
    if unchanged {
        return Err(GitError::NothingToCommit);
    }
    let tree = repo
        .find_tree(tree_id)
        .map_err(GitError::op("find tree", tree_id.to_string()))?;
    let signature = Signature::now(&identity.name, &identity.email)
        .map_err(GitError::op("signature", identity.email.clone()))?;
    let parents: Vec<&Commit<'_>> = parent.iter().collect();
    let id = repo
        .commit(
            Some("HEAD"),
            &signature,
            &signature,
            message,
            &tree,
            &parents,
        )
        .map_err(GitError::op("commit", "HEAD"))?;
    Ok(id.to_string())
}

fn parse_patch(patch: &str) -> Result<Diff<'static>, GitError> {
    Diff::from_buffer(patch.as_bytes()).map_err(|source| GitError::PatchParse { source })
}

fn apply_to_workdir(
    repo: &git2::Repository,
    patch: &str,
    check_only: bool,
) -> Result<(), GitError> {
    let diff = parse_patch(patch)?;
    let workdir = repo.workdir().ok_or(GitError::PatchDoesNotApply {
        path: String::new(),
        reason: "the repository has no worktree",
    })?;
    if let Some(conflict) = workdir_conflict(&diff, workdir) {
        return Err(conflict);
    }
    let mut opts = ApplyOptions::new();
    opts.check(check_only);
    repo.apply(&diff, ApplyLocation::WorkDir, Some(&mut opts))
        .map_err(GitError::op("apply", "patch"))
}

fn restore(repo: &git2::Repository, to_commit: &str) -> Result<(), GitError> {
    let tree = resolve_tree(repo, to_commit)?;
    if let Some(workdir) = repo.workdir() {
        unlink_links_in_the_way(&tree, workdir)?;
    }
    let mut checkout = CheckoutBuilder::new();
    checkout.force().remove_untracked(true);
    repo.checkout_tree(tree.as_object(), Some(&mut checkout))
        .map_err(GitError::op("checkout", to_commit))?;
    let mut index = repo.index().map_err(GitError::op("open", "index"))?;
    index
        .read_tree(&tree)
        .map_err(GitError::op("read tree", to_commit))?;
    index.write().map_err(GitError::op("write", "index"))
}

/// Removes every link in the worktree where `tree` holds a directory or a regular file (at that
/// path or on the way to it): libgit2's forced checkout would write through it, out of the tree.
/// A link the tree itself holds is left for the checkout to rewrite. Never follows a link.
fn unlink_links_in_the_way(tree: &Tree<'_>, workdir: &Path) -> Result<(), GitError> {
    let unsafe_tree = |source: crate::fsafe::FsError| GitError::UnsafeWorktree {
        detail: source.to_string(),
    };
    let files = crate::fsafe::Beneath::open(workdir)
        .map_err(unsafe_tree)?
        .with_limits(crate::fsafe::PathLimits {
            max_depth: usize::MAX,
            max_bytes: usize::MAX,
        });
    let mut failure = None;
    tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
        let path = Path::new(dir).join(String::from_utf8_lossy(entry.name_bytes()).as_ref());
        if entry.filemode() == i32::from(git2::FileMode::Link) {
            return git2::TreeWalkResult::Skip;
        }
        match files.kind(&path) {
            Ok(Some(crate::fsafe::EntryKind::Link)) => match files.remove(&path) {
                Ok(()) => git2::TreeWalkResult::Skip,
                Err(err) => {
                    failure = Some(err);
                    git2::TreeWalkResult::Abort
                }
            },
            Ok(None) | Err(crate::fsafe::FsError::Link { .. }) => git2::TreeWalkResult::Skip,
            Ok(Some(_)) | Err(_) => git2::TreeWalkResult::Ok,
        }
    })
    .map_err(GitError::op("walk", "tree"))?;
    failure.map_or(Ok(()), |err| Err(unsafe_tree(err)))
}

fn blob_at(repo: &git2::Repository, rev: &str, path: &str) -> Result<Option<Vec<u8>>, GitError> {
    let tree = resolve_tree(repo, rev)?;
    let entry = match tree.get_path(Path::new(path)) {
        Ok(entry) => entry,
        Err(e) if e.code() == ErrorCode::NotFound => return Ok(None),
        Err(e) => return Err(GitError::op("lookup", path)(e)),
    };
    let object = entry.to_object(repo).map_err(GitError::op("read", path))?;
    Ok(object.as_blob().map(|blob| blob.content().to_vec()))
}

impl Repository for Git2Repository {
    fn head(&self) -> Result<Head, GitError> {
        let repo = self.repo();
        let commit = head_commit(&repo)?.ok_or(GitError::UnbornHead)?;
        let head = repo.head().map_err(GitError::op("read", "HEAD"))?;
        let branch = head
            .is_branch()
            .then(|| head.shorthand().ok().map(str::to_string))
            .flatten();
        Ok(Head {
            branch,
            commit: commit.id().to_string(),
        })
    }

    fn default_branch(&self) -> Result<Option<String>, GitError> {
        Ok(default_branch(&self.repo()))
    }

    fn checkout_new_branch(&self, name: &str) -> Result<(), GitError> {
        validate_branch_name(name)?;
        let repo = self.repo();
        if default_branch(&repo).as_deref() == Some(name) {
            return Err(GitError::DefaultBranch { name: name.into() });
        }
        switch_to_new_branch(&repo, name)
    }

    fn checkout_existing(&self, name: &str) -> Result<(), GitError> {
        validate_branch_name(name)?;
        switch_to_existing(&self.repo(), name)
    }

    fn changed_files(&self) -> Result<Vec<FileChange>, GitError> {
        let repo = self.repo();
        Ok(file_changes(&worktree_diff(&repo)?))
    }

    fn diff(&self) -> Result<String, GitError> {
        let repo = self.repo();
        patch_text(&worktree_diff(&repo)?)
    }

    fn diff_between(&self, from: &str, to: &str) -> Result<String, GitError> {
        let repo = self.repo();
        let old = resolve_tree(&repo, from)?;
        let new = resolve_tree(&repo, to)?;
        let mut diff = repo
            .diff_tree_to_tree(Some(&old), Some(&new), None)
            .map_err(GitError::op("diff", format!("{from}..{to}")))?;
        find_renames(&mut diff)?;
        patch_text(&diff)
    }

    fn commit_all(&self, message: &str, identity: &Identity) -> Result<String, GitError> {
        commit_staged(&self.repo(), message, identity)
    }

    fn patch_applies(&self, patch: &str) -> Result<bool, GitError> {
        match apply_to_workdir(&self.repo(), patch, true) {
            Ok(()) => Ok(true),
            Err(GitError::PatchParse { source }) => Err(GitError::PatchParse { source }),
            Err(_) => Ok(false),
        }
    }

    fn apply_patch(&self, patch: &str) -> Result<(), GitError> {
        apply_to_workdir(&self.repo(), patch, false)
    }

    fn restore_worktree(&self, to_commit: &str) -> Result<(), GitError> {
        restore(&self.repo(), to_commit)
    }

    fn read_blob(&self, rev: &str, path: &str) -> Result<Option<Vec<u8>>, GitError> {
        blob_at(&self.repo(), rev, path)
    }

    fn tracked_files(&self, rev: &str) -> Result<Vec<String>, GitError> {
        let repo = self.repo();
        let tree = resolve_tree(&repo, rev)?;
        let mut paths = Vec::new();
        tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
            if entry.kind() == Some(git2::ObjectType::Blob)
                && let Ok(name) = entry.name()
            {
                paths.push(format!("{dir}{name}"));
            }
            git2::TreeWalkResult::Ok
        })
        .map_err(GitError::op("list", rev))?;
        Ok(paths)
    }

    fn message(&self, rev: &str) -> Result<String, GitError> {
        let repo = self.repo();
        let commit = resolve_commit(&repo, rev)?;
        Ok(String::from_utf8_lossy(commit.message_bytes()).into_owned())
    }

    fn git_dir(&self) -> PathBuf {
        self.repo().path().to_path_buf()
    }

    fn workdir(&self) -> PathBuf {
        let repo = self.repo();
        repo.workdir().unwrap_or_else(|| repo.path()).to_path_buf()
    }
}
