//! Runs gates: the effectful shell around [`super::verdict::judge`].
//!
//! For each gate: a fresh report directory, `{report_dir}` expanded in the command, environment,
//! files and report paths, required programs looked up on the child's PATH, the command run
//! through the exec module, and the reports it wrote found (globs, relative to the gate's working
//! directory; files older than the gate's start are stale and ignored) and read. Reports are
//! written by untrusted code, so each is opened through [`meta_agent_fsafe`] beneath the worktree or
//! the gate's report directory: never through a link, regular files only (a FIFO is refused,
//! never waited on), bounded in size; the parsers read that descriptor. Independent
//! gates run concurrently up to the configured limit; results keep the configuration's order.
//!
//! The network of each gate comes from [`GateNetworkMode`]: `meta-agent gates` (no model involved)
//! gives every gate the host's network; inside a run each gate is offline unless it says
//! `network: on`, because a gate runs code the model may have written. Where the machine cannot
//! cut the network, the gate still runs and its result says so (fail-open, never silent).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use futures::StreamExt;

use super::verdict::{self, Evidence, ReportEvidence};
use super::{GateResult, GatesSummary, start};
use meta_agent_config::raw::GateNetwork;
use meta_agent_config::{GateCommand, GateSpec, SandboxSettings};
use meta_agent_exec::sandbox::{Isolation, NetworkPolicy};
use meta_agent_exec::{CommandOutput, CommandRunner, CommandSpec, Program, env::child_env};
use meta_agent_protocol::event::{Event, EventSink};
use meta_agent_protocol::records::{GateNote, GateProblem, GateScope, GateStatus};
use meta_agent_protocol::test_id::TestId;
use meta_agent_report::{self as report, Limits, ReportError};

/// The placeholder for a gate's report directory.
pub const REPORT_DIR_PLACEHOLDER: &str = "{report_dir}";
/// Bytes of command output kept in a gate result.
const OUTPUT_TAIL_BYTES: usize = 4 * 1024;

/// What every gate of a run shares.
pub struct GateRunContext<'a, R: CommandRunner> {
    pub repo_root: &'a Path,
    /// The parent's environment, filtered by [`child_env`] for each gate.
    pub parent_env: &'a [(String, String)],
    pub sandbox: &'a SandboxSettings,
    /// Where commands may write besides the worktree and the temporary directory.
    pub policy: &'a meta_agent_policy::Policy,
    /// Each gate gets `report_root/<gate name>/`, emptied before it runs.
    pub report_root: &'a Path,
    pub limits: Limits,
    pub concurrency: usize,
    pub runner: &'a R,
    pub events: &'a dyn EventSink,
    /// The run's deadline: no gate runs past it (its timeout is bounded by what remains).
    pub deadline: meta_agent_protocol::deadline::Deadline,
}

/// The network the gates of one invocation get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateNetworkMode {
    /// Every gate on the host's network: `meta-agent gates`, where no model is involved.
    Host,
    /// Each gate as configured: offline unless it says `network: on` (inside a run, where the
    /// code under test may be the model's). `can_cut` is false where the machine has no user
    /// namespaces: offline gates then run with the network on, and their results say so.
    AsConfigured { can_cut: bool },
}

/// Set in the environment of an offline gate, so cargo does not try the network.
const OFFLINE_ENV: [(&str, &str); 1] = [("CARGO_NET_OFFLINE", "true")];

/// Whether this machine can cut a command's network (user and network namespaces work). Probed
/// once per process, by forking: the first call must come before any untrusted command runs
/// alongside (the engine calls it at the start of a run).
pub fn network_can_be_cut() -> bool {
    static CAN: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *CAN.get_or_init(meta_agent_exec::detect::user_namespaces_work)
}

/// Runs the gates with the host's network (`meta-agent gates`) and returns their results in the
/// given order.
pub async fn run_gates<R: CommandRunner>(
    ctx: &GateRunContext<'_, R>,
    gates: &[GateSpec],
) -> GatesSummary {
    run_gates_with(ctx, gates, GateNetworkMode::Host).await
}

