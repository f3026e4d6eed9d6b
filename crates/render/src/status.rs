//! The bot's status comment on an issue: the views a run goes through (working with its live
//! checklist, committed,
//! escalated with the escalation report, stopped, ...) and the footer every view carries (the
//! workflow run link, the hidden session record). Pure; `github::status` posts it.

use super::checklist::Checklist;
use super::fit::{self, Measure};
use super::words::plural;

/// The first line of the bot's status comment.
pub const MARKER: &str = "<!-- meta-agent:status -->";

/// What the comment says.
#[derive(Debug, Clone, PartialEq)]
pub enum View {
    /// Acknowledged, working.
    Working { trigger: String },
    /// Working: the live checklist of the steps so far.
    Progress {
        trigger: String,
        checklist: Checklist,
    },
    /// The run was interrupted (the job cancelled or timed out): the work is kept and pushed;
    /// `refused`: what the patch gate left out of it, with its reasons.
    Interrupted {
        why: String,
        branch: String,
        refused: Option<String>,
    },
    /// The run paused at a pause point a maintainer asked for (`pause:`): where and why, the
    /// plan and the steps so far, and how to go on; the work is kept and pushed.
    Paused {
        why: String,
        branch: String,
        /// The location, for `/agent step`.
        at: meta_agent_protocol::pause::Location,
        /// The plan and the steps so far (Markdown lines).
        plan: String,
        refused: Option<String>,
    },
    /// The run paused at `before_push`: its verified commit is held in the run's artifact, not
    /// pushed.
    Held(Held),
    /// Verified and committed; the pull request is open.
    Committed { pull_url: String, summary: String },
    /// Nothing to change: the gates already pass.
    NothingToDo { summary: String },
    /// Escalated: the report, and the pushed work-in-progress branch.
    Escalated { report: String, branch: String },
    /// A dry run ended (nothing pushed).
    DryRun { summary: String },
    /// The run could not go on (an error the maintainers should see).
    Failed { reason: String },
    /// `/agent stop`.
    Stopped { by: String },
    /// `/agent status`.
    Status { summary: String },
    /// A fork's pull request: the verified fix offered for the author to apply (nothing is
    /// pushed).
    PatchOffered(PatchOffered),
    /// A fork's pull request without a verified fix (escalated, or the job stopped): nothing is
    /// pushed, nothing kept to resume from.
    PatchNotOffered { why: NoPatch, report: String },
    /// A failed run that the gates do not reproduce on the same commit: nothing changed.
    NotReproduced(NotReproduced),
    /// A verified fix pushed onto the pull request's own branch (no pull request opened).
    PushedToHead(PushedToHead),
    /// A verified fix not pushed because the pull request's branch moved meanwhile.
    HeadMoved(HeadMoved),
}

/// Why a fork's pull request is offered no patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoPatch {
    /// The run escalated: the gates did not pass within its budget.
    Escalated,
    /// The run stopped, for the reason it recorded (if any).
    Stopped { interrupted: Option<String> },
}

/// Why no patch is offered (no trailing period).
pub fn no_patch(why: &NoPatch) -> String {
    match why {
        NoPatch::Escalated => "The gates did not pass within this run's budget".to_owned(),
        NoPatch::Stopped { interrupted } => format!(
            "The run stopped ({})",
            interrupted.as_deref().unwrap_or("interrupted")
        ),
    }
}

pub use super::checks::{HeadMoved, NotReproduced, PushedToHead};

/// What the status comment of a fork's pull request says about the fix offered.
#[derive(Debug, Clone, PartialEq)]
pub struct PatchOffered {
    /// The repository the pull request's code comes from.
    pub head_repo: String,
    /// The fix as a unified diff (also `fix.patch` in the run's files); `None` when it cannot
    /// be shown here exactly as it is.
    pub patch: Option<String>,
    /// Suggestions posted in a review the author can commit from, and where.
    pub suggestions: Option<Suggested>,
    /// The run's result (gates, iterations).
    pub summary: String,
}

/// A verified commit held before its push (`before_push`).
#[derive(Debug, Clone, PartialEq)]
pub struct Held {
    /// Where and why the run paused.
    pub why: String,
    pub commit: String,
    /// The session's branch, as the bundle names it.
    pub branch: String,
    /// The branch it would be pushed to (the session's, or a pull request's own).
    pub target: String,
    /// The run's artifact holding it, and the bundle's name there.
    pub artifact: String,
    pub bundle: String,
    /// The run's result (gates, iterations).
    pub summary: String,
}

/// The review that carries suggestions.
#[derive(Debug, Clone, PartialEq)]
pub struct Suggested {
    pub count: usize,
    /// How many separate changes the whole fix makes.
    pub of: usize,
}

