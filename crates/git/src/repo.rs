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
use super::{
    CommitSummary, FileChange, GitError, Head, Identity, Repository, TreeChange, Uncommitted,
    validate_branch_name,
};

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

    pub(super) fn repo(&self) -> MutexGuard<'_, git2::Repository> {
        // No git2 state is left half-updated by a panic in our code, so a poisoned lock is usable.
        self.repo.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

pub(super) fn head_commit(repo: &git2::Repository) -> Result<Option<Commit<'_>>, GitError> {
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
        .map_err(
            |source| match source.message().contains("nesting too deep") {
                true => GitError::TooDeep { source },
                false => GitError::op("diff", "worktree")(source),
            },
        )?;
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
        Ok(_) if let Some(path) = super::linked::checked_out_elsewhere(repo, name) => {
            return Err(GitError::BranchCheckedOut {
                name: name.into(),
                path,
            });
        }
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
    if let Some(path) = super::linked::checked_out_elsewhere(repo, name) {
        return Err(GitError::BranchCheckedOut {
            name: name.into(),
            path,
        });
    }
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
    stage(repo, true)
}

/// Stages every change in the index (written to disk when `write`; else in memory only, the
/// index file as it was) and returns the staged tree's id. What git cannot hold as a file (a
/// nested repository, a `.git` file or directory below the root, a name git refuses) is left out
/// by construction, never an error: the commit does not carry it, and the pristine verification
/// judges the tree without it.
pub(super) fn stage(repo: &git2::Repository, write: bool) -> Result<Oid, GitError> {
    let mut index = repo.index().map_err(GitError::op("open", "index"))?;
    let workdir = repo.workdir().map(Path::to_path_buf);
    let mut stageable = |path: &Path, _spec: &[u8]| -> i32 {
        match workdir
            .as_deref()
            .is_some_and(|root| unstageable(root, path))
        {
            true => 1,
            false => 0,
        }
    };
    index
        .add_all(
            ["*"],
            IndexAddOption::DEFAULT,
            Some(&mut stageable as &mut git2::IndexMatchedPath<'_>),
        )
        .map_err(GitError::op("add", "index"))?;
    index
        .update_all(["*"], None)
        .map_err(GitError::op("update", "index"))?;
    if write {
        index.write().map_err(GitError::op("write", "index"))?;
    }
    index
        .write_tree()
        .map_err(GitError::op("write tree", "index"))
}

fn commit_staged(
    repo: &git2::Repository,
    message: &str,
    identity: &Identity,
    allow_empty: bool,
) -> Result<String, GitError> {
    let tree_id = stage_everything(repo)?;
    commit_tree_id(repo, tree_id, message, identity, allow_empty)
}

/// Commits the tree `tree_id` on HEAD (its parent), refusing a commit that changes nothing
/// unless `allow_empty` (the verified commit over the session's own checkpoint).
fn commit_tree_id(
    repo: &git2::Repository,
    tree_id: Oid,
    message: &str,
    identity: &Identity,
    allow_empty: bool,
) -> Result<String, GitError> {
    let parent = head_commit(repo)?;
    let unchanged = !allow_empty
        && match &parent {
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

/// The tree whose hex id is `id`.
fn tree_by_id<'r>(repo: &'r git2::Repository, id: &str) -> Result<Tree<'r>, GitError> {
    let oid = Oid::from_str(id).map_err(GitError::op("parse tree id", id))?;
    repo.find_tree(oid).map_err(GitError::op("find tree", id))
}

/// Checks `tree` out into `dest` (not the worktree): the blobs' bytes as stored, no filter, the
/// index untouched.
fn export(repo: &git2::Repository, tree: &str, dest: &Path) -> Result<(), GitError> {
    let tree = tree_by_id(repo, tree)?;
    let mut checkout = CheckoutBuilder::new();
    checkout
        .target_dir(dest)
        .force()
        .recreate_missing(true)
        .update_index(false)
        .disable_filters(true);
    repo.checkout_tree(tree.as_object(), Some(&mut checkout))
        .map_err(GitError::op("export", dest.display().to_string()))
}

/// `tree` with `dir`'s contents replaced by `from`'s, built in an index of its own.
fn graft(repo: &git2::Repository, tree: &str, from: &str, dir: &Path) -> Result<Oid, GitError> {
    let source = tree_by_id(repo, from)?;
    let mut index = index_of(repo, tree)?;
    index
        .remove_dir(dir, 0)
        .map_err(GitError::op("remove", dir.display().to_string()))?;
    let prefix = format!("{}/", dir.to_string_lossy().trim_end_matches('/'));
    let mut entries = Vec::new();
    source
        .walk(git2::TreeWalkMode::PreOrder, |root, entry| {
            let path = format!("{root}{}", String::from_utf8_lossy(entry.name_bytes()));
            let blob = entry.kind() == Some(git2::ObjectType::Blob);
            if blob && path.starts_with(&prefix) {
                entries.push(index_entry(path, entry.filemode(), entry.id()));
            }
            git2::TreeWalkResult::Ok
        })
        .map_err(GitError::op("walk", from))?;
    for entry in &entries {
        index
            .add(entry)
            .map_err(GitError::op("add", String::from_utf8_lossy(&entry.path)))?;
    }
    index
        .write_tree_to(repo)
        .map_err(GitError::op("write tree", "graft"))
}

/// `tree` with each of `paths` taken from the tree `from` (removed where `from` has no blob).
fn overlay(
    repo: &git2::Repository,
    tree: &str,
    from: &str,
    paths: &[String],
) -> Result<Oid, GitError> {
    let source = tree_by_id(repo, from)?;
    let mut index = index_of(repo, tree)?;
    for path in paths {
        let at = Path::new(path);
        if index.get_path(at, 0).is_some() {
            index
                .remove_path(at)
                .map_err(GitError::op("remove", path.clone()))?;
        }
        let entry = source
            .get_path(at)
            .ok()
            .filter(|e| e.kind() == Some(git2::ObjectType::Blob));
        if let Some(entry) = entry {
            index
                .add(&index_entry(path.clone(), entry.filemode(), entry.id()))
                .map_err(GitError::op("add", path.clone()))?;
        }
    }
    index
        .write_tree_to(repo)
        .map_err(GitError::op("write tree", "overlay"))
}

/// The files that differ between the trees `from` and `to`, with their blobs on each side.
fn tree_changes(
    repo: &git2::Repository,
    from: &str,
    to: &str,
) -> Result<Vec<TreeChange>, GitError> {
    let before = tree_by_id(repo, from)?;
    let after = tree_by_id(repo, to)?;
    let diff = repo
        .diff_tree_to_tree(Some(&before), Some(&after), None)
        .map_err(GitError::op("diff trees", to))?;
    let blob = |file: git2::DiffFile<'_>| -> Option<Vec<u8>> {
        let is_file = matches!(
            file.mode(),
            git2::FileMode::Blob | git2::FileMode::BlobExecutable
        );
        let found = is_file.then(|| repo.find_blob(file.id()).ok()).flatten()?;
        Some(found.content().to_vec())
    };
    let mut changes = Vec::new();
    for delta in diff.deltas() {
        let path = delta.new_file().path().or_else(|| delta.old_file().path());
        let Some(path) = path else { continue };
        changes.push(TreeChange {
            path: path.to_string_lossy().into_owned(),
            before: blob(delta.old_file()),
            after: blob(delta.new_file()),
        });
    }
    Ok(changes)
}

