//! The effectful shell of [`crate::evidence`], part of the [`ChangeGuard`]: after every act, the change from the run's base
//! commit to the worktree is checked; what would alter the existing tests' evidence is put back
//! as the base commit has it (removed when it had none), listed among the run's refused changes
//! and told to the model with its next request. When a maintainer allowed test edits (the task's
//! permission or `commit.allow_test_edits`), nothing is undone and every such file is kept with
//! its diff for the pull request. The tests the change adds are recorded either way.

use std::path::Path;

use super::ChangeGuard;
use crate::evidence::{self, BaseTree, Change};
use crate::state::{AllowedEdit, LoopState};
use crate::worktree::{file_section, restore_path};
use meta_agent_git::{ChangeStatus, GitError, Repository};
use meta_agent_protocol::event::Event;
use meta_agent_protocol::refusal::Refusal;

/// The base commit, read through git.
struct GitBase<'r, G: Repository> {
    repo: &'r G,
    rev: &'r str,
    files: Vec<String>,
}

impl<G: Repository> BaseTree for GitBase<'_, G> {
    fn files(&self) -> &[String] {
        &self.files
    }

    fn read(&self, path: &str) -> Option<String> {
        let bytes = self.repo.read_blob(self.rev, path).ok()??;
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }
}

impl<G: Repository> ChangeGuard<'_, G> {
    /// Checks the worktree against the base commit; undoes (or, when allowed, records) what
    /// alters the existing tests, and records the tests the change adds.
    pub(super) fn guard_evidence(&self, state: &mut LoopState) -> Result<(), GitError> {
        let changes = self.evidence_changes(&state.base_commit)?;
        let base = GitBase {
            repo: self.repo,
            rev: &state.base_commit,
            files: self.repo.tracked_files(&state.base_commit)?,
        };
        let findings = evidence::check(&changes, &base);
        if super::test_edits_allowed(self.config, state) {
            let diff = self.repo.diff()?;
            state.evidence.allowed_edits = findings
                .iter()
                .map(|f| AllowedEdit {
                    path: f.path.clone(),
                    reason: f.detail.clone(),
                    diff: file_section(&diff, &f.path),
                })
                .collect();
            state.evidence.new_tests = evidence::new_tests(&changes);
            return Ok(());
        }
        let workdir = self.repo.workdir();
        for finding in &findings {
            let blob = self.repo.read_blob(&state.base_commit, &finding.path)?;
            if !restore_path(&workdir, &finding.path, blob) {
                tracing::warn!(path = %finding.path, "could not put a refused test change back");
            }
        }
        let kept: Vec<Change> = changes
            .into_iter()
            .filter(|c| !findings.iter().any(|f| f.path == c.path))
            .collect();
        state.evidence.new_tests = evidence::new_tests(&kept);
        if !findings.is_empty() {
            let refused: Vec<Refusal> = findings.iter().map(evidence::Finding::refusal).collect();
            self.events.emit(&Event::TamperRefused {
                findings: refused.clone(),
            });
            for refusal in refused {
                if !state.tamper.contains(&refusal) {
                    state.tamper.push(refusal);
                }
            }
        }
        Ok(())
    }

    /// Every path the worktree changes (renames as a deletion and an addition), with its text at
    /// the `base` commit and now. (HEAD is the base commit, or a work-in-progress commit of this
    /// run whose changes were checked when they were made.)
    fn evidence_changes(&self, base: &str) -> Result<Vec<Change>, GitError> {
        let workdir = self.repo.workdir();
        let files = meta_agent_fsafe::Beneath::open(&workdir).ok();
        let read_now = |path: &str| -> Option<String> {
            let files = files.as_ref()?;
            let bytes = files.read(Path::new(path), self.policy.limits.max_file_bytes);
            // Unreadable (a link, too large): seen as changed, so existing tests there are kept.
            Some(bytes.map_or_else(
                |_| "\u{0}unreadable".to_owned(),
                |b| String::from_utf8_lossy(&b).into_owned(),
            ))
        };
        let read_base = |path: &str| -> Result<Option<String>, GitError> {
            Ok(self
                .repo
                .read_blob(base, path)?
                .map(|b| String::from_utf8_lossy(&b).into_owned()))
        };
        let mut changes = Vec::new();
        for change in self.repo.changed_files()? {
            if let ChangeStatus::Renamed { from } = &change.status {
                changes.push(Change {
                    path: from.clone(),
                    base: read_base(from)?,
                    now: None,
                });
            }
            let now = match change.status {
                ChangeStatus::Deleted => None,
                ChangeStatus::Added
                | ChangeStatus::Modified
                | ChangeStatus::Renamed { .. }
                | ChangeStatus::TypeChange => read_now(&change.path),
            };
            changes.push(Change {
                base: read_base(&change.path)?,
                path: change.path,
                now,
            });
        }
        Ok(changes)
    }
}
