//! The raw configuration: serde types that mirror `.meta-agent.yml` field for field.
//!
//! Every struct denies unknown keys, so a typo is an error that names the key and its line.
//! Values are validated while they are read (durations, sizes, percentages, names), so those errors
//! carry a location too. Nothing here applies defaults or presets: see [`super::resolve`]. The JSON
//! Schema printed by `meta-agent config schema` is generated from these types.

pub use meta_agent_protocol::kinds::{GateKind, TestFilterFormat};
use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::values::{ByteSize, DurationSpec, GateName, Percent};

/// The newest schema version this binary reads.
pub const SCHEMA_VERSION: u32 = 1;

/// `.meta-agent.yml`: the whole file.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    /// Schema version of this file. Only `1` exists today.
    pub version: u32,
    /// Gate preset: `auto` (detect from the repository, the default), `none`, or a preset name
    /// (`rust`, `python`, `node`, `node-jest`, `node-vitest`, `go`).
    #[serde(default)]
    pub preset: Option<String>,
    /// The language model the agent talks to.
    #[serde(default)]
    pub llm: Option<RawLlm>,
    /// Iteration control of the build-test-improve loop.
    #[serde(default, rename = "loop")]
    pub loop_: Option<RawLoop>,
    /// Commands run once at the start of a run, before the build, with the network on
    /// (dependency fetches: `pip install -e .`, `npm ci`, `cargo fetch --locked`). Replaces the
    /// preset's setup when written (`setup: []` runs none).
    #[serde(default)]
    pub setup: Option<Vec<RawSetup>>,
    /// Quality gates. A gate with the name of a preset gate overrides that gate's fields.
    #[serde(default)]
    pub gates: Option<Vec<RawGate>>,
    /// Limits and isolation of every child process (gates, repository and agent commands).
    #[serde(default)]
    pub sandbox: Option<RawSandbox>,
    /// The store of error signatures and the fixes that cured them.
    #[serde(default)]
    pub hindsight: Option<RawHindsight>,
    /// How verified work is committed.
    #[serde(default)]
    pub commit: Option<RawCommit>,
    /// Where run records go besides the session directory.
    #[serde(default)]
    pub telemetry: Option<RawTelemetry>,
    /// How the verification that justifies a commit is made.
    #[serde(default)]
    pub verify: Option<RawVerify>,
    /// Shared memory across repositories (PostgreSQL); without it, memory stays in files.
    #[serde(default)]
    pub memory: Option<crate::memory::RawMemory>,
    /// Pause points: where the run stops on purpose and waits for `meta-agent resume` (`/agent
    /// continue` on GitHub). Each is a location's name, or `{at, when, after, every}`.
    #[serde(default)]
    pub pause: Option<Vec<RawPause>>,
}

/// One pause point: a location's name (`after_plan`), or the location with a condition and a
/// hit count.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum RawPause {
    At(meta_agent_protocol::pause::Location),
    Point(RawPausePoint),
}

/// `pause: [{at: ..., when: ..., after: ..., every: ...}]`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawPausePoint {
    /// The location (`after_plan`, `before_llm_call`, `after_llm_answer`, `on_tool_call`,
    /// `after_tool_call`, `on_tool_error`, `after_gates`, `before_commit`, `on_delegate`).
    pub at: meta_agent_protocol::pause::Location,
    /// A condition over the location's fields (`tool == "edit_file" && path ~ "src/**"`).
    pub when: Option<String>,
    /// Hits that pass before the first pause (default 0).
    pub after: Option<u32>,
    /// Pause at every N-th hit after those (default 1: every hit).
    pub every: Option<u32>,
}

/// `verify:`: the verification that justifies a commit.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawVerify {
    /// Run the gates once more, before the commit, on a fresh checkout of exactly the tree that
    /// will be committed (no untracked or ignored file from the run, dependencies from the
    /// snapshot taken before the model acted), and commit that tree (default true). `false`
    /// trusts the worktree's last gate run: files the commit does not hold (an ignored `.pyc`, a
    /// build output) may then make the gates pass. See SECURITY.md.
    pub pristine: Option<bool>,
}

/// `telemetry:`: metrics export.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTelemetry {
    /// Prometheus push gateway (`http://host:9091` or `https://...`): the run's metrics are
    /// pushed there once, at the end.
    pub push_gateway: Option<String>,
}

