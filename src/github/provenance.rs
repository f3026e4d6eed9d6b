//! Where the code of a run comes from, and therefore what the bot may publish. Two pure
//! decisions:
//!
//! - [`plan`]: the trigger's facts, read from GitHub's API and never from anything a pull request
//!   controls (its text, its branch names as the payload quotes them, the checkout), in; the
//!   [`Publish`] decision out: push the bot's own branch to the base repository and open a pull
//!   request ([`PushPlan`]), or offer the fix as a patch only (a fork's pull request: no branch,
//!   no pull request, no push, ever), or do nothing (a closed pull request).
//! - [`judge_push`]: right before every push, the commits the push would bring into the base
//!   repository, in; a [`VerifiedPush`] out only when each of them is the bot's own commit of
//!   this session. Every commit already on the branch the trigger trusts (the default branch for
//!   an issue, a same-repository pull request's head) or on the remote branch the push extends is
//!   left out of that list by the caller, which reads both tips from the remote itself. So the
//!   bot never pushes a commit it did not write, other than commits already on a branch of the
//!   base repository that the trigger trusts, whatever was checked out.
//!
//! [`VerifiedPush`] can only be made here, and [`super::push::push_verified`] takes nothing else:
//! no path reaches a push around the check.

use super::api::RepoId;
use crate::git::CommitSummary;

/// A pull request as GitHub's REST API describes it (`GET /repos/{owner}/{repo}/pulls/{n}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullFacts {
    pub number: u64,
    /// `head.repo.full_name`: the repository the pull request's code lives in; `None` when that
    /// repository was deleted.
    pub head_repo: Option<String>,
    /// `head.ref`: the branch's name in the head repository.
    pub head_ref: String,
    /// `head.sha`: the commit the pull request proposes.
    pub head_sha: String,
    /// `base.ref`: the branch it would be merged into.
    pub base_ref: String,
    /// `maintainer_can_modify`: the author lets maintainers push to the head branch. Read for
    /// the record; this version never pushes to a branch it did not create.
    pub maintainer_can_modify: bool,
    pub draft: bool,
    /// `user.login`: who opened it.
    pub author: String,
    /// `state == "open"`.
    pub open: bool,
}

/// The code a trigger asks the bot to work on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// An issue, a dispatch, a failed run of the default branch: the work starts from the
    /// repository's default branch.
    DefaultBranch { branch: String },
    /// A comment on a pull request: the work starts from its head.
    PullRequest(PullFacts),
}

/// Who the bot is in this repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BotSide {
    /// The base repository (`GITHUB_REPOSITORY`).
    pub repository: RepoId,
    /// The bot's login: a pull request it opened from one of its branches continues its session.
    pub bot_login: String,
    /// The prefix of the bot's branches (`meta-agent/`).
    pub branch_prefix: String,
}

/// What the bot may publish for a trigger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Publish {
    /// Push the bot's own branch to the base repository and open (or update) a pull request.
    Branch(PushPlan),
    /// Offer the verified fix as a patch (the status comment, suggestions in a review, a file
    /// in the run's artifact). Nothing is pushed and no pull request is opened.
    Patch(PatchOffer),
    /// Nothing to work on.
    Decline(Declined),
}

/// Where the bot's branch starts, what it may carry, and where its pull request goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushPlan {
    /// The branch of the base repository whose commits a push may carry besides the bot's own.
    pub trusted_branch: String,
    /// The commit the work starts from, when the trigger names one (a pull request's head);
    /// `None`: wherever the trusted branch is.
    pub start: Option<String>,
    /// The branch the pull request is opened into.
    pub pull_into: String,
    pub kind: PushKind,
}

/// Why the bot pushes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushKind {
    /// New work from the default branch (an issue, a dispatch, a failed run).
    DefaultBranch,
    /// More work on the bot's own pull request (a review comment, `/agent fix` on it).
    BotsOwnPull { pull: u64 },
    /// A fix for a person's same-repository pull request, proposed as a pull request of its own
    /// into the author's branch (stacked); never pushed onto the author's branch.
    Stacked { pull: u64 },
}

/// A patch offered for a pull request whose code is not the base repository's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchOffer {
    pub pull: u64,
    /// The commit the patch applies to (the work must start there).
    pub head_sha: String,
    pub why: PatchOnly,
}

/// Why only a patch is offered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatchOnly {
    /// The pull request's code lives in another repository.
    Fork { head_repo: String },
    /// The repository the pull request came from was deleted.
    DeletedFork,
}

/// Why the bot does nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Declined {
    /// The pull request is closed (or merged).
    Closed { pull: u64 },
}

impl Declined {
    /// The sentence for the log and the job summary.
    pub fn describe(self) -> String {
        match self {
            Declined::Closed { pull } => {
                format!("pull request #{pull} is closed: there is nothing to fix on it")
            }
        }
    }
}

