//! One evaluation run: a fresh temporary clone of the task's source, its setup, the real engine
//! driven exactly as `meta-agent run` drives it ([`super::super::run::drive`]), then the
//! graders. Anything that fails before the engine starts makes the run an `error`, never a
//! `fail`. The clone is removed afterwards; the diff is kept in the output directory.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use super::EvalShared;
use super::graders::{GradeInput, grade_all};
use crate::config::{Config, GateCommand, SetupCommand};
use crate::engine::run::{RunReport, StartOptions, new_session_id};
use crate::eval::grade;
use crate::eval::results::RunResult;
use crate::eval::suite::TaskSpec;
use crate::gates::GateRunContext;
use crate::git::Git2Repository;
use crate::git::workspace;
use crate::policy::Policy;
use crate::protocol::task::Task;
use crate::session::builder::builder_for;
use crate::session::prepared::load_config;
use crate::session::run::{Begin, RunContext, drive, open_repo, redacted_task};
use crate::session::{Overrides, SessionError};

/// How long a setup command may run.
const SETUP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20 * 60);

/// Runs task `task`'s run number `run` and grades it.
pub async fn run_one(shared: &EvalShared<'_>, task: &TaskSpec, run: u32) -> RunResult {
    let started = Instant::now();
    let elapsed = || started.elapsed().as_secs_f64();
    let scratch = match tempfile::Builder::new()
        .prefix("meta-agent-eval-")
        .tempdir()
    {
        Ok(dir) => dir,
        Err(err) => {
            return RunResult::error(
                &task.id,
                run,
                format!("scratch directory: {err}"),
                elapsed(),
            );
        }
    };
    let prepared = match prepare(shared, task, scratch.path()).await {
        Ok(prepared) => prepared,
        Err(why) => return RunResult::error(&task.id, run, why.to_string(), elapsed()),
    };
    let engine_started = Instant::now();
    let report = match engine(shared, task, &prepared).await {
        Ok(report) => report,
        Err(err) => {
            return RunResult::error(
                &task.id,
                run,
                format!("the engine could not run: {err}"),
                elapsed(),
            );
        }
    };
    let engine_s = engine_started.elapsed().as_secs_f64();
    let diff = result_diff(&prepared, &report);
    save_diff(shared.out, &task.id, run, &diff);
    let details = grade_all(
        shared,
        &GradeInput {
            suite: shared.suite,
            task,
            report: &report,
            diff: &diff,
            work: &prepared.work,
            base: &prepared.base,
            config: &prepared.config,
        },
    )
    .await;
    result(task, run, &report, details, elapsed(), engine_s)
}

fn result(
    task: &TaskSpec,
    run: u32,
    report: &RunReport,
    details: Vec<grade::GraderDetail>,
    wall_s: f64,
    engine_s: f64,
) -> RunResult {
    let usage = &report.state.usage;
    RunResult {
        task: task.id.clone(),
        run,
        outcome: report
            .state
            .outcome
            .as_ref()
            .map_or("failed", |o| o.as_str())
            .to_owned(),
        grade: grade::overall(&details),
        grader_details: details,
        llm_calls: usage.llm_calls,
        prompt_tokens: usage.input_tokens,
        completion_tokens: usage.output_tokens,
        cost_usd: usage.cost_usd,
        wall_s,
        overhead_s: (wall_s - engine_s).max(0.0),
        note: report
            .escalation()
            .map(|text| crate::report::trim_to(&text, 1500)),
    }
}

/// A clone ready for the engine: its root, configuration and policy.
pub(super) struct PreparedClone {
    pub work: PathBuf,
    /// The commit the run started from.
    pub base: String,
    pub config: Config,
    pub policy: Arc<Policy>,
}