/// A new in-memory index holding the tree `tree`.
fn index_of(repo: &git2::Repository, tree: &str) -> Result<git2::Index, GitError> {
    let base = tree_by_id(repo, tree)?;
    let mut index = git2::Index::new().map_err(GitError::op("create", "index"))?;
    index
        .read_tree(&base)
        .map_err(GitError::op("read tree", tree))?;
    Ok(index)
}

/// An index entry for a blob at `path`.
fn index_entry(path: String, mode: i32, id: Oid) -> git2::IndexEntry {
    let time = git2::IndexTime::new(0, 0);
    git2::IndexEntry {
        ctime: time,
        mtime: time,
        dev: 0,
        ino: 0,
        mode: u32::try_from(mode).unwrap_or(0o100_644),
        uid: 0,
        gid: 0,
        file_size: 0,
        id,
        flags: u16::try_from(path.len()).unwrap_or(0xfff).min(0xfff),
        flags_extended: 0,
        path: path.into_bytes(),
    }
}

/// Commits `tree` and makes the index that tree. A tree equal to HEAD's is committed too: the
/// engine only commits a verified tree when the run changed something, and then such a tree is
/// the verified commit over the session's own checkpoint (its work in progress, committed when
/// the run was paused).
fn commit_exact(
    repo: &git2::Repository,
    tree: &str,
    message: &str,
    identity: &Identity,
) -> Result<String, GitError> {
    let tree_id = tree_by_id(repo, tree)?.id();
    let sha = commit_tree_id(repo, tree_id, message, identity, true)?;
    let tree = tree_by_id(repo, tree)?;
    let mut index = repo.index().map_err(GitError::op("open", "index"))?;
    index
        .read_tree(&tree)
        .map_err(GitError::op("read tree", tree_id.to_string()))?;
    index.write().map_err(GitError::op("write", "index"))?;
    Ok(sha)
}