/// Runs the gates with the network `mode` says and returns their results in the given order.
pub async fn run_gates_with<R: CommandRunner>(
    ctx: &GateRunContext<'_, R>,
    gates: &[GateSpec],
    mode: GateNetworkMode,
) -> GatesSummary {
    let mut pending = Vec::with_capacity(gates.len());
    for gate in gates {
        pending.push(run_gate(ctx, gate, mode));
    }
    let results: Vec<GateResult> = futures::stream::iter(pending)
        .buffered(ctx.concurrency.max(1))
        .collect()
        .await;
    GatesSummary::from_results(results)
}

/// A gate with `{report_dir}` expanded everywhere.
struct PreparedGate {
    program: Program,
    workdir: PathBuf,
    /// The gate's report directory (where `{report_dir}` points).
    report_dir: PathBuf,
    env: BTreeMap<String, String>,
    junit: Vec<String>,
    coverage: Option<String>,
    sarif: Vec<String>,
}

/// The network policy of one gate under `mode`.
pub fn network_of(gate: &GateSpec, mode: GateNetworkMode) -> NetworkPolicy {
    match (mode, gate.network) {
        (GateNetworkMode::Host, _) | (GateNetworkMode::AsConfigured { .. }, GateNetwork::On) => {
            NetworkPolicy::On
        }
        (GateNetworkMode::AsConfigured { .. }, GateNetwork::Off) => NetworkPolicy::Off,
    }
}

async fn run_gate<R: CommandRunner>(
    ctx: &GateRunContext<'_, R>,
    gate: &GateSpec,
    mode: GateNetworkMode,
) -> GateResult {
    let network = network_of(gate, mode);
    let prepared = match prepare(ctx, gate, network) {
        Ok(prepared) => prepared,
        Err(err) => return could_not_start(gate, String::new(), err.to_string()),
    };
    let command = prepared.program.display();
    if let Some(missing) = missing_program(gate, &prepared.env) {
        let reason = format!("requires `{missing}`, which is not on PATH");
        if gate.optional {
            ctx.events.emit(&Event::GateSkipped {
                gate: gate.name.clone(),
                reason: reason.clone(),
            });
            return not_run(gate, command, GateStatus::Skipped, reason);
        }
        let mut missing = could_not_start(gate, command, reason.clone());
        missing.termination = Some(meta_agent_exec::Termination::NotStarted { reason });
        return finish(ctx, missing);
    }
    ctx.events.emit(&Event::GateStarted {
        gate: gate.name.clone(),
        command: command.clone(),
    });
    let started = SystemTime::now();
    let spec = CommandSpec {
        program: prepared.program.clone(),
        cwd: prepared.workdir.clone(),
        env: prepared.env.clone(),
        timeout: ctx.deadline.bound(gate.timeout),
        kill_grace: ctx.sandbox.kill_grace,
        output_cap: usize::try_from(ctx.sandbox.output_cap).unwrap_or(usize::MAX),
        isolation: Isolation {
            network,
            ..Isolation::for_repository_commands(
                &prepared.env,
                &[
                    ctx.policy.writable_dirs(ctx.repo_root),
                    vec![prepared.report_dir.clone()],
                ]
                .concat(),
            )
            .reading(ctx.policy.readable_dirs())
        },
    };
    let readable = spec.readable_roots();
    let output = match ctx.runner.run(spec).await {
        Ok(output) => output,
        Err(err) => return finish(ctx, could_not_start(gate, command, err.to_string())),
    };
    ctx.events.emit(&Event::CommandRun {
        command: command.clone(),
        cwd: prepared.workdir.display().to_string(),
        result: verdict::termination_line(
            &output.termination,
            u64::try_from(gate.timeout.as_millis()).unwrap_or(u64::MAX),
        ),
        duration_ms: u64::try_from(output.duration.as_millis()).unwrap_or(u64::MAX),
    });
    let reading = ReportContext {
        repo_root: ctx.repo_root,
        limits: ctx.limits,
    };
    let evidence = gather(gate, &prepared, started, &output, reading).await;
    let problem = start_problem(&prepared, &output, &evidence, readable.as_deref());
    let mut result = judged(gate, command, &output, evidence);
    result.problem = problem;
    result.failing = typed_failures(gate, result.tests.as_ref(), &prepared.workdir);
    if network == NetworkPolicy::Off && mode == (GateNetworkMode::AsConfigured { can_cut: false }) {
        let note = GateNote::NetworkNotCut;
        tracing::warn!(gate = %gate.name, "{}", meta_agent_render::gates::note(note));
        result.notes.push(note);
    }
    finish(ctx, result)
}

