//! The one way the engine commits: [`Committer`], a unit of its own holding only what committing
//! needs (the repository, the policy and redactor the patch gate applies, the identity, the event
//! sink and where the bot's records live). Every commit the loop makes goes through it, and so
//! through the patch gate (SECURITY.md rule 3): the verified commit, the work in progress of a
//! run that did not finish, the tree a pristine verification passed.
//!
//! Exactly once across a kill: the state is saved before every step, so a run killed after its
//! commit but before the next save resumes into the step that commits. That step first asks
//! whether the branch head already is this session's commit of the worktree as it stands: a
//! commit carrying the session's `Meta-Agent-Session` trailer and the subject about to be
//! written, whose tree is the worktree (nothing left to stage), on top of the base. Such a commit
//! is adopted (`commit` event with result `adopted:<sha>`), and no second commit is made. A run
//! paused by a signal leaves its work in a WIP commit, the session's checkpoint: the verified
//! commit goes on top of it even when the resumed run added nothing.

use std::path::Path;

use super::patch_gate::{self, PatchInput, Refusal};
use super::state::LoopState;
use super::worktree::restore_path;
use meta_agent_git::{GitError, Identity, Repository};
use meta_agent_policy::Policy;
use meta_agent_protocol::ending::WipRefused;
use meta_agent_protocol::event::{Event, EventSink};
use meta_agent_protocol::refusal::PatchStage;
use meta_agent_protocol::trailer::carries_session;
use meta_agent_redact::Redactor;

/// What committing needs, borrowed from the engine (`Engine::committer`).
pub(crate) struct Committer<'e, G: Repository> {
    pub(crate) repo: &'e G,
    pub(crate) policy: &'e Policy,
    /// Holds the exact secret values the patch gate refuses.
    pub(crate) redactor: &'e Redactor,
    pub(crate) identity: &'e Identity,
    pub(crate) events: &'e dyn EventSink,
    /// The hindsight store, repository-relative: the bot's records, grafted onto a verified tree.
    pub(crate) records: &'e Path,
}

