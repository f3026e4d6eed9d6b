//! The bot's status comment on an issue: the views a run goes through (working, committed,
//! escalated with the escalation report, stopped, ...) and the footer every view carries (the
//! workflow run link, the hidden session record). Pure; `github::status` posts it.

/// The first line of the bot's status comment.
pub const MARKER: &str = "<!-- meta-agent:status -->";

/// What the comment says.
#[derive(Debug, Clone, PartialEq)]
pub enum View {
    /// Acknowledged, working.
    Working { trigger: String },
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
}

/// What every status comment shows besides its view.
#[derive(Debug, Clone, Default)]
pub struct Footer {
    pub phrase: String,
    /// Link to the workflow run.
    pub run_url: Option<String>,
    /// The hidden session record line.
    pub record: Option<String>,
}

/// The comment's body.
pub fn render(view: &View, footer: &Footer) -> String {
    let phrase = &footer.phrase;
    let mut out = format!("{MARKER}\n");
    match view {
        View::Working { trigger } => {
            out.push_str(&format!(
                "### meta-agent is working\n\nStarted by {trigger}. This comment is updated as the run goes.\n"
            ));
        }
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
    }
    if let Some(url) = &footer.run_url {
        out.push_str(&format!("\n<sub>[workflow run]({url})</sub>\n"));
    }
    if let Some(record) = &footer.record {
        out.push('\n');
        out.push_str(record);
        out.push('\n');
    }
    out
}
