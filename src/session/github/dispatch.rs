//! What a `meta-agent github` step runs: the command dispatched against the recorded session,
//! the task built from the issue, the pull request, its thread or a failed run, and a new or
//! resumed engine run. A fork's pull request always starts afresh (nothing of it is ever pushed,
//! so there is no branch to resume or publish again).

use super::*;
use crate::github::provenance::{Publish, PullFacts, PushKind};
use crate::render::step;
use crate::render::step::StepNote;
use crate::render::task::{self as task_text, Accepted};
use crate::session::builder::{KeyNeed, builder_for};
use crate::session::run::Begin;

impl Step<'_> {
    pub(super) async fn dispatch(&self, prepared: &Prepared) -> Result<Done, SessionError> {
        let mut status = self.status_comment();
        let bots_own = self.bots_own_pull()?;
        let record = match (self.saved_record(&mut status).await?, bots_own) {
            (None, Some(pull)) => self.pull_record(pull).await?,
            (record, _) => record,
        };
        let command = match &self.trigger {
            Trigger::Comment { command, .. } | Trigger::ReviewComment { command, .. } => {
                Some(command.clone())
            }
            _ => None,
        };
        match command {
            Some(Command::Status) => return self.report_status(&mut status, record).await,
            Some(Command::Stop) => return self.stop(&mut status, record).await,
            _ => {}
        }
        if let Some(record) = &record
            && let Some(held) = &record.held
            && record.outcome == "interrupted"
            && !matches!(command, Some(Command::Retry))
            && !(record.stopped && command.is_none())
        {
            return self.release(prepared, &mut status, record, held).await;
        }
        let guidance = match (&command, &self.trigger) {
            (Some(Command::Fix { guidance, .. } | Command::Continue { guidance, .. }), _) => {
                guidance.clone()
            }
            (_, Trigger::Dispatch { guidance, .. }) => guidance.clone(),
            _ => None,
        };
        if self.patch_offer().is_some() {
            let guidance = self.review_guidance(guidance);
            return self.start(prepared, &mut status, guidance).await;
        }
        if self.work()?.failing_check() {
            return self.heal_check(prepared, &mut status, record).await;
        }
        if let Some(record) = &record {
            if record.stopped && command.is_none() {
                let reason = step::stopped_here(step::ThreadKind::Issue);
                return finish_early(self.actions, IGNORED, &reason);
            }
            let fresh_request =
                matches!(command, Some(Command::Retry)) || guidance.is_some() || bots_own.is_some();
            if let Some(done) = self
                .republish(prepared, &mut status, record, fresh_request)
                .await?
            {
                return Ok(done);
            }
        }
        // A paused session continues on any new request but `retry` (which starts over).
        let resumable = record.as_ref().filter(|record| {
            bots_own.is_some()
                || (guidance.is_some() && record.outcome == "escalated")
                || (record.outcome == "interrupted" && !matches!(command, Some(Command::Retry)))
        });
        match resumable.and_then(|record| record.state.clone()) {
            Some(state) => {
                let options = crate::engine::run::ResumeOptions {
                    guidance: self.review_guidance(guidance),
                    step: matches!(command, Some(Command::Continue { step: true, .. })),
                };
                self.resume(prepared, &mut status, state, options).await
            }
            None => {
                let guidance = self.review_guidance(guidance);
                self.start(prepared, &mut status, guidance).await
            }
        }
    }

    /// The bot's own pull request the trigger is about, if it is one (its session continues).
    fn bots_own_pull(&self) -> Result<Option<u64>, SessionError> {
        Ok(match self.work()?.publish {
            Publish::Branch(ref plan) => match plan.kind {
                PushKind::BotsOwnPull { pull } => Some(pull),
                PushKind::DefaultBranch
                | PushKind::Stacked { .. }
                | PushKind::HeadBranch { .. } => None,
            },
            Publish::Patch(_) | Publish::Decline(_) => None,
        })
    }

    /// A review comment's guidance names where it was left.
    fn review_guidance(&self, guidance: Option<String>) -> Option<String> {
        let Trigger::ReviewComment { location, .. } = &self.trigger else {
            return guidance;
        };
        Some(task_text::review_guidance(location, guidance.as_deref()))
    }

    /// A session already committed and pushed for this thread, asked again without new
    /// guidance (the same event twice, a re-run, a kill between push and pull request): publish
    /// it again instead of running twice.
    pub(super) async fn republish(
        &self,
        prepared: &Prepared,
        status: &mut Option<StatusComment>,
        record: &SessionRecord,
        fresh_request: bool,
    ) -> Result<Option<Done>, SessionError> {
        let onto_head = matches!(self.work()?.push_kind(), Some(PushKind::HeadBranch { .. }));
        if record.outcome != "committed" || fresh_request || self.args.dry_run || onto_head {
            // A fix pushed onto a pull request's branch is on its head now: a new run starts
            // from there.
            return Ok(None);
        }
        let Some(state) = &record.state else {
            return Ok(None);
        };
        let repo = run::open_repo(&prepared.repo)?;
        if !super::publish::on_remote(self, prepared, &repo, state).await {
            let local = repo.message(&state.branch).is_ok_and(|message| {
                crate::protocol::trailer::carries_session(&message, &state.session)
            });
            if !local {
                // Killed before its push on a runner that is gone: nothing of it was published.
                tracing::warn!("{}", step::never_pushed(&state.session));
                return Ok(None);
            }
            // Killed before its push on this runner: the push is made now, once.
            self.push_branch(prepared, &repo, state).await?;
        }
        let base = self.push_plan()?.pull_into.clone();
        // A failure here ends the step with the error (the record is kept for the next try):
        // running afresh would make a second branch and a second pull request.
        let pull = self
            .open_or_reuse_pull(state, &base, None)
            .await
            .map_err(internal)?;
        self.post_status(
            status,
            &View::Committed {
                pull_url: pull.clone(),
                summary: summary::markdown_result(state),
            },
            Some(record),
        )
        .await?;
        let input = SummaryInput {
            trigger: &self.trigger.describe(),
            pull_url: Some(&pull),
            isolation: step::NO_ISOLATION,
            note: Some(step::note(StepNote::PublishedAgain)),
        };
        write_step_files(
            self.actions,
            &self.outbound(&summary::job_summary(Some(state), &input)),
            &super::publish::outputs(state, Some(&pull), "committed"),
        )?;
        Ok(Some(Done {
            stdout: step::already_committed(&pull),
            outcome: Outcome::Success,
        }))
    }

    /// The task for a new session.
    pub(super) async fn task(&self, guidance: Option<String>) -> Result<Task, SessionError> {
        let mut permissions = TaskPermissions::default();
        let (number, title, body, until, trigger_comment) = match &self.trigger {
            Trigger::Issue { issue, .. } => {
                permissions.allow_test_edits = labelled_to_allow_test_edits(issue);
                (
                    issue.number,
                    issue.title.clone(),
                    issue.body.clone(),
                    None,
                    None,
                )
            }
            Trigger::Comment {
                issue,
                created_at,
                comment_id,
                command,
                ..
            } => {
                let flag = matches!(
                    command,
                    Command::Fix {
                        allow_test_edits: true,
                        ..
                    }
                );
                permissions.allow_test_edits = flag || labelled_to_allow_test_edits(issue);
                (
                    issue.number,
                    issue.title.clone(),
                    issue.body.clone(),
                    Some(created_at.clone()),
                    Some(*comment_id),
                )
            }
            Trigger::Dispatch {
                issue: Some(number),
                ..
            } => {
                let issue = self
                    .api
                    .issue(&self.actions.repository, *number)
                    .await
                    .map_err(internal)?;
                permissions.allow_test_edits = labelled_to_allow_test_edits(&issue);
                (issue.number, issue.title, issue.body, None, None)
            }
            Trigger::FailedRun { .. } => return self.failed_run_task().await,
            Trigger::Dispatch { issue: None, .. } => {
                return Err(SessionError::Usage(
                    "nothing to work on: give the dispatch an `issue` input".into(),
                ));
            }
            Trigger::ReviewComment {
                pull,
                created_at,
                comment_id,
                command,
                ..
            } => {
                if self.bots_own_pull()?.is_some() {
                    return Err(SessionError::Usage(format!(
                        "pull request #{pull} carries no session of the bot to continue"
                    )));
                }
                let issue = self
                    .api
                    .issue(&self.actions.repository, *pull)
                    .await
                    .map_err(internal)?;
                permissions.allow_test_edits = matches!(
                    command,
                    Command::Fix {
                        allow_test_edits: true,
                        ..
                    }
                );
                (
                    issue.number,
                    issue.title,
                    issue.body,
                    Some(created_at.clone()),
                    Some(*comment_id),
                )
            }
        };
        let comments = self
            .api
            .comments(&self.actions.repository, number)
            .await
            .map_err(internal)?;
        let conversation = thread::render(&thread::build(
            &comments,
            &thread::CommentFilter {
                until: until.as_deref(),
                trigger: trigger_comment,
                bot_login: &self.args.bot_login,
            },
        ));
        let sanitize = crate::protocol::untrusted::sanitize;
        let guidance = guidance.iter().map(|text| sanitize(text)).collect();
        let own_pull = self.bots_own_pull()?.is_some();
        if let Some(pull) = self.work()?.pull().filter(|_| !own_pull) {
            let text = PullText {
                title: &title,
                body: &body,
            };
            return Ok(self.redacted(self.pull_task(
                pull,
                text,
                guidance,
                conversation,
                permissions,
            )));
        }
        Ok(self.redacted(Task {
            title: title.chars().take(120).collect(),
            requirements: task_text::issue_requirements(&task_text::Thread {
                number,
                title: &title,
                description: &sanitize(&body),
            }),
            acceptance: Vec::new(),
            issue: Some(number),
            source: TaskSource::Issue {
                number,
                url: self.actions.issue_url(number),
            },
            guidance,
            thread: conversation,
            permissions,
            script: Vec::new(),
        }))
    }

    /// A pull request as a task: its head made to pass the gates, its description and
    /// conversation as untrusted context.
    fn pull_task(
        &self,
        pull: &PullFacts,
        text: PullText<'_>,
        guidance: Vec<String>,
        thread: String,
        permissions: TaskPermissions,
    ) -> Task {
        let description = crate::protocol::untrusted::sanitize(text.body);
        let thread_of = task_text::Thread {
            number: pull.number,
            title: text.title,
            description: &description,
        };
        let title = task_text::pull_title(&thread_of);
        Task {
            title: title.chars().take(120).collect(),
            requirements: task_text::pull_requirements(&thread_of),
            acceptance: vec![task_text::acceptance(Accepted::PullGates)],
            issue: None,
            source: self.pull_source(pull, None),
            guidance,
            thread,
            permissions,
            script: Vec::new(),
        }
    }

    /// The task source of work on `pull` (healing `failed_run` when it is a failing check).
    pub(super) fn pull_source(
        &self,
        pull: &PullFacts,
        failed_run: Option<crate::protocol::task::FailedRun>,
    ) -> TaskSource {
        TaskSource::PullRequest {
            number: pull.number,
            url: self.actions.issue_url(pull.number),
            head_ref: pull.head_ref.clone(),
            head_repo: pull.head_repo.clone().unwrap_or_default(),
            failed_run,
        }
    }

    pub(super) fn redacted(&self, task: Task) -> Task {
        run::redacted_task(task, &self.redactor)
    }

    /// A failed workflow run as a task: the failed jobs, the tail of their logs (parsed into
    /// failures, not pasted raw), and failing tests from JUnit artifacts when there are any.
    pub(super) async fn failed_run_task(&self) -> Result<Task, SessionError> {
        let Trigger::FailedRun {
            run_id,
            workflow,
            head_branch,
            head_sha,
            ..
        } = &self.trigger
        else {
            return Err(SessionError::Internal("not a failed run".into()));
        };
        let digest = crate::github::ci_failure::digest(self.api, &self.actions.repository, *run_id)
            .await
            .map_err(internal)?;
        let _ = self.seen.set(digest.clone());
        if let Some(pull) = self.work()?.pull() {
            let run = super::checks::RunFacts {
                id: *run_id,
                workflow,
                head_sha,
                digest,
            };
            return self.check_task(pull, run).await;
        }
        let failed = task_text::FailedRun {
            id: *run_id,
            workflow,
            head_sha,
            digest: &digest,
        };
        Ok(self.redacted(Task {
            title: task_text::failed_run_title(&failed, head_branch),
            requirements: task_text::failed_run_requirements(&failed, head_branch),
            acceptance: vec![task_text::acceptance(Accepted::FailedRun)],
            issue: None,
            source: TaskSource::WorkflowRun {
                id: *run_id,
                url: self.actions.workflow_run_url(*run_id),
                workflow: workflow.clone(),
            },
            guidance: Vec::new(),
            thread: String::new(),
            permissions: TaskPermissions::default(),
            script: Vec::new(),
        }))
    }

    pub(super) async fn start(
        &self,
        prepared: &Prepared,
        status: &mut Option<StatusComment>,
        guidance: Option<String>,
    ) -> Result<Done, SessionError> {
        let task = self.task(guidance).await?;
        let session = new_session_id();
        // The session is recorded from the start: a job killed before the first iteration
        // still names it.
        let record = SessionRecord {
            session: session.clone(),
            branch: String::new(),
            outcome: "running".into(),
            stopped: false,
            state: None,
            held: None,
        };
        let trigger = self.trigger.describe();
        self.post_status(status, &View::Working { trigger }, Some(&record))
            .await?;
        let repo = run::open_repo(&prepared.repo)?;
        self.settle_start(prepared, &repo).await?;
        let ctx = run::RunContext {
            instructions: std::sync::Arc::new(self.instructions(prepared, &repo).await?),
            holds_before_push: self.holds_before_push(),
            ..prepared.context(false)
        };
        let builder = builder_for(&ctx, &task, KeyNeed::Now)?;
        let options = StartOptions {
            session,
            dry_run: self.args.dry_run,
            max_iterations: self
                .args
                .max_iterations
                .unwrap_or(ctx.config.loop_.max_iterations),
            snapshot: None,
        };
        let begin = Begin::Start {
            task: Box::new(task),
            options,
        };
        let (report, done) = self
            .drive_watched(&ctx, &repo, &builder, begin, status)
            .await?;
        // The run's files go where the Action uploads them before anything is published, so
        // they survive a publishing failure.
        run::export(&repo, &report.state.session, self.args.out.as_deref())?;
        self.publish(prepared, &repo, status, report, done).await
    }

    /// Resumes the recorded session on this runner: fetches its branch, rebuilds the state
    /// file, and lets the engine continue with the guidance in the next plan.
    pub(super) async fn resume(
        &self,
        prepared: &Prepared,
        status: &mut Option<StatusComment>,
        mut state: LoopState,
        options: crate::engine::run::ResumeOptions,
    ) -> Result<Done, SessionError> {
        let crate::engine::run::ResumeOptions { guidance, step } = options;
        let trigger = self.trigger.describe();
        self.post_status(status, &View::Working { trigger }, None)
            .await?;
        let repo = run::open_repo(&prepared.repo)?;
        self.keep_token_fresh().await;
        push::fetch(
            &prepared.executor,
            &self.remote(prepared),
            &state.branch,
            &self.branch_rules(&repo),
        )
        .await
        .map_err(|err| SessionError::Internal(err.to_string()))?;
        // The pushed branch holds every change so far, already verified by the tamper guard
        // and the patch gate of the run that made it: this runner continues from its tip.
        repo.checkout_existing(&state.branch).map_err(internal)?;
        let tip = repo.head().map_err(internal)?.commit;
        if state.outcome == Some(RunOutcome::Interrupted) {
            // A paused session's pushed tip is its checkpoint: the verified commit goes on top.
            state.checkpoint = (tip != state.base_commit).then_some(tip);
        } else {
            state.base_commit = tip;
        }
        state.worktree_diff.clear();
        let sessions = SessionStore::for_git_dir(&repo.git_dir());
        sessions.save(&state).map_err(internal)?;
        let ctx = run::RunContext {
            instructions: std::sync::Arc::new(self.instructions(prepared, &repo).await?),
            holds_before_push: self.holds_before_push(),
            ..prepared.context(false)
        };
        let builder = builder_for(&ctx, &state.task, KeyNeed::Now)?;
        let guidance = guidance.map(|text| {
            self.redactor
                .redact_text(&crate::protocol::untrusted::sanitize(&text))
                .into_owned()
        });
        let begin = Begin::Resume {
            session: state.session.clone(),
            options: crate::engine::run::ResumeOptions { guidance, step },
        };
        let (report, done) = self
            .drive_watched(&ctx, &repo, &builder, begin, status)
            .await?;
        // The run's files go where the Action uploads them before anything is published, so
        // they survive a publishing failure.
        run::export(&repo, &report.state.session, self.args.out.as_deref())?;
        self.publish(prepared, &repo, status, report, done).await
    }

    /// Drives the engine while the status comment follows its iterations.
    async fn drive_watched(
        &self,
        ctx: &run::RunContext<'_>,
        repo: &Git2Repository,
        builder: &crate::session::builder::TaskBuilder,
        begin: Begin,
        status: &mut Option<StatusComment>,
    ) -> Result<(RunReport, Done), SessionError> {
        let session = begin.session().to_owned();
        let sessions = SessionStore::for_git_dir(&repo.git_dir());
        let (watcher, events) = super::progress::watch();
        let driving = async move {
            let watcher = watcher;
            run::drive(ctx, repo, builder, begin, false, Some(&watcher)).await
        };
        let (driven, ()) = tokio::join!(
            driving,
            self.post_progress(events, status, &sessions, &session)
        );
        driven
    }

    pub(super) fn remote(&self, prepared: &Prepared) -> Remote {
        Remote {
            url: self.actions.git_url(),
            token: self.token(),
            workdir: prepared.repo.clone(),
            git: prepared.git.clone(),
            path_env: prepared
                .env
                .get("PATH")
                .unwrap_or("/usr/bin:/bin")
                .to_owned(),
            timeout: Duration::from_secs(300),
        }
    }

    /// The bot's branches only, never the default branch nor a branch the plan trusts or
    /// opens its pull request into (a person's branch), but the pull request's own branch a plan
    /// pushes its verified fix onto.
    pub(super) fn branch_rules(&self, repo: &Git2Repository) -> BranchRules {
        let mut protected: Vec<String> = repo.default_branch().ok().flatten().into_iter().collect();
        let mut pull_head = None;
        if let Ok(work) = self.work() {
            protected.push(work.default_branch.clone());
            if let Ok(plan) = self.push_plan() {
                match plan.kind {
                    PushKind::HeadBranch { .. } => pull_head = Some(plan.pull_into.clone()),
                    PushKind::DefaultBranch
                    | PushKind::BotsOwnPull { .. }
                    | PushKind::Stacked { .. } => {
                        protected.extend([plan.trusted_branch.clone(), plan.pull_into.clone()]);
                    }
                }
            }
        }
        BranchRules {
            prefix: super::origin::BRANCH_PREFIX.into(),
            protected,
            pull_head,
        }
    }
}

/// A pull request's title and description, as GitHub had them when the trigger came.
struct PullText<'a> {
    title: &'a str,
    body: &'a str,
}

/// Whether a maintainer labelled the issue to allow test edits (labels need triage access).
fn labelled_to_allow_test_edits(issue: &crate::github::api::Issue) -> bool {
    issue
        .labels
        .iter()
        .any(|label| label.name == crate::github::command::ALLOW_TEST_EDITS_LABEL)
}