/// Untracked entries (an untracked directory once) and tracked paths changed in the worktree,
/// from the status alone (no content is read).
fn uncommitted_entries(repo: &git2::Repository) -> Result<Uncommitted, GitError> {
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(false)
        .include_ignored(false)
        .exclude_submodules(true);
    let statuses = repo
        .statuses(Some(&mut opts))
        .map_err(GitError::op("status", "worktree"))?;
    let mut found = Uncommitted::default();
    let changed =
        git2::Status::WT_MODIFIED | git2::Status::WT_DELETED | git2::Status::WT_TYPECHANGE;
    for entry in statuses.iter() {
        let Ok(path) = entry.path() else { continue };
        let path = path.trim_end_matches('/').to_owned();
        if entry.status().is_wt_new() {
            found.untracked.push(path);
        } else if entry.status().intersects(changed) {
            found.changed.push(path);
        }
    }
    Ok(found)
}

/// An ignore rule matching exactly `path` (anchored at the root, special characters escaped).
fn exact_rule(path: &str) -> String {
    let mut rule = String::from("/");
    for c in path.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\' | '!' | '#' | ' ') {
            rule.push('\\');
        }
        rule.push(c);
    }
    rule
}

fn leave_out_paths(repo: &git2::Repository, paths: &[String]) -> Result<(), GitError> {
    repo.clear_ignore_rules()
        .map_err(GitError::op("clear ignore rules", "worktree"))?;
    let rules: Vec<String> = paths
        .iter()
        .filter(|path| !path.contains('\n') && !path.is_empty())
        .map(|path| exact_rule(path))
        .collect();
    if rules.is_empty() {
        return Ok(());
    }
    repo.add_ignore_rule(&rules.join("\n"))
        .map_err(GitError::op("add ignore rules", "worktree"))
}

fn restore_some(repo: &git2::Repository, rev: &str, paths: &[String]) -> Result<(), GitError> {
    if paths.is_empty() {
        return Ok(());
    }
    let tree = resolve_tree(repo, rev)?;
    if let Some(workdir) = repo.workdir() {
        unlink_links_in_the_way(&tree, workdir)?;
    }
    let mut checkout = CheckoutBuilder::new();
    checkout.force();
    for path in paths {
        checkout.path(path);
    }
    repo.checkout_tree(tree.as_object(), Some(&mut checkout))
        .map_err(GitError::op("checkout", rev))
}

