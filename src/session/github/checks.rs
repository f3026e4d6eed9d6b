//! A failing check on a same-repository pull request (`workflow_run` of its head, when the
//! Action's `pull-request-checks` says so): what the pull request's status comment already
//! records decides whether to run (a head handled already is not run twice, a head the author
//! moved starts afresh), the task is the failed run's digest with the pull request's description
//! and conversation as untrusted context, and a failure the repository's gates do not reproduce
//! on the head is reported as such (flaky, or the runner's infrastructure), with what the failed
//! run showed and what the gates showed here, after no model call.

use super::*;
use crate::github::provenance::{PullFacts, PushKind};
use crate::protocol::task::FailedRun;
use crate::render::status::NotReproduced;
use crate::render::step;
use crate::render::task as task_text;

/// The facts of the failed run a task heals.
pub(super) struct RunFacts<'a> {
    pub(super) id: u64,
    pub(super) workflow: &'a str,
    pub(super) head_sha: &'a str,
    /// The digest of its failed jobs (Markdown).
    pub(super) digest: String,
}

impl Step<'_> {
    /// Runs a failing check of a pull request unless its status comment says this head was
    /// handled already (or a maintainer stopped the bot there); a committed, stacked session of
    /// this head is published again, a paused one resumed.
    pub(super) async fn heal_check(
        &self,
        prepared: &Prepared,
        status: &mut Option<StatusComment>,
        record: Option<SessionRecord>,
    ) -> Result<Done, SessionError> {
        let Some(pull) = self.work()?.pull() else {
            return Err(SessionError::Internal(
                "a failing check without its pull request".into(),
            ));
        };
        let Some(record) = record else {
            return self.start(prepared, status, None).await;
        };
        if record.stopped {
            let reason = step::stopped_here(step::ThreadKind::PullRequest);
            return finish_early(self.actions, IGNORED, &reason);
        }
        let same_head = record
            .state
            .as_ref()
            .is_some_and(|state| state.base_commit == pull.head_sha);
        if !same_head {
            return self.start(prepared, status, None).await;
        }
        let stacked = matches!(self.work()?.push_kind(), Some(PushKind::Stacked { .. }));
        if record.outcome == "committed"
            && stacked
            && let Some(done) = self.republish(prepared, status, &record, false).await?
        {
            return Ok(done);
        }
        if record.outcome == "interrupted"
            && let Some(state) = record.state.clone()
        {
            return self
                .resume(prepared, status, state, Default::default())
                .await;
        }
        let reason = step::head_handled(
            super::origin::short(&pull.head_sha),
            &record.line(),
            &self.args.trigger_phrase,
        );
        tracing::info!("{reason}");
        finish_early(self.actions, IGNORED, &reason)
    }

    /// A failing check of `pull` as a task: the failed run's digest, the pull request's
    /// description and conversation (untrusted, fenced where they reach the model).
    pub(super) async fn check_task(
        &self,
        pull: &PullFacts,
        run: RunFacts<'_>,
    ) -> Result<Task, SessionError> {
        let repo = &self.actions.repository;
        let number = pull.number;
        let issue = self.api.issue(repo, number).await.map_err(internal)?;
        let comments = self.api.comments(repo, number).await.map_err(internal)?;
        let thread = thread::render(&thread::build(
            &comments,
            &thread::CommentFilter {
                until: None,
                trigger: None,
                bot_login: &self.args.bot_login,
            },
        ));
        let description = crate::protocol::untrusted::sanitize(&issue.body);
        let thread_of = task_text::Thread {
            number,
            title: &issue.title,
            description: &description,
        };
        let failed = task_text::FailedRun {
            id: run.id,
            workflow: run.workflow,
            head_sha: run.head_sha,
            digest: &run.digest,
        };
        let title = task_text::check_title(&thread_of, &failed);
        Ok(self.redacted(Task {
            title: title.chars().take(120).collect(),
            requirements: task_text::check_requirements(&thread_of, &failed, &pull.head_ref),
            acceptance: vec![task_text::acceptance(task_text::Accepted::PullChecks)],
            issue: None,
            source: self.pull_source(
                pull,
                Some(FailedRun {
                    id: run.id,
                    url: self.actions.workflow_run_url(run.id),
                    workflow: run.workflow.to_owned(),
                }),
            ),
            guidance: Vec::new(),
            thread,
            permissions: TaskPermissions::default(),
            script: Vec::new(),
        }))
    }

    /// What a failure that did not reproduce says: the failed run, what it showed, what the
    /// repository's gates showed on the same commit.
    pub(super) fn not_reproduced(&self, state: &LoopState) -> NotReproduced {
        let (run_url, workflow) = match &state.task.source {
            TaskSource::WorkflowRun { url, workflow, .. } => (url.clone(), workflow.clone()),
            TaskSource::PullRequest {
                failed_run: Some(run),
                ..
            } => (run.url.clone(), run.workflow.clone()),
            TaskSource::PullRequest {
                failed_run: None, ..
            }
            | TaskSource::File { .. }
            | TaskSource::Text
            | TaskSource::Issue { .. } => (String::new(), String::new()),
        };
        NotReproduced {
            run_url,
            workflow,
            commit: state.base_commit.clone(),
            seen: self.seen.get().cloned().unwrap_or_default(),
            summary: summary::markdown_result(state),
        }
    }
}
