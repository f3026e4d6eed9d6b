//! The command line's shape: clap types for the global flags and every subcommand, and nothing
//! else. What each command does lives in the session layer (`crate::session`).
//!
//! Command names and JSON shapes are a contract other tools rely on: `run`, `resume`, `gates`,
//! `github`, `report junit`, `report coverage`, `report sarif`, `config check`, `config schema`,
//! `hindsight ...`, `eval run|grade|merge|compare|mine|schema`, `worktrees list|prune`, `trace show|replay`.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::exec::supervisor::SupervisorArgs;
use crate::session::github::DEFAULT_BOT_LOGIN;
use crate::session::hindsight_cli::HindsightArgs;

/// meta-agent: a CI-native build-test-improve bot. Runs a repository's quality gates, reads what
/// they produce, and only ever reports what the gates verified.
#[derive(Debug, Parser)]
#[command(name = "meta-agent", version, about, max_term_width = 100)]
pub struct Cli {
    /// The repository to work on.
    #[arg(long, global = true, default_value = ".", value_name = "DIR")]
    pub repo: PathBuf,
    /// Configuration file (default: .meta-agent.yml at the repository root, if present).
    #[arg(
        long,
        global = true,
        value_name = "FILE",
        env = "META_AGENT_CONFIG",
        hide_env_values = true
    )]
    pub config: Option<PathBuf>,
    /// The log on stderr (INFO lines for every step; repeat for more) instead of `run`'s live
    /// status.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Only the outcome: no live status, no log below warnings, one line on stdout.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// LLM provider, overriding `llm.provider` (none, openai, anthropic, replay).
    #[arg(long, global = true, value_name = "PROVIDER", value_parser = parse_provider, env = "META_AGENT_LLM_PROVIDER", hide_env_values = true)]
    pub llm_provider: Option<crate::config::raw::LlmProvider>,
    /// Primary model, overriding `llm.model`.
    #[arg(
        long,
        global = true,
        value_name = "MODEL",
        env = "META_AGENT_MODEL",
        hide_env_values = true
    )]
    pub model: Option<String>,
    /// Fast model (planning, exploring, the requirements review), overriding `llm.fast_model`;
    /// without either it is the primary model.
    #[arg(
        long,
        global = true,
        value_name = "MODEL",
        env = "META_AGENT_FAST_MODEL",
        hide_env_values = true
    )]
    pub fast_model: Option<String>,
    /// LLM API base URL, overriding `llm.base_url` and `OPENAI_BASE_URL`.
    #[arg(
        long,
        global = true,
        value_name = "URL",
        env = "META_AGENT_LLM_BASE_URL",
        hide_env_values = true
    )]
    pub llm_base_url: Option<String>,
    /// Where local runs keep their worktrees, outside every checkout (default:
    /// $XDG_STATE_HOME/meta-agent/worktrees, else ~/.local/state/meta-agent/worktrees).
    #[arg(
        long,
        global = true,
        value_name = "DIR",
        env = "META_AGENT_WORKTREES_DIR",
        hide_env_values = true
    )]
    pub worktrees_dir: Option<PathBuf>,
    /// A pause point, added to `pause:` (repeatable): `LOCATION` or `LOCATION:CONDITION`, e.g.
    /// `--pause-at after_plan` or `--pause-at 'on_tool_call:tool == "edit_file"'`.
    #[arg(long, global = true, value_name = "LOCATION[:CONDITION]")]
    pub pause_at: Vec<String>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the build-test-improve loop on a task: a verified commit or an escalation report.
    Run(RunArgs),
    /// Continue a run that was killed, or that awaits guidance.
    Resume(ResumeArgs),
    /// One GitHub Actions step: read the event, authorize, run, and publish (branch, pull
    /// request, status comment, job summary, outputs).
    Github(GithubArgs),
    /// Run the configured quality gates and print their summary; the exit code says whether all
    /// passed (0) or not (1).
    Gates(GatesArgs),
    /// Read a report file and print what it says.
    #[command(subcommand)]
    Report(ReportCommand),
    /// Validate the configuration, or print its JSON Schema.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Error signatures and the store of fixes that cured them.
    Hindsight(HindsightArgs),
    /// Evaluations: run a suite on the real engine, grade, merge shards, compare two results,
    /// mine a suite from the repository's history.
    #[command(subcommand)]
    Eval(EvalCommand),
    /// Shared memory (PostgreSQL): migrate, status, export, import.
    Memory(crate::session::memory_cli::MemoryArgs),
    /// Look inside a run: the context of a session paused at a pause point.
    #[command(subcommand)]
    Debug(DebugCommand),
    /// The worktrees local runs kept (escalated, paused, dry runs): list them, prune those whose
    /// session ended.
    #[command(subcommand)]
    Worktrees(WorktreesCommand),
    /// A recorded run read back: its timeline, or a replay in real time.
    #[command(subcommand)]
    Trace(TraceCommand),
    /// Runs one command under supervision (internal: used by meta-agent for every child process).
    #[command(name = "__supervise", hide = true)]
    Supervise(SupervisorArgs),
}

