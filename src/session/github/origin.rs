//! Where a step's work comes from, decided once after authorization: the trigger's origin read
//! from GitHub's API (the default branch, or the pull request's facts: the one a command is on,
//! or the open pull request whose head is a failed run's branch; never the payload's copy of a
//! pull request's branch names, never the checkout), the publishing plan
//! ([`provenance::plan`], with the maintainers' pull request policy), the configuration of a
//! pull request's run read from the default branch through the API (a pull request cannot
//! configure the bot that works on it), the check that the work starts from the commit the
//! trigger trusts, the worktree moved onto a pull request's head when the workflow checked out
//! something else, and the repository's instructions for agents read from the trusted tree (a
//! pull request's base branch, fetched; else the commit the work starts from).

use super::*;
use crate::agent::instructions;
use crate::config::{CONFIG_FILE_NAMES, GivenFile};
use crate::github::api::PullRequest;
use crate::github::provenance::{
    self, Asked, BotSide, FixPlace, Origin, PatchOffer, PlanInput, Publish, PullFacts, PushKind,
    PushPlan,
};
use crate::github::trigger::RunOf;

/// The largest configuration file read through the API.
const MAX_CONFIG_BYTES: usize = 1 << 20;

/// Where a pull request's head is fetched when the checkout is not at it.
const PULL_HEAD_REF: &str = "refs/meta-agent/pull-head";

/// What a step works on and may publish.
#[derive(Debug, Clone)]
pub(super) struct Work {
    pub(super) origin: Origin,
    pub(super) publish: Publish,
    /// The repository's default branch, as the API says.
    pub(super) default_branch: String,
}

impl Work {
    /// The commit the work must start from, when the trigger names one (a pull request's head).
    pub(super) fn start_commit(&self) -> Option<&str> {
        match &self.publish {
            Publish::Branch(plan) => plan.start.as_deref(),
            Publish::Patch(offer) => Some(&offer.head_sha),
            Publish::Decline(_) => None,
        }
    }

    /// The pull request the trigger is about, with its facts.
    pub(super) fn pull(&self) -> Option<&PullFacts> {
        match &self.origin {
            Origin::PullRequest { pull, .. } => Some(pull),
            Origin::DefaultBranch { .. } | Origin::OrphanBranch { .. } => None,
        }
    }

    /// Whether the work is a pull request's failing check (not a person's command).
    pub(super) fn failing_check(&self) -> bool {
        matches!(
            &self.origin,
            Origin::PullRequest {
                asked: Asked::FailingCheck { .. },
                ..
            }
        )
    }

    /// The push plan's kind, when the plan is a push.
    pub(super) fn push_kind(&self) -> Option<PushKind> {
        match &self.publish {
            Publish::Branch(plan) => Some(plan.kind),
            Publish::Patch(_) | Publish::Decline(_) => None,
        }
    }
}

