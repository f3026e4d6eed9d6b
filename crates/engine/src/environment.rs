//! Files the environment wrote are never the change: what the setup commands and the baseline
//! gates leave in the worktree before the first act (a lockfile a package manager wrote, a
//! virtual environment, caches, reports a gate wrote beside the code) is the environment's.
//!
//! After the setup phase, tracked files a setup command rewrote are put back as the base commit
//! holds them (the gates then judge the code as committed), and the entries it added are left
//! out of every diff, stage and commit ([`meta_agent_git::Repository::leave_out`]); before the first
//! act, so are the entries the baseline gates added. The list is kept in the state
//! ([`LoopState::environment`]) and applied again when a run resumes. Part of [`Engine`].

use super::machine::Engine;
use super::state::LoopState;
use meta_agent_exec::CommandRunner;
use meta_agent_git::Repository;
use meta_agent_protocol::builder::Builder;

impl<R: CommandRunner, G: Repository, B: Builder> Engine<'_, R, G, B> {
    /// After the setup commands: tracked files they changed are put back, untracked entries
    /// they wrote are left out of the change.
    pub(super) fn settle_after_setup(&self, state: &mut LoopState) {
        let found = match self.repo.uncommitted() {
            Ok(found) => found,
            Err(err) => {
                tracing::warn!("cannot list what the setup commands wrote: {err}");
                return;
            }
        };
        if !found.changed.is_empty() {
            match self.repo.restore_paths(&state.base_commit, &found.changed) {
                Ok(()) => tracing::warn!(
                    files = %found.changed.join(", "),
                    "the setup commands rewrote tracked files: put back as committed (what setup \
                     writes is never part of the change)"
                ),
                Err(err) => tracing::warn!("cannot put back the files setup rewrote: {err}"),
            }
        }
        self.add_environment(state, found.untracked, "the setup commands");
    }

    /// Before the first act: the untracked entries the baseline gates wrote are left out too.
    pub(super) fn settle_before_first_act(&self, state: &mut LoopState) {
        if !state.before_any_act() {
            return;
        }
        match self.repo.uncommitted() {
            Ok(found) => self.add_environment(state, found.untracked, "the baseline gates"),
            Err(err) => tracing::warn!("cannot list what the baseline gates wrote: {err}"),
        }
    }

    /// The recorded environment entries, left out again (a resumed run's new repository object).
    pub(super) fn leave_out_environment(&self, state: &LoopState) {
        if state.environment.is_empty() {
            return;
        }
        if let Err(err) = self.repo.leave_out(&state.environment) {
            tracing::warn!("cannot leave the environment's files out of the change: {err}");
        }
    }

    fn add_environment(&self, state: &mut LoopState, entries: Vec<String>, writer: &str) {
        let new: Vec<String> = entries
            .into_iter()
            .filter(|entry| !state.environment.contains(entry))
            .collect();
        if new.is_empty() {
            return;
        }
        tracing::info!(
            files = %new.join(", "),
            "left out of the change: written by {writer}, not by the task"
        );
        state.environment.extend(new);
        state.environment.sort();
        self.leave_out_environment(state);
    }
}
