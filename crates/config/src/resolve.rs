//! The resolved configuration: every setting the program reads, with defaults applied, presets
//! merged and cross-field rules checked.
//!
//! Resolution is pure: it takes the parsed file (or none) and the preset gates, and returns a
//! [`Config`] or a [`ConfigError`] naming the file, line and key. Defaults live here, in the
//! binary, next to the fields they fill.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::ConfigError;
use super::raw::{
    FailOn, GateKind, GateNetwork, LlmCompat, LlmProvider, RawCommand, RawCommit, RawConfig,
    RawGate, RawHindsight, RawLlm, RawLoop, RawPause, RawRerun, RawSandbox, RawSetup,
    ReasoningEffort,
};
use meta_agent_protocol::pause::Rule;
use meta_agent_redact::secrets::is_secret_name;
use meta_agent_report::FindingLevel;

/// Default improve iterations before escalating.
pub const DEFAULT_MAX_ITERATIONS: u32 = 3;
/// Default agent steps within a phase.
pub const DEFAULT_MAX_AGENT_STEPS: u32 = 15;
/// Default number of gates that run at once.
pub const DEFAULT_GATE_CONCURRENCY: u32 = 2;
/// Default wall-clock budget of a whole run.
pub const DEFAULT_WALL_CLOCK: Duration = Duration::from_secs(60 * 60);
/// Default per-gate timeout.
pub const DEFAULT_GATE_TIMEOUT: Duration = Duration::from_secs(10 * 60);
/// Default timeout of a setup command.
pub const DEFAULT_SETUP_TIMEOUT: Duration = Duration::from_secs(20 * 60);
/// Default cap on each captured output stream.
pub const DEFAULT_OUTPUT_CAP: u64 = 1 << 20;
/// Default grace between SIGTERM and SIGKILL.
pub const DEFAULT_KILL_GRACE: Duration = Duration::from_secs(5);
/// Default hindsight store directory.
pub const DEFAULT_HINDSIGHT_PATH: &str = ".meta-agent/hindsight";
/// Default branch prefix.
pub const DEFAULT_BRANCH_PREFIX: &str = "meta-agent/";

/// The whole resolved configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The file it was read from; `None` when the repository has no configuration.
    pub source: Option<PathBuf>,
    /// The preset whose gates were used, if any, and why it was chosen.
    pub preset: Option<String>,
    pub preset_reason: String,
    pub llm: LlmSettings,
    pub loop_: LoopSettings,
    /// Commands run once at the start of a run, before the build, with the network on (the
    /// file's `setup:` when written, else the preset's: see [`super::load`]).
    pub setup: Vec<SetupCommand>,
    /// Enabled gates, in order (preset gates first, then the file's new gates).
    pub gates: Vec<GateSpec>,
    pub sandbox: SandboxSettings,
    pub hindsight: HindsightSettings,
    pub commit: CommitSettings,
    pub telemetry: TelemetrySettings,
    /// How the verification that justifies a commit is made (`verify:`).
    pub verify: VerifySettings,
    /// Shared memory (`memory:`); the database URL's password only ever comes from the
    /// environment.
    pub memory: crate::memory::MemorySettings,
    /// Pause points (`pause:`), in the file's order.
    pub pause: Vec<Rule>,
}

/// The verification that justifies a commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerifySettings {
    /// Verify on a pristine checkout of the tree to be committed (`verify.pristine`, default
    /// true).
    pub pristine: bool,
}

/// Metrics export beyond the session directory's `metrics.prom`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TelemetrySettings {
    /// Push gateway base URL, when configured.
    pub push_gateway: Option<String>,
}