/// Whether the gate could start ([`start::classify`] over what the run observed), with the
/// directory `sandbox.read` could grant for a path the sandbox hid.
fn start_problem(
    prepared: &PreparedGate,
    output: &CommandOutput,
    evidence: &Evidence,
    readable: Option<&[PathBuf]>,
) -> Option<GateProblem> {
    let argv = prepared.program.argv();
    let log = format!(
        "{}\n{}",
        strip_ansi(&output.stderr.text),
        strip_ansi(&output.stdout.text)
    );
    let temp = std::env::temp_dir();
    let facts = start::StartFacts {
        termination: &output.termination,
        argv: &argv,
        log: &log,
        reports: start::Reports::of(evidence),
        visible: readable.map(|roots| start::Visible { roots, temp: &temp }),
    };
    match start::classify(&facts)? {
        GateProblem::PathHidden { path, error, .. } => Some(GateProblem::PathHidden {
            grant: grant_for(Path::new(&path)).map(|dir| dir.display().to_string()),
            path,
            error,
        }),
        other => Some(other),
    }
}

/// The directory `sandbox.read` could grant so a command reads `path`: the virtualenv holding it
/// (the nearest directory with a `pyvenv.cfg`), else its directory; none when granting that is
/// refused (a home, a shared directory, credentials).
fn grant_for(path: &Path) -> Option<PathBuf> {
    let dir = path
        .ancestors()
        .find(|dir| dir.join("pyvenv.cfg").is_file())
        .or_else(|| path.parent())?;
    let refused = meta_agent_exec::isolate::read_refusal(dir, &meta_agent_exec::isolate::homes());
    refused.is_none().then(|| dir.to_owned())
}

fn finish<R: CommandRunner>(ctx: &GateRunContext<'_, R>, result: GateResult) -> GateResult {
    let detail = meta_agent_render::gates::said(&result.reasons, &result.notes)
        .into_iter()
        .next()
        .unwrap_or_default();
    ctx.events.emit(&Event::GateFinished {
        gate: result.name.clone(),
        status: result.status,
        duration_ms: result.duration_ms,
        detail,
        counts: meta_agent_protocol::records::GateRecord::from(&result).counts(),
    });
    result
}

/// Why a gate's command could not be prepared (the gate fails with this as its reason).
#[derive(Debug, thiserror::Error)]
enum PrepareError {
    #[error("cannot prepare {}: {source}", dir.display())]
    ReportDir {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`files` entry `{0}` must be a plain file name")]
    NotPlain(String),
    #[error("cannot write {name}: {source}")]
    Write {
        name: String,
        #[source]
        source: std::io::Error,
    },
}

fn prepare<R: CommandRunner>(
    ctx: &GateRunContext<'_, R>,
    gate: &GateSpec,
    network: NetworkPolicy,
) -> Result<PreparedGate, PrepareError> {
    let report_dir = ctx.report_root.join(&gate.name);
    fresh_dir(&report_dir).map_err(|source| PrepareError::ReportDir {
        dir: report_dir.clone(),
        source,
    })?;
    let dir = report_dir.to_string_lossy().into_owned();
    let expand = |text: &str| text.replace(REPORT_DIR_PLACEHOLDER, &dir);
    write_files(&gate.files, &report_dir, &expand)?;
    let program = match &gate.command {
        GateCommand::Shell(line) => Program::Shell(expand(line)),
        GateCommand::Argv(argv) => Program::Argv(argv.iter().map(|arg| expand(arg)).collect()),
    };
    let offline = OFFLINE_ENV
        .iter()
        .filter(|_| network == NetworkPolicy::Off)
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()));
    let gate_env: BTreeMap<String, String> = offline
        .chain(
            gate.env
                .iter()
                .map(|(name, value)| (name.clone(), expand(value))),
        )
        .chain([("META_AGENT_REPORT_DIR".to_owned(), dir.clone())])
        .collect();
    let env = child_env(
        ctx.parent_env.iter().cloned(),
        &ctx.sandbox.env_allow,
        gate_env.iter(),
    );
    Ok(PreparedGate {
        program,
        workdir: ctx.repo_root.join(&gate.workdir),
        report_dir,
        env,
        junit: gate.junit.iter().map(|p| expand(p)).collect(),
        coverage: gate.coverage.as_ref().map(|c| expand(&c.path)),
        sarif: gate.sarif.iter().map(|p| expand(p)).collect(),
    })
}