/// The longest patch shown in a status comment, in characters (a longer one is only in the
/// run's files).
pub const MAX_SHOWN_PATCH_CHARS: usize = 30_000;

/// What every status comment shows besides its view.
#[derive(Debug, Clone, Default)]
pub struct Footer {
    pub phrase: String,
    /// Link to the workflow run.
    pub run_url: Option<String>,
    /// The hidden session record line.
    pub record: Option<String>,
}

/// A held commit: where it is, how to look at it, how to go on.
fn held_text(held: &Held, phrase: &str) -> String {
    let Held {
        why,
        commit,
        branch,
        target,
        artifact,
        bundle,
        summary,
    } = held;
    let short: String = commit.chars().take(12).collect();
    format!(
        "### meta-agent paused before its push: {why}\n\nThe gates passed and the change is \
         committed as `{short}`, but nothing is pushed: the commit is held in this run's \
         artifact `{artifact}` as `{bundle}` (with the run's context, `context.json`). To look at \
         it, download the artifact and run `git fetch {bundle} refs/heads/{branch}` then `git \
         show FETCH_HEAD`.\n\n{summary}\n\nReply `{phrase} continue` to push it to `{target}` \
         as it is (guidance given here is not used: the commit was verified as it is; ask for \
         changes on the pull request), or `{phrase} stop` to leave it unpublished.\n"
    )
}

/// What a view says, without the marker and the footer.
fn view_text(view: &View, phrase: &str) -> String {
    let mut out = String::new();
    match view {
        View::Working { trigger } => {
            out.push_str(&format!(
                "### meta-agent is working\n\nStarted by {trigger}. This comment is updated as the run goes.\n"
            ));
        }
        View::Progress { trigger, checklist } => {
            out.push_str(&format!(
                "### meta-agent is working\n\nStarted by {trigger}. This comment is updated as the run goes.\n\n{}",
                checklist.to_markdown()
            ));
        }
        View::Interrupted {
            why,
            branch,
            refused,
        } => {
            out.push_str(&format!(
                "### meta-agent stopped: {why}; `{phrase} fix` continues\n\nThe work so far is kept on \
                 `{branch}` and the session is recorded below: reply `{phrase} fix` (with guidance if you \
                 like) to continue from there.\n"
            ));
            if let Some(note) = refused {
                out.push_str(&format!(
                    "\n#### Left out of the work kept\n\n{}\n",
                    note.trim()
                ));
            }
        }
        View::Paused {
            why,
            branch,
            at,
            plan,
            refused,
        } => {
            out.push_str(&format!(
                "### meta-agent paused: {why}\n\nThe run stopped at a pause point of this \
                 repository's configuration. The work so far is kept on `{branch}` and the session \
                 is recorded below; the run's context here (the model, the messages as sent, the \
                 pending tool call, the gates) is `context.json` in the run's artifact.\n\n\
                 #### Plan and progress\n\n{plan}\n\nReply `{phrase} continue` (with guidance on \
                 the same line or below if you like: it reaches the next prompt) to go on, `{phrase} \
                 step` to go on to the next `{}`, or `{phrase} stop`.\n",
                at.as_str()
            ));
            if let Some(note) = refused {
                out.push_str(&format!(
                    "\n#### Left out of the work kept\n\n{}\n",
                    note.trim()
                ));
            }
        }
        View::Held(held) => out.push_str(&held_text(held, phrase)),
        View::Committed { pull_url, summary } => {
            out.push_str(&format!(
                "### meta-agent: gates pass, pull request ready\n\n{pull_url}\n\n{summary}\n"
            ));
        }
        View::NothingToDo { summary } => {
            out.push_str(&format!(
                "### meta-agent: nothing to change\n\nThe gates already pass.\n\n{summary}\n"
            ));
        }
        View::Escalated { report, branch } => {
            out.push_str(&format!(
                "### meta-agent needs a maintainer\n\n**How to answer:** reply `{phrase} fix <guidance>` to resume \
                 this session with your guidance (it goes into the next plan; the work in progress on `{branch}` is \
                 kept), `{phrase} retry` to start over from the issue, or `{phrase} stop`.\n\n{report}\n"
            ));
        }
        View::DryRun { summary } => {
            out.push_str(&format!(
                "### meta-agent (dry run: nothing pushed)\n\n{summary}\n"
            ));
        }
        View::Failed { reason } => {
            out.push_str(&format!(
                "### meta-agent could not finish\n\n{reason}\n\nReply `{phrase} retry` to run again.\n"
            ));
        }
        View::Stopped { by } => {
            out.push_str(&format!(
                "### meta-agent stopped\n\nStopped by @{by}. Reply `{phrase} fix` to start again.\n"
            ));
        }
        View::Status { summary } => {
            out.push_str(&format!("### meta-agent status\n\n{summary}\n"));
        }
        View::PatchOffered(offered) => out.push_str(&patch_offered(offered)),
        View::NotReproduced(view) => out.push_str(&super::checks::not_reproduced(view, phrase)),
        View::PushedToHead(view) => out.push_str(&super::checks::pushed_to_head(view)),
        View::HeadMoved(view) => out.push_str(&super::checks::head_moved(view, phrase)),
        View::PatchNotOffered { why, report } => {
            out.push_str(&format!(
                "### meta-agent found no verified fix\n\n{}. Nothing is pushed for a pull \
                 request from a fork. Reply `{phrase} fix <guidance>` to try again with your \
                 guidance.\n\n{report}\n",
                no_patch(why)
            ));
        }
    }
    out
}

