//! What the bot may not publish on a pull request, and why: the reasons the GitHub layer's
//! provenance decision gives (a failing check left alone, a push onto the pull request's branch
//! refused in favour of a stacked pull request), kept typed so that render words them.

/// Why the bot does nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Declined {
    /// The pull request is closed (or merged).
    Closed { pull: u64 },
    /// A failing check of a draft pull request (the policy leaves drafts to their authors).
    Draft { pull: u64 },
    /// A failing check of a pull request whose head branch the policy excludes.
    Excluded {
        pull: u64,
        branch: String,
        glob: String,
    },
    /// A failing check of a fork's pull request: its code is never run next to the token; a
    /// maintainer's `/agent fix` offers a patch instead.
    Fork { pull: u64 },
    /// A failing check of the bot's own pull request (no self-healing loops).
    BotsOwn { pull: u64 },
    /// The pull request's head moved since the failed run: the new head's checks decide.
    HeadMoved {
        pull: u64,
        run: String,
        head: String,
    },
    /// A failed run of a branch that no open pull request has as its head.
    NoPullRequest { branch: String },
}

/// Why a fix the policy would push onto a pull request's branch goes to a stacked pull request
/// instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeadRefusal {
    /// GitHub protects the branch: only its rules may move it.
    Protected,
    /// The branch is the repository's default branch.
    DefaultBranch,
    /// The branch lives in another repository whose author did not allow maintainers' edits.
    NoMaintainerEdits,
}
