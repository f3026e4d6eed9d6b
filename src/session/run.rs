//! `meta-agent run` and `meta-agent resume`: wire the engine to the real repository, runner,
//! builder, hindsight and telemetry, then render what the run produced. A local run works in its
//! own linked worktree ([`super::worktree`]), outside the user's checkout ([`super::places`]),
//! from the user's uncommitted work ([`super::start`]), holding its session's lock
//! ([`super::lock`]) throughout.
//!
//! Every run writes its files to its session directory (`.git/meta-agent/sessions/<id>/`):
//! `state.json` (for resume), `trace.jsonl`, `audit.jsonl`, `metrics.prom`, `report.md`,
//! `report.html` and `outcome.json`. With `--json`, events stream to stdout as JSON lines and the last line is the
//! outcome object.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::builder::{KeyNeed, TaskBuilder, builder_for};
use super::display::Display;
use super::lock::{LockError, SessionLock};
use super::places::Places;
use super::sinks::Sinks;
use super::start::StartRequest;
use super::worktree;
use super::{Done, Environment, Overrides, Prepared, SessionError};
use crate::config::Config;
use crate::engine::improve::HindsightView;
use crate::engine::run::{
    Engine, EngineError, ResumeOptions, RunReport, StartOptions, new_session_id,
};
use crate::engine::state::SessionStore;
use crate::exec::Executor;
use crate::exit::Outcome;
use crate::git::{Git2Repository, Identity, Repository, SessionWorktree};
use crate::policy::Policy;
use crate::protocol::deadline::Deadline;
use crate::protocol::event::EventSink;
use crate::protocol::interrupt::Interrupt;
use crate::protocol::records::{RunOutcome, UserSnapshot};
use crate::protocol::task::Task;
use crate::redact::Redactor;

/// Where a new run's task comes from.
#[derive(Debug, Clone)]
pub enum TaskInput {
    /// A YAML task file.
    File(PathBuf),
    /// A line (or more) of text; the first line is the title.
    Text(String),
}

/// Where `run` and `resume` put what they produce besides the session directory.
#[derive(Debug, Clone, Default)]
pub struct Output {
    /// Stream events as JSON lines; the last line is the outcome.
    pub json: bool,
    /// Also copy the run's result files here.
    pub out: Option<PathBuf>,
}

/// What `meta-agent run` was asked.
#[derive(Debug, Clone)]
pub struct RunRequest {
    pub task: TaskInput,
    pub dry_run: bool,
    /// `--from-head`: start from `HEAD` alone, leaving the uncommitted work out.
    pub from_head: bool,
    /// Improve iterations before escalating (default: `loop.max_iterations`).
    pub max_iterations: Option<u32>,
    pub output: Output,
}

/// What `meta-agent resume` was asked.
#[derive(Debug, Clone)]
pub struct ResumeRequest {
    /// The session to resume (default: the latest).
    pub session: Option<String>,
    /// Guidance for the next plan.
    pub guidance: Option<String>,
    /// Pause again at the next arrival at the location the run paused at.
    pub step: bool,
    pub output: Output,
}

/// How the engine begins: a new session, or one resumed.
#[derive(Debug)]
pub enum Begin {
    Start {
        task: Box<Task>,
        options: StartOptions,
    },
    Resume {
        session: String,
        options: ResumeOptions,
    },
}

impl Begin {
    /// The session this run is (or resumes).
    pub fn session(&self) -> &str {
        match self {
            Begin::Start { options, .. } => &options.session,
            Begin::Resume { session, .. } => session,
        }
    }

    async fn drive<B: crate::protocol::builder::Builder>(
        self,
        engine: &Engine<'_, Executor, Git2Repository, B>,
    ) -> Result<RunReport, EngineError> {
        match self {
            Begin::Start { task, options } => engine.start(*task, options).await,
            Begin::Resume { session, options } => engine.resume(Some(&session), options).await,
        }
    }
}

/// The files of a run that `--out` copies (the memory queue only when the database was
/// unreachable).
pub const RESULT_FILES: [&str; 8] = [
    crate::protocol::pause::context::CONTEXT_FILE,
    "report.md",
    "report.html",
    "outcome.json",
    "metrics.prom",
    "trace.jsonl",
    "audit.jsonl",
    crate::memory::journal::PENDING_FILE,
];

