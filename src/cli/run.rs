//! `meta-agent run` and `meta-agent resume`: wire the engine to the real repository, runner,
//! builder, hindsight and telemetry, then render what the run produced.
//!
//! Every run writes its files to its session directory (`.git/meta-agent/sessions/<id>/`):
//! `state.json` (for resume), `trace.jsonl`, `audit.jsonl`, `metrics.prom`, `report.md` and
//! `outcome.json`. With `--json`, events stream to stdout as JSON lines and the last line is the
//! outcome object.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{CliError, Done};
use crate::agent::{AgentBuilder, AgentParts, AgentSettings, CommandSettings};
use crate::config::Config;
use crate::config::raw::LlmProvider;
use crate::engine::improve::HindsightView;
use crate::engine::run::{Engine, RunReport, StartOptions, new_session_id};
use crate::engine::scripted::{Offline, ScriptedBuilder};
use crate::engine::state::SessionStore;
use crate::exec::Executor;
use crate::exec::sandbox::Isolation;
use crate::exit::Outcome;
use crate::gates::summary;
use crate::git::{Git2Repository, Identity, Repository};
use crate::llm::{LlmConfig, LlmEnv, RetryPolicy, connect};
use crate::policy::Policy;
use crate::protocol::builder::{ActReport, ActRequest, BuildError, Builder};
use crate::protocol::event::{EventSink, Fanout, TracingSink};
use crate::protocol::records::RunOutcome;
use crate::protocol::task::Task;
use crate::redact::Redactor;
use crate::telemetry::{AuditLog, JsonLines, MetricsSink, SystemClock, TraceFile};

/// `meta-agent run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// A YAML task file: title, requirements, acceptance, issue, optional scripted edits.
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "text",
        required_unless_present = "text"
    )]
    pub task: Option<PathBuf>,
    /// The task as text (first line is the title).
    #[arg(long, value_name = "TEXT")]
    pub text: Option<String>,
    /// Change nothing outside the working tree: no branch, no commit, no push, no comment; print
    /// the diff, the gates and the commit message or escalation report it would have produced.
    #[arg(long)]
    pub dry_run: bool,
    /// Improve iterations before escalating (default: loop.max_iterations, 3).
    #[arg(long, value_name = "N")]
    pub max_iterations: Option<u32>,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Where `run` and `resume` put what they produce besides the session directory.
