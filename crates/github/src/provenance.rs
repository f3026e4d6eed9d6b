//! Where the code of a run comes from, and therefore what the bot may publish. Two pure
//! decisions:
//!
//! - [`plan`]: the trigger's facts, read from GitHub's API and never from anything a pull request
//!   controls (its text, its branch names as the payload quotes them, the checkout), and the
//!   maintainers' [`PullPolicy`] in; the [`Publish`] decision out: push the bot's own branch to
//!   the base repository and open a pull request ([`PushPlan`]), or, for a person's
//!   same-repository pull request when the policy says so and the branch allows it, push the fix
//!   onto the pull request's own branch (fast-forward only), or offer the fix as a patch only (a
//!   fork's pull request: no branch, no pull request, no push, ever), or do nothing (a closed
//!   pull request; for a failing check: a draft, an excluded branch, a fork's, a head that moved
//!   since the run, a branch no open pull request has as its head).
//! - [`judge_push`]: right before every push, the commits the push would bring into the base
//!   repository, in; a [`VerifiedPush`] out only when each of them is the bot's own commit of
//!   this session. Every commit already on the branch the trigger trusts (the default branch for
//!   an issue, a same-repository pull request's head) or on the remote branch the push extends is
//!   left out of that list by the caller, which reads both tips from the remote itself. So the
//!   bot never pushes a commit it did not write, other than commits already on a branch of the
//!   base repository that the trigger trusts, whatever was checked out. A push onto a pull
//!   request's own branch is allowed only when that branch is still at the commit the work
//!   started from: it then fast-forwards, and a branch the author moved meanwhile is refused
//!   ([`PushRefusal::BranchMoved`]), never forced.
//!
//! [`VerifiedPush`] can only be made here, and [`super::push::push_verified`] takes nothing else:
//! no path reaches a push around the check.

use super::api::RepoId;
use meta_agent_git::CommitSummary;
pub use meta_agent_protocol::publish::{Declined, HeadRefusal};
use meta_agent_render::checks;

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
    /// `maintainer_can_modify`: the author lets maintainers push to the head branch (the
    /// checkbox GitHub shows on a fork's pull request).
    pub maintainer_can_modify: bool,
    pub draft: bool,
    /// `user.login`: who opened it.
    pub author: String,
    /// `state == "open"`.
    pub open: bool,
    /// GitHub protects the head branch (`GET /repos/{owner}/{repo}/branches/{head_ref}`,
    /// `protected`). Read only when the policy could push onto it; `false` otherwise.
    pub head_protected: bool,
}

/// The code a trigger asks the bot to work on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// An issue, a dispatch, a failed run of the default branch: the work starts from the
    /// repository's default branch.
    DefaultBranch { branch: String },
    /// A pull request: the work starts from its head.
    PullRequest { pull: PullFacts, asked: Asked },
    /// A failed run of a branch that no open pull request of the base repository has as its
    /// head (looked up through the API by the run's branch).
    OrphanBranch { branch: String },
}

/// What asked for work on a pull request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Asked {
    /// A command of someone with write access (`/agent fix` in its conversation or a review).
    Command,
    /// A failed workflow run of its head (a failing check), at commit `run_sha`.
    FailingCheck { run_sha: String },
}

/// Where the fix for a person's same-repository pull request goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FixPlace {
    /// A branch of the bot's on top of the pull request's head, with a pull request of its own
    /// into the author's branch.
    #[default]
    Stacked,
    /// A commit on the pull request's own branch, fast-forward only, when the branch allows it
    /// (see [`HeadRefusal`]); otherwise stacked.
    HeadBranch,
}

/// What the maintainers configured for pull requests (the Action's inputs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PullPolicy {
    pub fix: FixPlace,
    /// Failing checks of draft pull requests are healed too.
    pub drafts: bool,
    /// Head branches whose failing checks are never healed (globs, `*` within a path part, `**`
    /// across parts).
    pub exclude: Vec<String>,
}