/// Copies the session's result files into `out` (created if missing).
pub(super) fn export(
    repo: &Git2Repository,
    session: &str,
    out: Option<&Path>,
) -> Result<(), SessionError> {
    let Some(out) = out else {
        return Ok(());
    };
    let dir = SessionStore::for_git_dir(&repo.git_dir()).session_dir(session);
    std::fs::create_dir_all(out)
        .map_err(|err| SessionError::Usage(format!("--out {}: {err}", out.display())))?;
    for name in RESULT_FILES {
        let from = dir.join(name);
        if from.exists() {
            std::fs::copy(&from, out.join(name)).map_err(|err| {
                SessionError::Internal(format!("{}: {err}", out.join(name).display()))
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
    pub env: &'a Environment,
    pub verbose: bool,
    /// The run's one deadline: `loop.wall_clock` from now (less what a resumed session spent).
    pub deadline: Deadline,
    /// SIGTERM/SIGINT: the engine pauses, the running command is stopped
    /// ([`super::signals`]).
    pub interrupt: Interrupt,
    /// A local run's own worktree ([`super::worktree`]); `None` on GitHub, which works in the
    /// job's checkout.
    pub worktree: Option<&'a Path>,
    /// The repository's instructions for agents, read from the run's trusted tree (the base
    /// commit locally, the default or base branch on GitHub); none until read.
    pub instructions: Arc<crate::agent::instructions::RepoInstructions>,
    /// Whether the run's verified commit can be held before its push (`before_push`): a GitHub
    /// run that pushes and has the run's files to hold it in. Elsewhere `before_push` rules are
    /// left out (a local run never pushes).
    pub holds_before_push: bool,
}

impl Prepared {
    /// The context of a run of this preparation.
    pub fn context(&self, verbose: bool) -> RunContext<'_> {
        RunContext {
            repo_root: &self.repo,
            config: &self.config,
            policy: &self.policy,
            executor: &self.executor,
            env: &self.env,
            verbose,
            deadline: Deadline::after(self.config.loop_.wall_clock),
            interrupt: super::signals::interrupt(),
            worktree: None,
            instructions: Arc::new(crate::agent::instructions::RepoInstructions::none()),
            holds_before_push: false,
        }
    }
}

pub(super) fn open_repo(root: &Path) -> Result<Git2Repository, SessionError> {
    Git2Repository::open(root).map_err(|err| {
        SessionError::Usage(format!(
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

/// Starts a new run, in a new linked worktree of the checkout at `--repo`, outside it
/// ([`super::places`]), from `HEAD` and the user's uncommitted work ([`super::start`]): the
/// user's branch, index and files are never touched.
pub async fn run(
    overrides: &Overrides,
    env: &Environment,
    request: &RunRequest,
) -> Result<Done, SessionError> {
    let task = match &request.task {
        TaskInput::File(path) => Task::from_file(path),
        TaskInput::Text(text) => Task::from_text(text),
    }
    .map_err(|err| SessionError::Usage(err.to_string()))?;
    let task = redacted_task(task, &env.redactor);
    let checkout = open_repo(&super::prepared::repo_root(overrides)?)?;
    let places = places_of(overrides, env, &checkout)?;
    let session = new_session_id();
    let lock = lock(&checkout, &session)?;
    let (place, snapshot) = new_worktree(&checkout, &places, &session, request.from_head, env)?;
    let begin = |ctx: &RunContext<'_>| {
        let options = StartOptions {
            session: session.clone(),
            dry_run: request.dry_run,
            max_iterations: request
                .max_iterations
                .unwrap_or(ctx.config.loop_.max_iterations),
            snapshot: snapshot.clone(),
        };
        let builder = builder_for(ctx, &task, KeyNeed::Now)?;
        let begin = Begin::Start {
            task: Box::new(task.clone()),
            options,
        };
        Ok((builder, begin))
    };
    let plan = WorktreeRun {
        session: &session,
        base: None,
        checkout: checkout.workdir(),
        git_dir: checkout.git_dir(),
        worktrees: places.root.clone(),
        spent: std::time::Duration::ZERO,
        output: &request.output,
    };
    let done = in_worktree(overrides, env, place, plan, begin).await;
    drop(lock);
    done
}

/// The worktree of new session `session`, at the run's starting point (with the user's
/// uncommitted work unless `from_head`), and that work's snapshot.
fn new_worktree(
    checkout: &Git2Repository,
    places: &Places,
    session: &str,
    from_head: bool,
    env: &Environment,
) -> Result<(SessionWorktree, Option<UserSnapshot>), SessionError> {
    let request = StartRequest {
        from_head,
        session,
        redactor: &env.redactor,
    };
    let start = super::start::starting_point(checkout, request)?;
    places.create()?;
    let path = places.session(session);
    let place = SessionWorktree::add(&checkout.workdir(), session, &start.commit, &path)
        .map_err(|err| SessionError::Internal(err.to_string()))?;
    Ok((place, start.snapshot))
}

/// Where the worktrees of the repository at `checkout` live (`--worktrees-dir`, or the default).
fn places_of(
    overrides: &Overrides,
    env: &Environment,
    checkout: &Git2Repository,
) -> Result<Places, SessionError> {
    Ok(Places::for_checkout(
        overrides.worktrees_dir.as_deref(),
        env,
        &checkout.workdir(),
        &checkout.git_dir(),
    )?)
}

/// Marks session `session` of `checkout` in use for as long as the lock lives.
fn lock(checkout: &Git2Repository, session: &str) -> Result<SessionLock, SessionError> {
    let dir = SessionStore::for_git_dir(&checkout.git_dir()).session_dir(session);
    SessionLock::acquire(&dir).map_err(|err| match err {
        LockError::InUse { .. } => SessionError::Usage(err.to_string()),
        LockError::Io { .. } => SessionError::Internal(err.to_string()),
    })
}

/// Resumes a session, in its worktree.
pub async fn resume(
    overrides: &Overrides,
    env: &Environment,
    request: &ResumeRequest,
) -> Result<Done, SessionError> {
    let checkout = open_repo(&super::prepared::repo_root(overrides)?)?;
    let sessions = SessionStore::for_git_dir(&checkout.git_dir());
    let state = sessions
        .load(request.session.as_deref())
        .map_err(|err| SessionError::Usage(err.to_string()))?;
    let lock = lock(&checkout, &state.session)?;
    if state.phase.is_final() && request.guidance.is_none() {
        // A run killed between its commit and its clean-up left a worktree it no longer needs.
        worktree::tidy_ended(&checkout, &state)?;
        let outcome = state.outcome.as_ref().map_or("ended", |o| o.as_str());
        return Err(SessionError::Usage(
            crate::engine::state::SessionStoreError::Ended(
                state.session.clone(),
                outcome.to_owned(),
            )
            .to_string(),
        ));
    }
    let places = places_of(overrides, env, &checkout)?;
    let place = worktree::reopen(&checkout, &state, &places)?;
    let spent = std::time::Duration::from_millis(state.usage.elapsed_ms);
    let begin = |ctx: &RunContext<'_>| {
        let builder = builder_for(ctx, &state.task, KeyNeed::WhenCalled)?;
        let begin = Begin::Resume {
            session: state.session.clone(),
            options: ResumeOptions {
                guidance: request.guidance.clone(),
                step: request.step,
            },
        };
        Ok((builder, begin))
    };
    let plan = WorktreeRun {
        session: &state.session,
        base: Some(&state.base_commit),
        checkout: checkout.workdir(),
        git_dir: checkout.git_dir(),
        worktrees: places.root.clone(),
        spent,
        output: &request.output,
    };
    let done = in_worktree(overrides, env, place, plan, begin).await;
    drop(lock);
    done
}

/// What [`in_worktree`] needs besides the worktree and how the run begins.
struct WorktreeRun<'a> {
    session: &'a str,
    /// The commit a resumed session started from; `None` for a new run, which starts where its
    /// worktree is (`HEAD`, or the snapshot of the user's uncommitted work). The repository's
    /// instructions are read there.
    base: Option<&'a str>,
    /// The user's checkout (a branch with nothing done is deleted there).
    checkout: PathBuf,
    /// The repository's common git directory (its sessions).
    git_dir: PathBuf,
    /// The directory of the bot's worktrees.
    worktrees: PathBuf,
    /// Time a resumed session already spent of `loop.wall_clock`.
    spent: std::time::Duration,
    output: &'a Output,
}

/// Loads the run's preparation from `place`, drives the engine there, and settles the worktree
/// (removed or kept, [`worktree::fate`]) whatever the run's end, an error included.
async fn in_worktree<F>(
    overrides: &Overrides,
    env: &Environment,
    place: SessionWorktree,
    plan: WorktreeRun<'_>,
    begin: F,
) -> Result<Done, SessionError>
where
    F: FnOnce(&RunContext<'_>) -> Result<(TaskBuilder, Begin), SessionError>,
{
    let ran = async {
        let prepared =
            Prepared::load_in_worktree(overrides, env, place.path(), &plan.worktrees).await?;
        let ctx = prepared.context(overrides.verbose);
        let ctx = RunContext {
            deadline: Deadline::after(ctx.config.loop_.wall_clock.saturating_sub(plan.spent)),
            worktree: Some(place.path()),
            ..ctx
        };
        let repo = open_repo(place.path())?;
        let base = match plan.base {
            Some(base) => base.to_owned(),
            None => {
                repo.head()
                    .map_err(|err| SessionError::Internal(err.to_string()))?
                    .commit
            }
        };
        let ctx = RunContext {
            instructions: Arc::new(read_instructions(&repo, &base, "the run's base commit")),
            ..ctx
        };
        let (builder, begin) = begin(&ctx)?;
        let shown = !overrides.quiet && !overrides.verbose;
        let display = shown.then(|| Display::start(env.redactor.clone()));
        let watcher = display.as_ref().map(|display| display as &dyn EventSink);
        let driven = drive(&ctx, &repo, &builder, begin, plan.output.json, watcher).await;
        if let Some(display) = display {
            display.finish();
        }
        let (report, mut done) = driven?;
        export(&repo, plan.session, plan.output.out.as_deref())?;
        if overrides.quiet && !plan.output.json {
            done.stdout = env
                .redactor
                .redact_text(&crate::render::terminal::outcome_line(&report))
                .into_owned();
        }
        Ok::<_, SessionError>(done)
    }
    .await;
    let state = SessionStore::for_git_dir(&plan.git_dir)
        .load(Some(plan.session))
        .ok();
    worktree::settle(place, state.as_ref(), &plan.checkout)?;
    ran
}

/// Sets up the engine and its sinks, begins the run, writes the session files and renders; the
/// run's report is kept for the caller (the GitHub step publishes from it).
pub(super) async fn drive(
    ctx: &RunContext<'_>,
    repo: &Git2Repository,
    builder: &TaskBuilder,
    begin: Begin,
    json: bool,
    watcher: Option<&dyn EventSink>,
) -> Result<(RunReport, Done), SessionError> {
    let session = begin.session().to_owned();
    let isolation = crate::exec::detect::detect().describe();
    tracing::info!("isolation available here: {isolation}");
    let redactor = ctx.env.redactor.clone();
    let sessions = SessionStore::for_git_dir(&repo.git_dir()).with_redactor(redactor.clone());
    let dir = sessions.session_dir(&session);
    std::fs::create_dir_all(&dir)
        .map_err(|err| SessionError::Internal(format!("{}: {err}", dir.display())))?;
    let sinks = Sinks::open(&dir, json, redactor.clone(), ctx)?;
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
    .map_err(|err| SessionError::Internal(format!("hindsight store: {err}")))?
    .with_redactor(redactor.clone());
    let memory = crate::memory::shared::open_for_run(crate::memory::shared::RunSetup {
        config: ctx.config,
        env: &ctx.env.vars,
        repo_root: ctx.repo_root,
        git_dir: &repo.git_dir(),
        store_dir: hindsight.dir.clone(),
        reviewed: hindsight.reviewed_fixes(),
        redactor: redactor.clone(),
    })
    .await;
    let hindsight = hindsight.with_memory(memory);
    let report_root = tempfile::Builder::new()
        .prefix("meta-agent-reports-")
        .tempdir()
        .map_err(|err| SessionError::Internal(err.to_string()))?;
    let mut fanout = sinks.fanout();
    fanout.sinks.extend(watcher);
    // The engine's commands stop on an interruption; the caller's executor (pushing the work
    // kept after one) does not.
    let runner = ctx.executor.interruptible(ctx.interrupt.clone());
    let pauses = crate::protocol::pause::PauseGate::new(pause_rules(ctx));
    let engine = Engine {
        config: ctx.config,
        policy: ctx.policy,
        runner: &runner,
        repo,
        builder,
        events: &fanout,
        sessions: &sessions,
        hindsight: &hindsight,
        parent_env: &ctx.env.vars,
        report_root: report_root.path(),
        identity: Identity::default(),
        deadline: ctx.deadline,
        interrupt: ctx.interrupt.clone(),
        pauses: &pauses,
    };
    let report = begin
        .drive(&engine)
        .await
        .map_err(|err| SessionError::Internal(err.to_string()))?;
    if let Some(memory) = &hindsight.memory {
        memory.finish(&report.state, &dir).await;
    }
    sinks.finish(&dir, &session).await?;
    let rendered = redactor
        .redact_text(&crate::render::terminal::render(&report, ctx.verbose))
        .into_owned();
    let mut outcome = outcome_json(&report);
    outcome["isolation"] = serde_json::Value::String(isolation);
    let mut rendered = rendered;
    if let Some(kept) = ctx
        .worktree
        .filter(|_| worktree::fate(Some(&report.state)) == worktree::Fate::Keep)
    {
        rendered.push_str(&crate::render::local::kept_line(kept, report.state.dry_run));
        outcome["worktree"] = serde_json::Value::String(kept.display().to_string());
    }
    write_file(&dir.join("report.md"), &rendered)?;
    write_html(&dir, &report, &redactor)?;
    let outcome = redactor.redact_text(&format!("{outcome}\n")).into_owned();
    write_file(&dir.join("outcome.json"), &outcome)?;
    let stdout = if json { outcome } else { rendered };
    let done = Done {
        stdout,
        outcome: exit_outcome(&report),
    };
    Ok((report, done))
}

/// The run's pause points: `before_push` only where the commit can be held before its push.
fn pause_rules(ctx: &RunContext<'_>) -> Vec<crate::protocol::pause::Rule> {
    use crate::protocol::pause::Location;
    let (kept, left): (Vec<_>, Vec<_>) = ctx
        .config
        .pause
        .iter()
        .cloned()
        .partition(|rule| rule.at != Location::BeforePush || ctx.holds_before_push);
    for rule in left {
        tracing::info!(
            "pause point `{}` left out: this run pushes nothing it could hold back",
            rule.describe()
        );
    }
    kept
}

/// The repository's instructions for agents in the tree of `rev` (`origin` says where that is);
/// none, with a warning, when the tree cannot be read: the run goes on without them.
pub(super) fn read_instructions(
    repo: &Git2Repository,
    rev: &str,
    origin: &str,
) -> crate::agent::instructions::RepoInstructions {
    match crate::agent::instructions::load(repo, rev, origin) {
        Ok(found) => {
            for file in &found.files {
                tracing::info!("instructions: {} found in {origin}", file.path);
            }
            for skipped in &found.skipped {
                tracing::warn!("instructions: {} not used: {}", skipped.path, skipped.why);
            }
            found
        }
        Err(err) => {
            tracing::warn!("the repository's instructions for agents in {origin}: {err}");
            crate::agent::instructions::RepoInstructions::none()
        }
    }
}

/// `report.html` beside `report.md`, from the report and the session's whole trace (a trace that
/// cannot be read leaves the page without its timeline, with a warning).
fn write_html(dir: &Path, report: &RunReport, redactor: &Redactor) -> Result<(), SessionError> {
    let trace = match crate::replay::source::load(dir) {
        Ok(trace) => trace,
        Err(err) => {
            tracing::warn!("report.html without its timeline: {err}");
            Vec::new()
        }
    };
    let html = crate::render::html::report_html(&crate::render::html::HtmlInput {
        report,
        trace: &trace,
    });
    write_file(&dir.join("report.html"), &redactor.redact_text(&html))
}

fn write_file(path: &Path, text: &str) -> Result<(), SessionError> {
    crate::engine::state::write_atomic(path, text.as_bytes())
        .map_err(|err| SessionError::Internal(err.to_string()))
}

fn exit_outcome(report: &RunReport) -> Outcome {
    match report.state.outcome {
        Some(RunOutcome::Committed) | Some(RunOutcome::NothingToDo) => Outcome::Success,
        Some(RunOutcome::Escalated) => Outcome::Escalated,
        Some(RunOutcome::Interrupted) => Outcome::Interrupted,
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
        "gates": crate::render::outcome::gates_trailer(&state.gates),
        "flaky": state.flaky.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "refused_changes": state.tamper.iter().map(crate::render::refusal::line).collect::<Vec<_>>(),
        "interrupted": state.interrupted,
        "escalation": state.escalation,
        "user_changes": state.snapshot.as_ref().map(|snapshot| serde_json::json!({
            "snapshot": snapshot.commit,
            "head": snapshot.head,
            "paths": snapshot.paths,
        })),
        "bot_changes": crate::render::outcome::bot_changes(state),
    })
}
