//! "Verified means the commit" (SECURITY.md, C6): the verification that justifies a commit runs
//! on a pristine checkout of exactly the tree object that will be committed, and the commit is
//! that tree object.
//!
//! After an act, once its processes are gone (each command's PID namespace, C3), the candidate
//! tree is built from the worktree the way the commit builds it (tracked and new files, ignored
//! files left out: the patch gate's view), checked out by libgit2 into a fresh directory created
//! now (the act never saw it), seeded with the dependency snapshot taken before the first act,
//! and every gate runs there ([`Observer::pristine_gates`]). That run is the act's observation
//! (`observe.rs`, as [`crate::candidate`] plans it), and a commit in the same iteration is that
//! tree (plus the bot's own hindsight record, grafted in), whatever the worktree holds by then; a
//! failed run names the files the worktree held that the commit does not. When the last
//! observation was made in the worktree instead (the failing tests first, or no pristine run
//! could be made then), the verification runs when the loop decides the change is complete
//! ([`Observer::verify_pristine`]): red, the pristine failures are the observation; the loop goes
//! on when it can, else it escalates naming those files.
//!
//! The **seed** is the worktree's ignored entries (build outputs such as `target/`, installed
//! dependencies such as `node_modules/`) copied, with their modification times, into the git
//! directory (`.git/meta-agent/pristine/<session>/seed`) right before the first act: after the
//! setup commands and the baseline gates ran on the code as checked out, before anything the
//! model wrote exists. Sandboxed commands cannot write there (`.git` is read-only in their mount
//! namespace), so nothing the act did reaches the pristine checkout through it. Copies, never
//! links: a link would let the act's in-place writes reach the snapshot. Kept modification times
//! make every file of the checkout newer than every seeded output, so build tools rebuild what
//! the change touched and reuse the rest.

use std::collections::BTreeSet;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::Observer;
use super::rerun::{elapsed_ms, in_run};
use crate::improve;
use crate::state::LoopState;
use meta_agent_exec::CommandRunner;
use meta_agent_gates::{self as gates, GatesSummary};
use meta_agent_git::GitError;
use meta_agent_git::Repository;
use meta_agent_protocol::clock::now_ms;
use meta_agent_protocol::ending::EscalationReason;
use meta_agent_protocol::event::Event;
use meta_agent_protocol::records::{
    GateStatus, SignatureRecord, StartFailure, StepPhase, StepRecord, start_failures,
};
use meta_agent_protocol::test_id::TestId;

/// Paths named in an escalation, at most.
const NAMED_PATHS: usize = 8;
/// Files looked at when naming what the worktree holds beyond the commit, at most.
const SCANNED_FILES: usize = 20_000;

/// What the pristine verification said.
#[derive(Debug)]
pub(crate) enum Pristine {
    /// The gates pass on a pristine checkout of this tree: commit it.
    Verified { tree: String },
    /// Not run (`verify.pristine: false`, nothing to commit, no gates, already committed, or the
    /// patch gate refuses the change: staging it would write its blobs, secrets included, into
    /// the object database): the run goes on as before (the refusal escalates).
    Skipped,
    /// The gates fail on the pristine checkout (recorded as the latest observation).
    Failed(PristineFailure),
    /// Gates could not start on the pristine checkout: the change is unverified, not failed.
    Environment(Vec<StartFailure>),
}

/// Why the pristine checkout did not pass.
#[derive(Debug)]
pub(crate) struct PristineFailure {
    /// The gates that failed there.
    pub gates: Vec<String>,
    /// Files the worktree held that the commit does not (changed or new since the seed).
    pub only_in_worktree: Vec<String>,
}

impl PristineFailure {
    /// The escalation reason when no iteration is left.
    pub fn reason(&self) -> EscalationReason {
        EscalationReason::PristineFailed {
            gates: self.gates.clone(),
            only_in_worktree: self.only_in_worktree.clone(),
        }
    }
}

/// The gates of one pristine checkout.
pub(super) struct PristineRun {
    pub summary: GatesSummary,
    /// The tree object checked out.
    pub tree: String,
    /// Where the gates ran.
    pub checkout: PathBuf,
    /// Holds the checkout; removed when dropped.
    pub scratch: tempfile::TempDir,
}

