//! The user's uncommitted work as a commit of its own: what a local run starts from. The commit
//! is written into the object database only; no branch, no HEAD and no index moves, and no file
//! of the checkout is touched (the index is staged in memory, never written), so the user's
//! checkout stays byte for byte as it was. It must not decide what the commit says (the session
//! layer renders the message).

use git2::{Signature, Tree};

use super::repo::{head_commit, stage};
use super::{Git2Repository, GitError, Identity};

impl Git2Repository {
    /// Commits the worktree as [`super::Repository::commit_all`] would stage it (tracked changes,
    /// staged or not, untracked files that are not ignored, deletions) with HEAD as its parent,
    /// and returns the commit's id, leaving HEAD, every branch, the index file and the files as
    /// they were. Authored by the identity the repository's configuration names (`user.name`,
    /// `user.email`), else by `committer`; committed by `committer`. Never runs hooks.
    pub fn snapshot_commit(&self, message: &str, committer: &Identity) -> Result<String, GitError> {
        let repo = self.repo();
        let parent = head_commit(&repo)?.ok_or(GitError::UnbornHead)?;
        let tree_id = stage(&repo, false)?;
        let tree: Tree<'_> = repo
            .find_tree(tree_id)
            .map_err(GitError::op("find tree", tree_id.to_string()))?;
        let bot = Signature::now(&committer.name, &committer.email)
            .map_err(GitError::op("signature", committer.email.clone()))?;
        let author = repo.signature().unwrap_or_else(|_| bot.clone());
        let id = repo
            .commit(None, &author, &bot, message, &tree, &[&parent])
            .map_err(GitError::op("commit", "snapshot"))?;
        Ok(id.to_string())
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::Repository;

    fn write(root: &Path, path: &str, text: &str) {
        std::fs::write(root.join(path), text).unwrap();
    }

    #[test]
    fn a_snapshot_holds_the_uncommitted_work_and_moves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        git2::Repository::init(dir.path()).unwrap();
        write(dir.path(), ".gitignore", "ignored.txt\n");
        write(dir.path(), "kept.txt", "one\n");
        write(dir.path(), "gone.txt", "bye\n");
        let repo = Git2Repository::open(dir.path()).unwrap();
        let head = repo.commit_all("base", &Identity::default()).unwrap();
        write(dir.path(), "kept.txt", "two\n");
        write(dir.path(), "new.txt", "new\n");
        write(dir.path(), "ignored.txt", "secret\n");
        std::fs::remove_file(dir.path().join("gone.txt")).unwrap();
        let index = std::fs::read(dir.path().join(".git/index")).unwrap();

        let snapshot = repo.snapshot_commit("snap", &Identity::default()).unwrap();

        assert_eq!(repo.head().unwrap().commit, head, "HEAD stays");
        assert_eq!(std::fs::read(dir.path().join(".git/index")).unwrap(), index);
        let files = repo.tracked_files(&snapshot).unwrap();
        assert!(files.contains(&"new.txt".to_owned()), "{files:?}");
        assert!(!files.contains(&"gone.txt".to_owned()), "{files:?}");
        assert!(!files.contains(&"ignored.txt".to_owned()), "{files:?}");
        assert_eq!(
            repo.read_blob(&snapshot, "kept.txt").unwrap().unwrap(),
            b"two\n"
        );
        let parent = repo.diff_between(&head, &snapshot).unwrap();
        assert!(parent.contains("+two"), "{parent}");
        assert_eq!(repo.changed_files().unwrap().len(), 3, "still uncommitted");
    }
}
