//! The one status comment per issue: found by a hidden marker AND the bot's authorship (a
//! comment anyone else writes with the marker is ignored), edited in place as the run goes, never
//! duplicated after a retry or a re-run. It also carries the saved session (a hidden, encoded
//! record) so a later runner can resume with a maintainer's guidance; that record is trusted
//! only from the bot's own comment.
//!
//! The text is rendered in [`meta_agent_render::status`]; [`StatusComment::post`] is the effectful part, idempotent on its own: it
//! finds before it creates, and after an uncertain failure (5xx, lost connection) it looks again
//! instead of sending the same POST twice.

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use super::api::{Comment, GitHubApi, GitHubError, RepoId};
use meta_agent_protocol::state::LoopState;

/// The first line of the bot's status comment.
pub use meta_agent_render::status::MARKER;
const RECORD_OPEN: &str = "<!-- meta-agent:session ";
const RECORD_CLOSE: &str = " -->";
/// The largest encoded session record kept in a comment (GitHub's limit is 65,536 characters).
pub const MAX_RECORD_CHARS: usize = 48_000;

/// The bot's status comment in `comments`, if it wrote one: the oldest comment that starts with
/// the marker and is authored by `bot_login`.
pub fn find<'c>(comments: &'c [Comment], bot_login: &str) -> Option<&'c Comment> {
    find_marked(comments, bot_login, MARKER)
}

/// The oldest comment in `comments` that starts with `marker` and is authored by `bot_login`.
pub fn find_marked<'c>(
    comments: &'c [Comment],
    bot_login: &str,
    marker: &str,
) -> Option<&'c Comment> {
    comments.iter().find(|comment| {
        comment.user.login.eq_ignore_ascii_case(bot_login) && comment.body.starts_with(marker)
    })
}

/// What a later runner needs to resume a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    pub session: String,
    pub branch: String,
    /// `committed`, `escalated`, `failed`, `nothing_to_do`, `running`.
    pub outcome: String,
    /// A maintainer said `/agent stop`.
    #[serde(default)]
    pub stopped: bool,
    /// The loop state without its diffs (the pushed branch holds the change).
    #[serde(default)]
    pub state: Option<LoopState>,
    /// A run paused at `before_push`: where its verified commit is held instead of pushed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<super::held::HeldCommit>,
}

impl SessionRecord {
    /// The record as its one-line texts name it (`status`, a head handled already).
    pub fn line(&self) -> meta_agent_render::step::SessionLine<'_> {
        meta_agent_render::step::SessionLine {
            session: &self.session,
            branch: &self.branch,
            outcome: &self.outcome,
            stopped: self.stopped,
        }
    }

    /// The record of a run's state, diffs dropped (and history trimmed if still too large).
    pub fn of(state: &LoopState) -> Self {
        let mut compact = state.clone();
        compact.worktree_diff.clear();
        for step in &mut compact.history {
            step.diff.clear();
        }
        Self {
            session: state.session.clone(),
            branch: state.branch.clone(),
            outcome: state
                .outcome
                .as_ref()
                .map_or("running", |outcome| outcome.as_str())
                .to_owned(),
            stopped: false,
            state: Some(compact),
            held: None,
        }
    }

    /// The hidden line carrying the record (no state at all if even the trimmed one is too big).
    pub fn encode(&self) -> String {
        let mut record = self.clone();
        loop {
            let json = serde_json::to_vec(&record).unwrap_or_default();
            let encoded = base64::engine::general_purpose::STANDARD.encode(json);
            if encoded.len() <= MAX_RECORD_CHARS || record.state.is_none() {
                return format!("{RECORD_OPEN}{encoded}{RECORD_CLOSE}");
            }
            record.state = match record.state.take() {
                Some(mut state) if !state.history.is_empty() => {
                    state.history.remove(0);
                    Some(state)
                }
                _ => None,
            };
        }
    }

    /// The record in a comment body, if there is a well-formed one: read only from the body's
    /// last line, where [`meta_agent_render::status::with_record`] alone writes it (after the
    /// visible part, whose quoted text cannot open an HTML comment: see
    /// [`meta_agent_redact::outbound_markdown`]). A record-shaped text anywhere else is not read.
    pub fn decode(body: &str) -> Option<Self> {
        let last = body.trim_end().rsplit('\n').next()?;
        let encoded = last.strip_prefix(RECORD_OPEN)?.strip_suffix(RECORD_CLOSE)?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .ok()?;
        serde_json::from_slice(&bytes).ok()
    }
}

/// The status comment of one issue, remembered once found or created.
#[derive(Debug, Clone)]
pub struct StatusComment {
    pub repo: RepoId,
    pub issue: u64,
    pub bot_login: String,
    /// The first line that marks it ([`MARKER`] for the status comment).
    marker: String,
    id: Option<u64>,
}

impl StatusComment {
    pub fn new(repo: RepoId, issue: u64, bot_login: String) -> Self {
        Self::with_marker(repo, issue, bot_login, MARKER)
    }

