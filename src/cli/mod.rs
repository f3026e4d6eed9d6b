//! The command-line surface: clap types, and one async function per command that returns what to
//! print and how it ended. `main.rs` prints, logs errors and picks the exit code; nothing here
//! calls `process::exit`.
//!
//! Command names and JSON shapes are a contract other tools rely on: `run`, `resume`, `gates`,
//! `github`, `report junit`, `report coverage`, `report sarif`, `config check`, `config schema`,
//! `hindsight ...`.

pub mod github;
pub mod run;

use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand};

use crate::config::{self, Config, ConfigError};
use crate::exec::{Executor, supervisor::SupervisorArgs};
use crate::exit::{FailureClass, Outcome};
use crate::gates::{self, GateRunContext, summary};
use crate::hindsight::cli::{HindsightArgs, HindsightContext, HindsightError};
use crate::protocol::event::TracingSink;
use crate::report::{self, Limits, ReportError};

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
    /// More diagnostics on stderr (repeat for more).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
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
    /// LLM API base URL, overriding `llm.base_url` and `OPENAI_BASE_URL`.
    #[arg(
        long,
        global = true,
        value_name = "URL",
        env = "META_AGENT_LLM_BASE_URL",
        hide_env_values = true
    )]
    pub llm_base_url: Option<String>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the build-test-improve loop on a task: a verified commit or an escalation report.
    Run(run::RunArgs),
    /// Continue a run that was killed, or that awaits guidance.
    Resume(run::ResumeArgs),
    /// One GitHub Actions step: read the event, authorize, run, and publish (branch, pull
    /// request, status comment, job summary, outputs).
    Github(github::GithubArgs),
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

/// Why a command could not complete. Each variant knows whether the user or meta-agent is at fault.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Report(#[from] ReportError),
    #[error(transparent)]
    Hindsight(#[from] HindsightError),
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Internal(String),
}

impl CliError {
    /// Whose fault it is, for the exit code.
    pub fn class(&self) -> FailureClass {
        match self {
            CliError::Config(ConfigError::BadPreset { .. }) => FailureClass::Internal,
            CliError::Config(_) | CliError::Report(_) | CliError::Usage(_) => FailureClass::Usage,
            CliError::Hindsight(err) => hindsight_class(err),
            CliError::Internal(_) => FailureClass::Internal,
        }
    }
}

/// Bad input (files, ids, exports) is the user's to fix; a broken catalog or an unwritable store
/// is not.
fn hindsight_class(err: &HindsightError) -> FailureClass {
    match err {
        HindsightError::Signature(_)
        | HindsightError::NotFound(_)
        | HindsightError::Ambiguous { .. }
        | HindsightError::Io { .. }
        | HindsightError::Import { .. } => FailureClass::Usage,
        HindsightError::Store(crate::hindsight::store::StoreError::InvalidId { .. })
        | HindsightError::Store(crate::hindsight::store::StoreError::UnknownSignature { .. })
        | HindsightError::Store(crate::hindsight::store::StoreError::Corrupt { .. }) => {
            FailureClass::Usage
        }
        HindsightError::Store(_) | HindsightError::Catalog(_) | HindsightError::Json(_) => {
            FailureClass::Internal
        }
    }
}

/// What a command produced: text for stdout, and how it ended.
#[derive(Debug)]
pub struct Done {
    pub stdout: String,
    pub outcome: Outcome,
}

impl Done {
    fn ok(stdout: String) -> Self {
        Done {
            stdout,
            outcome: Outcome::Success,
        }
    }
}

