//! `meta-agent github`: one GitHub Actions step. Reads the run's context and the triggering
//! event, authorizes the actor before anything else, acknowledges, decides from GitHub's API what
//! the work starts from and what it may publish (`origin`: the default branch, or a pull
//! request's head; a push plan or, for a fork's pull request, a patch only), then runs the engine
//! (a new session, or the escalated one resumed with a maintainer's guidance) and publishes what
//! it verified: the bot's branch pushed after the check before every push, the pull request
//! opened or reused, or the fix offered as a patch (`offer`); the one status comment edited in
//! place, the job summary, annotations and step outputs.
//!
//! Idempotent by construction: the status comment is found before it is created; a session the
//! status comment records as committed is published again (pull request reused or created)
//! instead of being run twice; every text that leaves passes the redactor.

use crate::render::step;
use std::path::Path;
use std::time::{Duration, Instant};

use super::run;
use super::{Done, Environment, Overrides, Prepared, SessionError};
use crate::engine::run::{RunReport, StartOptions, new_session_id};
use crate::engine::state::SessionStore;
use crate::exit::Outcome;
use crate::git::{Git2Repository, Repository};
use crate::github::api::{GitHubApi, GitHubError, NewPullRequest, Permission, Reaction};
use crate::github::app;
use crate::github::authz::{self, Authorization, Policy, Screen};
use crate::github::command::Command;
use crate::github::context::ActionsContext;
use crate::github::push::{self, BranchRules, Remote};
use crate::github::rate::RatePolicy;
use crate::github::rest::{RestClient, RestSettings};
use crate::github::status::{SessionRecord, StatusComment};
use crate::github::thread;
use crate::github::trigger::{self, Classified, Trigger, TriggerSettings};
use crate::protocol::records::RunOutcome;
use crate::protocol::state::LoopState;
use crate::protocol::task::{Task, TaskPermissions, TaskSource};
use crate::redact::{Redactor, outbound_markdown};
use crate::render::fit;
use crate::render::job::{self as summary, SummaryInput};
use crate::render::status::{self, Footer, View};

mod checks;
mod comments;
mod dispatch;
mod head;
mod hold;
mod offer;
mod origin;
mod progress;
mod publish;

/// What a step was asked, from the Action's inputs (see `meta-agent github --help`).
#[derive(Debug, Clone)]
pub struct StepSettings {
    /// Change nothing on GitHub or the remote.
    pub dry_run: bool,
    /// Improve iterations before escalating (default: loop.max_iterations).
    pub max_iterations: Option<u32>,
    /// Cap on the run's LLM cost in US dollars (overrides llm.max_cost_usd).
    pub budget_usd: Option<f64>,
    /// The phrase that starts a command in a comment.
    pub trigger_phrase: String,
    /// The label that hands an issue to the bot.
    pub label: String,
    /// The bot's own login: its comments are never triggers, only its status comment is trusted.
    pub bot_login: String,
    /// Bot accounts allowed to trigger the bot.
    pub allow_bots: Vec<String>,
    /// Minutes the job may last.
    pub job_minutes: u64,
    /// Where the run's files are copied for the Action's artifact, whatever the outcome.
    pub out: Option<std::path::PathBuf>,
    /// Which failed runs of pull requests are healed.
    pub pull_request_checks: crate::github::trigger::PullRequestChecks,
    /// Where a person's pull request gets its fix, and which failing checks are left alone.
    pub pull_policy: crate::github::provenance::PullPolicy,
}

/// Who writes with the workflow's `GITHUB_TOKEN`.
pub const DEFAULT_BOT_LOGIN: &str = "github-actions[bot]";

/// The `outcome` output when the step did not run the engine.
const IGNORED: &str = "ignored";
const REFUSED: &str = "refused";