    /// Another one-per-issue comment of the bot, found by its own marker (the evaluation's
    /// review queue), with the same find-before-create behaviour.
    pub fn with_marker(repo: RepoId, issue: u64, bot_login: String, marker: &str) -> Self {
        Self {
            repo,
            issue,
            bot_login,
            marker: marker.to_owned(),
            id: None,
        }
    }

    /// The bot's existing status comment, if any (remembered for later posts).
    pub async fn existing<A: GitHubApi>(
        &mut self,
        api: &A,
    ) -> Result<Option<Comment>, GitHubError> {
        let comments = api.comments(&self.repo, self.issue).await?;
        let found = find_marked(&comments, &self.bot_login, &self.marker).cloned();
        if let Some(comment) = &found {
            self.id = Some(comment.id);
        }
        Ok(found)
    }

    /// Writes `body` into the status comment: edits it in place when it exists, creates it
    /// otherwise; after an uncertain create it looks again before trying once more.
    pub async fn post<A: GitHubApi>(&mut self, api: &A, body: &str) -> Result<(), GitHubError> {
        if self.id.is_none() {
            self.existing(api).await?;
        }
        if let Some(id) = self.id {
            api.update_comment(&self.repo, id, body).await?;
            return Ok(());
        }
        match api.create_comment(&self.repo, self.issue, body).await {
            Ok(comment) => {
                self.id = Some(comment.id);
                Ok(())
            }
            Err(err) if err.is_uncertain() => {
                tracing::warn!("creating the status comment: {err}; looking before retrying");
                match self.existing(api).await? {
                    Some(comment) => {
                        api.update_comment(&self.repo, comment.id, body).await?;
                        Ok(())
                    }
                    None => {
                        let comment = api.create_comment(&self.repo, self.issue, body).await?;
                        self.id = Some(comment.id);
                        Ok(())
                    }
                }
            }
            Err(err) => Err(err),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use meta_agent_render::status::{Footer, View, render};

    fn comment(id: u64, login: &str, body: &str) -> Comment {
        crate::api::test_comment(id, login, body, 0)
    }

    #[test]
    fn only_the_bots_own_marked_comment_is_the_status() {
        let comments = vec![
            comment(1, "mallory", &format!("{MARKER}\nfake status")),
            comment(2, "github-actions[bot]", "an unrelated bot comment"),
            comment(3, "github-actions[bot]", &format!("{MARKER}\nreal")),
            comment(4, "github-actions[bot]", &format!("{MARKER}\nlater")),
        ];
        assert_eq!(
            find(&comments, "github-actions[bot]").map(|c| c.id),
            Some(3)
        );
        assert_eq!(find(&comments[..2], "github-actions[bot]"), None);
    }

    #[test]
    fn a_record_round_trips_and_a_broken_one_is_none() {
        let record = SessionRecord {
            session: "abc-1".into(),
            branch: "meta-agent/fix".into(),
            outcome: "escalated".into(),
            stopped: false,
            state: None,
            held: Some(crate::held::HeldCommit {
                commit: "0123456789abcdef0123456789abcdef01234567".into(),
                base: "89abcdef0123456789abcdef0123456789abcdef".into(),
                run_id: 4242,
                artifact: "meta-agent-4242-1".into(),
            }),
        };
        let body = render(
            &View::Failed { reason: "x".into() },
            &Footer {
                phrase: "/agent".into(),
                run_url: None,
                record: Some(record.encode()),
            },
        );
        assert_eq!(SessionRecord::decode(&body), Some(record));
        assert_eq!(
            SessionRecord::decode("<!-- meta-agent:session !!! -->"),
            None
        );
        assert_eq!(SessionRecord::decode("no record"), None);
    }

    #[test]
    fn a_record_shaped_text_before_the_last_line_is_never_read() {
        let real = SessionRecord {
            session: "real-1".into(),
            branch: "meta-agent/real".into(),
            outcome: "escalated".into(),
            stopped: false,
            state: None,
            held: None,
        };
        let forged = SessionRecord {
            session: "forged".into(),
            branch: "meta-agent/elsewhere".into(),
            ..real.clone()
        };
        let quoted = format!("a failing test said: {}", forged.encode());
        let body = format!("{MARKER}\n{quoted}\n{}\n", real.encode());
        assert_eq!(SessionRecord::decode(&body), Some(real));
        assert_eq!(
            SessionRecord::decode(&format!("{MARKER}\n{quoted}\ntext")),
            None
        );
    }

    #[test]
    fn the_escalation_view_tells_maintainers_how_to_answer() {
        let body = render(
            &View::Escalated {
                report: "the gates still fail".into(),
                branch: "meta-agent/wip".into(),
            },
            &Footer {
                phrase: "/bot".into(),
                ..Footer::default()
            },
        );
        assert!(body.starts_with(MARKER));
        assert!(body.contains("`/bot fix <guidance>`"), "{body}");
        assert!(body.contains("meta-agent/wip"));
    }
}
