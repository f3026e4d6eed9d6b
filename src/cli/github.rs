//! `meta-agent github`: one GitHub Actions step. Reads the run's context and the triggering
//! event, authorizes the actor before anything else, acknowledges, then runs the engine (a new
//! session, or the escalated one resumed with a maintainer's guidance) and publishes what it
//! verified: the bot's branch pushed, the pull request opened or reused, the one status comment
//! edited in place, the job summary, annotations and step outputs.
//!
//! Idempotent by construction: the status comment is found before it is created; a session the
//! status comment records as committed is published again (pull request reused or created)
//! instead of being run twice; every text that leaves passes the redactor.

use std::path::Path;
use std::time::{Duration, Instant};

use super::run::{self, RunContext};
use super::{CliError, Done};
use crate::engine::run::{RunReport, StartOptions, new_session_id};
use crate::engine::state::{LoopState, RunOutcome, SessionStore};
use crate::engine::task::{Task, TaskSource};
use crate::exit::Outcome;
use crate::git::{Git2Repository, Repository};
use crate::github::api::{GitHubApi, NewPullRequest, Reaction};
use crate::github::authz::{self, Decision, Policy, Screen};
use crate::github::command::Command;
use crate::github::context::ActionsContext;
use crate::github::push::{self, BranchRules, Remote};
use crate::github::rest::{RestClient, RestSettings};
use crate::github::status::{self, Footer, SessionRecord, StatusComment, View};
use crate::github::summary::{self, SummaryInput};
use crate::github::thread::{self, Window};
use crate::github::trigger::{self, Classified, Trigger, TriggerSettings};
use crate::redact::{Redactor, outbound_markdown};

/// `meta-agent github`. Every option also reads an environment variable, so the Action passes
/// its inputs through `env:` and never into a shell script.
#[derive(Debug, clap::Args)]
pub struct GithubArgs {
    /// Change nothing on GitHub or the remote: run, then report in the job summary only.
    #[arg(long, env = "META_AGENT_DRY_RUN", num_args = 0..=1, default_value = "false",
          default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new())]
    pub dry_run: bool,
    /// Improve iterations before escalating (default: loop.max_iterations).
    #[arg(long, env = "META_AGENT_MAX_ITERATIONS", value_name = "N")]
    pub max_iterations: Option<u32>,
    /// Cap on the run's LLM cost in US dollars (overrides llm.max_cost_usd).
    #[arg(long, env = "META_AGENT_BUDGET_USD", value_name = "USD")]
    pub budget_usd: Option<f64>,
    /// The phrase that starts a command in a comment.
    #[arg(long, env = "META_AGENT_TRIGGER", default_value = "/agent")]
    pub trigger_phrase: String,
    /// The label that hands an issue to the bot.
    #[arg(long, env = "META_AGENT_LABEL", default_value = "meta-agent")]
    pub label: String,
    /// The bot's own login: its comments are never triggers, and only its status comment is
    /// trusted.
    #[arg(
        long,
        env = "META_AGENT_BOT_LOGIN",
        default_value = "github-actions[bot]"
    )]
    pub bot_login: String,
    /// Bot accounts allowed to trigger the bot (comma-separated).
    #[arg(long, env = "META_AGENT_ALLOW_BOTS", value_delimiter = ',')]
    pub allow_bots: Vec<String>,
    /// Minutes the job may last: GitHub rate-limit waits stop early enough to post a final status.
    #[arg(long, env = "META_AGENT_JOB_MINUTES", default_value_t = 60)]
    pub job_minutes: u64,
}

/// The `outcome` output when the step did not run the engine.
const IGNORED: &str = "ignored";
const REFUSED: &str = "refused";

/// Everything a step holds once the event is known to need work.
struct Step<'a> {
    actions: &'a ActionsContext,
    api: &'a RestClient,
    args: &'a GithubArgs,
    redactor: Redactor,
    trigger: Trigger,
    started: Instant,
}