/// Everything a step holds once the event is known to need work.
struct Step<'a> {
    actions: &'a ActionsContext,
    api: &'a RestClient,
    args: &'a StepSettings,
    redactor: std::sync::Arc<Redactor>,
    /// The token of the API client and the pushes: the workflow's, or the App's installation
    /// token (replaced by [`Step::keep_token_fresh`] before it expires).
    token: std::sync::RwLock<String>,
    /// Mints the App's token again; `None` with the workflow's token.
    keeper: Option<app::TokenKeeper>,
    trigger: Trigger,
    started: Instant,
    /// The least time between two content-creating writes (progress updates are paced by it).
    spacing: Duration,
    /// What the step works on and may publish, decided once right after authorization.
    work: std::sync::OnceLock<origin::Work>,
    /// What a failed run showed (the digest of its failed jobs), once read for its task.
    seen: std::sync::OnceLock<String>,
}

/// Runs the step. The configuration is loaded only once the event needs a run.
pub async fn github(
    args: &StepSettings,
    overrides: &Overrides,
    env: &Environment,
) -> Result<Done, SessionError> {
    let mut actions = ActionsContext::from_lookup(|name| env.get(name).map(str::to_owned))
        .map_err(|err| SessionError::Usage(err.to_string()))?;
    let payload = read_event(&actions.event_path)?;
    let branch_prefix = origin::BRANCH_PREFIX.to_owned();
    let settings = TriggerSettings {
        phrase: args.trigger_phrase.clone(),
        label: args.label.clone(),
        branch_prefix,
        pull_request_checks: args.pull_request_checks,
    };
    let classified = trigger::classify(&actions.event_name, &payload, &settings)
        .map_err(|err| SessionError::Usage(err.to_string()))?;
    let trigger = match classified {
        Classified::Ignore(ignored) => {
            let reason = crate::render::step::ignored(&ignored);
            tracing::info!("ignoring the `{}` event: {reason}", actions.event_name);
            return finish_early(&actions, IGNORED, &reason);
        }
        Classified::Run(trigger) => trigger,
    };
    let settings = RestSettings {
        api_url: actions.api_url.clone(),
        token: actions.token.clone(),
        user_agent: format!("meta-agent/{}", env!("CARGO_PKG_VERSION")),
        deadline: Some(Instant::now() + Duration::from_secs(args.job_minutes * 60)),
        rate: rate_policy(env)?,
    };
    let spacing = settings.rate.write_spacing;
    let (minted, keeper) = app_identity(&mut actions, &trigger, &settings)
        .await?
        .unzip();
    let args = &as_app(args, minted.as_ref());
    let env = match &minted {
        // The App's token and JWT are secrets of this step: they join the process's one
        // redactor (stderr, the engine's outputs, everything the step publishes).
        Some(minted) => {
            env.redactor.learn(minted.as_secret_env());
            Environment {
                vars: env
                    .vars
                    .iter()
                    .cloned()
                    .chain(minted.as_secret_env())
                    .collect(),
                redactor: env.redactor.clone(),
            }
        }
        None => env.clone(),
    };
    let api = RestClient::new(RestSettings {
        token: actions.token.clone(),
        ..settings
    })
    .map_err(|err| SessionError::Internal(err.to_string()))?;
    let step = Step {
        redactor: env.redactor.clone(),
        actions: &actions,
        api: &api,
        token: std::sync::RwLock::new(actions.token.clone()),
        keeper,
        args,
        trigger,
        started: Instant::now(),
        spacing,
        work: std::sync::OnceLock::new(),
        seen: std::sync::OnceLock::new(),
    };
    if let Some(refusal) = step.authorize().await? {
        return refusal;
    }
    step.acknowledge().await;
    let result = step.run_decided(overrides, &env).await;
    if let Err(err) = &result {
        step.report_failure(err).await;
    }
    result
}

/// The REST client's pacing: GitHub's defaults, with the spacing of content-creating writes
/// from `META_AGENT_GITHUB_WRITE_SPACING_MS` when set (default 1000).
fn rate_policy(env: &Environment) -> Result<RatePolicy, SessionError> {
    let mut policy = RatePolicy::default();
    if let Some(text) = env.get(WRITE_SPACING_VAR) {
        let millis: u64 = text.trim().parse().map_err(|_| {
            SessionError::Usage(format!(
                "{WRITE_SPACING_VAR}={text:?}: expected a whole number of milliseconds"
            ))
        })?;
        policy.write_spacing = Duration::from_millis(millis);
    }
    Ok(policy)
}