/// Everything [`plan`] decides from.
#[derive(Debug, Clone, Copy)]
pub struct PlanInput<'a> {
    pub origin: &'a Origin,
    pub bot: &'a BotSide,
    pub policy: &'a PullPolicy,
    /// The repository's default branch, as the API says.
    pub default_branch: &'a str,
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
    /// into the author's branch (stacked); never pushed onto the author's branch. `instead`: the
    /// policy asked for a push onto that branch and why it was not allowed.
    Stacked {
        pull: u64,
        instead: Option<HeadRefusal>,
    },
    /// A fix for a person's same-repository pull request, pushed onto its own branch
    /// (`pull_into`), fast-forward from `start` only; work that is not a verified fix (an
    /// escalation's, a paused run's) goes to the bot's own branch.
    HeadBranch { pull: u64 },
}

impl PushKind {
    /// The pull request the work is for, if any.
    pub fn pull(self) -> Option<u64> {
        match self {
            PushKind::DefaultBranch => None,
            PushKind::BotsOwnPull { pull }
            | PushKind::Stacked { pull, .. }
            | PushKind::HeadBranch { pull } => Some(pull),
        }
    }
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

/// Decides what the bot may publish for work from the input's origin.
pub fn plan(input: &PlanInput<'_>) -> Publish {
    let (pull, asked) = match input.origin {
        Origin::DefaultBranch { branch } => {
            return Publish::Branch(PushPlan {
                trusted_branch: branch.clone(),
                start: None,
                pull_into: branch.clone(),
                kind: PushKind::DefaultBranch,
            });
        }
        Origin::OrphanBranch { branch } => {
            return Publish::Decline(Declined::NoPullRequest {
                branch: branch.clone(),
            });
        }
        Origin::PullRequest { pull, asked } => (pull, asked),
    };
    if !pull.open {
        return Publish::Decline(Declined::Closed { pull: pull.number });
    }
    if let Asked::FailingCheck { run_sha } = asked
        && let Some(declined) = leave_check_alone(input, pull, run_sha)
    {
        return Publish::Decline(declined);
    }
    if !same_repository(pull, input.bot) {
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
    if bots_own(pull, input.bot) {
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
        kind: persons_pull_kind(input, pull),
    })
}

/// Why a failing check of `pull` is not the bot's to heal, if it is not: a fork's, the bot's
/// own, a draft (unless the policy takes drafts), an excluded branch, a head that moved since
/// the run at `run_sha`.
fn leave_check_alone(input: &PlanInput<'_>, pull: &PullFacts, run_sha: &str) -> Option<Declined> {
    let number = pull.number;
    if !same_repository(pull, input.bot) {
        return Some(Declined::Fork { pull: number });
    }
    if bots_own(pull, input.bot) || pull.head_ref.starts_with(&input.bot.branch_prefix) {
        return Some(Declined::BotsOwn { pull: number });
    }
    if pull.draft && !input.policy.drafts {
        return Some(Declined::Draft { pull: number });
    }
    if let Some(glob) = excluded_by(&input.policy.exclude, &pull.head_ref) {
        return Some(Declined::Excluded {
            pull: number,
            branch: pull.head_ref.clone(),
            glob,
        });
    }
    if !run_sha.eq_ignore_ascii_case(&pull.head_sha) {
        return Some(Declined::HeadMoved {
            pull: number,
            run: run_sha.to_owned(),
            head: pull.head_sha.clone(),
        });
    }
    None
}

/// The first of `globs` that matches `branch` (`*` stays within a path part, `**` crosses
/// them); an invalid glob matches the branch literally only.
pub fn excluded_by(globs: &[String], branch: &str) -> Option<String> {
    globs
        .iter()
        .find(|glob| {
            globset::GlobBuilder::new(glob)
                .literal_separator(true)
                .build()
                .map_or(glob.as_str() == branch, |compiled| {
                    compiled.compile_matcher().is_match(branch)
                })
        })
        .cloned()
}

/// Where a person's same-repository pull request gets its fix: onto its branch when the policy
/// says so and the branch allows it, else stacked (saying why not onto its branch).
fn persons_pull_kind(input: &PlanInput<'_>, pull: &PullFacts) -> PushKind {
    let number = pull.number;
    match input.policy.fix {
        FixPlace::Stacked => PushKind::Stacked {
            pull: number,
            instead: None,
        },
        FixPlace::HeadBranch => match head_refusal(input, pull) {
            None => PushKind::HeadBranch { pull: number },
            Some(refusal) => PushKind::Stacked {
                pull: number,
                instead: Some(refusal),
            },
        },
    }
}

/// Why the bot may not push onto `pull`'s own branch, if it may not: it must be the base
/// repository's (or the author must allow maintainers' edits), not protected, not the default
/// branch.
fn head_refusal(input: &PlanInput<'_>, pull: &PullFacts) -> Option<HeadRefusal> {
    if !same_repository(pull, input.bot) && !pull.maintainer_can_modify {
        return Some(HeadRefusal::NoMaintainerEdits);
    }
    if pull.head_ref == input.default_branch {
        return Some(HeadRefusal::DefaultBranch);
    }
    if pull.head_protected {
        return Some(HeadRefusal::Protected);
    }
    None
}

fn same_repository(pull: &PullFacts, bot: &BotSide) -> bool {
    let base = bot.repository.to_string();
    pull.head_repo
        .as_deref()
        .is_some_and(|head| head.eq_ignore_ascii_case(&base))
}

fn bots_own(pull: &PullFacts, bot: &BotSide) -> bool {
    pull.author.eq_ignore_ascii_case(&bot.bot_login)
        && !bot.branch_prefix.is_empty()
        && pull.head_ref.starts_with(&bot.branch_prefix)
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
    /// The target's tip on the remote, read just now (`None`: no such branch).
    pub target_tip: Option<&'a str>,
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
    #[error(
        "`{branch}` moved while the fix was made (from {from} to {now}): the author pushed \
         meanwhile, and the bot never forces"
    )]
    BranchMoved {
        branch: String,
        from: String,
        now: String,
    },
}