/// The ignored entries of the worktree (an ignored directory once).
fn ignored(repo: &git2::Repository) -> Result<Vec<String>, GitError> {
    let mut opts = git2::StatusOptions::new();
    opts.include_ignored(true)
        .include_untracked(false)
        .recurse_ignored_dirs(false)
        .exclude_submodules(true);
    let statuses = repo
        .statuses(Some(&mut opts))
        .map_err(GitError::op("status", "ignored files"))?;
    Ok(statuses
        .iter()
        .filter(|entry| entry.status().is_ignored())
        .filter_map(|entry| {
            entry
                .path()
                .ok()
                .map(|p| p.trim_end_matches('/').to_owned())
        })
        .collect())
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
    let unsafe_tree = |source: meta_agent_fsafe::FsError| GitError::UnsafeWorktree {
        detail: source.to_string(),
    };
    let files = meta_agent_fsafe::Beneath::open(workdir)
        .map_err(unsafe_tree)?
        .with_limits(meta_agent_fsafe::PathLimits {
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
            Ok(Some(meta_agent_fsafe::EntryKind::Link)) => match files.remove(&path) {
                Ok(()) => git2::TreeWalkResult::Skip,
                Err(err) => {
                    failure = Some(err);
                    git2::TreeWalkResult::Abort
                }
            },
            Ok(None) | Err(meta_agent_fsafe::FsError::Link { .. }) => git2::TreeWalkResult::Skip,
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

/// Every directory beneath `workdir` at `depth` levels (links not followed, `.git` skipped),
/// removed with everything below it.
/// `path` (relative to `root`) is something git cannot stage as a file: a `.git` component below
/// the root (any letter case), or a directory holding a `.git` entry (a nested repository or a
/// `gitdir:` pointer). Looked at without following links.
fn unstageable(root: &Path, path: &Path) -> bool {
    let dot_git = |name: &std::ffi::OsStr| name.to_string_lossy().eq_ignore_ascii_case(".git");
    if path.iter().any(dot_git) {
        return true;
    }
    let full = root.join(path);
    let is_dir = std::fs::symlink_metadata(&full).is_ok_and(|meta| meta.is_dir());
    is_dir
        && std::fs::read_dir(&full).is_ok_and(|mut entries| {
            entries.any(|entry| entry.is_ok_and(|entry| dot_git(&entry.file_name())))
        })
}

/// Removes every `.git` entry (file or directory, any letter case) below the worktree's root,
/// never following a link; returns the removed paths.
fn prune_nested_git(workdir: &Path) -> Result<Vec<String>, GitError> {
    let nested: Vec<PathBuf> = walkdir::WalkDir::new(workdir)
        .follow_links(false)
        .min_depth(1)
        .into_iter()
        .filter_entry(|entry| entry.depth() != 1 || entry.file_name() != ".git")
        .filter_map(Result::ok)
        .filter(|entry| {
            entry.depth() > 1
                && entry
                    .file_name()
                    .to_string_lossy()
                    .eq_ignore_ascii_case(".git")
        })
        .map(walkdir::DirEntry::into_path)
        .collect();
    let mut removed = Vec::new();
    for path in nested {
        let gone = match std::fs::symlink_metadata(&path).is_ok_and(|meta| meta.is_dir()) {
            true => std::fs::remove_dir_all(&path),
            false => std::fs::remove_file(&path),
        };
        match gone {
            Ok(()) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
            Err(err) => {
                return Err(GitError::UnsafeWorktree {
                    detail: format!("cannot remove {}: {err}", path.display()),
                });
            }
        }
        let relative = path.strip_prefix(workdir).unwrap_or(&path);
        removed.push(relative.display().to_string());
    }
    Ok(removed)
}

fn prune_at_depth(workdir: &Path, depth: usize) -> Result<Vec<String>, GitError> {
    let too_deep: Vec<PathBuf> = walkdir::WalkDir::new(workdir)
        .follow_links(false)
        .min_depth(depth)
        .max_depth(depth)
        .into_iter()
        .filter_entry(|entry| entry.depth() != 1 || entry.file_name() != ".git")
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_dir())
        .map(walkdir::DirEntry::into_path)
        .collect();
    let mut removed = Vec::new();
    for dir in too_deep {
        std::fs::remove_dir_all(&dir).map_err(|err| GitError::UnsafeWorktree {
            detail: format!("cannot remove {}: {err}", dir.display()),
        })?;
        let relative = dir.strip_prefix(workdir).unwrap_or(&dir);
        removed.push(relative.display().to_string());
    }
    Ok(removed)
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
        commit_staged(&self.repo(), message, identity, false)
    }

    fn commit_over_checkpoint(
        &self,
        message: &str,
        identity: &Identity,
    ) -> Result<String, GitError> {
        commit_staged(&self.repo(), message, identity, true)
    }

    fn stage_tree(&self) -> Result<String, GitError> {
        Ok(stage(&self.repo(), false)?.to_string())
    }

    fn tree_of(&self, rev: &str) -> Result<String, GitError> {
        Ok(resolve_tree(&self.repo(), rev)?.id().to_string())
    }

    fn export_tree(&self, tree: &str, dest: &Path) -> Result<(), GitError> {
        export(&self.repo(), tree, dest)
    }

    fn graft(&self, tree: &str, from: &str, dir: &Path) -> Result<String, GitError> {
        Ok(graft(&self.repo(), tree, from, dir)?.to_string())
    }

    fn tree_changes(&self, from: &str, to: &str) -> Result<Vec<TreeChange>, GitError> {
        tree_changes(&self.repo(), from, to)
    }

    fn overlay(&self, tree: &str, from: &str, paths: &[String]) -> Result<String, GitError> {
        Ok(overlay(&self.repo(), tree, from, paths)?.to_string())
    }

    fn commit_tree(
        &self,
        tree: &str,
        message: &str,
        identity: &Identity,
    ) -> Result<String, GitError> {
        commit_exact(&self.repo(), tree, message, identity)
    }

    fn uncommitted(&self) -> Result<Uncommitted, GitError> {
        uncommitted_entries(&self.repo())
    }

    fn leave_out(&self, paths: &[String]) -> Result<(), GitError> {
        leave_out_paths(&self.repo(), paths)
    }

    fn restore_paths(&self, rev: &str, paths: &[String]) -> Result<(), GitError> {
        restore_some(&self.repo(), rev, paths)
    }

    fn ignored_paths(&self) -> Result<Vec<String>, GitError> {
        ignored(&self.repo())
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

    fn regular_files(&self, rev: &str) -> Result<Vec<String>, GitError> {
        let repo = self.repo();
        let tree = resolve_tree(&repo, rev)?;
        let mut paths = Vec::new();
        tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
            let regular = matches!(entry.filemode(), 0o100644 | 0o100755);
            if regular
                && entry.kind() == Some(git2::ObjectType::Blob)
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

    fn commit_of(&self, rev: &str) -> Result<String, GitError> {
        Ok(resolve_commit(&self.repo(), rev)?.id().to_string())
    }

    fn commits_not_in(
        &self,
        tip: &str,
        hidden: &[&str],
        limit: usize,
    ) -> Result<Vec<CommitSummary>, GitError> {
        let repo = self.repo();
        let tip = resolve_commit(&repo, tip)?.id();
        let mut walk = repo.revwalk().map_err(GitError::op("walk", "commits"))?;
        walk.push(tip)
            .map_err(GitError::op("walk", tip.to_string()))?;
        for rev in hidden {
            let id = resolve_commit(&repo, rev)?.id();
            walk.hide(id)
                .map_err(GitError::op("walk", id.to_string()))?;
        }
        let mut commits = Vec::new();
        for id in walk.take(limit.saturating_add(1)) {
            let id = id.map_err(GitError::op("walk", "commits"))?;
            let commit = repo
                .find_commit(id)
                .map_err(GitError::op("read commit", id.to_string()))?;
            commits.push(CommitSummary {
                id: id.to_string(),
                message: String::from_utf8_lossy(commit.message_bytes()).into_owned(),
                committer_email: String::from_utf8_lossy(commit.committer().email_bytes())
                    .into_owned(),
            });
        }
        Ok(commits)
    }

    fn checkout_detached(&self, rev: &str) -> Result<(), GitError> {
        let repo = self.repo();
        let commit = resolve_commit(&repo, rev)?;
        repo.checkout_tree(commit.as_object(), Some(CheckoutBuilder::new().safe()))
            .map_err(GitError::op("checkout", rev))?;
        repo.set_head_detached(commit.id())
            .map_err(GitError::op("detach HEAD at", rev))
    }

    fn recent_subjects(&self, rev: &str, limit: usize) -> Result<Vec<String>, GitError> {
        let repo = self.repo();
        let mut commit = Some(resolve_commit(&repo, rev)?);
        let mut subjects = Vec::new();
        while let Some(current) = commit.take() {
            if subjects.len() >= limit {
                break;
            }
            if current.parent_count() <= 1 {
                let message = String::from_utf8_lossy(current.message_bytes()).into_owned();
                subjects.push(message.lines().next().unwrap_or_default().trim().to_owned());
            }
            commit = current.parent(0).ok();
        }
        Ok(subjects)
    }

    fn git_dir(&self) -> PathBuf {
        self.repo().commondir().to_path_buf()
    }

    fn workdir(&self) -> PathBuf {
        let repo = self.repo();
        repo.workdir().unwrap_or_else(|| repo.path()).to_path_buf()
    }

    fn prune_nested_git(&self) -> Result<Vec<String>, GitError> {
        let repo = self.repo();
        match repo.workdir() {
            Some(workdir) => prune_nested_git(workdir),
            None => Ok(Vec::new()),
        }
    }

    fn prune_too_deep(&self) -> Result<Vec<String>, GitError> {
        let repo = self.repo();
        match repo.workdir() {
            Some(workdir) => prune_at_depth(workdir, super::PRUNE_DEPTH),
            None => Ok(Vec::new()),
        }
    }
}

#[cfg(test)]
mod hostile_tests {
    //! The staging path against hostile trees: whatever a change leaves in the worktree (nested
    //! repositories, `gitdir:` pointers, `.gitmodules`, odd names), staging and pruning never fail.

    use super::*;
    use proptest::prelude::*;

    /// A repository with one commit (`a.txt`) in `dir`.
    fn repo_with_commit(dir: &Path) -> git2::Repository {
        let repo = git2::Repository::init(dir).unwrap();
        std::fs::write(dir.join("a.txt"), "one\n").unwrap();
        let mut index = repo.index().unwrap();
        index.add_path(Path::new("a.txt")).unwrap();
        index.write().unwrap();
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        repo.commit(Some("HEAD"), &sig, &sig, "first", &tree, &[])
            .unwrap();
        drop(tree);
        repo
    }

    /// The files two trees differ in, with both sides' bytes, and the overlay that puts some of
    /// them back: what the existing tests' run is built from.
    #[test]
    fn tree_changes_name_each_file_and_overlay_puts_them_back() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repo_with_commit(dir.path());
        let base = repo
            .head()
            .unwrap()
            .peel_to_tree()
            .unwrap()
            .id()
            .to_string();
        let blob = |text: &str| repo.blob(text.as_bytes()).unwrap();
        let mut index = index_of(&repo, &base).unwrap();
        index
            .add(&index_entry("a.txt".into(), 0o100_644, blob("two\n")))
            .unwrap();
        index
            .add(&index_entry(
                "tests/test_new.py".into(),
                0o100_644,
                blob("def test_x():\n    pass\n"),
            ))
            .unwrap();
        let candidate = index.write_tree_to(&repo).unwrap().to_string();
        let mut changes = tree_changes(&repo, &base, &candidate).unwrap();
        changes.sort_by(|a, b| a.path.cmp(&b.path));
        assert_eq!(
            changes,
            [
                TreeChange {
                    path: "a.txt".into(),
                    before: Some(b"one\n".to_vec()),
                    after: Some(b"two\n".to_vec())
                },
                TreeChange {
                    path: "tests/test_new.py".into(),
                    before: None,
                    after: Some(b"def test_x():\n    pass\n".to_vec())
                },
            ]
        );
        let back = overlay(&repo, &candidate, &base, &["tests/test_new.py".into()])
            .unwrap()
            .to_string();
        let left = tree_changes(&repo, &base, &back).unwrap();
        assert_eq!(left.len(), 1, "only the product change is left: {left:?}");
        assert_eq!(left[0].path, "a.txt");
    }

    /// What one hostile entry is.
    #[derive(Debug, Clone)]
    enum Plant {
        /// A `.git` file pointing somewhere.
        Pointer(String),
        /// A `.git` directory that looks like a repository.
        Nested,
        /// An ordinary file.
        File,
    }

    fn segment() -> impl Strategy<Value = String> {
        prop::sample::select(vec![
            "tools",
            "sub",
            ".GIT",
            "Odd name é",
            "-dash",
            "a\\b",
            "tab\there",
            "line\nbreak",
            "..x",
            ".gitmodules",
            "ünï",
            "x.git",
            " lead",
        ])
        .prop_map(str::to_owned)
    }

    fn plant() -> impl Strategy<Value = Plant> {
        prop_oneof![
            prop::sample::select(vec!["../.git", "/tmp", "../../..", "nowhere"])
                .prop_map(|to| Plant::Pointer(to.to_owned())),
            Just(Plant::Nested),
            Just(Plant::File),
        ]
    }

    fn make(root: &Path, dirs: &[String], what: &Plant) {
        let dir = dirs
            .iter()
            .fold(root.to_path_buf(), |dir, seg| dir.join(seg));
        if std::fs::create_dir_all(&dir).is_err() {
            return;
        }
        let _ = match what {
            Plant::Pointer(to) => std::fs::write(dir.join(".git"), format!("gitdir: {to}\n")),
            Plant::Nested => std::fs::create_dir_all(dir.join(".git/objects"))
                .and_then(|()| std::fs::write(dir.join(".git/HEAD"), "ref: refs/heads/main\n")),
            Plant::File => std::fs::write(dir.join("f.py"), "x = 1\n"),
        };
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn staging_a_hostile_tree_never_fails(
            plants in prop::collection::vec((prop::collection::vec(segment(), 1..4), plant()), 1..6),
            gitmodules in any::<bool>(),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let repo = repo_with_commit(dir.path());
            for (dirs, what) in &plants {
                make(dir.path(), dirs, what);
            }
            if gitmodules {
                // (A directory of that name may stand there already.)
                let _ = std::fs::write(
                    dir.path().join(".gitmodules"),
                    "[submodule \"tools\"]\n\tpath = tools\n\turl = ../x\n",
                );
            }
            let staged = stage(&repo, false);
            prop_assert!(staged.is_ok(), "{staged:?}");
            let tree = repo.find_tree(staged.unwrap()).unwrap();
            let mut names = Vec::new();
            let mut gitlinks = 0;
            tree.walk(git2::TreeWalkMode::PreOrder, |root, entry| {
                names.push(format!("{root}{}", entry.name().unwrap_or("?")));
                gitlinks += usize::from(entry.kind() == Some(git2::ObjectType::Commit));
                git2::TreeWalkResult::Ok
            }).unwrap();
            prop_assert_eq!(gitlinks, 0, "{:?}", names);
            prop_assert!(
                !names.iter().any(|n| n.split('/').any(|s| s.eq_ignore_ascii_case(".git"))),
                "{names:?}"
            );
            let pruned = prune_nested_git(dir.path());
            prop_assert!(pruned.is_ok(), "{pruned:?}");
            prop_assert!(stage(&repo, true).is_ok());
        }
    }
}