/// The view of a fix offered to a fork's pull request.
fn patch_offered(offered: &PatchOffered) -> String {
    let mut out = format!(
        "### meta-agent: a verified fix for this pull request\n\nThe repository's gates pass on \
         this pull request's head with the fix below applied (verified on a fresh checkout). The \
         pull request comes from `{}`, so meta-agent pushes nothing: the fix is yours to take.\n\n",
        offered.head_repo
    );
    match &offered.suggestions {
        Some(Suggested { count, of }) if count == of => out.push_str(&format!(
            "- **In one click:** the review below holds the whole fix as {count} suggestion{}: \
             *Commit suggestion* (or add them to a batch).\n",
            plural(*count as u64)
        )),
        Some(Suggested { count, of }) => out.push_str(&format!(
            "- **In one click, in part:** the review below holds {count} of the fix's {of} \
             changes as suggestions; the others lie outside this pull request's own lines, so \
             take the whole patch.\n"
        )),
        None => {}
    }
    out.push_str(
        "- **As a patch:** save the diff as `fix.patch` (it is also `fix.patch` in the run's \
         files), then on the pull request's branch run `git apply fix.patch`, commit and push.\n\n",
    );
    match offered.patch.as_deref().and_then(fenced_diff) {
        Some(block) => out.push_str(&format!(
            "<details><summary>The fix</summary>\n\n{block}\n</details>\n\n"
        )),
        None => out.push_str(
            "The fix is too long to show here, or holds text this comment cannot carry \
             unchanged: it is `fix.patch` in the run's files.\n\n",
        ),
    }
    out.push_str(&offered.summary);
    out.push('\n');
    out
}

/// `patch` in a `diff` code block whose fence no line of it can close; `None` past
/// [`MAX_SHOWN_PATCH_CHARS`].
pub fn fenced_diff(patch: &str) -> Option<String> {
    if patch.chars().count() > MAX_SHOWN_PATCH_CHARS {
        return None;
    }
    let fence = fence_for(patch);
    let body = patch.strip_suffix('\n').unwrap_or(patch);
    Some(format!("{fence}diff\n{body}\n{fence}"))
}

/// A backtick fence longer than any run of backticks in `text` (at least three).
pub fn fence_for(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

/// The comment's visible part (everything but the hidden session record), within what GitHub
/// takes once the record is added: a view too long is cut (fences closed, the rest counted)
/// and points at the run's artifact, where the whole report is.
pub fn render_visible(view: &View, footer: &Footer) -> String {
    let mut tail = String::new();
    if let Some(url) = &footer.run_url {
        tail.push_str(&format!(
            "\n<sub>[workflow run]({url}) · [the run's files (report, trace, audit log)]({url}#artifacts)</sub>\n"
        ));
    }
    let head = format!("{MARKER}\n");
    let reserved = head.chars().count()
        + tail.chars().count()
        + footer
            .record
            .as_ref()
            .map_or(0, |record| record.chars().count() + 2);
    let text = view_text(view, &footer.phrase);
    let fitted = fit::fit(
        &text,
        fit::MAX_BODY_CHARS.saturating_sub(reserved),
        Measure::Chars,
        &whole_text_at(footer.run_url.as_deref()),
    );
    format!("{head}{}{tail}", fitted.text)
}

/// The comment's body: the visible part and the hidden session record.
pub fn render(view: &View, footer: &Footer) -> String {
    with_record(render_visible(view, footer), footer.record.as_deref())
}

/// A visible body with the session record line appended.
pub fn with_record(mut visible: String, record: Option<&str>) -> String {
    if let Some(record) = record {
        visible.push('\n');
        visible.push_str(record);
        visible.push('\n');
    }
    visible
}

/// Where the whole text of a cut comment is.
pub fn whole_text_at(run_url: Option<&str>) -> String {
    match run_url {
        Some(url) => {
            format!("the whole report is `report.md` in [the run's files]({url}#artifacts)")
        }
        None => "the whole report is `report.md` in the session's directory".to_owned(),
    }
}