fn fresh_dir(dir: &Path) -> std::io::Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    std::fs::create_dir_all(dir)
}

/// Writes the gate's `files` into its report directory.
fn write_files(
    files: &BTreeMap<String, String>,
    dir: &Path,
    expand: &dyn Fn(&str) -> String,
) -> Result<(), PrepareError> {
    for (name, content) in files {
        let plain = Path::new(name)
            .file_name()
            .is_some_and(|file| file == name.as_str());
        if !plain {
            return Err(PrepareError::NotPlain(name.clone()));
        }
        std::fs::write(dir.join(name), expand(content)).map_err(|source| PrepareError::Write {
            name: name.clone(),
            source,
        })?;
    }
    Ok(())
}

/// The first required program not found on the child's PATH.
fn missing_program<'a>(gate: &'a GateSpec, env: &BTreeMap<String, String>) -> Option<&'a str> {
    let path = env.get("PATH").map(String::as_str).unwrap_or("");
    gate.requires
        .iter()
        .map(String::as_str)
        .find(|program| find_on_path(program, path).is_none())
}

/// Where `program` would be found on `path` (a `:`-separated list), if anywhere.
pub fn find_on_path(program: &str, path: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |candidate: &Path| {
        std::fs::metadata(candidate)
            .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        return executable(Path::new(program)).then(|| PathBuf::from(program));
    }
    path.split(':')
        .filter(|dir| !dir.is_empty())
        .map(|dir| Path::new(dir).join(program))
        .find(|candidate| executable(candidate))
}

async fn gather(
    gate: &GateSpec,
    prepared: &PreparedGate,
    started: SystemTime,
    output: &CommandOutput,
    ctx: ReportContext<'_>,
) -> Evidence {
    let base = prepared.workdir.clone();
    let anchors = [ctx.repo_root.to_owned(), prepared.report_dir.clone()];
    let limits = ctx.limits;
    let junit = prepared.junit.clone();
    let coverage = prepared.coverage.clone();
    let sarif = prepared.sarif.clone();
    let reports = tokio::task::spawn_blocking(move || {
        let read = |patterns: &[String]| read_reports(&base, patterns, started);
        let junit = read(&junit).parse_with(&anchors, limits, |paths| {
            report::parse_junit_files(paths, &limits)
        });
        let coverage_patterns: Vec<String> = coverage.into_iter().collect();
        let coverage = read(&coverage_patterns).parse_with(&anchors, limits, |paths| {
            report::parse_coverage_file(&paths[0])
        });
        let sarif = read(&sarif).parse_with(&anchors, limits, |paths| merge_sarif(paths, &limits));
        (junit, coverage, sarif)
    })
    .await;
    let (junit, coverage, sarif) = reports.unwrap_or_else(|err| {
        let error = format!("report reader crashed: {err}");
        (
            ReportEvidence::Unreadable {
                error: error.clone(),
            },
            ReportEvidence::Unreadable {
                error: error.clone(),
            },
            ReportEvidence::Unreadable { error },
        )
    });
    Evidence {
        termination: output.termination.clone(),
        timeout_ms: u64::try_from(gate.timeout.as_millis()).unwrap_or(u64::MAX),
        junit,
        coverage,
        coverage_threshold: gate.coverage.as_ref().map_or(0.0, |c| c.threshold),
        sarif,
        fail_on: gate.fail_on,
    }
}

/// What reading a gate's reports needs besides the gate.
#[derive(Clone, Copy)]
struct ReportContext<'a> {
    repo_root: &'a Path,
    limits: Limits,
}

/// The report files a gate produced, before they are opened.
enum Found {
    NotConfigured,
    Missing { patterns: Vec<String> },
    Files(Vec<PathBuf>),
}

