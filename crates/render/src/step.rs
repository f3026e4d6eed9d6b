//! What the GitHub step says in its log, its outputs and its summary's notes, beside the run's
//! report: what triggered it and what it is doing, why it does nothing with an event or an
//! actor, why it ended without a run, what `status` finds, when it published what an earlier run
//! made or held, and why it stopped with an error. Every text from typed data the GitHub layer
//! fills; pure.

use meta_agent_protocol::ignored::{CommentEvent, Ignored};

/// What triggered a step, as the job summary and the status comment name it: a view the GitHub
/// layer fills from its trigger (`verb`, the slash command's word).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TriggerLine<'a> {
    /// An issue labelled for the bot.
    Issue { number: u64 },
    /// A slash command in an issue's or a pull request's conversation.
    Comment { verb: &'a str, number: u64 },
    /// A slash command in a review of a pull request.
    ReviewComment { verb: &'a str, pull: u64 },
    /// A failed workflow run.
    FailedRun { run_id: u64, workflow: &'a str },
    /// A manual dispatch, for an issue or none.
    Dispatch { issue: Option<u64> },
}

/// What the step does for its trigger, as the status comment's working line ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Doing {
    /// The run itself: no ending.
    Run,
    /// Publishing what the run made.
    Publishing,
    /// Pushing the verified commit a paused run held.
    PushingHeld,
}

/// The trigger named for logs, the job summary and the status comment.
pub fn trigger(line: TriggerLine<'_>, doing: Doing) -> String {
    let named = match line {
        TriggerLine::Issue { number } => format!("issue #{number}"),
        TriggerLine::Comment { verb, number } => format!("`{verb}` on #{number}"),
        TriggerLine::ReviewComment { verb, pull } => format!("`{verb}` in a review of #{pull}"),
        TriggerLine::FailedRun { run_id, workflow } => format!("failed run {run_id} of {workflow}"),
        TriggerLine::Dispatch {
            issue: Some(number),
        } => format!("dispatch for #{number}"),
        TriggerLine::Dispatch { issue: None } => "dispatch".to_owned(),
    };
    match doing {
        Doing::Run => named,
        Doing::Publishing => format!("{named} (publishing)"),
        Doing::PushingHeld => format!("{named} (pushing the held commit)"),
    }
}

/// The line of a step that ends without a run: its outcome (the step output's value) and why.
pub fn finished_early(outcome: &str, reason: &str) -> String {
    format!("meta-agent: {outcome}: {reason}\n")
}

/// Why the step ignores its event, for its log and its output.
pub fn ignored(ignored: &Ignored) -> String {
    match ignored {
        Ignored::OtherEvent { event } => {
            format!("the `{event}` event is not one meta-agent handles")
        }
        Ignored::NoLabel { action, label } => {
            format!("issues/{action} without the `{label}` label")
        }
        Ignored::CommentNotNew { on, action } => {
            let event = match on {
                CommentEvent::Issue => "issue_comment",
                CommentEvent::Review => "pull_request_review_comment",
            };
            format!("{event}/{action}: only new comments are read")
        }
        Ignored::UnknownCommand { word } => format!("unknown command `{word}`"),
        Ignored::NotACommand => "the comment is not a command".to_owned(),
        Ignored::ReviewNotACommand => "the review comment is not a command".to_owned(),
        Ignored::RunNotFailed { action, conclusion } => format!(
            "workflow_run/{action} ({}): only failed runs are healed",
            conclusion.as_deref().unwrap_or("no conclusion")
        ),
        Ignored::BotsOwnBranch { branch } => {
            format!("the failed run is on the bot's own branch `{branch}` (no self-healing loops)")
        }
        Ignored::ForkRun { head, home } => format!(
            "the failed run's code comes from `{head}`, not `{home}`: runs of forks are never healed"
        ),
        Ignored::NoActor => "the failed run names no actor (no `triggering_actor`, `actor` or \
                             `sender`): whose permission to check is unknown"
            .to_owned(),
        Ignored::PullRequestTarget => "the failed run was started by `pull_request_target`: such \
                                       runs hold the base branch's code, never a pull request's \
                                       to heal"
            .to_owned(),
        Ignored::PullRequestChecksOff => "the failed run was started by `pull_request`: a pull \
                                          request's checks are its author's to fix \
                                          (`pull-request-checks` heals them)"
            .to_owned(),
        Ignored::OtherBranch { branch, default } => format!(
            "the failed run is on `{branch}`, not the default branch `{default}`: self-healing \
             works on the default branch (and, with `pull-request-checks: all`, on pull \
             requests' branches)"
        ),
        Ignored::TheBotItself { login } => format!("{login} is the bot itself"),
        Ignored::UnlistedBot { login } => {
            format!("{login} is a bot that is not listed in allow-bots")
        }
    }
}

/// Why an actor may not trigger the bot: `login` has `permission` (GitHub's name for it) on the
/// repository.
pub fn refused(login: &str, permission: &str) -> String {
    format!(
        "@{login} has {permission} permission on this repository; triggering meta-agent needs \
         write, maintain or admin"
    )
}

/// The job summary's isolation of a step that ran no command.
pub const NO_ISOLATION: &str = "not needed";

/// A job summary's note on a step that published without running, or held its push.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepNote {
    /// A fork's pull request: the fix is offered as a patch.
    PatchOffered,
    /// A run paused before its push: the verified commit is held.
    HeldBeforePush,
    /// A session committed earlier, published again.
    PublishedAgain,
}