/// LLM provider and caps. `provider` defaults to `none` (offline).
#[derive(Debug, Clone, PartialEq)]
pub struct LlmSettings {
    pub provider: LlmProvider,
    pub model: Option<String>,
    pub fast_model: Option<String>,
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    pub max_tokens: Option<u64>,
    pub max_cost_usd: Option<f64>,
    pub max_calls: Option<u32>,
    /// Token budget of the agent's opening context.
    pub context_tokens: u32,
    /// A transcript to replay (`llm.replay`).
    pub replay: Option<String>,
    /// Where to record the run's transcript (`llm.record`).
    pub record: Option<String>,
    /// Azure `api-version`, when set.
    pub api_version: Option<String>,
    /// The requirements review once the gates pass (`llm.reflect`, default true).
    pub reflect: bool,
    /// Streamed answers (`llm.stream`, default true).
    pub stream: bool,
    /// The wire profile of an OpenAI-compatible server (`llm.compat`, default `openai`).
    pub compat: LlmCompat,
    /// Reasoning effort for reasoning models (`llm.reasoning_effort`), when set.
    pub reasoning_effort: Option<ReasoningEffort>,
}

/// Default token budget of the agent's opening context.
pub const DEFAULT_CONTEXT_TOKENS: u32 = 24_000;

/// Iteration control.
#[derive(Debug, Clone, PartialEq)]
pub struct LoopSettings {
    pub max_iterations: u32,
    pub max_agent_steps: u32,
    pub gate_concurrency: usize,
    pub wall_clock: Duration,
}

/// How a gate's command is run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateCommand {
    /// `/bin/sh -c` with this string (the user wrote a string).
    Shell(String),
    /// Run directly (the user wrote a list).
    Argv(Vec<String>),
}

/// One resolved setup command.
#[derive(Debug, Clone, PartialEq)]
pub struct SetupCommand {
    pub command: GateCommand,
    /// Relative to the repository root; never escapes it.
    pub workdir: PathBuf,
    pub timeout: Duration,
    pub env: BTreeMap<String, String>,
    /// Variables of meta-agent's environment passed to this command only (`setup[].credentials`;
    /// secret-looking names, so redacted everywhere and never given to any other command).
    pub credentials: Vec<String>,
}

/// A coverage report and the threshold it must meet.
#[derive(Debug, Clone, PartialEq)]
pub struct CoverageCheck {
    pub path: String,
    /// Percent, 0-100.
    pub threshold: f64,
}

/// One resolved quality gate.
#[derive(Debug, Clone, PartialEq)]
pub struct GateSpec {
    pub name: String,
    pub kind: GateKind,
    pub command: GateCommand,
    /// Relative to the repository root; never escapes it.
    pub workdir: PathBuf,
    pub timeout: Duration,
    pub env: BTreeMap<String, String>,
    pub junit: Vec<String>,
    pub coverage: Option<CoverageCheck>,
    pub sarif: Vec<String>,
    pub fail_on: FindingLevel,
    pub requires: Vec<String>,
    pub optional: bool,
    pub files: BTreeMap<String, String>,
    /// How to re-run only the failing tests (fast feedback), when the runner supports it.
    pub rerun_failed: Option<RawRerun>,
    /// The network during a run (`Off` unless the gate says `network: on`).
    pub network: GateNetwork,
}

impl GateSpec {
    /// The test runner the gate runs, when it says (its `rerun_failed.format`): how its JUnit
    /// report names tests and how they are selected again.
    pub fn runner(&self) -> Option<crate::raw::TestFilterFormat> {
        self.rerun_failed.as_ref().map(|rerun| rerun.format)
    }
}

/// Child-process settings.
#[derive(Debug, Clone, PartialEq)]
pub struct SandboxSettings {
    /// Variables passed through beyond the built-in allowlist (names or `PREFIX*`).
    pub env_allow: Vec<String>,
    pub output_cap: u64,
    pub kill_grace: Duration,
    /// Extra writable directories, as written (relative ones are under the repository root).
    pub writable: Vec<PathBuf>,
    /// `sandbox.read`: directories commands may read besides the worktree, the system and the
    /// toolchains (absolute; none that would expose the home or credentials).
    pub read: Vec<PathBuf>,
}

/// Where hindsight lives.
#[derive(Debug, Clone, PartialEq)]
pub struct HindsightSettings {
    /// Relative to the repository root.
    pub path: PathBuf,
    pub catalog: bool,
}