/// `llm:`: provider and model selection, and spend caps.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawLlm {
    /// `none` (offline), `openai` (any OpenAI-compatible endpoint), `anthropic`, or `replay`.
    pub provider: Option<LlmProvider>,
    /// The primary model: writes code and the final summary.
    pub model: Option<String>,
    /// The fast model: planning, exploring and the requirements review (default: `model`).
    pub fast_model: Option<String>,
    /// Base URL of the API (overrides `OPENAI_BASE_URL` and the provider's default).
    pub base_url: Option<String>,
    /// Name of the environment variable that holds the API key (never the key itself).
    pub api_key_env: Option<String>,
    /// Maximum total tokens per run.
    pub max_tokens: Option<u64>,
    /// Maximum cost per run, in US dollars.
    pub max_cost_usd: Option<f64>,
    /// Maximum number of LLM calls per run.
    pub max_calls: Option<u32>,
    /// Token budget of the context the agent opens each attempt with (default 24000), counted
    /// with the model's tokenizer; lower-priority sections are cut first.
    pub context_tokens: Option<u32>,
    /// Replay this recorded transcript (JSON lines written by `llm.record`) instead of calling a
    /// model: a deterministic re-run. Implies `provider: replay` when `provider` is not set.
    pub replay: Option<String>,
    /// Record every model exchange of the run to this transcript file (JSON lines), for
    /// `llm.replay` later. Transcripts hold prompts and answers, never the key.
    pub record: Option<String>,
    /// Azure OpenAI `api-version` query parameter. Azure is detected from the base URL
    /// (`*.openai.azure.com` or a `/openai/deployments/` path); setting this also selects the
    /// Azure request shape (`api-key` header, deployment path). Default `2024-10-21`.
    pub api_version: Option<String>,
    /// Once the gates pass, ask the fast model whether the change meets the task's stated
    /// acceptance criteria; what it names as missing is the next attempt's work (default true;
    /// only for tasks with acceptance criteria and an iteration left).
    pub reflect: Option<bool>,
    /// Ask for streamed (SSE) answers (default true). `false` asks for whole answers, for
    /// servers that stream badly.
    pub stream: Option<bool>,
    /// The wire profile of an OpenAI-compatible server (`provider: openai` only): `openai` (the
    /// default) sends `max_completion_tokens` as OpenAI's reference has it; `vllm` and `ollama`
    /// send the older `max_tokens` for servers that need it.
    pub compat: Option<LlmCompat>,
    /// Reasoning effort sent to reasoning models (o-series, gpt-5) with `provider: openai`:
    /// `none`, `minimal`, `low`, `medium`, `high`, `xhigh`. Not sent to other models (they refuse
    /// it); unset, the model's default applies.
    pub reasoning_effort: Option<ReasoningEffort>,
}

/// How an OpenAI-compatible server wants its requests (`llm.compat`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LlmCompat {
    /// OpenAI's current reference: `max_completion_tokens`.
    #[default]
    Openai,
    /// vLLM servers that read the older `max_tokens`.
    Vllm,
    /// Ollama's OpenAI endpoint, which reads the older `max_tokens`.
    Ollama,
}

/// `reasoning_effort` of OpenAI's reasoning models (`llm.reasoning_effort`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningEffort {
    None,
    Minimal,
    Low,
    Medium,
    High,
    Xhigh,
}

/// The LLM providers meta-agent can talk to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LlmProvider {
    None,
    Openai,
    Anthropic,
    Replay,
}

/// `loop:`: how many times to try, and how much to run at once.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawLoop {
    /// Improve iterations before escalating (default 3).
    pub max_iterations: Option<u32>,
    /// Agent steps within one phase (default 15).
    pub max_agent_steps: Option<u32>,
    /// Gates that may run at the same time (default 2).
    pub gate_concurrency: Option<u32>,
    /// Wall-clock budget of a whole run (default 60m).
    pub wall_clock: Option<DurationSpec>,
}

/// A command as the user writes it: a shell string, or an argv list (no shell).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum RawCommand {
    /// Run with `/bin/sh -c`.
    Shell(String),
    /// Run directly, without a shell.
    Argv(Vec<String>),
}

/// `setup[]`: one command of the setup phase.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawSetup {
    /// The command: a string runs through `/bin/sh -c`, a list runs without a shell.
    pub run: RawCommand,
    /// Working directory, relative to the repository root (default: the root).
    pub workdir: Option<String>,
    /// Wall-clock limit, e.g. `90s`, `10m` (default 20m).
    pub timeout: Option<DurationSpec>,
    /// Extra environment for this command. Secret-looking names are refused.
    pub env: Option<BTreeMap<String, String>>,
    /// Variables of meta-agent's own environment this command gets (a private registry's
    /// `NPM_TOKEN`, say): secret-looking names only, given to this setup command and never to a
    /// gate or a model command, and redacted everywhere. Unset when the run starts: the setup
    /// command fails, naming it.
    pub credentials: Option<Vec<String>>,
}

/// Whether a gate may use the network during a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum GateNetwork {
    /// The host's network. A risk: the gate runs code the model may have written, which can then
    /// send the repository's contents anywhere.
    On,
    /// No network (the default during a run): fetch dependencies in `setup:` instead.
    Off,
}

/// One path or several (each may be a glob).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    /// The paths, in the order written.
    pub fn to_vec(&self) -> Vec<String> {
        match self {
            OneOrMany::One(one) => vec![one.clone()],
            OneOrMany::Many(many) => many.clone(),
        }
    }
}