/// A push the check allowed: the commit and the remote branch, nothing else. Made only by
/// [`judge_push`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedPush {
    tip: String,
    target: String,
    onto: Onto,
}

/// Whose branch a verified push goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Onto {
    /// One of the bot's own branches.
    BotsBranch,
    /// A pull request's own branch, which the push fast-forwards from the commit the work
    /// started from.
    PullHead,
}

impl VerifiedPush {
    /// Whose branch it goes to.
    pub fn onto(&self) -> Onto {
        self.onto
    }

    /// The commit to push.
    pub fn tip(&self) -> &str {
        &self.tip
    }

    /// The remote branch it goes to.
    pub fn target(&self) -> &str {
        &self.target
    }
}

/// Allows a push only when the plan is a push and every new commit is this session's own: onto
/// one of the bot's branches, or, for a plan that pushes onto a pull request's own branch, onto
/// that branch while it is still at the commit the work started from.
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
        Publish::Decline(declined) => {
            return Err(PushRefusal::Declined(checks::declined(declined)));
        }
    };
    let onto = onto(check, plan, branch_prefix)?;
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
        onto,
    })
}

/// Whose branch the push goes to, when the plan allows that branch: the pull request's own
/// only under a [`PushKind::HeadBranch`] plan and while it has not moved; else one of the bot's,
/// never the branch the work comes from or goes into.
fn onto(check: &PushCheck<'_>, plan: &PushPlan, branch_prefix: &str) -> Result<Onto, PushRefusal> {
    let pull_head = matches!(plan.kind, PushKind::HeadBranch { .. })
        && check.target == plan.pull_into
        && check.target == plan.trusted_branch;
    if pull_head {
        let from = plan.start.as_deref().unwrap_or_default();
        return match check.target_tip {
            Some(now) if !from.is_empty() && now.eq_ignore_ascii_case(from) => Ok(Onto::PullHead),
            now => Err(PushRefusal::BranchMoved {
                branch: check.target.to_owned(),
                from: from.to_owned(),
                now: now.unwrap_or("nothing (the branch is gone)").to_owned(),
            }),
        };
    }
    let onto_trusted = check.target == plan.trusted_branch || check.target == plan.pull_into;
    if onto_trusted || branch_prefix.is_empty() || !check.target.starts_with(branch_prefix) {
        return Err(PushRefusal::NotTheBotsBranch {
            target: check.target.to_owned(),
        });
    }
    Ok(Onto::BotsBranch)
}

/// Why `commit` is not the session's own, if it is not.
fn foreign(commit: &CommitSummary, check: &PushCheck<'_>) -> Option<&'static str> {
    if !commit.committer_email.eq_ignore_ascii_case(check.bot_email) {
        return Some("another committer");
    }
    if !meta_agent_protocol::trailer::carries_session(&commit.message, check.session) {
        return Some("no trailer of this session");
    }
    None
}

#[cfg(test)]
mod tests;
