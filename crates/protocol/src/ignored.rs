//! Why the GitHub step does nothing with an event: the trigger's classification and the actor's
//! screening decide it in the GitHub layer, render words it for the step's log and its output.

/// Where a comment that is not new was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommentEvent {
    /// `issue_comment`: an issue's or a pull request's conversation.
    Issue,
    /// `pull_request_review_comment`: a review of a pull request.
    Review,
}

/// Why an event is ignored (the step ends without a run, and says nothing on GitHub).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ignored {
    /// An event meta-agent does not handle.
    OtherEvent { event: String },
    /// An `issues` event (`action`) without the bot's label.
    NoLabel { action: String, label: String },
    /// A comment edited or deleted (`action`), not created.
    CommentNotNew { on: CommentEvent, action: String },
    /// A comment with the phrase and a word that is no command.
    UnknownCommand { word: String },
    /// A conversation comment that is no command.
    NotACommand,
    /// A review comment that is no command.
    ReviewNotACommand,
    /// A workflow run that did not complete with a failure.
    RunNotFailed {
        action: String,
        conclusion: Option<String>,
    },
    /// A failed run on one of the bot's own branches.
    BotsOwnBranch { branch: String },
    /// A failed run whose code comes from another repository (`head`) than this one (`home`).
    ForkRun { head: String, home: String },
    /// A failed run that names no actor.
    NoActor,
    /// A failed run started by `pull_request_target`.
    PullRequestTarget,
    /// A failed run started by `pull_request`, with `pull-request-checks` off.
    PullRequestChecksOff,
    /// A failed run on a branch other than the default one that is no pull request's to heal.
    OtherBranch { branch: String, default: String },
    /// The actor is the bot itself.
    TheBotItself { login: String },
    /// The actor is a bot that `allow-bots` does not list.
    UnlistedBot { login: String },
}