#[derive(Debug, clap::Args)]
pub struct OutputArgs {
    /// Stream events as JSON lines; the last line is the outcome.
    #[arg(long)]
    pub json: bool,
    /// Also copy the run's result files (report.md, outcome.json, metrics.prom, trace.jsonl,
    /// audit.jsonl) into this directory: artifacts for any CI (GitLab, Jenkins, Buildkite).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// `meta-agent resume`.
#[derive(Debug, clap::Args)]
pub struct ResumeArgs {
    /// The session to resume (default: the latest).
    pub session: Option<String>,
    /// Guidance for the next plan (resumes a run that awaits guidance or escalated).
    #[arg(long, value_name = "TEXT")]
    pub guidance: Option<String>,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// The files of a run that `--out` copies.
pub const RESULT_FILES: [&str; 5] = [
    "report.md",
    "outcome.json",
    "metrics.prom",
    "trace.jsonl",
    "audit.jsonl",
];

/// Copies the session's result files into `out` (created if missing).
fn export(repo: &Git2Repository, session: &str, out: Option<&Path>) -> Result<(), CliError> {
    let Some(out) = out else {
        return Ok(());
    };
    let dir = SessionStore::for_git_dir(&repo.git_dir()).session_dir(session);
    std::fs::create_dir_all(out)
        .map_err(|err| CliError::Usage(format!("--out {}: {err}", out.display())))?;
    for name in RESULT_FILES {
        let from = dir.join(name);
        if from.exists() {
            std::fs::copy(&from, out.join(name)).map_err(|err| {
                CliError::Internal(format!("{}: {err}", out.join(name).display()))
            })?;
        }
    }
    Ok(())
}

/// What a run needs that `main` does not hold.
pub struct RunContext<'a> {
    pub repo_root: &'a Path,
    pub config: &'a Config,
    /// The run's one policy (built once from the configuration).
    pub policy: &'a Arc<Policy>,
    pub executor: &'a Executor,
    pub parent_env: &'a [(String, String)],
    pub verbose: bool,
}

pub(super) fn open_repo(root: &Path) -> Result<Git2Repository, CliError> {
    Git2Repository::open(root).map_err(|err| {
        CliError::Usage(format!(
            "{}: not a usable git repository: {err}",
            root.display()
        ))
    })
}

/// The task with the bot's secrets taken out of every text: it feeds prompts, branch names,
/// commit messages and reports, all outbound.
pub(super) fn redacted_task(mut task: Task, redactor: &Redactor) -> Task {
    let clean = |text: &str| redactor.redact_text(text).into_owned();
    task.title = clean(&task.title);
    task.requirements = clean(&task.requirements);
    task.acceptance = task.acceptance.iter().map(|item| clean(item)).collect();
    task.guidance = task.guidance.iter().map(|item| clean(item)).collect();
    task.thread = clean(&task.thread);
    task
}

/// Starts a new run.
pub async fn run(ctx: RunContext<'_>, args: &RunArgs) -> Result<Done, CliError> {
    let task = match (&args.task, &args.text) {
        (Some(path), _) => Task::from_file(path),
        (None, Some(text)) => Task::from_text(text),
        (None, None) => return Err(CliError::Usage("give --task FILE or --text TEXT".into())),
    }
    .map_err(|err| CliError::Usage(err.to_string()))?;
    let task = redacted_task(task, &Redactor::from_env(ctx.parent_env.iter().cloned()));
    let repo = open_repo(ctx.repo_root)?;
    if !repo
        .changed_files()
        .map_err(|err| CliError::Internal(err.to_string()))?
        .is_empty()
    {
        return Err(CliError::Usage(format!(
            "{} has uncommitted changes: commit or stash them first, so the bot's change stays its own",
            ctx.repo_root.display()
        )));
    }
    let session = new_session_id();
    let options = StartOptions {
        session: session.clone(),
        dry_run: args.dry_run,
        max_iterations: args
            .max_iterations
            .unwrap_or(ctx.config.loop_.max_iterations),
    };
    let builder = builder_for(&ctx, &task)?;
    let done = drive(
        &ctx,
        &repo,
        &builder,
        &session,
        args.output.json,
        move |engine| Box::pin(engine.start(task, options)),
    )
    .await?;
    export(&repo, &session, args.output.out.as_deref())?;
    Ok(done)
}

/// Resumes a session.
pub async fn resume(ctx: RunContext<'_>, args: &ResumeArgs) -> Result<Done, CliError> {
    let repo = open_repo(ctx.repo_root)?;
    let sessions = SessionStore::for_git_dir(&repo.git_dir());
    let state = sessions
        .load(args.session.as_deref())
        .map_err(|err| CliError::Usage(err.to_string()))?;
    let builder = builder_for(&ctx, &state.task)?;
    let session = state.session.clone();
    let guidance = args.guidance.clone();
    let id = session.clone();
    let done = drive(
        &ctx,
        &repo,
        &builder,
        &session,
        args.output.json,
        move |engine| Box::pin(async move { engine.resume(Some(&id), guidance).await }),
    )
    .await?;
    export(&repo, &session, args.output.out.as_deref())?;
    Ok(done)
}

/// The builder for `task`: its scripted edits when it has them, the LLM agent when a provider
/// is configured, offline otherwise. Keys come from the parent's environment, read here only.
pub(super) fn builder_for(ctx: &RunContext<'_>, task: &Task) -> Result<TaskBuilder, CliError> {
    if !task.script.is_empty() || ctx.config.llm.provider == LlmProvider::None {
        return Ok(TaskBuilder::for_task(task));
    }
    let env = LlmEnv::from_lookup(&ctx.config.llm, |name| {
        ctx.parent_env
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.clone())
    });
    let redactor = Arc::new(Redactor::from_env(ctx.parent_env.iter().cloned()));
    let llm = LlmConfig::from_settings(&ctx.config.llm, &env).with_redactor(redactor);
    let provider =
        connect(&llm, RetryPolicy::default()).map_err(|err| CliError::Usage(err.to_string()))?;
    let sandbox = &ctx.config.sandbox;
    let command = CommandSettings {
        kill_grace: sandbox.kill_grace,
        output_cap: usize::try_from(sandbox.output_cap).unwrap_or(usize::MAX),
        env_allow: sandbox.env_allow.clone(),
        isolation: Isolation::strict(),
        ..CommandSettings::default()
    };
    let agent = AgentBuilder::new(AgentParts {
        provider,
        caps: llm.budget,
        runner: ctx.executor.clone(),
        parent_env: ctx.parent_env.to_vec(),
        settings: AgentSettings {
            policy: ctx.policy.clone(),
            ..AgentSettings::from_llm(&llm, command)
        },
    });
    Ok(TaskBuilder::Agent(Arc::new(agent)))
}