impl Found {
    /// Opens every file safely (see the module doc) and parses them with `parse`, which reads
    /// each through its descriptor.
    fn parse_with<T>(
        self,
        anchors: &[PathBuf],
        limits: Limits,
        parse: impl FnOnce(&[PathBuf]) -> Result<T, ReportError>,
    ) -> ReportEvidence<T> {
        let files = match self {
            Found::NotConfigured => return ReportEvidence::NotConfigured,
            Found::Missing { patterns } => return ReportEvidence::Missing { patterns },
            Found::Files(files) => files,
        };
        let mut opened = Vec::with_capacity(files.len());
        for path in &files {
            match open_report(path, anchors, limits.max_document_bytes) {
                Ok(file) => opened.push(file),
                Err(error) => {
                    return ReportEvidence::Unreadable {
                        error: error.to_string(),
                    };
                }
            }
        }
        let through: Vec<PathBuf> = opened.iter().map(descriptor_path).collect();
        match parse(&through) {
            Ok(report) => ReportEvidence::Parsed(report),
            Err(err) => {
                let shown = through
                    .iter()
                    .zip(&files)
                    .find(|(fd, _)| fd.as_path() == err.path())
                    .map_or(err.path().to_owned(), |(_, path)| path.clone());
                ReportEvidence::Unreadable {
                    error: err.for_path(&shown).to_string(),
                }
            }
        }
    }
}

/// Why a report file was not read (the gate's evidence is then "unreadable" with this reason).
#[derive(Debug, thiserror::Error)]
enum ReportOpenError {
    #[error("{}: a report must be inside the worktree or the gate's report directory", .0.display())]
    Outside(PathBuf),
    #[error("report {}: {source}", path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: meta_agent_fsafe::FsError,
    },
    #[error("report {} is {size} bytes; reports over {limit} bytes are not read", path.display())]
    TooLarge {
        path: PathBuf,
        size: u64,
        limit: u64,
    },
}

/// The report at `path`, opened beneath whichever anchor (the worktree, the report directory)
/// holds it: never through a link, a regular file of at most `limit` bytes.
fn open_report(
    path: &Path,
    anchors: &[PathBuf],
    limit: u64,
) -> Result<std::fs::File, ReportOpenError> {
    let Some((anchor, relative)) = anchors
        .iter()
        .find_map(|anchor| Some((anchor, path.strip_prefix(anchor).ok()?)))
    else {
        return Err(ReportOpenError::Outside(path.to_owned()));
    };
    let (file, size) = meta_agent_fsafe::Beneath::open(anchor)
        .and_then(|dir| dir.open_regular(relative))
        .map_err(|source| ReportOpenError::Open {
            path: path.to_owned(),
            source,
        })?;
    if size > limit {
        return Err(ReportOpenError::TooLarge {
            path: path.to_owned(),
            size,
            limit,
        });
    }
    Ok(file)
}

/// The path that reads `file` again through its descriptor (the same inode, whatever now lies
/// at its name).
fn descriptor_path(file: &std::fs::File) -> PathBuf {
    use std::os::fd::AsRawFd;
    PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()))
}

/// Finds the report files of one kind.
fn read_reports(base: &Path, patterns: &[String], since: SystemTime) -> Found {
    if patterns.is_empty() {
        return Found::NotConfigured;
    }
    let files = find_reports(base, patterns, since);
    if files.is_empty() {
        return Found::Missing {
            patterns: patterns.to_vec(),
        };
    }
    Found::Files(files)
}

fn merge_sarif(paths: &[PathBuf], limits: &Limits) -> Result<report::SarifReport, ReportError> {
    let mut merged = report::SarifReport::default();
    for path in paths {
        let one = report::parse_sarif_file(path, limits)?;
        merged.findings += one.findings;
        merged.errors += one.errors;
        merged.warnings += one.warnings;
        merged.results_omitted += one.results_omitted;
        merged.results.extend(one.results);
    }
    Ok(merged)
}

/// Files matching any pattern (a path or a glob, relative to `base`), written at or after
/// `since` (with a two-second allowance for coarse file-system clocks), sorted.
pub fn find_reports(base: &Path, patterns: &[String], since: SystemTime) -> Vec<PathBuf> {
    let since = since.checked_sub(Duration::from_secs(2)).unwrap_or(since);
    let mut found: Vec<PathBuf> = patterns
        .iter()
        .flat_map(|pattern| matches_of(base, pattern))
        .filter(|path| fresh(path, since))
        .collect();
    found.sort();
    found.dedup();
    found
}

