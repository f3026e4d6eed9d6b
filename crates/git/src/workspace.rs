//! Fresh repositories for evaluation runs and the history `eval mine` reads, through libgit2
//! (no hooks, no user configuration): a directory copied and committed into a new repository,
//! a clone checked out at a revision on its own branch, the single-parent commits of a history
//! with the paths each changed, and where the history came from (its `origin`).

use std::path::Path;

use git2::{BranchType, Repository, Signature};

use super::{GitError, Identity};

/// The branch an evaluation clone starts on.
pub const BASE_BRANCH: &str = "main";

/// Copies `source` (without any `.git`) to `dest`, makes it a repository and commits
/// everything on [`BASE_BRANCH`]. Returns the commit id.
pub fn init_from_dir(source: &Path, dest: &Path) -> Result<String, GitError> {
    copy_tree(source, dest).map_err(|err| GitError::Operation {
        operation: "copy",
        target: dest.display().to_string(),
        source: git2::Error::from_str(&err.to_string()),
    })?;
    let repo = Repository::init(dest).map_err(GitError::op("init", dest.display().to_string()))?;
    repo.set_head(&format!("refs/heads/{BASE_BRANCH}"))
        .map_err(GitError::op("set head", BASE_BRANCH))?;
    let mut index = repo.index().map_err(GitError::op("index", "."))?;
    index
        .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
        .map_err(GitError::op("add", "."))?;
    index.write().map_err(GitError::op("write index", "."))?;
    let tree_id = index
        .write_tree()
        .map_err(GitError::op("write tree", "."))?;
    let tree = repo
        .find_tree(tree_id)
        .map_err(GitError::op("find tree", "."))?;
    let identity = Identity::default();
    let signature = Signature::now(&identity.name, &identity.email)
        .map_err(GitError::op("signature", identity.email.clone()))?;
    let id = repo
        .commit(
            Some("HEAD"),
            &signature,
            &signature,
            "evaluation source",
            &tree,
            &[],
        )
        .map_err(GitError::op("commit", "HEAD"))?;
    Ok(id.to_string())
}

/// Clones `location` (a path or URL) into `dest` and checks out `rev` (default: its HEAD) on a
/// fresh [`BASE_BRANCH`]. Returns the commit id.
pub fn clone_at(location: &str, rev: Option<&str>, dest: &Path) -> Result<String, GitError> {
    let repo = Repository::clone(location, dest).map_err(GitError::op("clone", location))?;
    let rev = rev.unwrap_or("HEAD");
    let commit = repo
        .revparse_single(rev)
        .and_then(|object| object.peel_to_commit())
        .map_err(GitError::op("resolve", rev))?;
    let id = commit.id();
    repo.set_head_detached(id)
        .map_err(GitError::op("detach", rev))?;
    repo.checkout_head(Some(git2::build::CheckoutBuilder::new().force()))
        .map_err(GitError::op("checkout", rev))?;
    repo.branch(BASE_BRANCH, &commit, true)
        .map_err(GitError::op("branch", BASE_BRANCH))?;
    repo.set_head(&format!("refs/heads/{BASE_BRANCH}"))
        .map_err(GitError::op("set head", BASE_BRANCH))?;
    if let Ok(mut origin) = repo.find_branch(&format!("origin/{BASE_BRANCH}"), BranchType::Remote) {
        let _ = origin.delete();
    }
    Ok(id.to_string())
}

/// A commit of the history, with what it changed against its first parent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryCommit {
    pub id: String,
    /// The first parent; `None` for a root commit.
    pub parent: Option<String>,
    /// More than one parent.
    pub merge: bool,
    pub message: String,
    /// Paths added or modified (not deleted), relative to the root.
    pub paths: Vec<String>,
}

/// The URL of the repository's `origin` remote, as configured (`None` without one).
pub fn origin_url(root: &Path) -> Option<String> {
    let repo = Repository::open(root).ok()?;
    let remote = repo.find_remote("origin").ok()?;
    remote.url().map(str::to_owned).ok()
}

/// The commits reachable from HEAD and not from `since`, newest first, at most `max`.
pub fn history(
    root: &Path,
    since: Option<&str>,
    max: usize,
) -> Result<Vec<HistoryCommit>, GitError> {
    let repo = Repository::open(root).map_err(GitError::op("open", root.display().to_string()))?;
    let mut walk = repo.revwalk().map_err(GitError::op("revwalk", "HEAD"))?;
    walk.push_head().map_err(GitError::op("revwalk", "HEAD"))?;
    if let Some(since) = since {
        let hide = repo
            .revparse_single(since)
            .map_err(GitError::op("resolve", since))?;
        walk.hide(hide.id())
            .map_err(GitError::op("revwalk", since))?;
    }
    let mut out = Vec::new();
    for oid in walk.take(max) {
        let oid = oid.map_err(GitError::op("revwalk", "HEAD"))?;
        let commit = repo
            .find_commit(oid)
            .map_err(GitError::op("find commit", oid.to_string()))?;
        let parent = commit.parents().next();
        let tree = commit
            .tree()
            .map_err(GitError::op("tree", oid.to_string()))?;
        let parent_tree = parent
            .as_ref()
            .map(|p| p.tree())
            .transpose()
            .map_err(GitError::op("tree", oid.to_string()))?;
        let diff = repo
            .diff_tree_to_tree(parent_tree.as_ref(), Some(&tree), None)
            .map_err(GitError::op("diff", oid.to_string()))?;
        let paths = diff
            .deltas()
            .filter(|delta| delta.status() != git2::Delta::Deleted)
            .filter_map(|delta| {
                delta
                    .new_file()
                    .path()
                    .map(|p| p.to_string_lossy().into_owned())
            })
            .collect();
        out.push(HistoryCommit {
            id: oid.to_string(),
            parent: parent.map(|p| p.id().to_string()),
            merge: commit.parent_count() > 1,
            message: commit.message().unwrap_or_default().trim().to_owned(),
            paths,
        });
    }
    Ok(out)
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in walkdir::WalkDir::new(from)
        .into_iter()
        .filter_entry(|e| e.file_name() != ".git")
    {
        let entry = entry.map_err(std::io::Error::other)?;
        let relative = entry
            .path()
            .strip_prefix(from)
            .map_err(std::io::Error::other)?;
        let target = to.join(relative);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&target)?;
        } else if entry.file_type().is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_becomes_a_committed_repository_and_clones_at_a_revision() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("src");
        std::fs::create_dir_all(source.join("sub")).unwrap();
        std::fs::write(source.join("sub/a.txt"), "one\n").unwrap();
        let first = init_from_dir(&source, &dir.path().join("repo")).unwrap();
        let repo = dir.path().join("repo");
        assert_eq!(
            std::fs::read_to_string(repo.join("sub/a.txt")).unwrap(),
            "one\n"
        );
        let history = history(&repo, None, 10).unwrap();
        assert_eq!(history.len(), 1);
        assert_eq!(history[0].paths, ["sub/a.txt"]);
        let clone = dir.path().join("clone");
        let at = clone_at(repo.to_str().unwrap(), Some(&first), &clone).unwrap();
        assert_eq!(at, first);
        let opened = Repository::open(&clone).unwrap();
        assert_eq!(opened.head().unwrap().shorthand().ok(), Some(BASE_BRANCH));
    }
}