impl Step<'_> {
    /// Reads the trigger's origin from the API and decides the plan (kept for the whole step).
    pub(super) async fn decide_work(&self) -> Result<&Work, SessionError> {
        let repo = &self.actions.repository;
        let default_branch = self.api.default_branch(repo).await.map_err(internal)?;
        let origin = self.read_origin(&default_branch).await?;
        let bot = BotSide {
            repository: repo.clone(),
            bot_login: self.args.bot_login.clone(),
            branch_prefix: BRANCH_PREFIX.to_owned(),
        };
        let publish = provenance::plan(&PlanInput {
            origin: &origin,
            bot: &bot,
            policy: &self.args.pull_policy,
            default_branch: &default_branch,
        });
        tracing::info!("origin {origin:?}: {publish:?}");
        let work = Work {
            origin,
            publish,
            default_branch,
        };
        Ok(self.work.get_or_init(|| work))
    }

    /// The code the trigger is about, from the API: the pull request a command is on, the open
    /// pull request whose head is a failed run's branch, else the default branch.
    async fn read_origin(&self, default_branch: &str) -> Result<Origin, SessionError> {
        let repo = &self.actions.repository;
        if let Some(number) = self.trigger.pull_request() {
            let pull = self.api.pull(repo, number).await.map_err(internal)?;
            return Ok(Origin::PullRequest {
                pull: self.facts(pull).await?,
                asked: Asked::Command,
            });
        }
        let Trigger::FailedRun {
            of: RunOf::PullRequestHead,
            head_branch,
            head_sha,
            ..
        } = &self.trigger
        else {
            return Ok(Origin::DefaultBranch {
                branch: default_branch.to_owned(),
            });
        };
        // The run's branch name only finds the pull request: its facts are the API's, and the
        // plan checks that its head is the commit that failed.
        match self.api.open_pull_for(repo, head_branch).await {
            Ok(Some(pull)) => Ok(Origin::PullRequest {
                pull: self.facts(pull).await?,
                asked: Asked::FailingCheck {
                    run_sha: head_sha.clone(),
                },
            }),
            Ok(None) => Ok(Origin::OrphanBranch {
                branch: head_branch.clone(),
            }),
            Err(err) => Err(internal(err)),
        }
    }

    /// The facts of a pull request as the API answered them, with whether its branch is
    /// protected when the policy could push onto it.
    async fn facts(&self, pull: PullRequest) -> Result<PullFacts, SessionError> {
        let repo = &self.actions.repository;
        let same_repository = pull
            .head_repo
            .as_deref()
            .is_some_and(|head| head.eq_ignore_ascii_case(&repo.to_string()));
        let head_protected = if self.args.pull_policy.fix == FixPlace::HeadBranch && same_repository
        {
            self.api
                .branch_protected(repo, &pull.head_ref)
                .await
                .map_err(internal)?
        } else {
            false
        };
        Ok(PullFacts {
            number: pull.number,
            head_repo: pull.head_repo,
            head_ref: pull.head_ref,
            head_sha: pull.head_sha,
            base_ref: pull.base_ref,
            maintainer_can_modify: pull.maintainer_can_modify,
            draft: pull.draft,
            author: pull.author,
            open: pull.state == "open",
            head_protected,
        })
    }

    /// The repository's instructions for agents, from the tree the trigger trusts: a pull
    /// request's base branch (fetched into [`instructions::INSTRUCTIONS_REF`]), else the commit
    /// the work starts from (the default branch's, checked by [`Step::settle_start`]). What the
    /// pull request changes is never read as instructions; its changed files only say which
    /// instructions apply.
    pub(super) async fn instructions(
        &self,
        prepared: &Prepared,
        repo: &Git2Repository,
    ) -> Result<instructions::RepoInstructions, SessionError> {
        let work = self.work()?;
        let Some(pull) = work.pull() else {
            let head = repo.head().map_err(internal)?.commit;
            let origin = format!("the default branch `{}`", work.default_branch);
            return Ok(run::read_instructions(repo, &head, &origin));
        };
        self.keep_token_fresh().await;
        let fetched = push::fetch_trusted(
            &prepared.executor,
            &self.remote(prepared),
            &pull.base_ref,
            instructions::INSTRUCTIONS_REF,
        )
        .await;
        if let Err(err) = fetched {
            tracing::warn!(
                "the base branch `{}`, for its instructions: {err}",
                pull.base_ref
            );
            return Ok(instructions::RepoInstructions::none());
        }
        let origin = format!("the base branch `{}`", pull.base_ref);
        let mut found = run::read_instructions(repo, instructions::INSTRUCTIONS_REF, &origin);
        match self
            .api
            .pull_files(&self.actions.repository, pull.number)
            .await
        {
            Ok(files) => found.focus = files.into_iter().map(|file| file.filename).collect(),
            Err(err) => tracing::warn!("the pull request's files, for its instructions: {err}"),
        }
        Ok(found)
    }

    /// What the step works on (decided by [`Step::decide_work`] right after authorization).
    pub(super) fn work(&self) -> Result<&Work, SessionError> {
        self.work.get().ok_or_else(|| {
            SessionError::Internal("the publishing plan is decided after authorization".into())
        })
    }

    /// The push plan, or the error that says this step may not push.
    pub(super) fn push_plan(&self) -> Result<&PushPlan, SessionError> {
        match &self.work()?.publish {
            Publish::Branch(plan) => Ok(plan),
            Publish::Patch(_) | Publish::Decline(_) => Err(SessionError::Internal(
                "this trigger's fix is offered as a patch: nothing is pushed".into(),
            )),
        }
    }

    /// The patch offer, when the plan is one.
    pub(super) fn patch_offer(&self) -> Option<&PatchOffer> {
        match self.work().ok().map(|work| &work.publish) {
            Some(Publish::Patch(offer)) => Some(offer),
            Some(Publish::Branch(_) | Publish::Decline(_)) | None => None,
        }
    }

    /// The configuration file of a pull request's run: the default branch's, read through the
    /// API (`--config`'s path, else the usual names); `None` (the checkout's) for other runs.
    pub(super) async fn trusted_config(
        &self,
        overrides: &Overrides,
    ) -> Result<Option<GivenFile>, SessionError> {
        let work = self.work()?;
        if work.pull().is_none() {
            return Ok(None);
        }
        let names: Vec<String> = match &overrides.config {
            Some(path) => vec![path.to_string_lossy().into_owned()],
            None => CONFIG_FILE_NAMES
                .iter()
                .map(|name| (*name).to_owned())
                .collect(),
        };
        let repo = &self.actions.repository;
        let branch = &work.default_branch;
        for name in names {
            let text = self
                .api
                .file_at(repo, &name, branch, MAX_CONFIG_BYTES)
                .await
                .map_err(internal)?;
            if let Some(text) = text {
                return Ok(Some(given(repo, branch, &name, Some(text))));
            }
        }
        Ok(Some(given(repo, branch, CONFIG_FILE_NAMES[0], None)))
    }

    /// Before the first model call, the checkout must be what the plan starts from: a pull
    /// request's head (fetched from the base repository and checked out when the workflow
    /// checked out something else), or a commit of the trusted branch as the remote has it.
    pub(super) async fn settle_start(
        &self,
        prepared: &Prepared,
        repo: &Git2Repository,
    ) -> Result<(), SessionError> {
        let work = self.work()?;
        if let Some(head) = work.start_commit() {
            return self.check_out_pull_head(prepared, repo, work, head).await;
        }
        let Publish::Branch(plan) = &work.publish else {
            return Ok(());
        };
        if self.args.dry_run {
            return Ok(());
        }
        self.keep_token_fresh().await;
        push::fetch_trusted(
            &prepared.executor,
            &self.remote(prepared),
            &plan.trusted_branch,
            push::TRUSTED_REF,
        )
        .await
        .map_err(internal)?;
        let head = repo.head().map_err(internal)?.commit;
        let beyond = repo
            .commits_not_in(&head, &[push::TRUSTED_REF], 0)
            .map_err(internal)?;
        if beyond.is_empty() {
            return Ok(());
        }
        Err(SessionError::Usage(format!(
            "the checkout ({}) is not on `{}` as the repository has it: this trigger's work starts \
             from that branch, and the bot publishes no commit it did not write. Check out the \
             default branch (the examples' `actions/checkout` without `ref:`).",
            short(&head),
            plan.trusted_branch
        )))
    }

    /// Moves the worktree onto the pull request's head `head` unless it is there already.
    async fn check_out_pull_head(
        &self,
        prepared: &Prepared,
        repo: &Git2Repository,
        work: &Work,
        head: &str,
    ) -> Result<(), SessionError> {
        if repo.head().map_err(internal)?.commit == head {
            return Ok(());
        }
        let Some(pull) = work.pull() else {
            return Ok(());
        };
        self.keep_token_fresh().await;
        push::fetch_pull_head(
            &prepared.executor,
            &self.remote(prepared),
            pull.number,
            PULL_HEAD_REF,
        )
        .await
        .map_err(internal)?;
        repo.checkout_detached(PULL_HEAD_REF).map_err(|err| {
            SessionError::Usage(format!(
                "checking out pull request #{}'s head: {err}",
                pull.number
            ))
        })?;
        let now = repo.head().map_err(internal)?.commit;
        if now != head {
            return Err(SessionError::Usage(format!(
                "pull request #{}'s head moved from {} to {} while the step started: run the \
                 command again",
                pull.number,
                short(head),
                short(&now)
            )));
        }
        Ok(())
    }
}

/// The prefix of the bot's branches.
pub(super) const BRANCH_PREFIX: &str = "meta-agent/";

fn given(
    repo: &crate::github::RepoId,
    branch: &str,
    name: &str,
    text: Option<String>,
) -> GivenFile {
    GivenFile {
        path: std::path::PathBuf::from(format!("{repo}@{branch}:{name}")),
        text,
    }
}

/// A commit id as people read it.
pub(super) fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}