fn fresh(path: &Path, since: SystemTime) -> bool {
    std::fs::metadata(path)
        .and_then(|meta| meta.modified())
        .is_ok_and(|modified| modified >= since)
}

fn matches_of(base: &Path, pattern: &str) -> Vec<PathBuf> {
    let full = if Path::new(pattern).is_absolute() {
        PathBuf::from(pattern)
    } else {
        base.join(pattern)
    };
    let text = full.to_string_lossy().into_owned();
    let Some(glob_start) = text.find(['*', '?', '[', '{']) else {
        return if full.is_file() {
            vec![full]
        } else {
            Vec::new()
        };
    };
    let root = Path::new(&text[..glob_start])
        .ancestors()
        .find(|dir| dir.is_dir())
        .map(Path::to_owned);
    let (Some(root), Ok(glob)) = (root, globset::Glob::new(&text)) else {
        return Vec::new();
    };
    let matcher = glob.compile_matcher();
    walkdir::WalkDir::new(root)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_file() && matcher.is_match(entry.path()))
        .map(walkdir::DirEntry::into_path)
        .collect()
}

fn judged(
    gate: &GateSpec,
    command: String,
    output: &CommandOutput,
    evidence: Evidence,
) -> GateResult {
    let verdict = verdict::judge(evidence);
    let mut reasons: Vec<String> = verdict
        .reasons
        .iter()
        .map(meta_agent_render::gates::reason)
        .collect();
    if output.descendants_killed > 0 {
        reasons.push(format!(
            "note: {} leftover process(es) killed after the command ended",
            output.descendants_killed
        ));
    }
    GateResult {
        name: gate.name.clone(),
        kind: gate.kind,
        status: if verdict.passed {
            GateStatus::Passed
        } else {
            GateStatus::Failed
        },
        duration_ms: u64::try_from(output.duration.as_millis()).unwrap_or(u64::MAX),
        command,
        termination: Some(output.termination.clone()),
        reasons,
        notes: Vec::new(),
        tests: verdict.tests,
        coverage: verdict.coverage,
        lint: verdict.lint,
        output_tail: output_tail(output),
        descendants_killed: output.descendants_killed,
        log: format!(
            "{}\n{}",
            strip_ansi(&output.stderr.text),
            strip_ansi(&output.stdout.text)
        ),
        scope: GateScope::Full,
        problem: None,
        failing: Vec::new(),
    }
}

/// A gate whose command could not be started at all: failed, with the reason as its problem.
fn could_not_start(gate: &GateSpec, command: String, reason: String) -> GateResult {
    let mut result = not_run(gate, command, GateStatus::Failed, reason.clone());
    result.problem = Some(GateProblem::CouldNotStart { reason });
    result
}

/// The failures' ids typed for the gate's runner (pytest module files looked up beneath the
/// gate's working directory, never through a link); untyped when the gate names no runner.
fn typed_failures(
    gate: &GateSpec,
    tests: Option<&report::JunitSummary>,
    workdir: &Path,
) -> Vec<TestId> {
    let exists = |path: &Path| {
        std::fs::symlink_metadata(workdir.join(path)).is_ok_and(|meta| meta.is_file())
    };
    tests
        .iter()
        .flat_map(|t| t.failures.iter())
        .map(|failure| match gate.runner() {
            Some(runner) => failure.id().typed(runner, &exists),
            None => failure.id(),
        })
        .collect()
}

fn not_run(gate: &GateSpec, command: String, status: GateStatus, reason: String) -> GateResult {
    GateResult {
        name: gate.name.clone(),
        kind: gate.kind,
        status,
        duration_ms: 0,
        command,
        termination: None,
        reasons: vec![reason],
        notes: Vec::new(),
        tests: None,
        coverage: None,
        lint: None,
        output_tail: String::new(),
        descendants_killed: 0,
        log: String::new(),
        scope: GateScope::Full,
        problem: None,
        failing: Vec::new(),
    }
}