/// Why a task's clone could not be prepared: the run is then an `error` (the task's setup, not
/// the engine, failed), with this as its reason.
#[derive(Debug, thiserror::Error)]
pub(super) enum PrepareError {
    #[error("the task has no source")]
    NoSource,
    #[error("source: {0}")]
    Source(#[source] crate::git::GitError),
    #[error("config: {0}")]
    InlineConfig(#[source] serde_yaml::Error),
    #[error("config: {0}")]
    Scratch(#[source] std::io::Error),
    #[error("configuration: {0}")]
    Configuration(#[source] SessionError),
    #[error("no gates to verify a change with: {0}")]
    NoGates(String),
    #[error("{0}")]
    Setup(crate::gates::setup::SetupFailure),
}

/// Clones the source, loads the task's configuration and runs its setup.
async fn prepare(
    shared: &EvalShared<'_>,
    task: &TaskSpec,
    scratch: &Path,
) -> Result<PreparedClone, PrepareError> {
    let work = scratch.join("work");
    let suite = shared.suite;
    let base = match (&task.source.dir, &task.source.git) {
        (Some(dir), _) => workspace::init_from_dir(&suite.resolve(dir), &work),
        (None, Some(git)) => workspace::clone_at(
            &suite.git_location(git),
            task.source.commit.as_deref(),
            &work,
        ),
        (None, None) => return Err(PrepareError::NoSource),
    }
    .map_err(PrepareError::Source)?;
    let config = task_config(shared, task, scratch, &work).await?;
    let policy = Arc::new(Policy::from_config(&config, &work));
    setup(shared, task, &work, &config, &policy).await?;
    Ok(PreparedClone {
        work,
        base,
        config,
        policy,
    })
}

/// The configuration of a run: the task's (inline or file) or the source's own, with the
/// command line's LLM flags, the task's replay transcript and budget.
async fn task_config(
    shared: &EvalShared<'_>,
    task: &TaskSpec,
    scratch: &Path,
    work: &Path,
) -> Result<Config, PrepareError> {
    let explicit = match (&task.config, &task.config_file) {
        (Some(inline), _) => {
            let path = scratch.join("eval-config.yml");
            let text = serde_yaml::to_string(inline).map_err(PrepareError::InlineConfig)?;
            std::fs::write(&path, text).map_err(PrepareError::Scratch)?;
            Some(path)
        }
        (None, Some(file)) => Some(shared.suite.resolve(file)),
        (None, None) => None,
    };
    let overrides = Overrides {
        repo: work.to_owned(),
        config: explicit,
        ..shared.overrides.clone()
    };
    let mut config = load_config(&overrides, work, shared.executor, shared.env)
        .await
        .map_err(PrepareError::Configuration)?;
    if let Some(replay) = &task.replay {
        config.llm.provider = crate::config::raw::LlmProvider::Replay;
        config.llm.replay = Some(shared.suite.resolve(replay).to_string_lossy().into_owned());
    }
    if let Some(budget) = task.budget_usd.or(shared.suite.file.defaults.budget_usd) {
        config.llm.max_cost_usd = Some(budget);
    }
    if config.gates.is_empty() {
        return Err(PrepareError::NoGates(config.preset_reason.clone()));
    }
    Ok(config)
}

/// The configuration's setup and then the task's, network on; the first failure is the error.
pub(super) async fn setup(
    shared: &EvalShared<'_>,
    task: &TaskSpec,
    work: &Path,
    config: &Config,
    policy: &Policy,
) -> Result<(), PrepareError> {
    let mut commands = config.setup.clone();
    commands.extend(task.setup.iter().map(|line| SetupCommand {
        command: GateCommand::Shell(line.clone()),
        workdir: PathBuf::new(),
        timeout: SETUP_TIMEOUT,
        env: Default::default(),
        credentials: Vec::new(),
    }));
    if commands.is_empty() {
        return Ok(());
    }
    let reports = tempfile::tempdir().map_err(PrepareError::Scratch)?;
    let ctx = GateRunContext {
        repo_root: work,
        parent_env: &shared.env.vars,
        sandbox: &config.sandbox,
        policy,
        report_root: reports.path(),
        limits: crate::report::Limits::default(),
        concurrency: 1,
        runner: shared.executor,
        events: &crate::protocol::event::TracingSink,
        deadline: Default::default(),
    };
    crate::gates::setup::run_setup(&ctx, &commands)
        .await
        .map_err(PrepareError::Setup)
}

/// The engine on the clone, as `meta-agent run` drives it.
async fn engine(
    shared: &EvalShared<'_>,
    task: &TaskSpec,
    prepared: &PreparedClone,
) -> Result<RunReport, SessionError> {
    let input = match (&task.task, &task.task_file) {
        (_, Some(file)) => Task::from_file(&shared.suite.resolve(file)),
        (Some(text), None) => Task::from_text(text),
        (None, None) => return Err(SessionError::Usage(format!("task {}: no task", task.id))),
    }
    .map_err(|err| SessionError::Usage(err.to_string()))?;
    let input = redacted_task(input, &shared.env.redactor);
    let repo: Git2Repository = open_repo(&prepared.work)?;
    let ctx = RunContext {
        repo_root: &prepared.work,
        config: &prepared.config,
        policy: &prepared.policy,
        executor: shared.executor,
        env: shared.env,
        verbose: false,
        deadline: crate::protocol::deadline::Deadline::after(prepared.config.loop_.wall_clock),
        interrupt: crate::protocol::interrupt::Interrupt::never(),
        // The evaluation's own clone is the work place.
        worktree: None,
        holds_before_push: false,
        instructions: std::sync::Arc::new(crate::session::run::read_instructions(
            &repo,
            &prepared.base,
            "the evaluation's base commit",
        )),
    };
    let builder = builder_for(&ctx, &input, crate::session::builder::KeyNeed::Now)?;
    let options = StartOptions {
        session: new_session_id(),
        dry_run: false,
        max_iterations: task
            .max_iterations
            .or(shared.suite.file.defaults.max_iterations)
            .unwrap_or(prepared.config.loop_.max_iterations),
        snapshot: None,
    };
    let begin = Begin::Start {
        task: Box::new(input),
        options,
    };
    let (report, _) = drive(&ctx, &repo, &builder, begin, false, None).await?;
    Ok(report)
}

/// Everything the run changed: its commits since the base, and what it left uncommitted.
fn result_diff(prepared: &PreparedClone, report: &RunReport) -> String {
    use crate::git::Repository;
    let committed = Git2Repository::open(&prepared.work)
        .and_then(|repo| repo.diff_between(&prepared.base, "HEAD"))
        .unwrap_or_else(|err| {
            tracing::warn!("the diff of the run's commits: {err}");
            String::new()
        });
    format!("{committed}{}", report.diff)
}

/// Keeps the run's diff in `out/diffs/` for reviewers (a failure to write is logged).
fn save_diff(out: &Path, task: &str, run: u32, diff: &str) {
    let dir = out.join("diffs");
    let written = std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(dir.join(diff_name(task, run)), diff));
    if let Err(err) = written {
        tracing::warn!("cannot keep the diff of {task} run {run}: {err}");
    }
}

pub use crate::protocol::eval::diff_name;