/// The builder a run uses: scripted edits when the task has them, the LLM agent when a provider
/// is configured, otherwise offline.
#[derive(Debug, Clone)]
pub enum TaskBuilder {
    Offline(Offline),
    Scripted(ScriptedBuilder),
    /// The LLM agent, when a provider is configured.
    Agent(Arc<AgentBuilder<crate::llm::AnyProvider, Executor>>),
}

impl TaskBuilder {
    /// Scripted when the task carries edits, offline otherwise.
    pub fn for_task(task: &Task) -> TaskBuilder {
        if task.script.is_empty() {
            TaskBuilder::Offline(Offline)
        } else {
            TaskBuilder::Scripted(ScriptedBuilder::new(task.script.clone()))
        }
    }
}

impl Builder for TaskBuilder {
    fn available(&self, call_index: u32) -> bool {
        match self {
            TaskBuilder::Offline(builder) => builder.available(call_index),
            TaskBuilder::Scripted(builder) => builder.available(call_index),
            TaskBuilder::Agent(builder) => builder.available(call_index),
        }
    }

    async fn act(&self, request: ActRequest<'_>) -> Result<ActReport, BuildError> {
        match self {
            TaskBuilder::Offline(builder) => builder.act(request).await,
            TaskBuilder::Scripted(builder) => builder.act(request).await,
            TaskBuilder::Agent(builder) => builder.act(request).await,
        }
    }
}

pub(super) type RunFuture<'f> = std::pin::Pin<
    Box<
        dyn std::future::Future<Output = Result<RunReport, crate::engine::run::EngineError>>
            + Send
            + 'f,
    >,
>;

/// Sets up the engine and its sinks, runs `body`, writes the session files and renders.
async fn drive<'c, F>(
    ctx: &RunContext<'c>,
    repo: &Git2Repository,
    builder: &TaskBuilder,
    session: &str,
    json: bool,
    body: F,
) -> Result<Done, CliError>
where
    F: for<'e> FnOnce(&'e Engine<'e, Executor, Git2Repository, TaskBuilder>) -> RunFuture<'e>,
{
    drive_report(ctx, repo, builder, session, json, body)
        .await
        .map(|(_, done)| done)
}

/// [`drive`], keeping the run's report for the caller (the GitHub step publishes from it).
pub(super) async fn drive_report<'c, F>(
    ctx: &RunContext<'c>,
    repo: &Git2Repository,
    builder: &TaskBuilder,
    session: &str,
    json: bool,
    body: F,
) -> Result<(RunReport, Done), CliError>
where
    F: for<'e> FnOnce(&'e Engine<'e, Executor, Git2Repository, TaskBuilder>) -> RunFuture<'e>,
{
    let isolation = crate::exec::detect::detect().describe();
    tracing::info!("isolation available here: {isolation}");
    let redactor = Arc::new(Redactor::from_env(ctx.parent_env.iter().cloned()));
    let sessions = SessionStore::for_git_dir(&repo.git_dir()).with_redactor(redactor.clone());
    let dir = sessions.session_dir(session);
    std::fs::create_dir_all(&dir)
        .map_err(|err| CliError::Internal(format!("{}: {err}", dir.display())))?;
    let sinks = Sinks::open(&dir, json, redactor.clone())?;
    let reviewed_rev = repo
        .default_branch()
        .ok()
        .flatten()
        .unwrap_or_else(|| "HEAD".to_owned());
    let reviewed_blob = |path: &Path| -> Option<Vec<u8>> {
        repo.read_blob(&reviewed_rev, &path.to_string_lossy())
            .ok()
            .flatten()
    };
    let hindsight = HindsightView::load(
        ctx.repo_root,
        &ctx.config.hindsight.path,
        ctx.config.hindsight.catalog,
        &reviewed_blob,
    )
    .map_err(|err| CliError::Internal(format!("hindsight store: {err}")))?
    .with_redactor(redactor.clone());
    let report_root = tempfile::Builder::new()
        .prefix("meta-agent-reports-")
        .tempdir()
        .map_err(|err| CliError::Internal(err.to_string()))?;
    let fanout = sinks.fanout();
    let engine = Engine {
        config: ctx.config,
        policy: ctx.policy,
        runner: ctx.executor,
        repo,
        builder,
        events: &fanout,
        sessions: &sessions,
        hindsight: &hindsight,
        parent_env: ctx.parent_env,
        report_root: report_root.path(),
        identity: Identity::default(),
    };
    let report = body(&engine)
        .await
        .map_err(|err| CliError::Internal(err.to_string()))?;
    sinks.finish(&dir, ctx.config, session)?;
    let rendered = redactor
        .redact_text(&render(&report, ctx.verbose))
        .into_owned();
    write_file(&dir.join("report.md"), &rendered)?;
    let mut outcome = outcome_json(&report);
    outcome["isolation"] = serde_json::Value::String(isolation);
    let outcome = redactor.redact_text(&format!("{outcome}\n")).into_owned();
    write_file(&dir.join("outcome.json"), &outcome)?;
    let stdout = if json { outcome } else { rendered };
    let done = Done {
        stdout,
        outcome: exit_outcome(&report),
    };
    Ok((report, done))
}