/// Commit settings.
#[derive(Debug, Clone, PartialEq)]
pub struct CommitSettings {
    pub branch_prefix: String,
    pub trailers: bool,
    pub protected_paths: Vec<String>,
    /// `commit.allow_test_edits`: existing tests and test configuration may change.
    pub allow_test_edits: bool,
}

/// What resolution needs besides the file.
pub struct ResolveInput<'a> {
    /// The parsed file and its text, or `None` when the repository has no configuration.
    pub file: Option<(&'a Path, &'a RawConfig, &'a str)>,
    /// The preset's name, gates and why it was chosen; `None` for no preset.
    pub preset: Option<(String, Vec<RawGate>)>,
    pub preset_reason: String,
}

/// Builds the resolved configuration.
pub fn resolve(input: ResolveInput<'_>) -> Result<Config, ConfigError> {
    let empty = RawConfig::default();
    let (path, raw, text) = match input.file {
        Some((path, raw, text)) => (Some(path), raw, text),
        None => (None, &empty, ""),
    };
    let ctx = ErrorContext {
        path: path.unwrap_or(Path::new("<defaults>")),
        text,
    };
    let (preset, preset_gates) = match input.preset {
        Some((name, gates)) => (Some(name), gates),
        None => (None, Vec::new()),
    };
    let file_gates = raw.gates.clone().unwrap_or_default();
    reject_duplicates(&file_gates, &ctx)?;
    let merged = merge_gates(preset_gates, file_gates);
    let gates = resolve_gates(&merged, &ctx)?;
    let setup = resolve_setup(raw.setup.as_deref().unwrap_or_default(), &ctx)?;
    Ok(Config {
        source: path.map(Path::to_owned),
        preset,
        preset_reason: input.preset_reason,
        llm: resolve_llm(raw.llm.clone().unwrap_or_default()),
        loop_: resolve_loop(raw.loop_.clone().unwrap_or_default(), &ctx)?,
        setup,
        gates,
        sandbox: resolve_sandbox(raw.sandbox.clone().unwrap_or_default(), &ctx)?,
        hindsight: resolve_hindsight(raw.hindsight.clone().unwrap_or_default(), &ctx)?,
        commit: resolve_commit(raw.commit.clone().unwrap_or_default()),
        telemetry: TelemetrySettings {
            push_gateway: raw.telemetry.as_ref().and_then(|t| t.push_gateway.clone()),
        },
        verify: VerifySettings {
            pristine: raw.verify.as_ref().and_then(|v| v.pristine).unwrap_or(true),
        },
        memory: crate::memory::resolve(raw.memory.clone().unwrap_or_default())
            .map_err(|err| ctx.invalid(err.key, &err.needle, err.message))?,
        pause: resolve_pause(raw.pause.as_deref().unwrap_or_default(), &ctx)?,
    })
}

/// `pause:`: each point's condition parsed and checked against its location's fields.
fn resolve_pause(raw: &[RawPause], ctx: &ErrorContext<'_>) -> Result<Vec<Rule>, ConfigError> {
    raw.iter()
        .enumerate()
        .map(|(index, point)| {
            let (at, when, after, every) = match point {
                RawPause::At(at) => (*at, None, None, None),
                RawPause::Point(point) => {
                    (point.at, point.when.as_deref(), point.after, point.every)
                }
            };
            if every == Some(0) {
                return Err(ctx.invalid(
                    format!("pause[{index}].every"),
                    "every:",
                    "must be at least 1".into(),
                ));
            }
            Rule::new(at, when, after.unwrap_or(0), every.unwrap_or(1)).map_err(|bad| {
                ctx.invalid(
                    format!("pause[{index}].when"),
                    when.unwrap_or("when:"),
                    format!("`{}` {bad}", when.unwrap_or_default()),
                )
            })
        })
        .collect()
}

/// The file and its text, for error messages that name a line.
struct ErrorContext<'a> {
    path: &'a Path,
    text: &'a str,
}

impl ErrorContext<'_> {
    fn invalid(&self, key: String, needle: &str, message: String) -> ConfigError {
        ConfigError::Invalid {
            path: self.path.to_owned(),
            line: line_of(self.text, needle),
            key,
            message,
        }
    }
}