#[derive(Debug, clap::Args)]
pub struct GatesArgs {
    /// Run only these gates (repeatable).
    #[arg(long, value_name = "NAME")]
    pub only: Vec<String>,
    /// Print JSON: {"passed": bool, "gates": [...]}.
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    /// Print the summary as Markdown (for job summaries and comments).
    #[arg(long)]
    pub markdown: bool,
    /// Also write the results as JUnit XML to FILE (one test case per gate), for CI test
    /// reporters.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum ReportCommand {
    /// JUnit XML files (merged): test counts and failures.
    Junit {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// An lcov or Cobertura coverage report.
    Coverage {
        file: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// A SARIF 2.1.0 log.
    Sarif {
        file: PathBuf,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Load and validate the configuration; print the resolved gates.
    Check,
    /// Print the JSON Schema of .meta-agent.yml (for editor completion).
    Schema,
}

/// `meta-agent debug ...`.
#[derive(Debug, Subcommand)]
pub enum DebugCommand {
    /// What a run paused at a pause point holds there: the task, the plan and its progress, the
    /// model and its parameters, the messages as sent (redacted), the pending tool call, the
    /// gates so far, the hindsight and memory consulted.
    Context {
        /// The session (default: the latest).
        session: Option<String>,
        /// Print the context as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `meta-agent worktrees ...`.
#[derive(Debug, Subcommand)]
pub enum TraceCommand {
    /// Print the run as a timeline: phases, model calls (tokens, latency), tool calls, gates,
    /// decisions, the outcome.
    Show {
        /// A run's directory, the artifact's zip as GitHub serves it, a trace.jsonl, or a session
        /// of the repository.
        #[arg(value_name = "DIR|ZIP|SESSION")]
        run: String,
    },
    /// Play the run back in real time: space pauses and goes on, n steps, q quits.
    Replay {
        /// A run's directory, the artifact's zip as GitHub serves it, a trace.jsonl, or a session
        /// of the repository.
        #[arg(value_name = "DIR|ZIP|SESSION")]
        run: String,
        /// How many times faster than the run: 1, 2 or 4.
        #[arg(long, default_value = "1", value_parser = parse_speed)]
        speed: crate::replay::Speed,
        /// Pause at every event that marks this pause-point location (repeatable; without a
        /// terminal to read keys from, the replay ends there).
        #[arg(long, value_name = "LOCATION", value_parser = parse_location)]
        until: Vec<crate::replay::Location>,
    },
}

fn parse_speed(given: &str) -> Result<crate::replay::Speed, crate::replay::player::UnknownSpeed> {
    given.parse()
}

fn parse_location(given: &str) -> Result<crate::replay::Location, crate::replay::UnknownLocation> {
    crate::replay::location::parse(given)
}

#[derive(Debug, Subcommand)]
pub enum WorktreesCommand {
    /// Each kept worktree: its session, branch, state (in use, the outcome, paused), age and
    /// place.
    List {
        /// Print a JSON array instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Remove the worktrees whose session ended and forget those whose directory is gone; never
    /// one in use. Says what it removed.
    Prune,
}

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
    /// Start from HEAD alone, leaving your uncommitted changes out (by default the run starts
    /// from HEAD plus your uncommitted changes, taken as a snapshot commit; your checkout is
    /// never touched).
    #[arg(long)]
    pub from_head: bool,
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
    /// audit.jsonl, memory-pending.jsonl) into this directory: artifacts for any CI (GitLab,
    /// Jenkins, Buildkite).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// `meta-agent resume`.
#[derive(Debug, clap::Args)]
pub struct ResumeArgs {
    /// The session to resume (default: the latest).
    pub session: Option<String>,
    /// Guidance for the next plan (resumes a run that awaits guidance or escalated); at a pause
    /// point, for the next prompt.
    #[arg(long, value_name = "TEXT")]
    pub guidance: Option<String>,
    /// At a pause point: pause again at the next arrival at the same location.
    #[arg(long)]
    pub step: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `meta-agent github`. Every option also reads an environment variable, so the Action passes
/// its inputs through `env:` and never into a shell script.
#[derive(Debug, Clone, clap::Args)]
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
    /// trusted. Acting as a GitHub App, the default becomes the App's `<slug>[bot]`.
    #[arg(long, env = "META_AGENT_BOT_LOGIN", default_value = DEFAULT_BOT_LOGIN)]
    pub bot_login: String,
    /// Bot accounts allowed to trigger the bot (comma-separated).
    #[arg(long, env = "META_AGENT_ALLOW_BOTS", value_delimiter = ',')]
    pub allow_bots: Vec<String>,
    /// Minutes the job may last: GitHub rate-limit waits stop early enough to post a final status.
    #[arg(long, env = "META_AGENT_JOB_MINUTES", default_value_t = 60)]
    pub job_minutes: u64,
    /// Copy the run's files (report.md, outcome.json, metrics.prom, trace.jsonl, audit.jsonl)
    /// into this directory, whatever the outcome: the Action uploads it as the run's artifact.
    #[arg(long, env = "META_AGENT_OUT", value_name = "DIR")]
    pub out: Option<std::path::PathBuf>,
    /// Which failed runs of same-repository pull requests a `workflow_run` heals: `off`, runs
    /// of `pull_request` events, or `all` (also `push` runs on an open pull request's branch).
    #[arg(
        long,
        env = "META_AGENT_PULL_REQUEST_CHECKS",
        value_enum,
        default_value = "off"
    )]
    pub pull_request_checks: PullRequestChecksArg,
    /// Where the fix for a person's same-repository pull request goes: a `stacked` pull request
    /// into its branch, or a commit `push`ed onto its branch (fast-forward only; stacked when the
    /// branch is protected or the default one).
    #[arg(
        long,
        env = "META_AGENT_PULL_REQUEST_FIX",
        value_enum,
        default_value = "stacked"
    )]
    pub pull_request_fix: PullRequestFixArg,
    /// Heal the failing checks of draft pull requests too.
    #[arg(long, env = "META_AGENT_PULL_REQUEST_DRAFTS", num_args = 0..=1, default_value = "false",
          default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new())]
    pub pull_request_drafts: bool,
    /// Head branches whose failing checks are never healed (comma-separated globs: `*` within a
    /// path part, `**` across parts).
    #[arg(
        long,
        env = "META_AGENT_PULL_REQUEST_EXCLUDE",
        value_delimiter = ',',
        value_name = "GLOBS"
    )]
    pub pull_request_exclude: Vec<String>,
}