/// The variable that sets the least time between two content-creating writes.
const WRITE_SPACING_VAR: &str = "META_AGENT_GITHUB_WRITE_SPACING_MS";

/// With a GitHub App configured, mints its installation token for this trigger's needs into
/// `actions.token` (see [`app::authenticate`]); configuration problems are usage errors.
async fn app_identity(
    actions: &mut ActionsContext,
    trigger: &Trigger,
    settings: &RestSettings,
) -> Result<Option<(app::Minted, app::TokenKeeper)>, SessionError> {
    let reads_runs = matches!(trigger, Trigger::FailedRun { .. });
    let identity = app::authenticate(
        actions.app.as_ref(),
        &actions.repository,
        reads_runs,
        settings.clone(),
    )
    .await
    .map_err(|err| {
        if err.is_configuration() {
            SessionError::Usage(err.to_string())
        } else {
            SessionError::Internal(err.to_string())
        }
    })?;
    if let Some((minted, _)) = &identity {
        actions.token = minted.token.clone();
    }
    Ok(identity)
}

/// Acting as a GitHub App, the bot's own login is the App's bot account unless one was given.
fn as_app(args: &StepSettings, minted: Option<&app::Minted>) -> StepSettings {
    let app_login = minted.and_then(|minted| minted.bot_login.clone());
    match app_login {
        Some(login) if args.bot_login == DEFAULT_BOT_LOGIN => StepSettings {
            bot_login: login,
            ..args.clone()
        },
        _ => args.clone(),
    }
}

/// The run's preparation, with the step's budget (an Action input) over the configuration's;
/// `given`: the configuration file read from the default branch (a pull request's run).
async fn prepare(
    args: &StepSettings,
    overrides: &Overrides,
    env: &Environment,
    given: Option<crate::config::GivenFile>,
) -> Result<Prepared, SessionError> {
    let mut prepared = Prepared::load(overrides, env, given).await?;
    if let Some(budget) = args.budget_usd {
        prepared.config.llm.max_cost_usd = Some(budget);
    }
    let wall_clock = &mut prepared.config.loop_.wall_clock;
    *wall_clock = (*wall_clock).min(job_time(args.job_minutes));
    Ok(prepared)
}

/// What the engine may spend of the job's `minutes`: all but a margin (a tenth, at least two
/// minutes) kept for committing, pushing and reporting; at least a minute.
fn job_time(minutes: u64) -> Duration {
    let total = Duration::from_secs(minutes.saturating_mul(60));
    let margin = (total / 10).max(Duration::from_secs(120));
    total.saturating_sub(margin).max(Duration::from_secs(60))
}

/// The event payload, bounded (GitHub's are far smaller).
fn read_event(path: &Path) -> Result<Vec<u8>, SessionError> {
    const MAX_EVENT_BYTES: u64 = 25 << 20;
    let size = std::fs::metadata(path)
        .map_err(|err| SessionError::Usage(format!("GITHUB_EVENT_PATH {}: {err}", path.display())))?
        .len();
    if size > MAX_EVENT_BYTES {
        return Err(SessionError::Usage(format!(
            "GITHUB_EVENT_PATH {}: {size} bytes is not an event payload",
            path.display()
        )));
    }
    std::fs::read(path)
        .map_err(|err| SessionError::Usage(format!("GITHUB_EVENT_PATH {}: {err}", path.display())))
}

/// Ends without a run: the reason in the log, the job summary and the outputs.
fn finish_early(
    actions: &ActionsContext,
    outcome: &str,
    reason: &str,
) -> Result<Done, SessionError> {
    let input = SummaryInput {
        trigger: &actions.event_name,
        isolation: step::NO_ISOLATION,
        note: Some(reason),
        pull_url: None,
    };
    write_step_files(
        actions,
        &summary::job_summary(None, &input),
        &[("outcome", outcome.to_owned())],
    )?;
    Ok(Done {
        stdout: step::finished_early(outcome, reason),
        outcome: Outcome::Success,
    })
}

