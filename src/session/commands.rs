//! The smaller commands' sessions: `gates` (run the configured gates), `report` (read a report
//! file), `config check`/`config schema`, and `hindsight`. Each loads what it needs, does its
//! one thing and returns the text to print with how it ended.

use std::path::{Path, PathBuf};

use super::prepared::{executor, load_config, repo_root};
use super::{Done, Environment, Overrides, SessionError};
use crate::config::{self, Config};
use crate::exit::Outcome;
use crate::gates::{self, GateRunContext};
use crate::protocol::event::TracingSink;
use crate::render::gates as summary;
use crate::report::{self, Limits};
use crate::session::hindsight_cli::{HindsightArgs, HindsightContext};

/// How `gates` prints its summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GatesFormat {
    Terminal,
    Markdown,
    Json,
}

/// What `meta-agent gates` was asked.
#[derive(Debug, Clone)]
pub struct GatesRequest {
    /// Only these gates (all when empty).
    pub only: Vec<String>,
    pub format: GatesFormat,
    /// Also write the results as JUnit XML here.
    pub junit: Option<PathBuf>,
}

/// What `meta-agent report` was asked to read.
#[derive(Debug, Clone)]
pub enum ReportRequest {
    Junit { files: Vec<PathBuf>, json: bool },
    Coverage { file: PathBuf, json: bool },
    Sarif { file: PathBuf, json: bool },
}

/// `meta-agent config schema`.
pub fn config_schema() -> Done {
    Done::ok(pretty(&config::json_schema()))
}

/// `meta-agent gates`: runs the configured gates (network on: no model is involved) and says
/// whether all passed.
pub async fn gates(
    overrides: &Overrides,
    env: &Environment,
    request: &GatesRequest,
) -> Result<Done, SessionError> {
    let repo = repo_root(overrides)?;
    let executor = executor()?;
    let config = load_config(overrides, &repo, &executor, env).await?;
    let selected = select_gates(&config, &request.only)?;
    let report_root = tempfile::Builder::new()
        .prefix("meta-agent-reports-")
        .tempdir()
        .map_err(|err| {
            SessionError::Internal(format!("cannot create a report directory: {err}"))
        })?;
    let policy = crate::policy::Policy::from_config(&config, &repo);
    let ctx = GateRunContext {
        repo_root: &repo,
        parent_env: &env.vars,
        sandbox: &config.sandbox,
        policy: &policy,
        report_root: report_root.path(),
        limits: Limits::default(),
        deadline: Default::default(),
        concurrency: config.loop_.gate_concurrency,
        runner: &executor,
        events: &TracingSink,
    };
    let result = gates::run_gates(&ctx, &selected).await;
    if let Some(path) = &request.junit {
        write_junit(path, &result, env)?;
    }
    let stdout = match request.format {
        GatesFormat::Json => format!("{}\n", summary::to_json(&result)),
        GatesFormat::Markdown => summary::to_markdown(&result),
        GatesFormat::Terminal => summary::to_terminal(&result),
    };
    let outcome = if result.passed {
        Outcome::Success
    } else {
        Outcome::GatesFailed
    };
    Ok(Done { stdout, outcome })
}

/// Writes the `--junit` report, redacted, atomically.
fn write_junit(
    path: &Path,
    result: &gates::GatesSummary,
    env: &Environment,
) -> Result<(), SessionError> {
    let xml = report::junit_writer::to_xml("meta-agent", &[summary::junit_suite(result)])
        .map_err(|err| SessionError::Internal(err.to_string()))?;
    let xml = env.redactor.redact_text(&xml);
    crate::engine::state::write_atomic(path, xml.as_bytes())
        .map_err(|err| SessionError::Usage(format!("--junit {}: {err}", path.display())))
}