/// 1-based line of the first occurrence of `needle` in `text`, or 0.
pub fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|line| line.contains(needle))
        .map_or(0, |index| index + 1)
}

/// A file that names the same gate twice is ambiguous.
fn reject_duplicates(gates: &[RawGate], ctx: &ErrorContext<'_>) -> Result<(), ConfigError> {
    let mut seen = BTreeSet::new();
    for (index, gate) in gates.iter().enumerate() {
        let name = gate.name.as_str();
        if !seen.insert(name) {
            let line = ctx
                .text
                .match_indices(&format!("name: {name}"))
                .nth(1)
                .map_or(0, |(at, _)| ctx.text[..at].lines().count());
            return Err(ConfigError::Invalid {
                path: ctx.path.to_owned(),
                line,
                key: format!("gates[{index}].name"),
                message: format!("gate `{name}` is defined twice"),
            });
        }
    }
    Ok(())
}

/// Preset gates, overridden field by field by file gates of the same name; new file gates after.
fn merge_gates(preset: Vec<RawGate>, file: Vec<RawGate>) -> Vec<RawGate> {
    let mut merged = preset;
    for gate in file {
        match merged
            .iter_mut()
            .find(|existing| existing.name == gate.name)
        {
            Some(existing) => *existing = override_gate(existing.clone(), gate),
            None => merged.push(gate),
        }
    }
    merged
}

fn override_gate(base: RawGate, over: RawGate) -> RawGate {
    RawGate {
        name: over.name,
        kind: over.kind.or(base.kind),
        run: over.run.or(base.run),
        workdir: over.workdir.or(base.workdir),
        timeout: over.timeout.or(base.timeout),
        env: over.env.or(base.env),
        junit: over.junit.or(base.junit),
        coverage: over.coverage.or(base.coverage),
        sarif: over.sarif.or(base.sarif),
        fail_on: over.fail_on.or(base.fail_on),
        requires: over.requires.or(base.requires),
        optional: over.optional.or(base.optional),
        enabled: over.enabled.or(base.enabled),
        files: over.files.or(base.files),
        rerun_failed: over.rerun_failed.or(base.rerun_failed),
        network: over.network.or(base.network),
    }
}

fn resolve_gates(merged: &[RawGate], ctx: &ErrorContext<'_>) -> Result<Vec<GateSpec>, ConfigError> {
    let mut gates = Vec::new();
    for gate in merged {
        if gate.enabled == Some(false) {
            continue;
        }
        gates.push(resolve_gate(gate, ctx)?);
    }
    Ok(gates)
}

fn resolve_gate(gate: &RawGate, ctx: &ErrorContext<'_>) -> Result<GateSpec, ConfigError> {
    let name = gate.name.as_str().to_owned();
    let key = |field: &str| format!("gates.{name}.{field}");
    let command = match &gate.run {
        Some(run) => command_of(run, ctx, &key("run"))?,
        None => {
            return Err(ctx.invalid(
                key("run"),
                &format!("name: {name}"),
                "a gate needs a `run` command".into(),
            ));
        }
    };
    let workdir = resolve_workdir(gate.workdir.as_deref(), ctx, &key("workdir"))?;
    let env = gate.env.clone().unwrap_or_default();
    refuse_secret_env(&env, ctx, &key("env"))?;
    let junit = gate
        .junit
        .as_ref()
        .map(|paths| paths.to_vec())
        .unwrap_or_default();
    let sarif = gate
        .sarif
        .as_ref()
        .map(|paths| paths.to_vec())
        .unwrap_or_default();
    let coverage = gate.coverage.as_ref().map(|c| CoverageCheck {
        path: c.path.clone(),
        threshold: c.threshold.0,
    });
    let kind = gate.kind.unwrap_or(infer_kind(
        !junit.is_empty(),
        coverage.is_some(),
        !sarif.is_empty(),
    ));
    Ok(GateSpec {
        name,
        kind,
        command,
        workdir,
        timeout: gate.timeout.map_or(DEFAULT_GATE_TIMEOUT, |t| t.0),
        env,
        junit,
        coverage,
        sarif,
        fail_on: match gate.fail_on.unwrap_or(FailOn::Error) {
            FailOn::Error => FindingLevel::Error,
            FailOn::Warning => FindingLevel::Warning,
            FailOn::Note => FindingLevel::Note,
        },
        requires: gate.requires.clone().unwrap_or_default(),
        optional: gate.optional.unwrap_or(false),
        files: gate.files.clone().unwrap_or_default(),
        rerun_failed: gate.rerun_failed.clone(),
        network: gate.network.unwrap_or(GateNetwork::Off),
    })
}

