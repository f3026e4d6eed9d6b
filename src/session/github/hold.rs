//! `before_push` on GitHub. A run that paused there has its verified commit and nothing else to
//! do; the runner that made it is gone before anyone answers. So instead of the push the commit
//! is written as a bundle into the run's files (the Action uploads them as the run's artifact),
//! the status comment records where it is, and the job ends paused (exit code 5). `/agent
//! continue` (or `step`, or any new request but `retry`) starts a job that reads the bundle back
//! from that artifact, takes from it only the commit the record names, and publishes it as the
//! run would have: pushed after the check before every push, the pull request opened.

use super::*;
use crate::github::held::{self, BUNDLE_FILE, HeldCommit};
use crate::protocol::pause::Location;
use crate::render::status::Held;
use crate::render::step;
use crate::render::step::{Doing, StepNote};

/// The largest artifact read back (unpacked): a held commit's bundle is far smaller.
const MAX_ARTIFACT_BYTES: usize = 512 * 1024 * 1024;

/// Where the bundle's base is fetched when the checkout lacks it.
const BASE_REF: &str = "refs/meta-agent/held-base";

/// Where the trusted branch is fetched when a shallow checkout is made whole.
const TRUSTED_REF: &str = "refs/meta-agent/held-trusted";

/// Why a held commit could not be read back (said in the status comment; the session is kept).
#[derive(Debug, thiserror::Error)]
pub(super) enum ReadBackError {
    #[error("listing run {run}'s artifacts: {source} {ACTIONS_READ}")]
    List { run: u64, source: GitHubError },
    #[error("run {run} has no artifact `{name}` (deleted?)")]
    Missing { run: u64, name: String },
    #[error("the artifact `{0}` has expired (`/agent retry` starts over)")]
    Expired(String),
    #[error("downloading `{name}`: {source} {ACTIONS_READ}")]
    Download { name: String, source: GitHubError },
    #[error("the artifact `{0}` holds no `{BUNDLE_FILE}`")]
    NoBundle(String),
    #[error(
        "the artifact's bundle names {named} for `{branch}`, not the verified commit {held} this \
         comment recorded"
    )]
    NotTheHeldCommit {
        named: String,
        branch: String,
        held: String,
    },
    #[error("this checkout's `{branch}` is at {tip}, not at the held commit")]
    BranchElsewhere { branch: String, tip: String },
    #[error(transparent)]
    Git(#[from] crate::github::push::PushError),
    #[error(transparent)]
    Repository(#[from] crate::git::GitError),
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error("a file for the bundle: {0}")]
    Io(#[from] std::io::Error),
}

const ACTIONS_READ: &str = "(the workflow needs `actions: read` to read it back)";

/// Whether `state` is a run paused at `before_push` (its verified commit made, not pushed).
pub(super) fn held_at_push(state: &LoopState) -> bool {
    state.outcome == Some(RunOutcome::Interrupted)
        && state
            .paused
            .as_ref()
            .is_some_and(|hit| hit.at == Location::BeforePush)
}

impl Step<'_> {
    /// Whether this step's run can hold its verified commit before the push: it pushes (not a
    /// fork's offered patch, not a dry run) and has the run's files to hold it in.
    pub(super) fn holds_before_push(&self) -> bool {
        !self.args.dry_run
            && self.args.out.is_some()
            && self.actions.run_id.is_some()
            && self.patch_offer().is_none()
            && self.push_plan().is_ok()
    }

    /// Publishes a run paused at `before_push`: the commit written as a bundle into the run's
    /// files, the status comment saying where it is; nothing pushed.
    pub(super) async fn hold(
        &self,
        prepared: &Prepared,
        repo: &Git2Repository,
        status: &mut Option<StatusComment>,
        state: &LoopState,
        done: Done,
    ) -> Result<Done, SessionError> {
        let (Some(out), Some(run_id)) = (self.args.out.as_deref(), self.actions.run_id) else {
            return Err(SessionError::Internal(
                "a commit held before its push needs the run's files and its run id".into(),
            ));
        };
        let commit = repo
            .commit_of(&format!("refs/heads/{}", state.branch))
            .map_err(internal)?;
        std::fs::create_dir_all(out)
            .map_err(|err| SessionError::Internal(format!("{}: {err}", out.display())))?;
        held::bundle(
            &prepared.executor,
            &self.remote(prepared),
            &state.branch,
            &state.base_commit,
            &out.join(BUNDLE_FILE),
        )
        .await
        .map_err(internal)?;
        super::publish::passed(prepared, "hold", &commit, "bundled");
        let held = HeldCommit {
            commit: commit.clone(),
            base: state.base_commit.clone(),
            run_id,
            artifact: HeldCommit::artifact_name(run_id, self.actions.run_attempt.unwrap_or(1)),
        };
        let view = View::Held(Held {
            why: state.interrupted.clone().unwrap_or_default(),
            commit,
            branch: state.branch.clone(),
            target: self.push_target(state)?,
            artifact: held.artifact.clone(),
            bundle: BUNDLE_FILE.to_owned(),
            summary: summary::markdown_result(state),
        });
        let record = SessionRecord {
            held: Some(held),
            ..SessionRecord::of(state)
        };
        self.post_status(status, &view, Some(&record)).await?;
        let input = SummaryInput {
            trigger: &self.trigger.describe(),
            pull_url: None,
            isolation: &crate::exec::detect::detect().describe(),
            note: Some(step::note(StepNote::HeldBeforePush)),
        };
        write_step_files(
            self.actions,
            &self.outbound(&summary::job_summary(Some(state), &input)),
            &super::publish::outputs(state, None, "interrupted"),
        )?;
        Ok(done)
    }

    /// The branch a held commit would be pushed to: the pull request's own under a plan that
    /// pushes there, else the session's.
    fn push_target(&self, state: &LoopState) -> Result<String, SessionError> {
        let plan = self.push_plan()?;
        use crate::github::provenance::PushKind;
        Ok(match plan.kind {
            PushKind::HeadBranch { .. } => plan.pull_into.clone(),
            PushKind::DefaultBranch | PushKind::BotsOwnPull { .. } | PushKind::Stacked { .. } => {
                state.branch.clone()
            }
        })
    }

    /// Goes on from a commit held at `before_push`: reads it back from the paused run's
    /// artifact and publishes it. When it cannot be read back the step ends with that error (the
    /// status comment says why, the record kept: a later `/agent continue` tries again; `/agent
    /// retry` starts over).
    pub(super) async fn release(
        &self,
        prepared: &Prepared,
        status: &mut Option<StatusComment>,
        record: &SessionRecord,
        held: &HeldCommit,
    ) -> Result<Done, SessionError> {
        let Some(mut state) = record.state.clone() else {
            return Err(SessionError::Internal(
                "a held commit without its session's state".into(),
            ));
        };
        let trigger = self.trigger.describe_doing(Doing::PushingHeld);
        // The record stays until the commit is published: a failure here keeps the session.
        self.post_status(status, &View::Working { trigger }, Some(record))
            .await?;
        let repo = run::open_repo(&prepared.repo)?;
        if let Err(err) = self.read_back(prepared, &repo, &state, held).await {
            // Said in the status comment, the record kept: a later `continue` tries again.
            return Err(SessionError::Internal(format!(
                "the verified commit held before its push could not be read back: {err}. Nothing \
                 was pushed; the session is kept"
            )));
        }
        // Opened again: git2 keeps what it read of a shallow checkout the read-back made whole.
        let repo = run::open_repo(&prepared.repo)?;
        state.outcome = Some(RunOutcome::Committed);
        state.paused = None;
        state.interrupted = None;
        let sessions = SessionStore::for_git_dir(&repo.git_dir());
        sessions.save(&state).map_err(internal)?;
        run::export(&repo, &state.session, self.args.out.as_deref())?;
        let report = RunReport {
            diff: String::new(),
            gates: None,
            commit_message: repo.message(&held.commit).ok(),
            commit: Some(held.commit.clone()),
            wip_refused: None,
            state,
        };
        let done = Done {
            stdout: step::held_published(&held.commit),
            outcome: Outcome::Success,
        };
        self.publish(prepared, &repo, status, report, done).await
    }

    /// The held commit, from the paused run's artifact onto the session's branch (checked out).
    async fn read_back(
        &self,
        prepared: &Prepared,
        repo: &Git2Repository,
        state: &LoopState,
        held: &HeldCommit,
    ) -> Result<(), ReadBackError> {
        let bundle = self.download_bundle(held).await?;
        let dir = tempfile::Builder::new()
            .prefix("meta-agent-held-")
            .tempdir()?;
        let file = dir.path().join(BUNDLE_FILE);
        std::fs::write(&file, bundle)?;
        let remote = self.remote(prepared);
        self.keep_token_fresh().await;
        if repo.commit_of(&held.base).is_err() {
            // A shallow checkout of a branch that moved on: its history made whole first, so the
            // base is reachable from the branch the push is checked against.
            if repo.git_dir().join("shallow").exists() {
                let trusted = self.push_plan()?.trusted_branch.clone();
                tracing::info!(
                    "fetching the history of `{trusted}`: the held commit's base is not in this \
                     shallow checkout"
                );
                held::unshallow(&prepared.executor, &remote, &trusted, TRUSTED_REF).await?;
            }
            if repo.commit_of(&held.base).is_err() {
                held::fetch_commit(&prepared.executor, &remote, &held.base, BASE_REF).await?;
            }
        }
        let named = held::unbundle(&prepared.executor, &remote, &file, &state.branch).await?;
        if named != held.commit {
            return Err(ReadBackError::NotTheHeldCommit {
                named,
                branch: state.branch.clone(),
                held: held.commit.clone(),
            });
        }
        repo.checkout_detached(&held.commit)?;
        if repo.checkout_new_branch(&state.branch).is_err() {
            repo.checkout_existing(&state.branch)?;
            let tip = repo.head()?.commit;
            if tip != held.commit {
                return Err(ReadBackError::BranchElsewhere {
                    branch: state.branch.clone(),
                    tip,
                });
            }
        }
        Ok(())
    }

    /// The bundle's bytes, from the paused run's artifact.
    async fn download_bundle(&self, held: &HeldCommit) -> Result<Vec<u8>, ReadBackError> {
        let repo = &self.actions.repository;
        let artifacts = self
            .api
            .artifacts(repo, held.run_id)
            .await
            .map_err(|source| ReadBackError::List {
                run: held.run_id,
                source,
            })?;
        let Some(artifact) = artifacts
            .iter()
            .find(|artifact| artifact.name == held.artifact)
        else {
            return Err(ReadBackError::Missing {
                run: held.run_id,
                name: held.artifact.clone(),
            });
        };
        if artifact.expired {
            return Err(ReadBackError::Expired(held.artifact.clone()));
        }
        let files = self
            .api
            .artifact_files(repo, artifact.id, MAX_ARTIFACT_BYTES)
            .await
            .map_err(|source| ReadBackError::Download {
                name: held.artifact.clone(),
                source,
            })?;
        files
            .into_iter()
            .find(|(path, _)| path == BUNDLE_FILE)
            .map(|(_, bytes)| bytes)
            .ok_or_else(|| ReadBackError::NoBundle(held.artifact.clone()))
    }
}