/// The end of stderr and stdout, bounded, without terminal escape sequences.
fn output_tail(output: &CommandOutput) -> String {
    let mut text = String::new();
    for stream in [&output.stderr.text, &output.stdout.text] {
        let plain = strip_ansi(stream);
        let trimmed = plain.trim_end();
        if trimmed.is_empty() {
            continue;
        }
        let mut start = trimmed.len().saturating_sub(OUTPUT_TAIL_BYTES / 2);
        while !trimmed.is_char_boundary(start) {
            start += 1;
        }
        text.push_str(&trimmed[start..]);
        text.push('\n');
    }
    text
}

/// Removes ANSI escape sequences (colours, cursor moves, charset switches).
pub fn strip_ansi(text: &str) -> String {
    static ANSI: std::sync::LazyLock<Option<regex::Regex>> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[()][A-Za-z0-9]|[@-Z\\-_])",
        )
        .ok()
    });
    match ANSI.as_ref() {
        Some(ansi) => ansi.replace_all(text, "").into_owned(),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ansi_sequences_are_stripped() {
        let coloured =
            "\x1b[31m-old\x1b(B\x1b[m \x1b[32m+new\x1b[0m \x1b]8;;http://x\x07link\x1b]8;;\x07";
        assert_eq!(super::strip_ansi(coloured), "-old +new link");
    }

    use super::*;

    #[test]
    fn reports_are_found_by_path_and_glob_and_stale_ones_ignored() {
        let dir = tempfile::tempdir().expect("tempdir");
        let nested = dir.path().join("out/a");
        std::fs::create_dir_all(&nested).expect("mkdir");
        std::fs::write(nested.join("one.xml"), "x").expect("write");
        std::fs::write(dir.path().join("out/two.xml"), "x").expect("write");
        let now = SystemTime::now();
        let found = find_reports(dir.path(), &["out/**/*.xml".into()], now);
        assert_eq!(found.len(), 2, "{found:?}");
        let exact = find_reports(dir.path(), &["out/two.xml".into()], now);
        assert_eq!(exact, vec![dir.path().join("out/two.xml")]);
        let later = now + Duration::from_secs(60);
        assert!(find_reports(dir.path(), &["out/**/*.xml".into()], later).is_empty());
    }

    #[test]
    fn programs_are_looked_up_on_the_given_path_only() {
        assert!(find_on_path("sh", "/usr/bin:/bin").is_some());
        assert!(find_on_path("sh", "/nonexistent").is_none());
        assert!(find_on_path("definitely-not-a-program-xyz", "/usr/bin:/bin").is_none());
    }

    /// Records the specs it is asked to run and answers exit 0.
    #[derive(Default)]
    struct Recording(std::sync::Mutex<Vec<CommandSpec>>);

    impl CommandRunner for Recording {
        async fn run(
            &self,
            spec: CommandSpec,
        ) -> Result<CommandOutput, meta_agent_exec::ExecError> {
            if let Ok(mut specs) = self.0.lock() {
                specs.push(spec);
            }
            Ok(CommandOutput {
                termination: meta_agent_exec::Termination::Exited { code: 0 },
                stdout: Default::default(),
                stderr: Default::default(),
                duration: Duration::ZERO,
                descendants_killed: 0,
            })
        }
    }

    fn spec(name: &str, network: GateNetwork) -> GateSpec {
        GateSpec {
            name: name.into(),
            kind: meta_agent_config::raw::GateKind::Custom,
            command: GateCommand::Argv(vec!["true".into()]),
            workdir: ".".into(),
            timeout: Duration::from_secs(5),
            env: BTreeMap::new(),
            junit: vec![],
            coverage: None,
            sarif: vec![],
            fail_on: meta_agent_report::FindingLevel::Error,
            requires: vec![],
            optional: false,
            files: BTreeMap::new(),
            rerun_failed: None,
            network,
        }
    }

    /// Runs `gates` in `root` (reports under `root/reports`) with `mode`, through a runner that
    /// records every spec and answers exit 0.
    fn run_in(
        root: &Path,
        gates: &[GateSpec],
        mode: GateNetworkMode,
    ) -> (GatesSummary, Vec<CommandSpec>) {
        let runner = Recording::default();
        let events = meta_agent_protocol::event::Recorder::default();
        let sandbox = SandboxSettings {
            env_allow: vec![],
            output_cap: 1 << 16,
            kill_grace: Duration::from_secs(1),
            writable: vec![],
            read: vec![],
        };
        let ctx = GateRunContext {
            repo_root: root,
            parent_env: &[],
            sandbox: &sandbox,
            policy: &meta_agent_policy::Policy::default(),
            report_root: &root.join("reports"),
            deadline: Default::default(),
            limits: Limits::default(),
            concurrency: 1,
            runner: &runner,
            events: &events,
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let summary = runtime.block_on(run_gates_with(&ctx, gates, mode));
        let specs = runner.0.lock().map(|s| s.clone()).unwrap_or_default();
        (summary, specs)
    }

    fn run_with(mode: GateNetworkMode) -> (GatesSummary, Vec<CommandSpec>) {
        let dir = tempfile::tempdir().expect("tempdir");
        let gates = [spec("off", GateNetwork::Off), spec("on", GateNetwork::On)];
        run_in(dir.path(), &gates, mode)
    }

    #[test]
    fn inside_a_run_gates_are_offline_unless_they_say_on_and_meta_agent_gates_keeps_the_network() {
        let (summary, specs) = run_with(GateNetworkMode::AsConfigured { can_cut: true });
        let networks: Vec<NetworkPolicy> = specs.iter().map(|s| s.isolation.network).collect();
        assert_eq!(networks, [NetworkPolicy::Off, NetworkPolicy::On]);
        assert_eq!(
            specs[0].env.get("CARGO_NET_OFFLINE").map(String::as_str),
            Some("true")
        );
        assert!(!specs[1].env.contains_key("CARGO_NET_OFFLINE"));
        assert!(summary.gates.iter().all(|g| g.reasons.is_empty()));
        let (_, specs) = run_with(GateNetworkMode::Host);
        assert!(
            specs
                .iter()
                .all(|s| s.isolation.network == NetworkPolicy::On)
        );
        assert!(
            specs
                .iter()
                .all(|s| !s.env.contains_key("CARGO_NET_OFFLINE"))
        );
    }

    #[test]
    fn where_the_network_cannot_be_cut_the_offline_gate_says_it_ran_online() {
        let (summary, _) = run_with(GateNetworkMode::AsConfigured { can_cut: false });
        assert_eq!(summary.gates[0].notes, [GateNote::NetworkNotCut]);
        assert!(summary.gates[0].reasons.is_empty());
        assert!(
            summary.gates[0].passed(),
            "fail-open is reported, not a failure"
        );
        assert!(
            summary.gates[1].reasons.is_empty(),
            "`network: on` asked for it"
        );
    }

    /// Reports are the gate's output, so untrusted: a JUnit path that is a FIFO is not a report
    /// (and must not hang the bot), and a coverage path that is a link to a secret outside the tree must not be read.
    #[test]
    fn a_fifo_or_a_linked_report_is_unreadable_and_nothing_is_read_through_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let outside = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            outside.path().join("environ"),
            "SF:CANARY_SECRET\nend_of_record\n",
        )
        .expect("write");
        nix::unistd::mkfifo(
            &dir.path().join("junit.xml"),
            nix::sys::stat::Mode::from_bits_truncate(0o644),
        )
        .expect("fifo");
        std::os::unix::fs::symlink(outside.path().join("environ"), dir.path().join("lcov.info"))
            .expect("link");
        let mut gate = spec("tests", GateNetwork::Off);
        gate.junit = vec!["junit.xml".into()];
        gate.coverage = Some(meta_agent_config::CoverageCheck {
            path: "lcov.info".into(),
            threshold: 0.0,
        });
        let started = std::time::Instant::now();
        let (summary, _) = run_in(dir.path(), &[gate], GateNetworkMode::Host);
        assert!(started.elapsed() < Duration::from_secs(5));
        let reasons = summary.gates[0].reasons.join("\n");
        assert!(!summary.passed);
        assert!(
            reasons.contains("no JUnit report found at junit.xml"),
            "{reasons}"
        );
        assert!(reasons.contains("lcov.info`: a symbolic link"), "{reasons}");
        assert!(!reasons.contains("CANARY"), "{reasons}");
    }
}