/// The event sinks of a run.
struct Sinks {
    trace: TraceFile,
    audit: AuditLog,
    metrics: MetricsSink,
    json: Option<JsonLines<std::io::Stdout>>,
}

impl Sinks {
    fn open(dir: &Path, json: bool, redactor: Arc<Redactor>) -> Result<Sinks, CliError> {
        let clock = Arc::new(SystemClock);
        let internal = |err: crate::telemetry::TelemetryError| CliError::Internal(err.to_string());
        Ok(Sinks {
            trace: TraceFile::open(&dir.join("trace.jsonl"), clock.clone(), redactor.clone())
                .map_err(internal)?,
            audit: AuditLog::open(&dir.join("audit.jsonl"), clock, redactor.clone())
                .map_err(internal)?,
            metrics: MetricsSink::new(redactor.clone()),
            json: json.then(|| JsonLines::new(std::io::stdout(), "stdout", redactor)),
        })
    }

    fn fanout(&self) -> Fanout<'_> {
        let mut sinks: Vec<&dyn EventSink> =
            vec![&TracingSink, &self.trace, &self.audit, &self.metrics];
        if let Some(json) = &self.json {
            sinks.push(json);
        }
        Fanout { sinks }
    }

    /// Writes `metrics.prom`, and pushes the metrics when a gateway is configured (a failed push
    /// is a warning, not a failure of the run).
    fn finish(&self, dir: &Path, config: &Config, session: &str) -> Result<(), CliError> {
        self.metrics
            .write_prometheus(&dir.join("metrics.prom"))
            .map_err(|err| CliError::Internal(err.to_string()))?;
        if let Some(gateway) = &config.telemetry.push_gateway {
            let body = self.metrics.push_body();
            let timeout = std::time::Duration::from_secs(10);
            if let Err(err) = crate::telemetry::push(gateway, session, &body, timeout) {
                tracing::warn!("{err}");
            }
        }
        Ok(())
    }
}

fn write_file(path: &Path, text: &str) -> Result<(), CliError> {
    crate::engine::state::write_atomic(path, text.as_bytes())
        .map_err(|err| CliError::Internal(err.to_string()))
}

fn exit_outcome(report: &RunReport) -> Outcome {
    match report.state.outcome {
        Some(RunOutcome::Committed) | Some(RunOutcome::NothingToDo) => Outcome::Success,
        Some(RunOutcome::Escalated) => Outcome::Escalated,
        Some(RunOutcome::Failed) | None => Outcome::GatesFailed,
    }
}

/// The outcome object (`--json`'s last line, and `outcome.json`).
pub fn outcome_json(report: &RunReport) -> serde_json::Value {
    let state = &report.state;
    serde_json::json!({
        "outcome": state.outcome.as_ref().map_or("failed", |o| o.as_str()),
        "iterations": state.iterations_run(),
        "llm_calls": state.usage.llm_calls,
        "session": state.session,
        "branch": state.branch,
        "commit": report.commit,
        "dry_run": state.dry_run,
        "gates": crate::engine::outcome::gates_trailer(&state.gates),
        "flaky": state.flaky,
        "refused_changes": state.tamper,
    })
}

/// What a person reads at the end: summary, and in a dry run the diff; the gates; the commit
/// message or the escalation report.
fn render(report: &RunReport, verbose: bool) -> String {
    let mut out = crate::engine::outcome::final_summary(&report.state, verbose);
    if report.state.dry_run && !report.diff.is_empty() {
        out.push_str("\n--- diff (dry run: not committed) ---\n");
        out.push_str(&report.diff);
    }
    if let Some(gates) = &report.gates {
        out.push_str("\n--- gates ---\n");
        out.push_str(&summary::to_terminal(gates));
    }
    if let Some(message) = &report.commit_message {
        let label = if report.state.dry_run {
            "commit message (dry run: not committed)"
        } else {
            "commit message"
        };
        out.push_str(&format!("\n--- {label} ---\n{message}"));
    }
    if let Some(escalation) = &report.escalation {
        out.push_str(&format!("\n--- escalation report ---\n{escalation}"));
    }
    out
}