/// A non-empty command as written.
fn command_of(
    run: &RawCommand,
    ctx: &ErrorContext<'_>,
    key: &str,
) -> Result<GateCommand, ConfigError> {
    match run {
        RawCommand::Shell(line) if !line.trim().is_empty() => Ok(GateCommand::Shell(line.clone())),
        RawCommand::Argv(argv) if argv.first().is_some_and(|p| !p.is_empty()) => {
            Ok(GateCommand::Argv(argv.clone()))
        }
        _ => Err(ctx.invalid(key.to_owned(), "run:", "the command is empty".into())),
    }
}

/// Secret-looking variable names never reach a child process.
fn refuse_secret_env(
    env: &BTreeMap<String, String>,
    ctx: &ErrorContext<'_>,
    key: &str,
) -> Result<(), ConfigError> {
    match env.keys().find(|var| is_secret_name(var)) {
        Some(secret) => Err(ctx.invalid(
            format!("{key}.{secret}"),
            secret,
            "looks like a secret; secrets never reach child processes".into(),
        )),
        None => Ok(()),
    }
}

/// A setup credential must be a variable name that looks like a secret: the redactor knows every
/// such variable's value, and no other command's environment can carry it (even allowlisted).
fn check_credentials(
    names: &[String],
    ctx: &ErrorContext<'_>,
    key: &str,
) -> Result<(), ConfigError> {
    let valid = |name: &str| {
        let mut chars = name.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    match names
        .iter()
        .find(|name| !valid(name) || !is_secret_name(name))
    {
        Some(name) => Err(ctx.invalid(
            key.to_owned(),
            name,
            format!(
                "`{name}` is not a secret-looking variable name (one with TOKEN, SECRET, \
                 PASSWORD, AUTH, CREDENTIAL, API_KEY, ... in it): only such variables are \
                 redacted everywhere and kept from every other command"
            ),
        )),
        None => Ok(()),
    }
}

/// A preset's setup commands, for a configuration whose file writes no `setup:`.
pub fn preset_setup(name: &str, setup: &[RawSetup]) -> Result<Vec<SetupCommand>, ConfigError> {
    let path = PathBuf::from(format!("presets/{name}.yml"));
    let ctx = ErrorContext {
        path: &path,
        text: "",
    };
    resolve_setup(setup, &ctx)
}

fn resolve_setup(
    setup: &[RawSetup],
    ctx: &ErrorContext<'_>,
) -> Result<Vec<SetupCommand>, ConfigError> {
    setup
        .iter()
        .enumerate()
        .map(|(index, step)| {
            let key = |field: &str| format!("setup[{index}].{field}");
            let env = step.env.clone().unwrap_or_default();
            refuse_secret_env(&env, ctx, &key("env"))?;
            let credentials = step.credentials.clone().unwrap_or_default();
            check_credentials(&credentials, ctx, &key("credentials"))?;
            Ok(SetupCommand {
                command: command_of(&step.run, ctx, &key("run"))?,
                workdir: resolve_workdir(step.workdir.as_deref(), ctx, &key("workdir"))?,
                timeout: step.timeout.map_or(DEFAULT_SETUP_TIMEOUT, |t| t.0),
                env,
                credentials,
            })
        })
        .collect()
}

fn infer_kind(junit: bool, coverage: bool, sarif: bool) -> GateKind {
    match (junit, coverage, sarif) {
        (true, _, _) => GateKind::Tests,
        (false, true, _) => GateKind::Coverage,
        (false, false, true) => GateKind::Lint,
        (false, false, false) => GateKind::Custom,
    }
}

/// A relative path that stays inside the repository.
fn resolve_workdir(
    dir: Option<&str>,
    ctx: &ErrorContext<'_>,
    key: &str,
) -> Result<PathBuf, ConfigError> {
    let Some(dir) = dir else {
        return Ok(PathBuf::from("."));
    };
    inside_repository(dir).ok_or_else(|| {
        ctx.invalid(
            key.to_owned(),
            dir,
            format!("`{dir}` must be a relative path inside the repository"),
        )
    })
}

/// `path` if it is plain ([`meta_agent_protocol::path`]): relative, never climbing, never into
/// `.git`; else `None`.
fn inside_repository(path: &str) -> Option<PathBuf> {
    meta_agent_protocol::path::plain_parts(Path::new(path))
        .ok()
        .map(|_| PathBuf::from(path))
}

impl Default for LlmSettings {
    /// What an empty `llm:` section resolves to: offline, default budgets, reflection on.
    fn default() -> Self {
        resolve_llm(RawLlm::default())
    }
}

fn resolve_llm(raw: RawLlm) -> LlmSettings {
    LlmSettings {
        provider: raw.provider.unwrap_or(if raw.replay.is_some() {
            LlmProvider::Replay
        } else {
            LlmProvider::None
        }),
        model: raw.model,
        fast_model: raw.fast_model,
        base_url: raw.base_url,
        api_key_env: raw.api_key_env,
        max_tokens: raw.max_tokens,
        max_cost_usd: raw.max_cost_usd,
        max_calls: raw.max_calls,
        context_tokens: raw.context_tokens.unwrap_or(DEFAULT_CONTEXT_TOKENS),
        replay: raw.replay,
        record: raw.record,
        api_version: raw.api_version,
        reflect: raw.reflect.unwrap_or(true),
        stream: raw.stream.unwrap_or(true),
        compat: raw.compat.unwrap_or_default(),
        reasoning_effort: raw.reasoning_effort,
    }
}

fn resolve_loop(raw: RawLoop, ctx: &ErrorContext<'_>) -> Result<LoopSettings, ConfigError> {
    let concurrency = raw.gate_concurrency.unwrap_or(DEFAULT_GATE_CONCURRENCY);
    if concurrency == 0 {
        return Err(ctx.invalid(
            "loop.gate_concurrency".into(),
            "gate_concurrency:",
            "must be at least 1".into(),
        ));
    }
    Ok(LoopSettings {
        max_iterations: raw.max_iterations.unwrap_or(DEFAULT_MAX_ITERATIONS),
        max_agent_steps: raw.max_agent_steps.unwrap_or(DEFAULT_MAX_AGENT_STEPS),
        gate_concurrency: usize::try_from(concurrency).unwrap_or(usize::MAX),
        wall_clock: raw.wall_clock.map_or(DEFAULT_WALL_CLOCK, |d| d.0),
    })
}

fn resolve_sandbox(
    raw: RawSandbox,
    ctx: &ErrorContext<'_>,
) -> Result<SandboxSettings, ConfigError> {
    let env_allow = raw.env_allow.unwrap_or_default();
    if let Some(secret) = env_allow
        .iter()
        .find(|name| is_secret_name(name.trim_end_matches('*')))
    {
        return Err(ctx.invalid(
            "sandbox.env_allow".into(),
            secret,
            format!("`{secret}` looks like a secret; secrets never reach child processes"),
        ));
    }
    Ok(SandboxSettings {
        env_allow,
        output_cap: raw.output_cap.map_or(DEFAULT_OUTPUT_CAP, |s| s.0),
        kill_grace: raw.kill_grace.map_or(DEFAULT_KILL_GRACE, |d| d.0),
        writable: raw
            .writable
            .unwrap_or_default()
            .into_iter()
            .map(PathBuf::from)
            .collect(),
        read: readable_dirs(raw.read.unwrap_or_default(), ctx)?,
    })
}

/// `sandbox.read`, each directory checked against the homes of this machine's user.
fn readable_dirs(dirs: Vec<String>, ctx: &ErrorContext<'_>) -> Result<Vec<PathBuf>, ConfigError> {
    let homes = meta_agent_exec::isolate::homes();
    dirs.into_iter()
        .map(|dir| {
            let path = PathBuf::from(dir.trim_end_matches('/'));
            match meta_agent_exec::isolate::read_refusal(&path, &homes) {
                None => Ok(path),
                Some(refusal) => {
                    Err(ctx.invalid("sandbox.read".into(), &dir, format!("`{dir}` {refusal}")))
                }
            }
        })
        .collect()
}

fn resolve_hindsight(
    raw: RawHindsight,
    ctx: &ErrorContext<'_>,
) -> Result<HindsightSettings, ConfigError> {
    let path = match raw.path {
        Some(path) => inside_repository(&path).ok_or_else(|| {
            ctx.invalid(
                "hindsight.path".into(),
                &path,
                format!("`{path}` must be a relative path inside the repository"),
            )
        })?,
        None => PathBuf::from(DEFAULT_HINDSIGHT_PATH),
    };
    Ok(HindsightSettings {
        path,
        catalog: raw.catalog.unwrap_or(true),
    })
}

fn resolve_commit(raw: RawCommit) -> CommitSettings {
    CommitSettings {
        branch_prefix: raw
            .branch_prefix
            .unwrap_or_else(|| DEFAULT_BRANCH_PREFIX.to_owned()),
        trailers: raw.trailers.unwrap_or(true),
        protected_paths: raw.protected_paths.unwrap_or_default(),
        allow_test_edits: raw.allow_test_edits.unwrap_or(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workdirs_cannot_escape_the_repository() {
        assert_eq!(inside_repository("sub/dir"), Some(PathBuf::from("sub/dir")));
        assert_eq!(inside_repository("."), Some(PathBuf::from(".")));
        assert_eq!(inside_repository("a/../b"), None);
        assert_eq!(inside_repository("sub/.GIT/hooks"), None);
        assert_eq!(inside_repository("../x"), None);
        assert_eq!(inside_repository("a/../../x"), None);
        assert_eq!(inside_repository("/etc"), None);
    }

    #[test]
    fn kind_is_inferred_from_reports() {
        assert_eq!(infer_kind(true, true, false), GateKind::Tests);
        assert_eq!(infer_kind(false, true, false), GateKind::Coverage);
        assert_eq!(infer_kind(false, false, true), GateKind::Lint);
        assert_eq!(infer_kind(false, false, false), GateKind::Custom);
    }

    #[test]
    fn line_of_finds_the_first_match() {
        assert_eq!(line_of("a\nb: 1\nb: 2", "b:"), 2);
        assert_eq!(line_of("a", "zzz"), 0);
    }

    #[test]
    fn llm_replay_implies_the_replay_provider_and_defaults_hold() {
        let replaying = resolve_llm(RawLlm {
            replay: Some("run.jsonl".into()),
            ..RawLlm::default()
        });
        assert_eq!(replaying.provider, LlmProvider::Replay);
        assert_eq!(replaying.replay.as_deref(), Some("run.jsonl"));
        let plain = resolve_llm(RawLlm::default());
        assert_eq!(plain.provider, LlmProvider::None);
        assert_eq!(plain.context_tokens, DEFAULT_CONTEXT_TOKENS);
        assert!(plain.reflect);
        assert!(
            plain.stream,
            "answers are streamed unless llm.stream says false"
        );
        assert_eq!(plain.compat, LlmCompat::Openai);
        assert_eq!(plain.reasoning_effort, None);
        let whole = resolve_llm(RawLlm {
            stream: Some(false),
            compat: Some(LlmCompat::Vllm),
            reasoning_effort: Some(ReasoningEffort::High),
            ..RawLlm::default()
        });
        assert!(!whole.stream);
        assert_eq!(whole.compat, LlmCompat::Vllm);
        assert_eq!(whole.reasoning_effort, Some(ReasoningEffort::High));
        let explicit = resolve_llm(RawLlm {
            provider: Some(LlmProvider::Openai),
            replay: Some("run.jsonl".into()),
            ..RawLlm::default()
        });
        assert_eq!(explicit.provider, LlmProvider::Openai);
    }
}