/// Runs an async command (everything but the supervisor).
pub async fn run(cli: &Cli) -> Result<Done, CliError> {
    match &cli.command {
        Command::Run(args) => {
            let prepared = Prepared::load(cli).await?;
            run::run(prepared.context(cli), args).await
        }
        Command::Resume(args) => {
            let prepared = Prepared::load(cli).await?;
            run::resume(prepared.context(cli), args).await
        }
        Command::Github(args) => {
            let env = parent_env();
            github::github(args, &env, || async {
                let mut prepared = Prepared::load(cli).await?;
                if let Some(budget) = args.budget_usd {
                    prepared.config.llm.max_cost_usd = Some(budget);
                }
                Ok(prepared)
            })
            .await
        }
        Command::Gates(args) => run_gates(cli, args).await,
        Command::Report(command) => run_report(command),
        Command::Config(ConfigCommand::Check) => config_check(cli).await,
        Command::Config(ConfigCommand::Schema) => Ok(Done::ok(pretty(&config::json_schema()))),
        Command::Hindsight(args) => run_hindsight(cli, args).await,
        Command::Supervise(_) => Err(CliError::Internal(
            "the supervisor runs without a runtime".into(),
        )),
    }
}

fn pretty(value: &serde_json::Value) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    text.push('\n');
    text
}

/// The parent's environment as strings (non-UTF-8 variables are dropped).
fn parent_env() -> Vec<(String, String)> {
    std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .collect()
}

fn executor() -> Result<Executor, CliError> {
    std::env::current_exe()
        .map(Executor::new)
        .map_err(|err| CliError::Internal(format!("cannot locate the meta-agent binary: {err}")))
}

fn repo_root(cli: &Cli) -> Result<PathBuf, CliError> {
    std::fs::canonicalize(&cli.repo)
        .map_err(|err| CliError::Usage(format!("--repo {}: {err}", cli.repo.display())))
}

async fn load_config(
    cli: &Cli,
    repo: &Path,
    executor: &Executor,
    env: &[(String, String)],
) -> Result<Config, CliError> {
    let input = config::LoadInput {
        repo_root: repo,
        explicit: cli.config.as_deref(),
        parent_env: env,
    };
    let mut config = config::load(input, executor).await?;
    if let Some(provider) = cli.llm_provider {
        config.llm.provider = provider;
    }
    if let Some(model) = &cli.model {
        config.llm.model = Some(model.clone());
    }
    if let Some(url) = &cli.llm_base_url {
        config.llm.base_url = Some(url.clone());
    }
    Ok(config)
}

/// `--llm-provider`: the same names as `llm.provider` in the configuration.
fn parse_provider(
    text: &str,
) -> Result<crate::config::raw::LlmProvider, crate::config::values::UnknownName> {
    crate::config::values::parse_name(text, "provider", "none, openai, anthropic, replay")
}

/// What `run` and `resume` need, loaded once.
pub(crate) struct Prepared {
    pub(crate) repo: PathBuf,
    pub(crate) executor: Executor,
    pub(crate) env: Vec<(String, String)>,
    pub(crate) config: Config,
    pub(crate) policy: std::sync::Arc<crate::policy::Policy>,
}

impl Prepared {
    async fn load(cli: &Cli) -> Result<Prepared, CliError> {
        let repo = repo_root(cli)?;
        let executor = executor()?;
        let env = parent_env();
        let config = load_config(cli, &repo, &executor, &env).await?;
        if config.gates.is_empty() {
            return Err(CliError::Usage(format!(
                "no gates to verify a change with: {}",
                config.preset_reason
            )));
        }
        let policy = std::sync::Arc::new(crate::policy::Policy::from_config(&config, &repo));
        Ok(Prepared {
            repo,
            executor,
            env,
            config,
            policy,
        })
    }

    fn context(&self, cli: &Cli) -> run::RunContext<'_> {
        run::RunContext {
            repo_root: &self.repo,
            config: &self.config,
            policy: &self.policy,
            executor: &self.executor,
            parent_env: &self.env,
            verbose: cli.verbose > 0,
        }
    }
}