/// Runs the step. `prepare` loads the configuration (only once the event needs a run).
pub(crate) async fn github<P, F>(
    args: &GithubArgs,
    env: &[(String, String)],
    prepare: P,
) -> Result<Done, CliError>
where
    P: FnOnce() -> F,
    F: std::future::Future<Output = Result<super::Prepared, CliError>>,
{
    let actions = ActionsContext::from_lookup(|name| lookup(env, name))
        .map_err(|err| CliError::Usage(err.to_string()))?;
    let payload = read_event(&actions.event_path)?;
    let branch_prefix = "meta-agent/".to_owned();
    let settings = TriggerSettings {
        phrase: args.trigger_phrase.clone(),
        label: args.label.clone(),
        branch_prefix,
    };
    let classified = trigger::classify(&actions.event_name, &payload, &settings)
        .map_err(|err| CliError::Usage(err.to_string()))?;
    let trigger = match classified {
        Classified::Ignore(reason) => return finish_early(&actions, IGNORED, &reason),
        Classified::Run(trigger) => trigger,
    };
    let api = RestClient::new(RestSettings {
        api_url: actions.api_url.clone(),
        token: actions.token.clone(),
        user_agent: format!("meta-agent/{}", env!("CARGO_PKG_VERSION")),
        deadline: Some(Instant::now() + Duration::from_secs(args.job_minutes * 60)),
        rate: Default::default(),
    })
    .map_err(|err| CliError::Internal(err.to_string()))?;
    let step = Step {
        redactor: Redactor::from_env(env.iter().cloned()),
        actions: &actions,
        api: &api,
        args,
        trigger,
        started: Instant::now(),
    };
    if let Some(refusal) = step.authorize().await? {
        return refusal;
    }
    step.acknowledge().await;
    let result = match prepare().await {
        Ok(prepared) => step.dispatch(&prepared).await,
        Err(err) => Err(err),
    };
    if let Err(err) = &result {
        step.report_failure(err).await;
    }
    result
}

fn lookup(env: &[(String, String)], name: &str) -> Option<String> {
    env.iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.clone())
}

/// The event payload, bounded (GitHub's are far smaller).
fn read_event(path: &Path) -> Result<Vec<u8>, CliError> {
    const MAX_EVENT_BYTES: u64 = 25 << 20;
    let size = std::fs::metadata(path)
        .map_err(|err| CliError::Usage(format!("GITHUB_EVENT_PATH {}: {err}", path.display())))?
        .len();
    if size > MAX_EVENT_BYTES {
        return Err(CliError::Usage(format!(
            "GITHUB_EVENT_PATH {}: {size} bytes is not an event payload",
            path.display()
        )));
    }
    std::fs::read(path)
        .map_err(|err| CliError::Usage(format!("GITHUB_EVENT_PATH {}: {err}", path.display())))
}

/// Ends without a run: the reason in the log, the job summary and the outputs.
fn finish_early(actions: &ActionsContext, outcome: &str, reason: &str) -> Result<Done, CliError> {
    let input = SummaryInput {
        trigger: &actions.event_name,
        isolation: "not needed",
        note: Some(reason),
        pull_url: None,
    };
    write_step_files(
        actions,
        &summary::job_summary(None, &input),
        &[("outcome", outcome.to_owned())],
    )?;
    Ok(Done {
        stdout: format!("meta-agent: {outcome}: {reason}\n"),
        outcome: Outcome::Success,
    })
}

/// Appends the job summary and writes the outputs, where Actions provides the files.
fn write_step_files(
    actions: &ActionsContext,
    job_summary: &str,
    outputs: &[(&str, String)],
) -> Result<(), CliError> {
    let append = |path: &Path, text: &str| -> Result<(), CliError> {
        use std::io::Write;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut file| file.write_all(text.as_bytes()))
            .map_err(|err| CliError::Internal(format!("{}: {err}", path.display())))
    };
    if let Some(path) = &actions.step_summary {
        append(path, job_summary)?;
    }
    if let Some(path) = &actions.output {
        append(path, &summary::outputs(outputs))?;
    }
    Ok(())
}