/// `gates[]`: one quality gate.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawGate {
    /// Unique name (letters, digits, `-`, `_`), used by `--only` and in summaries.
    pub name: GateName,
    /// tests, lint, coverage or custom (inferred from the reports when absent).
    pub kind: Option<GateKind>,
    /// The command: a string runs through `/bin/sh -c`, a list runs without a shell.
    /// `{report_dir}` expands to a fresh directory for this gate's reports.
    pub run: Option<RawCommand>,
    /// Working directory, relative to the repository root (default: the root).
    pub workdir: Option<String>,
    /// Wall-clock limit, e.g. `90s`, `10m` (default 10m).
    pub timeout: Option<DurationSpec>,
    /// Extra environment for this gate. Secret-looking names are refused.
    pub env: Option<BTreeMap<String, String>>,
    /// JUnit XML files the gate writes (paths or globs, relative to the working directory).
    pub junit: Option<OneOrMany>,
    /// The coverage report the gate writes, and the threshold it must meet.
    pub coverage: Option<RawCoverage>,
    /// SARIF files the gate writes.
    pub sarif: Option<OneOrMany>,
    /// Lowest SARIF level that fails the gate (default `error`).
    pub fail_on: Option<FailOn>,
    /// Programs that must be on PATH for this gate to run.
    pub requires: Option<Vec<String>>,
    /// When a program in `requires` is missing: skip the gate (true) or fail it (false, default).
    pub optional: Option<bool>,
    /// Set false to turn off a preset gate.
    pub enabled: Option<bool>,
    /// Files written into `{report_dir}` before the gate runs (name → content; `{report_dir}`
    /// expands inside the content too). Presets use it for tool configuration.
    pub files: Option<BTreeMap<String, String>>,
    /// Fast feedback: how to re-run only the tests that failed, before the whole gate runs again.
    pub rerun_failed: Option<RawRerun>,
    /// Network during a run: `off` (default) or `on`. `on` is a risk: the gate runs code the
    /// model may have written, which could send the repository's contents out. `meta-agent
    /// gates` (no model involved) always runs gates with the network on.
    pub network: Option<GateNetwork>,
}

/// `gates[].rerun_failed`: a command with a `{tests}` argument, and how to spell test ids.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawRerun {
    /// The command; the argument `{tests}` becomes the failing tests (one or more arguments).
    pub run: Vec<String>,
    /// How the runner names tests.
    pub format: TestFilterFormat,
}

/// SARIF level at which a lint gate fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FailOn {
    Error,
    Warning,
    Note,
}

/// `gates[].coverage`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawCoverage {
    /// The lcov or Cobertura file (format detected from content).
    pub path: String,
    /// Minimum total line coverage, in percent (0-100).
    pub threshold: Percent,
}

/// `sandbox:`: what child processes may see and use.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawSandbox {
    /// Environment variables passed through to children, beyond the built-in allowlist
    /// (names, or prefixes ending in `*`). Secret-looking names are refused.
    pub env_allow: Option<Vec<String>>,
    /// Cap on each captured output stream (e.g. `1MiB`, default 1MiB).
    pub output_cap: Option<ByteSize>,
    /// Grace period between SIGTERM and SIGKILL on timeout (default 5s).
    pub kill_grace: Option<DurationSpec>,
    /// Directories children may write to besides the worktree, the temporary directory and the
    /// toolchains' caches (absolute, or relative to the repository root).
    pub writable: Option<Vec<String>>,
    /// Directories children may read (and run programs from) besides the worktree, the system
    /// and the toolchains: a virtualenv or tool kept outside the repository (absolute paths).
    /// Never the real home as a whole, a directory every process shares (`/tmp`), or credential
    /// files and what holds them (`~/.ssh`, `~/.aws`, `~/.config`, ...): those are refused.
    pub read: Option<Vec<String>>,
}

/// `hindsight:`: where the store lives.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawHindsight {
    /// Store directory, relative to the repository root (default `.meta-agent/hindsight`).
    pub path: Option<String>,
    /// Also consult the catalog bundled in the binary (default true).
    pub catalog: Option<bool>,
}

/// `commit:`: how verified work is committed.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawCommit {
    /// Prefix of the bot's branches (default `meta-agent/`).
    pub branch_prefix: Option<String>,
    /// Add `Meta-Agent-*` trailers to commit messages (default true).
    pub trailers: Option<bool>,
    /// Paths (globs) the agent may never change, beyond the built-in ones.
    pub protected_paths: Option<Vec<String>>,
    /// Let the model change existing tests and test configuration (default false: existing tests
    /// are evidence, and a change to them is refused and undone). Every such change is listed,
    /// diffed, in the pull request under "Test and configuration changes".
    pub allow_test_edits: Option<bool>,
}

/// A preset file in `presets/`: gates, and the setup commands that fetch what they need.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPreset {
    /// What the preset is for.
    pub description: String,
    /// Setup commands (network on), used unless the file writes its own `setup:`.
    #[serde(default)]
    pub setup: Vec<RawSetup>,
    pub gates: Vec<RawGate>,
}