/// `--pull-request-checks`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PullRequestChecksArg {
    Off,
    #[value(name = "pull_request")]
    PullRequest,
    All,
}

/// `--pull-request-fix`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PullRequestFixArg {
    Stacked,
    Push,
}

/// `meta-agent eval ...`.
#[derive(Debug, Subcommand)]
pub enum EvalCommand {
    /// Run every task of a suite RUNS times, each the real engine in a fresh temporary clone,
    /// then grade; writes results.jsonl, summary.json, report.md, junit.xml and review.md.
    Run(EvalRunArgs),
    /// Record a person's grade for a run whose `human` grader is pending.
    Grade(EvalGradeArgs),
    /// Combine the output directories of shards into one evaluation.
    Merge {
        /// The shards' output directories.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// Where the merged results go.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Print the summary object as one JSON line.
        #[arg(long)]
        json: bool,
    },
    /// Compare evaluation B against A (output directories or summary.json files); exits 1 when
    /// B is significantly worse: a regression gate for model or prompt changes.
    Compare(EvalCompareArgs),
    /// Build a suite from this repository's history: commits that fixed failing tests.
    Mine(EvalMineArgs),
    /// Print the JSON Schema of suite.yml.
    Schema,
}

/// `meta-agent eval run`.
#[derive(Debug, clap::Args)]
pub struct EvalRunArgs {
    /// The suite: its directory (holding suite.yml) or the file.
    pub suite: PathBuf,
    /// Runs of each task.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub runs: u32,
    /// Runs at a time (default: half the cores).
    #[arg(long, value_name = "J")]
    pub jobs: Option<usize>,
    /// Run only slice I of N (1-based), for a CI matrix; combine with `eval merge`.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// The output directory.
    #[arg(long, value_name = "DIR", default_value = "meta-agent-eval")]
    pub out: PathBuf,
    /// Continue an interrupted evaluation in --out: finished runs are not repeated.
    #[arg(long)]
    pub resume: bool,
    /// Run only this task (its id; repeat for several).
    #[arg(long = "task", value_name = "ID")]
    pub tasks: Vec<String>,
    /// Print the summary object as one JSON line.
    #[arg(long)]
    pub json: bool,
}