impl Step<'_> {
    /// `Some(done)` when the actor may not trigger the bot (said with a reaction, never a
    /// comment an attacker could use as an amplifier).
    async fn authorize(&self) -> Result<Option<Result<Done, CliError>>, CliError> {
        let actor = self.trigger.actor();
        let policy = Policy {
            bot_login: self.args.bot_login.clone(),
            allowed_bots: self.args.allow_bots.clone(),
        };
        let refusal = match authz::screen(actor, &policy) {
            Screen::Allowed => return Ok(None),
            Screen::Ignore(reason) => {
                return Ok(Some(finish_early(self.actions, IGNORED, &reason)));
            }
            Screen::AskPermission => {
                let permission = self
                    .api
                    .permission(&self.actions.repository, &actor.login)
                    .await
                    .map_err(|err| CliError::Internal(err.to_string()))?;
                match authz::decide(actor, permission) {
                    Decision::Allowed => return Ok(None),
                    Decision::Refused(reason) => reason,
                }
            }
        };
        tracing::warn!("{refusal}");
        if let Some(comment) = self.trigger.comment_id() {
            self.react(comment, Reaction::Confused).await;
        }
        Ok(Some(finish_early(self.actions, REFUSED, &refusal)))
    }

    /// Every step ends with the truth where maintainers look: an error that stopped the run is
    /// written into the status comment (keeping the recorded session) and the job summary.
    async fn report_failure(&self, err: &CliError) {
        let reason = format!("The step stopped with an error: {err}");
        let mut status = self.status_comment();
        let record = match &mut status {
            Some(comment) => match comment.existing(self.api).await {
                Ok(existing) => existing.and_then(|c| SessionRecord::decode(&c.body)),
                Err(read) => {
                    tracing::warn!("reading the status comment to report a failure: {read}");
                    return;
                }
            },
            None => None,
        };
        let view = View::Failed {
            reason: reason.clone(),
        };
        if let Err(post) = self.post_status(&mut status, &view, record.as_ref()).await {
            tracing::warn!("reporting the failure in the status comment: {post}");
        }
        let input = SummaryInput {
            trigger: &self.trigger.describe(),
            pull_url: None,
            isolation: "see the log",
            note: Some(&reason),
        };
        let summary = self.outbound(&summary::job_summary(None, &input));
        if let Err(write) =
            write_step_files(self.actions, &summary, &[("outcome", "failed".into())])
        {
            tracing::warn!("{write}");
        }
    }

    async fn acknowledge(&self) {
        if let Some(comment) = self.trigger.comment_id() {
            self.react(comment, Reaction::Eyes).await;
        }
    }

    /// Reactions are courtesy: a failure is logged, never fatal.
    async fn react(&self, comment: u64, reaction: Reaction) {
        if self.args.dry_run {
            return;
        }
        if let Err(err) = self
            .api
            .react(&self.actions.repository, comment, reaction)
            .await
        {
            tracing::warn!("reacting to comment {comment}: {err}");
        }
    }

    fn status_comment(&self) -> Option<StatusComment> {
        self.trigger.thread().map(|issue| {
            StatusComment::new(
                self.actions.repository.clone(),
                issue,
                self.args.bot_login.clone(),
            )
        })
    }

    /// The bot's saved session for this thread, if its own status comment carries one.
    async fn saved_record(
        &self,
        status: &mut Option<StatusComment>,
    ) -> Result<Option<SessionRecord>, CliError> {
        let Some(status) = status else {
            return Ok(None);
        };
        let existing = status.existing(self.api).await.map_err(internal)?;
        Ok(existing.and_then(|comment| SessionRecord::decode(&comment.body)))
    }

    /// The session recorded in the body of the bot's own pull request (a review comment on it
    /// resumes that session).
    async fn pull_record(&self, pull: u64) -> Result<Option<SessionRecord>, CliError> {
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

    fn footer(&self, record: Option<&SessionRecord>) -> Footer {
        Footer {
            phrase: self.args.trigger_phrase.clone(),
            run_url: self.actions.run_url(),
            record: record.map(SessionRecord::encode),
        }
    }

    /// Writes the status comment (redacted, neutralised); in a dry run, nothing.
    async fn post_status(
        &self,
        status: &mut Option<StatusComment>,
        view: &View,
        record: Option<&SessionRecord>,
    ) -> Result<(), CliError> {
        let Some(status) = status else {
            return Ok(());
        };
        if self.args.dry_run {
            return Ok(());
        }
        let body = self.outbound(&status::render(view, &self.footer(record)));
        status.post(self.api, &body).await.map_err(internal)
    }

    fn outbound(&self, text: &str) -> String {
        let host = host_of(&self.actions.server_url);
        outbound_markdown(&self.redactor, text, &[host, "github.com"])
    }

    async fn dispatch(&self, prepared: &super::Prepared) -> Result<Done, CliError> {
        let mut status = self.status_comment();
        let record = match (self.saved_record(&mut status).await?, &self.trigger) {
            (None, Trigger::ReviewComment { pull, .. }) => self.pull_record(*pull).await?,
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
        let guidance = match (&command, &self.trigger) {
            (Some(Command::Fix { guidance }), _) => guidance.clone(),
            (_, Trigger::Dispatch { guidance, .. }) => guidance.clone(),
            _ => None,
        };
        if let Some(record) = &record {
            if record.stopped && command.is_none() {
                return finish_early(
                    self.actions,
                    IGNORED,
                    "a maintainer stopped the bot on this issue (`/agent fix` starts it again)",
                );
            }
            let fresh_request = matches!(command, Some(Command::Retry))
                || guidance.is_some()
                || matches!(self.trigger, Trigger::ReviewComment { .. });
            if let Some(done) = self
                .republish(prepared, &mut status, record, fresh_request)
                .await?
            {
                return Ok(done);
            }
        }
        let resumable = record.as_ref().filter(|record| {
            matches!(self.trigger, Trigger::ReviewComment { .. })
                || (guidance.is_some() && record.outcome == "escalated")
        });
        match resumable.and_then(|record| record.state.clone()) {
            Some(state) => {
                let guidance = self.review_guidance(guidance);
                self.resume(prepared, &mut status, state, guidance).await
            }
            None => self.start(prepared, &mut status, guidance).await,
        }
    }

    /// A review comment's guidance names where it was left.
    fn review_guidance(&self, guidance: Option<String>) -> Option<String> {
        match &self.trigger {
            Trigger::ReviewComment { location, .. } => Some(format!(
                "Review comment on {location}: {}",
                guidance.unwrap_or_else(|| "address this review comment".into())
            )),
            _ => guidance,
        }
    }

    async fn report_status(
        &self,
        status: &mut Option<StatusComment>,
        record: Option<SessionRecord>,
    ) -> Result<Done, CliError> {
        let summary = match &record {
            Some(record) => format!(
                "Session `{}` on `{}`: {}{}.",
                record.session,
                record.branch,
                record.outcome,
                if record.stopped { " (stopped)" } else { "" }
            ),
            None => "No session yet on this issue.".to_owned(),
        };
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

    async fn stop(
        &self,
        status: &mut Option<StatusComment>,
        record: Option<SessionRecord>,
    ) -> Result<Done, CliError> {
        let record = record.map(|record| SessionRecord {
            stopped: true,
            ..record
        });
        let by = self.trigger.actor().login.clone();
        self.post_status(status, &View::Stopped { by }, record.as_ref())
            .await?;
        finish_early(self.actions, "stopped", "stopped by a maintainer")
    }

    /// A session already committed and pushed for this thread, asked again without new
    /// guidance (the same event twice, a re-run, a kill between push and pull request): publish
    /// it again instead of running twice.
    async fn republish(
        &self,
        prepared: &super::Prepared,
        status: &mut Option<StatusComment>,
        record: &SessionRecord,
        fresh_request: bool,
    ) -> Result<Option<Done>, CliError> {
        if record.outcome != "committed" || fresh_request || self.args.dry_run {
            return Ok(None);
        }
        let Some(state) = &record.state else {
            return Ok(None);
        };
        let repo = run::open_repo(&prepared.repo)?;
        let base = repo
            .default_branch()
            .ok()
            .flatten()
            .unwrap_or_else(|| "main".into());
        let pull = match self.open_or_reuse_pull(state, &base, None).await {
            Ok(pull) => pull,
            Err(err) => {
                tracing::warn!("publishing the recorded session again: {err}; running afresh");
                return Ok(None);
            }
        };
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
            isolation: "not needed",
            note: Some("already verified and committed earlier; published again"),
        };
        write_step_files(
            self.actions,
            &self.outbound(&summary::job_summary(Some(state), &input)),
            &outputs(state, Some(&pull), "committed"),
        )?;
        Ok(Some(Done {
            stdout: format!("meta-agent: already committed; pull request {pull}\n"),
            outcome: Outcome::Success,
        }))
    }

    /// The task for a new session.
    async fn task(&self, guidance: Option<String>) -> Result<Task, CliError> {
        let (number, title, body, until, trigger_comment) = match &self.trigger {
            Trigger::Issue { issue, .. } => (
                issue.number,
                issue.title.clone(),
                issue.body.clone(),
                None,
                None,
            ),
            Trigger::Comment {
                issue,
                created_at,
                comment_id,
                ..
            } => (
                issue.number,
                issue.title.clone(),
                issue.body.clone(),
                Some(created_at.clone()),
                Some(*comment_id),
            ),
            Trigger::Dispatch {
                issue: Some(number),
                ..
            } => {
                let issue = self
                    .api
                    .issue(&self.actions.repository, *number)
                    .await
                    .map_err(internal)?;
                (issue.number, issue.title, issue.body, None, None)
            }
            Trigger::FailedRun { .. } => return self.failed_run_task().await,
            Trigger::Dispatch { issue: None, .. } => {
                return Err(CliError::Usage(
                    "nothing to work on: give the dispatch an `issue` input".into(),
                ));
            }
            Trigger::ReviewComment { pull, .. } => {
                return Err(CliError::Usage(format!(
                    "pull request #{pull} carries no session of the bot to continue"
                )));
            }
        };
        let comments = self
            .api
            .comments(&self.actions.repository, number)
            .await
            .map_err(internal)?;
        let conversation = thread::render(&thread::build(
            &comments,
            &Window {
                until: until.as_deref(),
                trigger: trigger_comment,
                bot_login: &self.args.bot_login,
            },
        ));
        let mut requirements = format!("{title}\n\n{}", crate::agent::untrusted::sanitize(&body));
        if !conversation.is_empty() {
            requirements.push_str("\n\n");
            requirements.push_str(&conversation);
        }
        if let Some(guidance) = guidance {
            requirements.push_str("\n\n## Guidance from a maintainer\n");
            requirements.push_str(&crate::agent::untrusted::sanitize(&guidance));
        }
        Ok(self.redacted(Task {
            title: title.chars().take(120).collect(),
            requirements,
            acceptance: Vec::new(),
            issue: Some(number),
            source: TaskSource::Text,
            script: Vec::new(),
        }))
    }

    fn redacted(&self, task: Task) -> Task {
        run::redacted_task(task, &self.redactor)
    }

    /// A failed workflow run as a task: the failed jobs, the tail of their logs (parsed into
    /// failures, not pasted raw), and failing tests from JUnit artifacts when there are any.
    async fn failed_run_task(&self) -> Result<Task, CliError> {
        let Trigger::FailedRun {
            run_id,
            workflow,
            head_branch,
            head_sha,
            ..
        } = &self.trigger
        else {
            return Err(CliError::Internal("not a failed run".into()));
        };
        let digest = crate::github::ci_failure::digest(self.api, &self.actions.repository, *run_id)
            .await
            .map_err(internal)?;
        let title = format!("Fix the failing `{workflow}` workflow on {head_branch}");
        let requirements = format!(
            "{title}\n\nThe workflow run {run_id} failed at {head_sha}. Make the repository's gates pass \
             again without weakening any test.\n\n{digest}"
        );
        Ok(self.redacted(Task {
            title,
            requirements,
            acceptance: vec!["the failing checks pass".into()],
            issue: None,
            source: TaskSource::Text,
            script: Vec::new(),
        }))
    }

    async fn start(
        &self,
        prepared: &super::Prepared,
        status: &mut Option<StatusComment>,
        guidance: Option<String>,
    ) -> Result<Done, CliError> {
        let task = self.task(guidance).await?;
        let trigger = self.trigger.describe();
        self.post_status(status, &View::Working { trigger }, None)
            .await?;
        let ctx = self.context(prepared);
        let config = ctx.config;
        let repo = run::open_repo(&prepared.repo)?;
        let builder = run::builder_for(&ctx, &task)?;
        let session = new_session_id();
        let options = StartOptions {
            session: session.clone(),
            dry_run: self.args.dry_run,
            max_iterations: self
                .args
                .max_iterations
                .unwrap_or(config.loop_.max_iterations),
        };
        let (report, done) =
            run::drive_report(&ctx, &repo, &builder, &session, false, move |engine| {
                Box::pin(engine.start(task, options))
            })
            .await?;
        self.publish(prepared, &repo, status, report, done).await
    }

    /// Resumes the recorded session on this runner: fetches its branch, rebuilds the state
    /// file, and lets the engine continue with the guidance in the next plan.
    async fn resume(
        &self,
        prepared: &super::Prepared,
        status: &mut Option<StatusComment>,
        mut state: LoopState,
        guidance: Option<String>,
    ) -> Result<Done, CliError> {
        let trigger = self.trigger.describe();
        self.post_status(status, &View::Working { trigger }, None)
            .await?;
        let repo = run::open_repo(&prepared.repo)?;
        push::fetch(
            &prepared.executor,
            &self.remote(prepared),
            &state.branch,
            &self.branch_rules(&repo),
        )
        .await
        .map_err(|err| CliError::Internal(err.to_string()))?;
        // The pushed branch holds every change so far, already verified by the tamper guard
        // and the patch gate of the run that made it: this runner continues from its tip.
        repo.checkout_existing(&state.branch).map_err(internal)?;
        state.base_commit = repo.head().map_err(internal)?.commit;
        state.worktree_diff.clear();
        let sessions = SessionStore::for_git_dir(&repo.git_dir());
        sessions.save(&state).map_err(internal)?;
        let ctx = self.context(prepared);
        let builder = run::builder_for(&ctx, &state.task)?;
        let session = state.session.clone();
        let guidance = guidance.map(|text| {
            self.redactor
                .redact_text(&crate::agent::untrusted::sanitize(&text))
                .into_owned()
        });
        let id = session.clone();
        let (report, done) =
            run::drive_report(&ctx, &repo, &builder, &session, false, move |engine| {
                Box::pin(async move { engine.resume(Some(&id), guidance).await })
            })
            .await?;
        self.publish(prepared, &repo, status, report, done).await
    }

    fn context<'p>(&self, prepared: &'p super::Prepared) -> RunContext<'p> {
        RunContext {
            repo_root: &prepared.repo,
            config: &prepared.config,
            executor: &prepared.executor,
            parent_env: &prepared.env,
            verbose: false,
        }
    }

    fn remote(&self, prepared: &super::Prepared) -> Remote {
        Remote {
            url: self.actions.git_url(),
            token: self.actions.token.clone(),
            workdir: prepared.repo.clone(),
            path_env: lookup(&prepared.env, "PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
            timeout: Duration::from_secs(300),
        }
    }

    fn branch_rules(&self, repo: &Git2Repository) -> BranchRules {
        BranchRules {
            prefix: "meta-agent/".into(),
            protected: repo.default_branch().ok().flatten().into_iter().collect(),
        }
    }

    /// Pushes, opens or reuses the pull request, and writes the status comment, the job
    /// summary and the outputs, all from the run's report.
    async fn publish(
        &self,
        prepared: &super::Prepared,
        repo: &Git2Repository,
        status: &mut Option<StatusComment>,
        report: RunReport,
        done: Done,
    ) -> Result<Done, CliError> {
        let mut published = report.state.clone();
        let pushed = !published.dry_run
            && matches!(
                published.outcome,
                Some(RunOutcome::Committed) | Some(RunOutcome::Escalated)
            );
        if pushed {
            // Recorded before the push: a kill from here on is published again, not re-run.
            self.post_status(
                status,
                &View::Working {
                    trigger: format!("{} (publishing)", self.trigger.describe()),
                },
                Some(&SessionRecord::of(&published)),
            )
            .await?;
            published.branch = self.push_branch(prepared, repo, &published).await?;
        }
        let state = &published;
        let record = SessionRecord::of(state);
        let outcome = state.outcome.as_ref().map_or("failed", RunOutcome::as_str);
        let base = repo
            .default_branch()
            .ok()
            .flatten()
            .unwrap_or_else(|| "main".into());
        let summary_text = summary::markdown_result(state);
        let mut pull_url = None;
        let view = match state.outcome {
            Some(RunOutcome::Committed) if state.dry_run => View::DryRun {
                summary: summary_text,
            },
            Some(RunOutcome::Committed) => {
                let pull = self
                    .open_or_reuse_pull(state, &base, report.commit_message.as_deref())
                    .await
                    .map_err(|err| CliError::Internal(err.to_string()))?;
                pull_url = Some(pull.clone());
                View::Committed {
                    pull_url: pull,
                    summary: summary_text,
                }
            }
            Some(RunOutcome::Escalated) => View::Escalated {
                report: report.escalation.clone().unwrap_or(summary_text),
                branch: state.branch.clone(),
            },
            Some(RunOutcome::NothingToDo) => View::NothingToDo {
                summary: summary_text,
            },
            Some(RunOutcome::Failed) | None => View::Failed {
                reason: summary_text,
            },
        };
        self.post_status(status, &view, Some(&record)).await?;
        let isolation = crate::exec::detect::detect().describe();
        let input = SummaryInput {
            trigger: &self.trigger.describe(),
            pull_url: pull_url.as_deref(),
            isolation: &isolation,
            note: None,
        };
        write_step_files(
            self.actions,
            &self.outbound(&summary::job_summary(Some(state), &input)),
            &outputs(state, pull_url.as_deref(), outcome),
        )?;
        let annotations: Vec<String> = summary::annotations(state)
            .iter()
            .map(|line| self.redactor.redact_text(line).into_owned())
            .collect();
        let mut stdout = format!(
            "::group::meta-agent report\n{}\n::endgroup::\n",
            done.stdout
        );
        for line in annotations {
            stdout.push_str(&line);
            stdout.push('\n');
        }
        tracing::info!(
            "step finished after {:.1} s",
            self.started.elapsed().as_secs_f64()
        );
        Ok(Done {
            stdout,
            outcome: done.outcome,
        })
    }

    /// Pushes the session's branch; when the remote branch of that name holds other history (a
    /// retry that started over), publishes it under a name of its own instead of forcing.
    /// Returns the remote branch's name.
    async fn push_branch(
        &self,
        prepared: &super::Prepared,
        repo: &Git2Repository,
        state: &LoopState,
    ) -> Result<String, CliError> {
        let remote = self.remote(prepared);
        let rules = self.branch_rules(repo);
        let branch = &state.branch;
        match push::push(&prepared.executor, &remote, branch, &rules).await {
            Ok(()) => Ok(branch.clone()),
            Err(err) if push::was_rejected(&err) => {
                let suffix = state.session.rsplit('-').next().unwrap_or(&state.session);
                let target = format!("{branch}-{suffix}");
                tracing::warn!("{err}; publishing as `{target}` instead (never forced)");
                push::push_to(&prepared.executor, &remote, branch, &target, &rules)
                    .await
                    .map_err(internal)?;
                Ok(target)
            }
            Err(err) => Err(internal(err)),
        }
    }

    /// The open pull request for the session's branch, its body refreshed, or a new one.
    async fn open_or_reuse_pull(
        &self,
        state: &LoopState,
        base: &str,
        commit_message: Option<&str>,
    ) -> Result<String, crate::github::GitHubError> {
        let repo = &self.actions.repository;
        let mut body = self.outbound(&pull_body(state, commit_message));
        body.push('\n');
        body.push_str(&SessionRecord::of(state).encode());
        body.push('\n');
        if let Some(pull) = self.api.open_pull_for(repo, &state.branch).await? {
            self.api.update_pull_body(repo, pull.number, &body).await?;
            return Ok(pull.html_url);
        }
        let title = self.redactor.redact_text(&state.task.title).into_owned();
        let new = NewPullRequest {
            title,
            body: body.clone(),
            head: state.branch.clone(),
            base: base.to_owned(),
            draft: false,
        };
        match self.api.create_pull(repo, &new).await {
            Ok(pull) => Ok(pull.html_url),
            Err(err) => match self.api.open_pull_for(repo, &state.branch).await {
                Ok(Some(pull)) => Ok(pull.html_url),
                _ => Err(err),
            },
        }
    }
}

