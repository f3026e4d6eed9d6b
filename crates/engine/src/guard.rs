//! The change an act left, checked before anything else reads it: [`ChangeGuard`], a unit of
//! its own holding only what the checks need (the repository, the policy, the redactor, the
//! event sink, the configuration for whether it allows test edits). `.git` entries below the root
//! (nested repositories, `gitdir:` pointers) and directories nested deeper than git reads are
//! removed and the act refused; what alters the existing tests' evidence is put back
//! ([`evidence`]); the rest is refused (and undone) as a whole when it tampers with tests or
//! protected files ([`super::tamper`]). Each refusal is kept in the state and emitted; the model
//! is told with its next request.
//!
//! It also puts the worktree back as the last completed Acting step left it: after a refusal,
//! and when a killed run resumes.

mod evidence;

use super::patch_gate::{Refusal, Why};
use super::state::LoopState;
use super::worktree::file_section;
use meta_agent_config::Config;
use meta_agent_git::{GitError, Repository};
use meta_agent_policy::Policy;
use meta_agent_protocol::event::{Event, EventSink};
use meta_agent_redact::Redactor;

/// What the checks of a change need, borrowed from the engine (`Engine::guard`).
pub(crate) struct ChangeGuard<'e, G: Repository> {
    pub(crate) repo: &'e G,
    pub(crate) policy: &'e Policy,
    /// A state loaded from its file holds the diff redacted: compared through it.
    pub(crate) redactor: &'e Redactor,
    pub(crate) events: &'e dyn EventSink,
    /// For `commit.allow_test_edits`.
    pub(crate) config: &'e Config,
}

/// Whether a maintainer allowed test edits for this run: the task's permission or
/// `commit.allow_test_edits`.
pub(crate) fn test_edits_allowed(config: &Config, state: &LoopState) -> bool {
    state.task.permissions.allow_test_edits || config.commit.allow_test_edits
}

impl<G: Repository> ChangeGuard<'_, G> {
    /// The worktree as the last completed Acting step left it. A state loaded from its file holds
    /// the diff redacted: a worktree whose redacted diff matches it is left as it is.
    pub(crate) fn restore_last_completed(&self, state: &LoopState) -> Result<(), GitError> {
        let current = self.repo.diff()?;
        if self.same_diff(&current, &state.worktree_diff)
            || self.committed_as_is(state, &current)?
        {
            return Ok(());
        }
        self.repo
            .restore_worktree(state.checkpoint.as_deref().unwrap_or(&state.base_commit))?;
        if !state.worktree_diff.is_empty() {
            self.repo.apply_patch(&state.worktree_diff)?;
        }
        Ok(())
    }

    /// Whether `diff` is `recorded` (a state loaded from its file holds the diff redacted).
    fn same_diff(&self, diff: &str, recorded: &str) -> bool {
        diff == recorded || self.redactor.redact_text(diff) == recorded
    }

    /// Whether the worktree is clean (`current` is its diff against HEAD) and HEAD is a commit of
    /// this session: a run killed after its commit (which may hold hindsight's record too).
    fn committed_as_is(&self, state: &LoopState, current: &str) -> Result<bool, GitError> {
        Ok(current.is_empty() && super::commit::head_is_sessions_commit(self.repo, state)?)
    }

    /// The worktree's change after an Acting step: `.git` entries below the root (nested
    /// repositories, `gitdir:` pointers) and directories nested deeper than git reads are
    /// removed and the act refused; what alters the existing tests' evidence is put back (see
    /// [`evidence`]); the rest is refused (and undone) as a whole when it tampers
    /// with tests or protected files.
    pub(crate) fn checked_change(
        &self,
        state: &mut LoopState,
    ) -> Result<(String, Vec<String>), GitError> {
        let nested: Vec<Refusal> = self
            .repo
            .prune_nested_git()?
            .iter()
            .map(|path| Refusal::of(path, Why::NestedGit))
            .collect();
        let (diff, mut findings) = match self.repo.diff() {
            Ok(_) if !nested.is_empty() => (String::new(), Vec::new()),
            Ok(_) => {
                self.guard_evidence(state)?;
                let diff = self.repo.diff()?;
                let allowed = test_edits_allowed(self.config, state);
                let refused: Vec<Refusal> = super::tamper::inspect(&diff, self.policy)
                    .into_iter()
                    .filter(|f| {
                        !allowed || f.kind == super::tamper::TamperKind::ProtectedFileChanged
                    })
                    .map(super::tamper::TamperFinding::refusal)
                    .collect();
                (diff, refused)
            }
            // A command nested directories deeper than git reads: they are removed and the act
            // is refused like a tampering one (nothing there could be checked or committed).
            Err(GitError::TooDeep { .. }) => {
                let removed = self.repo.prune_too_deep()?;
                let refused: Vec<Refusal> = removed
                    .iter()
                    .map(|path| Refusal::of(path, Why::TooDeep))
                    .collect();
                (String::new(), refused)
            }
            Err(other) => return Err(other),
        };
        findings.splice(0..0, nested);
        if !findings.is_empty() {
            self.events.emit(&Event::TamperRefused {
                findings: findings.clone(),
            });
            state.tamper.extend(findings);
            self.restore_last_completed(state)?;
            return Ok((String::new(), Vec::new()));
        }
        let files: Vec<String> = self
            .repo
            .changed_files()?
            .into_iter()
            .map(|change| change.path)
            .collect();
        let step_diff = if diff == state.worktree_diff {
            String::new()
        } else {
            diff.clone()
        };
        for path in files.iter().filter(|_| !step_diff.is_empty()) {
            self.events.emit(&Event::FileChanged {
                path: path.clone(),
                diff: file_section(&diff, path),
            });
        }
        state.worktree_diff = diff;
        Ok((step_diff, files))
    }
}