/// Appends the job summary and writes the outputs, where Actions provides the files.
fn write_step_files(
    actions: &ActionsContext,
    job_summary: &str,
    outputs: &[(&str, String)],
) -> Result<(), SessionError> {
    let append = |path: &Path, text: &str| -> Result<(), SessionError> {
        use std::io::Write;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut file| file.write_all(text.as_bytes()))
            .map_err(|err| SessionError::Internal(format!("{}: {err}", path.display())))
    };
    if let Some(path) = &actions.step_summary {
        let whole = status::whole_text_at(actions.run_url().as_deref());
        let fitted = fit::fit(
            job_summary,
            fit::MAX_STEP_SUMMARY_BYTES,
            fit::Measure::Bytes,
            &whole,
        );
        append(path, &fitted.text)?;
    }
    if let Some(path) = &actions.output {
        append(path, &summary::outputs(outputs))?;
    }
    Ok(())
}

impl Step<'_> {
    /// Decides what the step works on, loads the configuration for it and dispatches.
    async fn run_decided(
        &self,
        overrides: &Overrides,
        env: &Environment,
    ) -> Result<Done, SessionError> {
        let work = self.decide_work().await?;
        if let crate::github::provenance::Publish::Decline(declined) = &work.publish {
            let reason = crate::render::checks::declined(declined);
            tracing::info!("nothing to do: {reason}");
            return finish_early(self.actions, IGNORED, &reason);
        }
        let given = self.trusted_config(overrides).await?;
        let prepared = prepare(self.args, overrides, env, given).await?;
        self.dispatch(&prepared).await
    }

    /// `Some(done)` when the actor may not trigger the bot (said with a reaction, never a
    /// comment an attacker could use as an amplifier).
    async fn authorize(&self) -> Result<Option<Result<Done, SessionError>>, SessionError> {
        let actor = self.trigger.actor();
        let policy = Policy {
            bot_login: self.args.bot_login.clone(),
            allowed_bots: self.args.allow_bots.clone(),
        };
        let refusal = match authz::screen(actor, &policy) {
            Screen::Allowed => return Ok(None),
            Screen::Ignore(ignored) => {
                let reason = crate::render::step::ignored(&ignored);
                return Ok(Some(finish_early(self.actions, IGNORED, &reason)));
            }
            Screen::AskPermission => {
                let permission = match self
                    .api
                    .permission(&self.actions.repository, &actor.login)
                    .await
                {
                    Ok(permission) => permission,
                    // The documented answer for someone who is not a collaborator.
                    Err(GitHubError::NotFound { .. }) => Permission::None,
                    Err(err) => return Err(SessionError::Internal(err.to_string())),
                };
                match authz::decide(permission) {
                    Authorization::Allowed => return Ok(None),
                    Authorization::Refused { permission } => authz::refusal(actor, permission),
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
    async fn report_failure(&self, err: &SessionError) {
        let reason = step::step_failed(&err.to_string());
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

    /// The token the step writes and pushes with now.
    fn token(&self) -> String {
        self.token
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Acting as a GitHub App, mints its installation token again when it expires within
    /// [`app::REFRESH_MARGIN`]: the new token and its JWT join the redactor first, then the API
    /// client and the pushes use it. Called before every write that may come late in a long
    /// step (the status comment, the push, the pull request). A refused mint is logged and the
    /// token in use kept: it may still be valid for the write at hand.
    pub(super) async fn keep_token_fresh(&self) {
        let Some(keeper) = &self.keeper else {
            return;
        };
        let fresh = match keeper.refresh_if_needed(std::time::SystemTime::now()).await {
            Ok(Some(fresh)) => fresh,
            Ok(None) => return,
            Err(err) => {
                tracing::warn!(
                    "minting the GitHub App's token again: {err}; keeping the current one"
                );
                return;
            }
        };
        self.redactor.learn(fresh.as_secret_env());
        if let Err(err) = self.api.set_token(&fresh.token) {
            tracing::warn!("the GitHub App's new token: {err}; keeping the current one");
            return;
        }
        *self
            .token
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = fresh.token;
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
}

/// The host of an http(s) URL, without port or path.
fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split('/').next().unwrap_or(rest);
    authority
        .rsplit_once(':')
        .map_or(authority, |(host, _)| host)
}

fn internal(err: impl std::fmt::Display) -> SessionError {
    SessionError::Internal(err.to_string())
}