impl<G: Repository> Committer<'_, G> {
    /// The patch gate's refusals of the worktree as it would be committed, silently.
    pub(crate) fn check(&self) -> Result<Vec<Refusal>, GitError> {
        let changes = self.repo.changed_files()?;
        let diff = self.repo.diff()?;
        let workdir = self.repo.workdir();
        let input = PatchInput {
            changes: &changes,
            diff: &diff,
            worktree: &workdir,
            redactor: self.redactor,
        };
        Ok(patch_gate::check(&input, self.policy))
    }

    /// The patch gate over the worktree as it would be committed at `stage`: its refusals,
    /// each also kept in the state's refused changes and emitted as `PatchRefused`.
    pub(crate) fn refusals(
        &self,
        state: &mut LoopState,
        stage: PatchStage,
    ) -> Result<Vec<Refusal>, GitError> {
        let refusals = self.check()?;
        if !refusals.is_empty() {
            self.events.emit(&Event::PatchRefused {
                stage,
                refusals: refusals.clone(),
            });
            for refusal in &refusals {
                if !state.tamper.contains(refusal) {
                    state.tamper.push(refusal.clone());
                }
            }
        }
        Ok(refusals)
    }

    /// Puts every refused path back as HEAD has it (removed when HEAD has none), never through a
    /// symlink. False when a refusal is about the whole change or a path could not be put back.
    fn undo(&self, refusals: &[Refusal]) -> Result<bool, GitError> {
        let workdir = self.repo.workdir();
        for refusal in refusals {
            let Some(path) = refusal
                .path
                .as_deref()
                .filter(|path| meta_agent_protocol::path::is_plain(Path::new(path)))
            else {
                return Ok(false);
            };
            let blob = self.repo.read_blob("HEAD", path)?;
            if !restore_path(&workdir, path, blob) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Commits the work in progress with `message`, what the patch gate allows of it (refused
    /// paths put back as HEAD has them; nothing when that is not possible). Returns the commit,
    /// if one was made, and what was refused.
    pub(crate) fn wip(
        &self,
        state: &mut LoopState,
        message: &str,
    ) -> Result<(Option<String>, Option<WipRefused>), GitError> {
        let refused = self.refusals(state, PatchStage::WipCommit)?;
        let undone = !refused.is_empty() && self.undo(&refused)?;
        let clean = refused.is_empty()
            || (undone && self.refusals(state, PatchStage::WipCommit)?.is_empty());
        let note = (!refused.is_empty()).then_some(WipRefused {
            refusals: refused,
            committed_without: clean,
        });
        let commit = if clean && !self.repo.changed_files()?.is_empty() {
            Some(self.once(state, message)?)
        } else {
            None
        };
        Ok((commit, note))
    }

    /// Commits the worktree with `message` on the session's branch, or adopts the commit this
    /// session already made of exactly this worktree (a run killed after its commit). The
    /// caller has run the patch gate ([`Committer::refusals`]) on what it commits.
    pub(crate) fn once(&self, state: &LoopState, message: &str) -> Result<String, GitError> {
        let (sha, result) = match self.adoptable_head(state, message)? {
            Some(sha) => (sha.clone(), format!("adopted:{sha}")),
            None if self.over_checkpoint(state)? => {
                let sha = self.repo.commit_over_checkpoint(message, self.identity)?;
                (sha.clone(), sha)
            }
            None => {
                let sha = self.repo.commit_all(message, self.identity)?;
                (sha.clone(), sha)
            }
        };
        self.committed(state, result);
        Ok(sha)
    }

    /// Commits the verified `tree` (with the bot's records), or adopts this session's commit of
    /// it (a run killed after its commit). Returns the commit.
    pub(crate) fn verified(
        &self,
        state: &LoopState,
        message: &str,
        tree: &str,
    ) -> Result<String, GitError> {
        let tree = self.with_records(tree)?;
        let head = self.repo.head()?;
        let adoptable = head.commit != state.base_commit
            && same_session_commit(&self.repo.message(&head.commit)?, message, &state.session)
            && self.repo.tree_of(&head.commit)? == tree;
        let (sha, result) = if adoptable {
            (head.commit.clone(), format!("adopted:{}", head.commit))
        } else {
            let sha = self.repo.commit_tree(&tree, message, self.identity)?;
            (sha.clone(), sha)
        };
        if !self.repo.changed_files()?.is_empty() {
            tracing::warn!(
                "the worktree differs from the verified commit {sha}: those differences were \
                 not verified and are not committed"
            );
        }
        self.committed(state, result);
        Ok(sha)
    }

    /// The branch head, when it is this session's commit with `message`'s subject and the
    /// worktree holds nothing it does not.
    pub(crate) fn adoptable_head(
        &self,
        state: &LoopState,
        message: &str,
    ) -> Result<Option<String>, GitError> {
        let head = self.repo.head()?;
        if head.commit == state.base_commit || !self.repo.changed_files()?.is_empty() {
            return Ok(None);
        }
        let existing = self.repo.message(&head.commit)?;
        Ok(same_session_commit(&existing, message, &state.session).then_some(head.commit))
    }

    /// Whether the worktree adds nothing to HEAD and HEAD is this session's checkpoint (a paused
    /// run's work in progress): the verified commit then goes on top of it as it is.
    fn over_checkpoint(&self, state: &LoopState) -> Result<bool, GitError> {
        let Some(checkpoint) = &state.checkpoint else {
            return Ok(false);
        };
        Ok(self.repo.head()?.commit == *checkpoint && self.repo.changed_files()?.is_empty())
    }

    /// `tree` with the bot's own records (the hindsight store, written after the verification)
    /// as the worktree has them now; nothing else of the worktree.
    fn with_records(&self, tree: &str) -> Result<String, GitError> {
        if self.records.is_absolute() || self.records.as_os_str().is_empty() {
            return Ok(tree.to_owned());
        }
        let current = self.repo.stage_tree()?;
        self.repo.graft(tree, &current, self.records)
    }

    fn committed(&self, state: &LoopState, result: String) {
        self.events.emit(&Event::GitOperation {
            operation: "commit".into(),
            target: state.branch.clone(),
            result,
        });
    }
}

/// Whether the branch head is a commit of this session (not the base) and the worktree holds
/// nothing more: a run killed after its commit, which may hold hindsight's record too.
pub(crate) fn head_is_sessions_commit<G: Repository>(
    repo: &G,
    state: &LoopState,
) -> Result<bool, GitError> {
    let head = repo.head()?;
    if head.commit == state.base_commit || !repo.changed_files()?.is_empty() {
        return Ok(false);
    }
    Ok(carries_session(
        &repo.message(&head.commit)?,
        &state.session,
    ))
}

/// Whether the commit message `existing` is the one `expected` would write for `session`: the
/// same subject and the session's trailer.
pub(crate) fn same_session_commit(existing: &str, expected: &str, session: &str) -> bool {
    let subject = |text: &str| text.lines().next().unwrap_or("").trim().to_owned();
    subject(existing) == subject(expected) && carries_session(existing, session)
}

#[cfg(test)]
mod tests {
    use super::same_session_commit;

    const MESSAGE: &str = "fix: make the gates pass\n\nbody\n\nMeta-Agent-Session: 1a-2b\n";

    #[test]
    fn the_same_subject_and_session_trailer_is_the_same_commit() {
        assert!(same_session_commit(MESSAGE, MESSAGE, "1a-2b"));
    }

    #[test]
    fn another_session_or_subject_is_not() {
        assert!(!same_session_commit(MESSAGE, MESSAGE, "1a-2c"));
        let wip = MESSAGE.replace("fix:", "WIP: fix:");
        assert!(!same_session_commit(&wip, MESSAGE, "1a-2b"));
        assert!(!same_session_commit(
            "fix: make the gates pass\n",
            MESSAGE,
            "1a-2b"
        ));
    }
}