/// Why a pristine checkout could not be made.
#[derive(Debug, thiserror::Error)]
pub(super) enum PristineError {
    #[error(transparent)]
    Git(#[from] meta_agent_git::GitError),
    #[error(transparent)]
    Io(#[from] io::Error),
}

impl<'e, R: CommandRunner, G: Repository> Observer<'e, R, G> {
    /// Where this session's pristine material lives (inside the git directory).
    fn pristine_dir(&self, state: &LoopState) -> PathBuf {
        self.repo
            .git_dir()
            .join("meta-agent")
            .join("pristine")
            .join(&state.session)
    }

    /// Takes the dependency snapshot before the first act (once; a resumed run keeps the one it
    /// has). A failure is logged: the pristine checkout then recreates less.
    pub(crate) fn seed_before_first_act(&self, state: &LoopState) {
        if !self.config.verify.pristine || !state.before_any_act() {
            return;
        }
        let dir = self.pristine_dir(state);
        let seed = dir.join("seed");
        if seed.exists() {
            return;
        }
        let started = Instant::now();
        let result = self
            .repo
            .ignored_paths()
            .map_err(io::Error::other)
            .and_then(|paths| {
                let partial = dir.join("seed.partial");
                remove_all(&partial)?;
                fs::create_dir_all(&partial)?;
                let workdir = self.repo.workdir();
                for path in paths.iter().filter(|p| plain(p)) {
                    copy_entry(&workdir.join(path), &partial.join(path))?;
                }
                fs::rename(&partial, &seed)
            });
        match result {
            Ok(()) => tracing::debug!(
                "pristine: dependency snapshot taken in {} ms",
                started.elapsed().as_millis()
            ),
            Err(err) => tracing::warn!(
                "pristine: no dependency snapshot ({err}): the pristine checkout starts without \
                 the worktree's build outputs and installed dependencies"
            ),
        }
    }

    /// Removes the session's pristine material once the run is over (not when it waits for
    /// guidance: a resumed run needs the snapshot).
    pub(crate) fn drop_pristine_material(&self, state: &LoopState) {
        if let Err(err) = remove_all(&self.pristine_dir(state)) {
            tracing::warn!("pristine: cannot remove the dependency snapshot: {err}");
        }
    }

    /// Whether a pristine verification can be made of the worktree now: it is on, there are
    /// gates and a change, the change is not committed already, and the patch gate would let it
    /// be staged (staging a refused change would write its blobs, secrets included, into the
    /// object database).
    pub(super) fn pristine_applies(&self, state: &LoopState) -> bool {
        if !self.config.verify.pristine
            || self.config.gates.is_empty()
            || state.worktree_diff.is_empty()
        {
            return false;
        }
        let clean = self
            .committed_already(state)
            .and_then(|committed| Ok(!committed && self.committer.check()?.is_empty()));
        clean.unwrap_or_else(|err| {
            tracing::warn!("pristine: cannot tell whether the change can be verified: {err}");
            false
        })
    }

    /// Every gate on a fresh pristine checkout of the worktree's candidate tree, then the flaky
    /// check for failing tests not in `known`. The checkout lives as long as the returned scratch
    /// directory.
    pub(super) async fn pristine_gates(
        &self,
        state: &mut LoopState,
        known: &[TestId],
    ) -> Result<PristineRun, PristineError> {
        let tree = self.repo.stage_tree()?;
        let scratch = tempfile::Builder::new()
            .prefix("meta-agent-pristine-")
            .tempdir()?;
        let checkout = scratch.path().join("checkout");
        self.prepare_checkout(state, &tree, &checkout)?;
        let ctx = self.gate_context(&checkout);
        let started = Instant::now();
        let mut summary = gates::run_gates_with(&ctx, &self.config.gates, in_run()).await;
        state.costs.full_ms = Some(elapsed_ms(started));
        let check = self.flaky_check(&ctx, &mut summary, known).await;
        self.record_flaky(state, check);
        let summary = self
            .with_existing_tests_verdict(state, &tree, scratch.path(), summary)
            .await?;
        tracing::info!(
            "pristine checkout of tree {tree}: gates {}",
            if summary.passed { "passed" } else { "failed" }
        );
        Ok(PristineRun {
            summary,
            tree,
            checkout,
            scratch,
        })
    }

    /// Adds to every failed gate of a pristine run the files the worktree held that the commit
    /// does not (ignored files the change may rely on), so the model and the report see them.
    pub(super) fn name_what_only_the_worktree_holds(
        &self,
        state: &LoopState,
        summary: &mut GatesSummary,
    ) {
        let only = self.only_in_worktree(state);
        if only.is_empty() {
            return;
        }
        let note = format!(
            "note: the worktree holds files the commit does not (ignored, so not committed): {}",
            only.join(", ")
        );
        for gate in summary.gates.iter_mut().filter(|g| !g.passed()) {
            gate.reasons.push(note.clone());
        }
    }

    /// The final verification before a commit, when the last observation was not already made
    /// on a pristine checkout of this change: the gates on one now.
    pub(crate) async fn verify_pristine(
        &self,
        state: &mut LoopState,
    ) -> Result<Pristine, GitError> {
        if !self.pristine_applies(state) {
            return Ok(Pristine::Skipped);
        }
        let started = Instant::now();
        let started_ms = now_ms();
        self.events.emit(&Event::PhaseStarted {
            phase: StepPhase::Verify,
            iteration: state.iteration,
        });
        let run = match self.pristine_gates(state, &[]).await {
            Ok(run) => run,
            Err(PristineError::Git(err)) => return Err(err),
            Err(PristineError::Io(err)) => {
                return Ok(Pristine::Failed(self.unprepared(state, &err, started)));
            }
        };
        let PristineRun {
            summary,
            tree,
            checkout,
            scratch: _scratch,
        } = run;
        let failures = start_failures(&summary.records());
        let signatures = improve::signatures_of(&summary, &checkout);
        let accepted = state.signature_ids();
        // Failures the loop already accepted as the baseline's own (not the task's) may stay.
        let only_accepted = !signatures.is_empty()
            && signatures.iter().all(|s| accepted.contains(&s.id))
            && !crate::baseline::preexisting_left(state).is_empty();
        let passed = summary.passed || only_accepted;
        let outcome = match (failures.is_empty(), passed) {
            (false, _) => "pristine checkout: gates could not start",
            (true, true) => "pristine checkout: gates passed",
            (true, false) => "pristine checkout: gates failed",
        };
        let duration_ms = elapsed_ms(started);
        self.events.emit(&Event::PhaseFinished {
            phase: StepPhase::Verify,
            iteration: state.iteration,
            duration_ms,
            outcome: outcome.into(),
            gates: summary
                .records()
                .iter()
                .map(meta_agent_protocol::records::GateRecord::outcome)
                .collect(),
        });
        tracing::info!("{outcome} ({duration_ms} ms, tree {tree})");
        if !failures.is_empty() {
            state.gates = summary.records();
            return Ok(Pristine::Environment(failures));
        }
        if passed {
            state.gates = summary.records();
            return Ok(Pristine::Verified { tree });
        }
        let failure = PristineFailure {
            gates: failed_gates(&summary),
            only_in_worktree: self.only_in_worktree(state),
        };
        self.record_observation(state, &summary, signatures, started_ms, duration_ms);
        Ok(Pristine::Failed(failure))
    }

    /// Whether the branch head already is this session's commit and the worktree holds nothing
    /// more (a run killed after its commit): nothing is left to verify.
    fn committed_already(&self, state: &LoopState) -> Result<bool, GitError> {
        crate::commit::head_is_sessions_commit(self.repo, state)
    }

    /// Seeds `checkout` from the snapshot, then writes the tree over it (the tree's files are
    /// the newest there).
    pub(super) fn prepare_checkout(
        &self,
        state: &LoopState,
        tree: &str,
        checkout: &Path,
    ) -> io::Result<()> {
        fs::create_dir(checkout)?;
        let seed = self.pristine_dir(state).join("seed");
        if seed.is_dir() {
            for entry in fs::read_dir(&seed)? {
                let entry = entry?;
                copy_entry(&entry.path(), &checkout.join(entry.file_name()))?;
            }
        }
        self.repo
            .export_tree(tree, checkout)
            .map_err(io::Error::other)
    }

    /// The pristine checkout could not even be made: a failure naming why, recorded as a failed
    /// gate so the loop and the report see it.
    fn unprepared(
        &self,
        state: &mut LoopState,
        err: &io::Error,
        started: Instant,
    ) -> PristineFailure {
        tracing::warn!("pristine: cannot prepare the checkout: {err}");
        let record = meta_agent_protocol::records::GateRecord::judged(
            "pristine-checkout",
            meta_agent_config::raw::GateKind::Custom,
            GateStatus::Failed,
            vec![format!(
                "the pristine checkout could not be prepared: {err}"
            )],
        );
        self.events.emit(&Event::PhaseFinished {
            phase: StepPhase::Verify,
            iteration: state.iteration,
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(0),
            outcome: "pristine checkout: could not be prepared".into(),
            gates: vec![record.outcome()],
        });
        state.gates = vec![record];
        PristineFailure {
            gates: vec!["pristine-checkout".into()],
            only_in_worktree: Vec::new(),
        }
    }

    /// The pristine failures become the latest observation (the loop's next act sees them).
    fn record_observation(
        &self,
        state: &mut LoopState,
        summary: &GatesSummary,
        signatures: Vec<SignatureRecord>,
        started_ms: u64,
        duration_ms: u64,
    ) {
        self.announce(&signatures);
        state.gates = summary.records();
        state.signatures = signatures;
        state.history.push(StepRecord::observation(
            StepPhase::Verify,
            state.iteration,
            started_ms,
            duration_ms,
            "pristine checkout: gates failed",
            &state.gates,
            &state.signatures,
        ));
    }

    /// Files under the worktree's ignored entries that are not in the snapshot as it has them:
    /// what the run left there that no commit carries.
    fn only_in_worktree(&self, state: &LoopState) -> Vec<String> {
        let seed = self.pristine_dir(state).join("seed");
        let workdir = self.repo.workdir();
        let Ok(ignored) = self.repo.ignored_paths() else {
            return Vec::new();
        };
        let mut named = BTreeSet::new();
        let files = ignored.iter().filter(|p| plain(p)).flat_map(|top| {
            walkdir::WalkDir::new(workdir.join(top))
                .follow_links(false)
                .into_iter()
                .filter_map(Result::ok)
                .filter(|e| !e.file_type().is_dir())
        });
        for entry in files.take(SCANNED_FILES) {
            let Ok(relative) = entry.path().strip_prefix(&workdir) else {
                continue;
            };
            if !same_entry(entry.path(), &seed.join(relative)) {
                named.insert(relative.to_string_lossy().into_owned());
            }
            if named.len() >= NAMED_PATHS {
                break;
            }
        }
        named.into_iter().collect()
    }
}

/// The names of the gates that failed (skipped ones are not failures).
fn failed_gates(summary: &GatesSummary) -> Vec<String> {
    summary
        .gates
        .iter()
        .filter(|g| !g.passed() && g.status != GateStatus::Skipped)
        .map(|g| g.name.clone())
        .collect()
}

/// A relative path with plain components only (what git reports; checked anyway).
fn plain(path: &str) -> bool {
    !path.is_empty()
        && Path::new(path)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
}

/// Whether `seeded` is the same kind of entry as `path`, with the same size and modification
/// time (a copy in the snapshot keeps both).
fn same_entry(path: &Path, seeded: &Path) -> bool {
    match (fs::symlink_metadata(path), fs::symlink_metadata(seeded)) {
        (Ok(a), Ok(b)) => {
            a.file_type() == b.file_type()
                && a.len() == b.len()
                && a.modified().ok() == b.modified().ok()
        }
        _ => false,
    }
}

/// Removes `path` and everything beneath it; a missing path is fine.
fn remove_all(path: &Path) -> io::Result<()> {
    match fs::remove_dir_all(path) {
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// Copies the entry at `from` (a file, a directory tree or a link, never followed) to `to`,
/// keeping modification times and permissions. FIFOs, sockets and devices are skipped; a file is
/// opened with `O_NOFOLLOW | O_NONBLOCK` and copied only when the open descriptor is a regular
/// file.
pub(crate) fn copy_entry(from: &Path, to: &Path) -> io::Result<()> {
    if let Some(parent) = to.parent() {
        fs::create_dir_all(parent)?;
    }
    for entry in walkdir::WalkDir::new(from).follow_links(false) {
        let entry = entry.map_err(io::Error::other)?;
        let relative = entry.path().strip_prefix(from).map_err(io::Error::other)?;
        let target = if relative.as_os_str().is_empty() {
            to.to_owned()
        } else {
            to.join(relative)
        };
        let kind = entry.file_type();
        if kind.is_dir() {
            fs::create_dir_all(&target)?;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(fs::read_link(entry.path())?, &target)?;
        } else if kind.is_file() {
            copy_file(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// One regular file, never through a link, with its mode and modification time.
fn copy_file(from: &Path, to: &Path) -> io::Result<()> {
    let flags = nix::fcntl::OFlag::O_NOFOLLOW.bits() | nix::fcntl::OFlag::O_NONBLOCK.bits();
    let mut source = OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(from)?;
    let meta = source.metadata()?;
    if !meta.is_file() {
        return Ok(());
    }
    let mut target = File::create(to)?;
    io::copy(&mut source, &mut target)?;
    target.set_permissions(meta.permissions())?;
    target.set_times(fs::FileTimes::new().set_modified(meta.modified()?))
}

#[cfg(test)]
mod tests;
