//! The status comment of a `meta-agent github` step: finding it, the session record it (or the
//! bot's pull request) carries, writing it redacted, and the `status` and `stop` commands.

use super::*;
use crate::render::step;

impl Step<'_> {
    /// The status comment of the trigger's thread: its issue or pull request, or the pull
    /// request whose failing check it is.
    pub(super) fn status_comment(&self) -> Option<StatusComment> {
        let checked = || {
            self.work
                .get()
                .and_then(|work| work.pull())
                .map(|pull| pull.number)
        };
        self.trigger.thread().or_else(checked).map(|issue| {
            StatusComment::new(
                self.actions.repository.clone(),
                issue,
                self.args.bot_login.clone(),
            )
        })
    }

    /// The bot's saved session for this thread, if its own status comment carries one.
    pub(super) async fn saved_record(
        &self,
        status: &mut Option<StatusComment>,
    ) -> Result<Option<SessionRecord>, SessionError> {
        let Some(status) = status else {
            return Ok(None);
        };
        let existing = status.existing(self.api).await.map_err(internal)?;
        Ok(existing.and_then(|comment| SessionRecord::decode(&comment.body)))
    }

    /// The session recorded in the body of the bot's own pull request (a review comment on it
    /// resumes that session).
    pub(super) async fn pull_record(
        &self,
        pull: u64,
    ) -> Result<Option<SessionRecord>, SessionError> {
        let issue = self
            .api
            .issue(&self.actions.repository, pull)
            .await
            .map_err(internal)?;
        if !issue.user.login.eq_ignore_ascii_case(&self.args.bot_login) {
            tracing::warn!("pull request #{pull} is not the bot's own: its body is not trusted");
            return Ok(None);
        }
        Ok(SessionRecord::decode(&issue.body))
    }

    pub(super) fn footer(&self, record: Option<&SessionRecord>) -> Footer {
        Footer {
            phrase: self.args.trigger_phrase.clone(),
            run_url: self.actions.run_url(),
            record: record.map(SessionRecord::encode),
        }
    }

    /// Writes the status comment (redacted, neutralised); in a dry run, nothing.
    pub(super) async fn post_status(
        &self,
        status: &mut Option<StatusComment>,
        view: &View,
        record: Option<&SessionRecord>,
    ) -> Result<(), SessionError> {
        let Some(status) = status else {
            return Ok(());
        };
        if self.args.dry_run {
            return Ok(());
        }
        self.keep_token_fresh().await;
        let footer = self.footer(record);
        let visible = self.outbound(&status::render_visible(view, &footer));
        let body = status::with_record(
            self.fitted(&visible, footer.record.as_deref()),
            footer.record.as_deref(),
        );
        status.post(self.api, &body).await.map_err(internal)
    }

    /// An outbound body cut to what GitHub takes beside the `record` line that follows it.
    pub(super) fn fitted(&self, visible: &str, record: Option<&str>) -> String {
        let reserved = record.map_or(0, |record| record.chars().count() + 2);
        let whole = status::whole_text_at(self.actions.run_url().as_deref());
        crate::render::fit::fit(
            visible,
            crate::render::fit::MAX_BODY_CHARS.saturating_sub(reserved),
            crate::render::fit::Measure::Chars,
            &whole,
        )
        .text
    }

    pub(super) fn outbound(&self, text: &str) -> String {
        let host = host_of(&self.actions.server_url);
        outbound_markdown(&self.redactor, text, &[host, "github.com"])
    }

    pub(super) async fn report_status(
        &self,
        status: &mut Option<StatusComment>,
        record: Option<SessionRecord>,
    ) -> Result<Done, SessionError> {
        let summary = step::session_status(record.as_ref().map(SessionRecord::line).as_ref());
        self.post_status(
            status,
            &View::Status {
                summary: summary.clone(),
            },
            record.as_ref(),
        )
        .await?;
        finish_early(self.actions, "status", &summary)
    }

    pub(super) async fn stop(
        &self,
        status: &mut Option<StatusComment>,
        record: Option<SessionRecord>,
    ) -> Result<Done, SessionError> {
        let record = record.map(|record| SessionRecord {
            stopped: true,
            ..record
        });
        let by = self.trigger.actor().login.clone();
        self.post_status(status, &View::Stopped { by }, record.as_ref())
            .await?;
        finish_early(self.actions, "stopped", step::stopped_by_maintainer())
    }
}