/// The job summary's note (`SummaryInput::note`).
pub fn note(note: StepNote) -> &'static str {
    match note {
        StepNote::PatchOffered => {
            "a fork's pull request: the fix is offered as a patch, nothing is pushed"
        }
        StepNote::HeldBeforePush => {
            "paused before its push: the verified commit is held in the artifact"
        }
        StepNote::PublishedAgain => "already verified and committed earlier; published again",
    }
}

/// What a thread the bot works on is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadKind {
    Issue,
    PullRequest,
}

/// Why a step on a thread where a maintainer stopped the bot does not run.
pub fn stopped_here(thread: ThreadKind) -> String {
    let what = match thread {
        ThreadKind::Issue => "issue",
        ThreadKind::PullRequest => "pull request",
    };
    format!("a maintainer stopped the bot on this {what} (`/agent fix` starts it again)")
}

/// Why a step that a maintainer's `stop` triggered ends (the bot stopped).
pub fn stopped_by_maintainer() -> &'static str {
    "stopped by a maintainer"
}

/// A session recorded in a thread's status comment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLine<'a> {
    pub session: &'a str,
    pub branch: &'a str,
    /// How it ended so far (`committed`, `escalated`, `interrupted`, `running`...).
    pub outcome: &'a str,
    /// A maintainer stopped the bot on the thread.
    pub stopped: bool,
}

/// What `status` answers: the thread's session, or that there is none yet.
pub fn session_status(session: Option<&SessionLine<'_>>) -> String {
    match session {
        Some(line) => format!(
            "Session `{}` on `{}`: {}{}.",
            line.session,
            line.branch,
            line.outcome,
            if line.stopped { " (stopped)" } else { "" }
        ),
        None => "No session yet on this issue.".to_owned(),
    }
}

/// Why a failing check of a pull request's head (`head`, short) is not run again: the session
/// that handled it and how it ended, and the command (`phrase fix`) that runs it again.
pub fn head_handled(head: &str, session: &SessionLine<'_>, phrase: &str) -> String {
    format!(
        "the pull request's head {head} was handled already (session {}: {}); `{phrase} fix` \
         runs again",
        session.session, session.outcome
    )
}

/// The line of a step that found its session committed and pushed already, and published it
/// again (`pull_url`, the pull request opened or found).
pub fn already_committed(pull_url: &str) -> String {
    format!("meta-agent: already committed; pull request {pull_url}\n")
}

/// The log line of a step whose session was recorded as committed but never pushed (killed
/// before its push on a runner that is gone): it runs afresh.
pub fn never_pushed(session: &str) -> String {
    format!("session {session} recorded as committed was never pushed: running afresh")
}

/// The line of a step that publishes the verified commit a paused run held before its push.
pub fn held_published(commit: &str) -> String {
    format!("meta-agent: the verified commit {commit} held before its push is published\n")
}