/// The gates named by `--only` (all when empty), in configuration order.
fn select_gates(config: &Config, only: &[String]) -> Result<Vec<config::GateSpec>, SessionError> {
    if config.gates.is_empty() {
        return Err(SessionError::Usage(format!(
            "no gates to run: {} — add a .meta-agent.yml with `gates:` or a `preset:`",
            config.preset_reason
        )));
    }
    if let Some(unknown) = only
        .iter()
        .find(|name| !config.gates.iter().any(|gate| &gate.name == *name))
    {
        let known: Vec<&str> = config.gates.iter().map(|gate| gate.name.as_str()).collect();
        return Err(SessionError::Usage(format!(
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

/// `meta-agent report ...`: reads one kind of report and says what it holds.
pub fn report(request: &ReportRequest) -> Result<Done, SessionError> {
    let limits = Limits::default();
    let stdout = match request {
        ReportRequest::Junit { files, json } => {
            let summary = report::parse_junit_files(files, &limits)?;
            if *json {
                junit_json(&summary)
            } else {
                crate::render::reports::junit(&summary)
            }
        }
        ReportRequest::Coverage { file, json } => {
            let coverage = report::parse_coverage_file(file)?;
            if *json {
                pretty(&to_value(&coverage))
            } else {
                crate::render::reports::coverage(&coverage)
            }
        }
        ReportRequest::Sarif { file, json } => {
            let sarif = report::parse_sarif_file(file, &limits)?;
            if *json {
                pretty(&to_value(&sarif))
            } else {
                crate::render::reports::sarif(&sarif)
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

/// `meta-agent hindsight ...`: the store of fixes, and signatures of reports.
pub async fn hindsight(
    overrides: &Overrides,
    env: &Environment,
    args: &HindsightArgs,
) -> Result<Done, SessionError> {
    if let Some(shared) = args.command.shared() {
        return super::memory::shared_hindsight(overrides, env, shared).await;
    }
    let repo = repo_root(overrides)?;
    let config = load_config(overrides, &repo, &executor()?, env).await?;
    let ctx = HindsightContext {
        store_dir: repo.join(&config.hindsight.path),
        repo_root: repo,
        use_catalog: config.hindsight.catalog,
        now: std::time::SystemTime::now(),
    };
    Ok(Done::ok(crate::session::hindsight_cli::run(args, &ctx)?))
}

/// `meta-agent config check`: loads and validates the configuration, lists the resolved gates.
pub async fn config_check(overrides: &Overrides, env: &Environment) -> Result<Done, SessionError> {
    let repo = repo_root(overrides)?;
    let executor = executor()?;
    let config = load_config(overrides, &repo, &executor, env).await?;
    let llm = &config.llm;
    let check = crate::render::config::ConfigCheck {
        source: config.source.as_ref().map(|p| p.display().to_string()),
        preset: config.preset.as_deref(),
        preset_reason: &config.preset_reason,
        provider: setting_name(llm.provider),
        model: llm.model.as_deref(),
        base_url: llm.base_url.as_deref(),
        wire: wire(llm),
        gates: config
            .gates
            .iter()
            .map(|gate| crate::render::config::GateLine {
                name: &gate.name,
                kind: gate.kind,
                command: command_line(&gate.command),
                network_on: gate.network == config::raw::GateNetwork::On,
            })
            .collect(),
        setup: config
            .setup
            .iter()
            .map(|step| command_line(&step.command))
            .collect(),
        pause: &config.pause,
    };
    Ok(Done::ok(crate::render::config::check(&check)))
}

/// How requests go on the wire, for `config check`: streaming, and for `provider: openai` the
/// output-cap field (`llm.compat`) and the reasoning effort; anthropic ignores those two.
fn wire(llm: &config::LlmSettings) -> crate::render::config::Wire {
    use crate::render::config::Dialect;
    use config::raw::{LlmCompat, LlmProvider};
    let dialect = match llm.provider {
        LlmProvider::Openai => Dialect::Openai {
            compat: setting_name(llm.compat),
            cap_field: crate::llm::token_field(llm.compat),
            reasoning_effort: llm.reasoning_effort.map(setting_name),
        },
        LlmProvider::Anthropic
            if llm.compat != LlmCompat::Openai || llm.reasoning_effort.is_some() =>
        {
            Dialect::AnthropicIgnoring
        }
        LlmProvider::Anthropic | LlmProvider::None | LlmProvider::Replay => Dialect::Plain,
    };
    crate::render::config::Wire {
        streamed: llm.stream,
        dialect,
    }
}

/// A setting's name as the configuration file spells it (`openai`, `high`).
fn setting_name(value: impl serde::Serialize) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|value| value.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// `meta-agent debug context [SESSION] [--json]`: the context of a session paused at a pause
/// point, as its session directory holds it (redacted when written).
pub fn debug_context(
    overrides: &Overrides,
    session: Option<&str>,
    json: bool,
) -> Result<Done, SessionError> {
    let repo = super::run::open_repo(&repo_root(overrides)?)?;
    let sessions =
        crate::engine::state::SessionStore::for_git_dir(&crate::git::Repository::git_dir(&repo));
    let context = sessions
        .load_context(session)
        .map_err(|err| SessionError::Usage(err.to_string()))?;
    if json {
        let value = serde_json::to_value(&context)
            .map_err(|err| SessionError::Internal(err.to_string()))?;
        return Ok(Done::ok(pretty(&value)));
    }
    Ok(Done::ok(crate::render::pause::context(&context)))
}

fn command_line(command: &config::GateCommand) -> String {
    match command {
        config::GateCommand::Shell(line) => line.clone(),
        config::GateCommand::Argv(argv) => argv.join(" "),
    }
}
fn pretty(value: &serde_json::Value) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::config::Dialect;
    use config::raw::{LlmCompat, LlmProvider, ReasoningEffort};

    fn settings(
        provider: LlmProvider,
        compat: LlmCompat,
        effort: Option<ReasoningEffort>,
    ) -> config::LlmSettings {
        config::LlmSettings {
            provider,
            compat,
            reasoning_effort: effort,
            ..config::LlmSettings::default()
        }
    }

    #[test]
    fn the_wire_names_openais_cap_field_and_effort_and_what_anthropic_ignores() {
        let openai = wire(&settings(
            LlmProvider::Openai,
            LlmCompat::Ollama,
            Some(ReasoningEffort::High),
        ));
        assert_eq!(
            openai.dialect,
            Dialect::Openai {
                compat: "ollama".into(),
                cap_field: "max_tokens",
                reasoning_effort: Some("high".into()),
            }
        );
        let ignoring = wire(&settings(LlmProvider::Anthropic, LlmCompat::Vllm, None));
        assert_eq!(ignoring.dialect, Dialect::AnthropicIgnoring);
        let plain = wire(&settings(LlmProvider::Anthropic, LlmCompat::Openai, None));
        assert_eq!(plain.dialect, Dialect::Plain);
    }
}