async fn run_gates(cli: &Cli, args: &GatesArgs) -> Result<Done, CliError> {
    let repo = repo_root(cli)?;
    let executor = executor()?;
    let env = parent_env();
    let config = load_config(cli, &repo, &executor, &env).await?;
    let selected = select_gates(&config, &args.only)?;
    let report_root = tempfile::Builder::new()
        .prefix("meta-agent-reports-")
        .tempdir()
        .map_err(|err| CliError::Internal(format!("cannot create a report directory: {err}")))?;
    let policy = crate::policy::Policy::from_config(&config, &repo);
    let ctx = GateRunContext {
        repo_root: &repo,
        parent_env: &env,
        sandbox: &config.sandbox,
        policy: &policy,
        report_root: report_root.path(),
        limits: Limits::default(),
        concurrency: config.loop_.gate_concurrency,
        runner: &executor,
        events: &TracingSink,
    };
    let result = gates::run_gates(&ctx, &selected).await;
    let stdout = if args.json {
        format!("{}\n", summary::to_json(&result))
    } else if args.markdown {
        summary::to_markdown(&result)
    } else {
        summary::to_terminal(&result)
    };
    let outcome = if result.passed {
        Outcome::Success
    } else {
        Outcome::GatesFailed
    };
    Ok(Done { stdout, outcome })
}

/// The gates named by `--only` (all when empty), in configuration order.
fn select_gates(config: &Config, only: &[String]) -> Result<Vec<config::GateSpec>, CliError> {
    if config.gates.is_empty() {
        return Err(CliError::Usage(format!(
            "no gates to run: {} — add a .meta-agent.yml with `gates:` or a `preset:`",
            config.preset_reason
        )));
    }
    if let Some(unknown) = only
        .iter()
        .find(|name| !config.gates.iter().any(|gate| &gate.name == *name))
    {
        let known: Vec<&str> = config.gates.iter().map(|gate| gate.name.as_str()).collect();
        return Err(CliError::Usage(format!(
            "--only {unknown}: no such gate (gates: {})",
            known.join(", ")
        )));
    }
    Ok(config
        .gates
        .iter()
        .filter(|gate| only.is_empty() || only.contains(&gate.name))
        .cloned()
        .collect())
}

fn run_report(command: &ReportCommand) -> Result<Done, CliError> {
    let limits = Limits::default();
    let stdout = match command {
        ReportCommand::Junit { files, json } => {
            let summary = report::parse_junit_files(files, &limits)?;
            if *json {
                junit_json(&summary)
            } else {
                junit_text(&summary)
            }
        }
        ReportCommand::Coverage { file, json } => {
            let coverage = report::parse_coverage_file(file)?;
            if *json {
                pretty(&to_value(&coverage))
            } else {
                coverage_text(&coverage)
            }
        }
        ReportCommand::Sarif { file, json } => {
            let sarif = report::parse_sarif_file(file, &limits)?;
            if *json {
                pretty(&to_value(&sarif))
            } else {
                sarif_text(&sarif)
            }
        }
    };
    Ok(Done::ok(stdout))
}

fn to_value<T: serde::Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value)
        .unwrap_or_else(|err| serde_json::json!({ "error": err.to_string() }))
}

fn junit_json(summary: &report::JunitSummary) -> String {
    let mut value = to_value(summary);
    if let Some(object) = value.as_object_mut() {
        object.insert("pass_rate".into(), serde_json::json!(summary.pass_rate()));
    }
    pretty(&value)
}

fn junit_text(summary: &report::JunitSummary) -> String {
    let mut out = format!(
        "{} tests: {} passed, {} failed, {} errors, {} skipped, {} flaky (pass rate {:.1}%)\n",
        summary.tests,
        summary.passed,
        summary.failed,
        summary.errors,
        summary.skipped,
        summary.flaky,
        summary.pass_rate() * 100.0
    );
    for failure in &summary.failures {
        let id = if failure.classname.is_empty() {
            failure.name.clone()
        } else {
            format!("{}::{}", failure.classname, failure.name)
        };
        out.push_str(&format!(
            "  ✗ {id}: {}\n",
            failure.message.lines().next().unwrap_or("")
        ));
    }
    if summary.failures_omitted > 0 {
        out.push_str(&format!("  … and {} more\n", summary.failures_omitted));
    }
    out
}