/// The pull request's body: what was done, the gates, the trailers, the issue it fixes.
fn pull_body(state: &LoopState, commit_message: Option<&str>) -> String {
    let mut body = String::from("Verified by the repository's gates before it was pushed.\n\n");
    body.push_str(&summary::markdown_result(state));
    if let Some(message) = commit_message {
        body.push_str("\n<details><summary>Commit message and trailers</summary>\n\n```text\n");
        body.push_str(&message.replace("```", "'''"));
        body.push_str("\n```\n</details>\n");
    }
    if let Some(issue) = state.task.issue {
        body.push_str(&format!("\nFixes #{issue}\n"));
    }
    body
}

fn outputs(
    state: &LoopState,
    pull_url: Option<&str>,
    outcome: &str,
) -> Vec<(&'static str, String)> {
    vec![
        ("outcome", outcome.to_owned()),
        ("pr-url", pull_url.unwrap_or_default().to_owned()),
        ("branch", state.branch.clone()),
        ("iterations", state.iterations_run().to_string()),
        ("session", state.session.clone()),
    ]
}

/// The host of an http(s) URL, without port or path.
fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split('/').next().unwrap_or(rest);
    authority
        .rsplit_once(':')
        .map_or(authority, |(host, _)| host)
}

fn internal(err: impl std::fmt::Display) -> CliError {
    CliError::Internal(err.to_string())
}