/// Why a step stopped with an error (`error`, the error's own words), for the status comment
/// and the job summary.
pub fn step_failed(error: &str) -> String {
    format!("The step stopped with an error: {error}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{SummaryInput, job_summary};

    #[test]
    fn step_lines_as_the_log_shows_them() {
        let lines = [
            crate::job::report_group("meta-agent: committed c0ffee1 on meta-agent/fix-7"),
            finished_early(
                "ignored",
                "a maintainer stopped the bot on this issue (`/agent fix` starts it again)",
            ),
            already_committed("https://github.com/octo/calc/pull/8"),
            held_published("0123456789abcdef0123456789abcdef01234567"),
            step_failed("GitHub API: 502 Bad Gateway"),
        ];
        insta::assert_snapshot!("step_lines", lines.join("---\n"));
    }

    #[test]
    fn why_a_step_does_not_run_as_people_read_it() {
        let session = SessionLine {
            session: "a1b2c3d4e5-7f",
            branch: "meta-agent/fix-7",
            outcome: "escalated",
            stopped: true,
        };
        let lines = [
            stopped_here(ThreadKind::Issue),
            stopped_here(ThreadKind::PullRequest),
            stopped_by_maintainer().to_owned(),
            session_status(Some(&session)),
            session_status(Some(&SessionLine {
                stopped: false,
                ..session
            })),
            session_status(None),
            head_handled("b0f680389bdf", &session, "/agent"),
            never_pushed("a1b2c3d4e5-7f"),
        ];
        insta::assert_snapshot!("step_reasons", lines.join("\n"));
    }

    #[test]
    fn triggers_as_the_summary_names_them() {
        let lines = [
            TriggerLine::Issue { number: 7 },
            TriggerLine::Comment {
                verb: "fix",
                number: 12,
            },
            TriggerLine::ReviewComment {
                verb: "retry",
                pull: 8,
            },
            TriggerLine::FailedRun {
                run_id: 4242,
                workflow: "CI",
            },
            TriggerLine::Dispatch { issue: Some(7) },
            TriggerLine::Dispatch { issue: None },
        ];
        let mut text: Vec<String> = lines
            .iter()
            .map(|line| trigger(*line, Doing::Run))
            .collect();
        text.push(trigger(lines[1], Doing::Publishing));
        text.push(trigger(lines[0], Doing::PushingHeld));
        insta::assert_snapshot!("trigger_lines", text.join("\n"));
    }

    #[test]
    fn why_an_event_is_ignored_or_its_actor_refused() {
        let owned = |text: &str| text.to_owned();
        let reasons = [
            Ignored::OtherEvent {
                event: owned("push"),
            },
            Ignored::NoLabel {
                action: owned("opened"),
                label: owned("meta-agent"),
            },
            Ignored::CommentNotNew {
                on: CommentEvent::Issue,
                action: owned("edited"),
            },
            Ignored::CommentNotNew {
                on: CommentEvent::Review,
                action: owned("deleted"),
            },
            Ignored::UnknownCommand {
                word: owned("deploy"),
            },
            Ignored::NotACommand,
            Ignored::ReviewNotACommand,
            Ignored::RunNotFailed {
                action: owned("completed"),
                conclusion: Some(owned("success")),
            },
            Ignored::RunNotFailed {
                action: owned("requested"),
                conclusion: None,
            },
            Ignored::BotsOwnBranch {
                branch: owned("meta-agent/fix-7"),
            },
            Ignored::ForkRun {
                head: owned("mallory/calc"),
                home: owned("octo/calc"),
            },
            Ignored::NoActor,
            Ignored::PullRequestTarget,
            Ignored::PullRequestChecksOff,
            Ignored::OtherBranch {
                branch: owned("feature/x"),
                default: owned("main"),
            },
            Ignored::TheBotItself {
                login: owned("github-actions[bot]"),
            },
            Ignored::UnlistedBot {
                login: owned("dependabot[bot]"),
            },
        ];
        let mut lines: Vec<String> = reasons.iter().map(ignored).collect();
        lines.push(refused("alice", "read"));
        insta::assert_snapshot!("ignored_reasons", lines.join("\n"));
    }

    #[test]
    fn the_summary_notes_of_steps_that_ran_nothing() {
        let notes = [
            StepNote::PatchOffered,
            StepNote::HeldBeforePush,
            StepNote::PublishedAgain,
        ]
        .map(note);
        let input = SummaryInput {
            trigger: "issue #7",
            pull_url: None,
            isolation: NO_ISOLATION,
            note: Some(notes[2]),
        };
        insta::assert_snapshot!(
            "step_notes",
            format!("{}\n{}", notes.join("\n"), job_summary(None, &input))
        );
    }
}