fn coverage_text(coverage: &report::CoverageReport) -> String {
    let mut out = format!(
        "lines: {:.2}% ({}/{})\n",
        coverage.line_percent, coverage.lines_covered, coverage.lines_total
    );
    if let (Some(percent), Some(covered), Some(total)) = (
        coverage.branch_percent,
        coverage.branches_covered,
        coverage.branches_total,
    ) {
        out.push_str(&format!("branches: {percent:.2}% ({covered}/{total})\n"));
    }
    for file in &coverage.files {
        out.push_str(&format!("  {:6.2}%  {}\n", file.line_percent, file.path));
    }
    out
}

fn sarif_text(sarif: &report::SarifReport) -> String {
    let mut out = format!(
        "{} findings: {} errors, {} warnings\n",
        sarif.findings, sarif.errors, sarif.warnings
    );
    for finding in &sarif.results {
        let location = match (&finding.file, finding.line) {
            (Some(file), Some(line)) => format!("{file}:{line}"),
            (Some(file), None) => file.clone(),
            _ => "-".into(),
        };
        let rule = finding.rule_id.as_deref().unwrap_or("-");
        out.push_str(&format!(
            "  {location}: [{rule}] {}\n",
            finding.message.lines().next().unwrap_or("")
        ));
    }
    out
}

async fn run_hindsight(cli: &Cli, args: &HindsightArgs) -> Result<Done, CliError> {
    let repo = repo_root(cli)?;
    let config = load_config(cli, &repo, &executor()?, &parent_env()).await?;
    let ctx = HindsightContext {
        store_dir: repo.join(&config.hindsight.path),
        repo_root: repo,
        use_catalog: config.hindsight.catalog,
        now: std::time::SystemTime::now(),
    };
    Ok(Done::ok(crate::hindsight::cli::run(args, &ctx)?))
}

async fn config_check(cli: &Cli) -> Result<Done, CliError> {
    let repo = repo_root(cli)?;
    let executor = executor()?;
    let config = load_config(cli, &repo, &executor, &parent_env()).await?;
    let source = config
        .source
        .as_ref()
        .map_or("no configuration file (defaults)".to_owned(), |p| {
            p.display().to_string()
        });
    let preset = config.preset.as_deref().unwrap_or("none");
    let llm = &config.llm;
    let provider = serde_json::to_value(llm.provider)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let model = llm.model.as_deref().unwrap_or("default model");
    let base = llm.base_url.as_deref().unwrap_or("default URL");
    let mut out = format!(
        "configuration OK: {source}\npreset: {preset} ({})\nllm: {provider}, {model}, {base}\n{}\ngates:\n",
        config.preset_reason,
        crate::llm::wire_line(llm)
    );
    for gate in &config.gates {
        let network = match gate.network {
            config::raw::GateNetwork::On => " [network: on — runs model-written code online]",
            config::raw::GateNetwork::Off => "",
        };
        out.push_str(&format!(
            "  - {} ({}): {}{network}\n",
            gate.name,
            summary::kind_word(gate.kind),
            command_line(&gate.command)
        ));
    }
    if !config.setup.is_empty() {
        out.push_str("setup (once per run, before the build, network on):\n");
        for step in &config.setup {
            out.push_str(&format!("  - {}\n", command_line(&step.command)));
        }
    }
    Ok(Done::ok(out))
}

fn command_line(command: &config::GateCommand) -> String {
    match command {
        config::GateCommand::Shell(line) => line.clone(),
        config::GateCommand::Argv(argv) => argv.join(" "),
    }
}