/// `meta-agent eval grade`.
#[derive(Debug, clap::Args)]
pub struct EvalGradeArgs {
    /// The evaluation's output directory.
    pub dir: PathBuf,
    #[arg(long)]
    pub task: String,
    #[arg(long)]
    pub run: u32,
    /// The run passes the review.
    #[arg(long, conflicts_with = "fail", required_unless_present = "fail")]
    pub pass: bool,
    /// The run fails the review.
    #[arg(long)]
    pub fail: bool,
    /// Why (kept in the grade's detail).
    #[arg(long)]
    pub note: Option<String>,
}

/// `meta-agent eval compare`.
#[derive(Debug, clap::Args)]
pub struct EvalCompareArgs {
    pub a: PathBuf,
    pub b: PathBuf,
    /// Significance level of the test.
    #[arg(long, default_value_t = 0.05)]
    pub alpha: f64,
    /// Pass-rate drop (0-1) tolerated even when significant.
    #[arg(long, default_value_t = 0.0)]
    pub threshold: f64,
    #[arg(long)]
    pub json: bool,
}

/// `meta-agent eval mine`.
#[derive(Debug, clap::Args)]
pub struct EvalMineArgs {
    /// Only commits after this revision.
    #[arg(long, value_name = "REF")]
    pub since: Option<String>,
    /// Tasks at most.
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub max: usize,
    /// Where suite.yml and the hidden tests go.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// The linked issues' text from a JSON export (`gh issue list --json number,title,body`)
    /// instead of the GitHub API (used with GITHUB_TOKEN and GITHUB_REPOSITORY).
    #[arg(long, value_name = "FILE")]
    pub issues_from: Option<PathBuf>,
    /// Go on with an interrupted mining in --out: finished candidates are not tried again.
    #[arg(long)]
    pub resume: bool,
}

/// `--llm-provider`: the same names as `llm.provider` in the configuration.
fn parse_provider(
    text: &str,
) -> Result<crate::config::raw::LlmProvider, crate::config::values::UnknownName> {
    crate::config::values::parse_name(text, "provider", "none, openai, anthropic, replay")
}