/// Decides what the bot may publish for work from `origin`.
pub fn plan(origin: &Origin, bot: &BotSide) -> Publish {
    let pull = match origin {
        Origin::DefaultBranch { branch } => {
            return Publish::Branch(PushPlan {
                trusted_branch: branch.clone(),
                start: None,
                pull_into: branch.clone(),
                kind: PushKind::DefaultBranch,
            });
        }
        Origin::PullRequest(pull) => pull,
    };
    if !pull.open {
        return Publish::Decline(Declined::Closed { pull: pull.number });
    }
    let base = bot.repository.to_string();
    let same_repository = pull
        .head_repo
        .as_deref()
        .is_some_and(|head| head.eq_ignore_ascii_case(&base));
    if !same_repository {
        let why = match &pull.head_repo {
            Some(head_repo) => PatchOnly::Fork {
                head_repo: head_repo.clone(),
            },
            None => PatchOnly::DeletedFork,
        };
        return Publish::Patch(PatchOffer {
            pull: pull.number,
            head_sha: pull.head_sha.clone(),
            why,
        });
    }
    let bots_own = pull.author.eq_ignore_ascii_case(&bot.bot_login)
        && !bot.branch_prefix.is_empty()
        && pull.head_ref.starts_with(&bot.branch_prefix);
    if bots_own {
        // The session's branch continues; what it may carry beside its own commits is what the
        // branch it goes into holds.
        return Publish::Branch(PushPlan {
            trusted_branch: pull.base_ref.clone(),
            start: None,
            pull_into: pull.base_ref.clone(),
            kind: PushKind::BotsOwnPull { pull: pull.number },
        });
    }
    Publish::Branch(PushPlan {
        trusted_branch: pull.head_ref.clone(),
        start: Some(pull.head_sha.clone()),
        pull_into: pull.head_ref.clone(),
        kind: PushKind::Stacked { pull: pull.number },
    })
}

/// The most commits one push may bring; a longer list is refused (the work starts from the
/// trusted branch, so a session's own commits are a handful).
pub const MAX_NEW_COMMITS: usize = 100;

/// What [`judge_push`] looks at.
#[derive(Debug, Clone, Copy)]
pub struct PushCheck<'a> {
    pub publish: &'a Publish,
    /// The local commit to push.
    pub tip: &'a str,
    /// The remote branch it goes to (the bot's).
    pub target: &'a str,
    /// The session whose commits these must be.
    pub session: &'a str,
    /// The committer address of the bot's commits.
    pub bot_email: &'a str,
    /// The commits reachable from `tip` and from neither the trusted branch's tip nor the
    /// target's tip on the remote: at most [`MAX_NEW_COMMITS`] + 1 of them.
    pub new_commits: &'a [CommitSummary],
}

/// Why a push was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PushRefusal {
    #[error(
        "this trigger's code is not the base repository's ({0}): its fix is offered as a patch, \
         never pushed"
    )]
    PatchOnly(String),
    #[error("{0}")]
    Declined(String),
    #[error(
        "commit {id} is not one this session of the bot wrote ({why}) and is on no branch the \
         trigger trusts: pushing it would publish someone else's code under the bot's name"
    )]
    ForeignCommit { id: String, why: &'static str },
    #[error(
        "more than {MAX_NEW_COMMITS} new commits: the work did not start from the trusted branch"
    )]
    TooManyCommits,
    #[error(
        "`{target}` is not one of the bot's branches (or it is the branch the work comes from)"
    )]
    NotTheBotsBranch { target: String },
}

/// A push the check allowed: the commit and the remote branch, nothing else. Made only by
/// [`judge_push`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedPush {
    tip: String,
    target: String,
}

impl VerifiedPush {
    /// The commit to push.
    pub fn tip(&self) -> &str {
        &self.tip
    }

    /// The remote branch it goes to.
    pub fn target(&self) -> &str {
        &self.target
    }
}

/// Allows a push only when the plan is a push and every new commit is this session's own.
pub fn judge_push(check: &PushCheck<'_>, branch_prefix: &str) -> Result<VerifiedPush, PushRefusal> {
    let plan = match check.publish {
        Publish::Branch(plan) => plan,
        Publish::Patch(offer) => {
            let whose = match &offer.why {
                PatchOnly::Fork { head_repo } => head_repo.clone(),
                PatchOnly::DeletedFork => "a deleted fork".to_owned(),
            };
            return Err(PushRefusal::PatchOnly(whose));
        }
        Publish::Decline(declined) => return Err(PushRefusal::Declined(declined.describe())),
    };
    let onto_trusted = check.target == plan.trusted_branch || check.target == plan.pull_into;
    if onto_trusted || branch_prefix.is_empty() || !check.target.starts_with(branch_prefix) {
        return Err(PushRefusal::NotTheBotsBranch {
            target: check.target.to_owned(),
        });
    }
    if check.new_commits.len() > MAX_NEW_COMMITS {
        return Err(PushRefusal::TooManyCommits);
    }
    for commit in check.new_commits {
        if let Some(why) = foreign(commit, check) {
            return Err(PushRefusal::ForeignCommit {
                id: commit.id.clone(),
                why,
            });
        }
    }
    Ok(VerifiedPush {
        tip: check.tip.to_owned(),
        target: check.target.to_owned(),
    })
}

/// Why `commit` is not the session's own, if it is not.
fn foreign(commit: &CommitSummary, check: &PushCheck<'_>) -> Option<&'static str> {
    if !commit.committer_email.eq_ignore_ascii_case(check.bot_email) {
        return Some("another committer");
    }
    if !crate::engine::once::carries_session(&commit.message, check.session) {
        return Some("no trailer of this session");
    }
    None
}

#[cfg(test)]
mod tests;
