//! `meta-agent eval`: the sessions of `eval run`, `grade`, `merge`, `compare` and `mine`. Each
//! run is the real engine in a fresh temporary clone (`runner.rs`), `--jobs` at a time; results
//! are appended to `results.jsonl` one line per finished run, so `--resume` never repeats one;
//! the summary, report, JUnit XML and human review queue are written from the results, and the
//! queue is posted as a comment when the evaluation runs on GitHub ([`review`]).

mod graders;
mod issues;
mod mine;
pub mod review;
mod runner;

use std::path::{Path, PathBuf};

use futures::StreamExt;

use super::prepared::{executor, repo_root};
use super::{Done, Environment, Overrides, SessionError};
use crate::eval::EvalError;
use crate::eval::compare::{self, Gate};
use crate::eval::grade::{Grade, GraderDetail};
use crate::eval::results::{self, RESULTS_FILE, RunResult};
use crate::eval::suite::Suite;
use crate::eval::summary::{self, Summary};
use crate::exec::Executor;
use crate::exit::Outcome;

pub use mine::MineRequest;

/// The summary file of an output directory.
pub const SUMMARY_FILE: &str = "summary.json";
/// The review queue of human grades.
pub const REVIEW_FILE: &str = "review.md";

impl From<EvalError> for SessionError {
    fn from(err: EvalError) -> SessionError {
        match err {
            EvalError::Write { .. } | EvalError::Json(_) => SessionError::Internal(err.to_string()),
            EvalError::Read { .. } | EvalError::Parse { .. } | EvalError::Invalid { .. } => {
                SessionError::Usage(err.to_string())
            }
        }
    }
}

/// `--shard I/N`: this process runs the I-th of N slices (1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl std::str::FromStr for Shard {
    type Err = EvalError;

    fn from_str(text: &str) -> Result<Shard, EvalError> {
        let bad = || EvalError::Invalid {
            path: PathBuf::from("--shard"),
            line: 0,
            key: "shard".into(),
            message: format!("`{text}`: write I/N with 1 <= I <= N"),
        };
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let (index, count) = (
            i.trim().parse::<u32>().map_err(|_| bad())?,
            n.trim().parse::<u32>().map_err(|_| bad())?,
        );
        if index == 0 || count == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

/// What `meta-agent eval run` was asked.
#[derive(Debug, Clone)]
pub struct EvalRunRequest {
    pub suite: PathBuf,
    pub runs: u32,
    /// Runs at a time (default: half the cores).
    pub jobs: Option<usize>,
    pub shard: Option<Shard>,
    pub out: PathBuf,
    pub json: bool,
    pub resume: bool,
    /// `--task`: only these tasks (all when empty).
    pub tasks: Vec<String>,
}

/// What every run of an evaluation shares.
pub(crate) struct EvalShared<'a> {
    pub suite: &'a Suite,
    pub overrides: &'a Overrides,
    pub executor: &'a Executor,
    pub env: &'a Environment,
    pub out: &'a Path,
}

/// Half the cores, at least one.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1))
}

/// `meta-agent eval run`.
pub async fn run(
    overrides: &Overrides,
    env: &Environment,
    request: &EvalRunRequest,
) -> Result<Done, SessionError> {
    let suite = Suite::load(&request.suite)?;
    if request.runs == 0 {
        return Err(SessionError::Usage("--runs must be at least 1".into()));
    }
    let results_path = request.out.join(RESULTS_FILE);
    if results_path.exists() && !request.resume {
        return Err(SessionError::Usage(format!(
            "{} already holds results: add --resume to continue it, or choose another --out",
            request.out.display()
        )));
    }
    std::fs::create_dir_all(&request.out)
        .map_err(|err| SessionError::Usage(format!("--out {}: {err}", request.out.display())))?;
    let mut done = results::read(&results_path)?;
    if request.resume && results_path.exists() {
        // Drops a line a kill cut short, so the appends that follow start on a fresh line.
        results::rewrite(&results_path, &done)?;
    }
    let finished = results::finished(&done);
    let chosen = chosen_tasks(&suite, &request.tasks)?;
    let todo: Vec<(usize, u32)> = planned(&suite, request.runs, request.shard)
        .into_iter()
        .filter(|(task, _)| chosen.contains(task))
        .filter(|(task, run)| !finished.contains(&(suite.file.tasks[*task].id.clone(), *run)))
        .collect();
    let executor = executor()?;
    let overrides = Overrides {
        repo: repo_root(overrides).unwrap_or_else(|_| overrides.repo.clone()),
        ..overrides.clone()
    };
    let shared = EvalShared {
        suite: &suite,
        overrides: &overrides,
        executor: &executor,
        env,
        out: &request.out,
    };
    let jobs = request.jobs.unwrap_or_else(default_jobs).max(1);
    let mut stream = futures::stream::iter(todo)
        .map(|(task, run)| runner::run_one(&shared, &suite.file.tasks[task], run))
        .buffer_unordered(jobs);
    while let Some(result) = stream.next().await {
        tracing::info!(
            "{} run {}: {}",
            result.task,
            result.run,
            result.grade.as_str()
        );
        results::append(&results_path, &result)?;
        done.push(result);
    }
    drop(stream);
    let summary = write_outputs(&request.out, &suite.name, done, env)?;
    review::publish(env, &summary, &crate::render::eval::review_queue(&summary)).await;
    Ok(Done {
        stdout: render(&summary, request.json),
        outcome: Outcome::Success,
    })
}

/// The indexes of the tasks `--task` names (every task when it names none); an id the suite
/// does not have is a usage error listing the ones it has.
fn chosen_tasks(
    suite: &Suite,
    ids: &[String],
) -> Result<std::collections::BTreeSet<usize>, SessionError> {
    let all = &suite.file.tasks;
    if ids.is_empty() {
        return Ok((0..all.len()).collect());
    }
    ids.iter()
        .map(|id| {
            all.iter().position(|t| t.id == *id).ok_or_else(|| {
                let known: Vec<&str> = all.iter().map(|t| t.id.as_str()).collect();
                SessionError::Usage(format!(
                    "--task {id}: no such task in {} (its tasks: {})",
                    suite.name,
                    known.join(", ")
                ))
            })
        })
        .collect()
}

/// Every (task index, run) of the suite, in order, then this shard's slice of them.
pub fn planned(suite: &Suite, runs: u32, shard: Option<Shard>) -> Vec<(usize, u32)> {
    let all = (0..suite.file.tasks.len()).flat_map(|task| (1..=runs).map(move |run| (task, run)));
    match shard {
        None => all.collect(),
        Some(shard) => all
            .enumerate()
            .filter(|(index, _)| *index as u32 % shard.count == shard.index - 1)
            .map(|(_, job)| job)
            .collect(),
    }
}

fn render(summary: &Summary, json: bool) -> String {
    if json {
        format!("{}\n", summary::to_json(summary))
    } else {
        crate::render::eval::report_markdown(summary)
    }
}

/// Writes `summary.json`, `report.md`, `junit.xml` and `review.md` (when a run awaits a
/// person) from the results, redacted.
fn write_outputs(
    out: &Path,
    suite: &str,
    results: Vec<RunResult>,
    env: &Environment,
) -> Result<Summary, SessionError> {
    let summary = summary::summarize(suite, results);
    let junit = crate::report::junit_writer::to_xml(
        &crate::render::eval::junit_report_name(&summary),
        &crate::render::eval::junit_suites(&summary),
    )
    .map_err(|err| SessionError::Internal(err.to_string()))?;
    let files = [
        (
            SUMMARY_FILE,
            format!(
                "{}\n",
                serde_json::to_string_pretty(&summary)
                    .map_err(|err| SessionError::Internal(err.to_string()))?
            ),
        ),
        ("report.md", crate::render::eval::report_markdown(&summary)),
        ("junit.xml", junit),
        (REVIEW_FILE, crate::render::eval::review_queue(&summary)),
    ];
    for (name, text) in files {
        let text = env.redactor.redact_text(&text);
        crate::engine::state::write_atomic(&out.join(name), text.as_bytes())
            .map_err(|err| SessionError::Internal(err.to_string()))?;
    }
    Ok(summary)
}

/// What `meta-agent eval grade` records.
#[derive(Debug, Clone)]
pub struct GradeRequest {
    pub dir: PathBuf,
    pub task: String,
    pub run: u32,
    pub pass: bool,
    pub note: Option<String>,
}

/// `meta-agent eval grade`: records a person's grade for the pending human graders of one run,
/// recombines its grade, rewrites the results and reports, and updates the review comment when
/// on GitHub.
pub async fn grade(request: &GradeRequest, env: &Environment) -> Result<Done, SessionError> {
    let path = request.dir.join(RESULTS_FILE);
    let mut all = results::read(&path)?;
    let suite = read_summary(&request.dir)?.suite;
    let Some(result) = all
        .iter_mut()
        .find(|r| r.task == request.task && r.run == request.run)
    else {
        return Err(SessionError::Usage(format!(
            "{}: no run {} of task {}",
            path.display(),
            request.run,
            request.task
        )));
    };
    let grade = if request.pass {
        Grade::Pass
    } else {
        Grade::Fail
    };
    let mut recorded = 0;
    for detail in &mut result.grader_details {
        recorded += record_human(detail, grade, request.note.as_deref());
        crate::eval::grade::recombine(detail);
    }
    if recorded == 0 {
        return Err(SessionError::Usage(format!(
            "task {} run {} has no human grade pending",
            request.task, request.run
        )));
    }
    result.grade = crate::eval::grade::overall(&result.grader_details);
    let line = format!(
        "{} run {}: now {}\n",
        result.task,
        result.run,
        result.grade.as_str()
    );
    results::rewrite(&path, &all)?;
    let summary = write_outputs(&request.dir, &suite, all, env)?;
    review::publish(env, &summary, &crate::render::eval::review_queue(&summary)).await;
    Ok(Done::ok(line))
}

fn record_human(detail: &mut GraderDetail, grade: Grade, note: Option<&str>) -> usize {
    let mut count = 0;
    if detail.kind == "human" && detail.grade == Grade::Pending {
        detail.grade = grade;
        detail.detail = format!(
            "graded {} by a person{}",
            grade.as_str(),
            note.map(|n| format!(": {n}")).unwrap_or_default()
        );
        count += 1;
    }
    for child in &mut detail.children {
        count += record_human(child, grade, note);
    }
    count
}

fn read_summary(dir: &Path) -> Result<Summary, SessionError> {
    let path = if dir.is_file() {
        dir.to_owned()
    } else {
        dir.join(SUMMARY_FILE)
    };
    let text = std::fs::read_to_string(&path).map_err(|source| EvalError::Read {
        path: path.clone(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|err| {
        EvalError::Parse {
            path,
            line: err.line(),
            column: err.column(),
            message: err.to_string(),
        }
        .into()
    })
}

/// `meta-agent eval merge DIR... --out OUT`: the shards' results as one evaluation (its review
/// queue posted when on GitHub).
pub async fn merge(
    dirs: &[PathBuf],
    out: &Path,
    json: bool,
    env: &Environment,
) -> Result<Done, SessionError> {
    let mut suite: Option<String> = None;
    let mut all: Vec<RunResult> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for dir in dirs {
        let name = read_summary(dir)?.suite;
        if let Some(first) = &suite
            && *first != name
        {
            return Err(SessionError::Usage(format!(
                "{}: suite {name}, but the others are {first}",
                dir.display()
            )));
        }
        suite = Some(name);
        for result in results::read(&dir.join(RESULTS_FILE))? {
            if !seen.insert(result.key()) {
                return Err(SessionError::Usage(format!(
                    "{}: {} run {} is also in another shard",
                    dir.display(),
                    result.task,
                    result.run
                )));
            }
            all.push(result);
        }
    }
    let suite = suite.ok_or_else(|| SessionError::Usage("give at least one directory".into()))?;
    std::fs::create_dir_all(out)
        .map_err(|err| SessionError::Usage(format!("--out {}: {err}", out.display())))?;
    results::rewrite(&out.join(RESULTS_FILE), &all)?;
    let summary = write_outputs(out, &suite, all, env)?;
    review::publish(env, &summary, &crate::render::eval::review_queue(&summary)).await;
    Ok(Done::ok(render(&summary, json)))
}

/// What `meta-agent eval compare` was asked.
#[derive(Debug, Clone)]
pub struct CompareRequest {
    pub a: PathBuf,
    pub b: PathBuf,
    pub gate: Gate,
    pub json: bool,
}

/// `meta-agent eval compare A B`: exit 1 when B is a significant regression.
pub fn compare(request: &CompareRequest) -> Result<Done, SessionError> {
    let (a, b) = (read_summary(&request.a)?, read_summary(&request.b)?);
    let comparison = compare::compare(&a, &b, request.gate);
    let stdout = if request.json {
        format!(
            "{}\n",
            serde_json::to_string(&comparison)
                .map_err(|err| SessionError::Internal(err.to_string()))?
        )
    } else {
        crate::render::eval::comparison(&comparison)
    };
    Ok(Done {
        stdout,
        outcome: if comparison.regression {
            Outcome::GatesFailed
        } else {
            Outcome::Success
        },
    })
}

/// `meta-agent eval schema`: the JSON Schema of `suite.yml`.
pub fn schema() -> Done {
    Done::ok(format!(
        "{}\n",
        serde_json::to_string_pretty(&crate::eval::suite::json_schema()).unwrap_or_default()
    ))
}

/// `meta-agent eval mine`.
pub async fn mine(
    overrides: &Overrides,
    env: &Environment,
    request: &MineRequest,
) -> Result<Done, SessionError> {
    mine::mine(overrides, env, request).await
}

/// Test outcomes kept by id from the reports of a grading or mining gate run: the named tests of
/// `hidden_tests` are looked up among them.
const MAX_TEST_IDS: usize = 200_000;

/// Where an evaluation's gates run: a working directory with its configuration's sandbox and
/// policy, a report directory of its own, every test id kept (up to [`MAX_TEST_IDS`]), offline
/// unless a gate says otherwise.
pub(crate) struct GatePlace<'a> {
    work: &'a Path,
    config: &'a crate::config::Config,
    policy: crate::policy::Policy,
    reports: tempfile::TempDir,
    executor: &'a Executor,
    env: &'a Environment,
}

impl<'a> GatePlace<'a> {
    /// `None` when no report directory can be made.
    pub(crate) fn new(
        work: &'a Path,
        config: &'a crate::config::Config,
        executor: &'a Executor,
        env: &'a Environment,
    ) -> Option<GatePlace<'a>> {
        Some(GatePlace {
            work,
            config,
            policy: crate::policy::Policy::from_config(config, work),
            reports: tempfile::tempdir().ok()?,
            executor,
            env,
        })
    }

    /// What the gates run here share.
    pub(crate) fn context(&self) -> crate::gates::GateRunContext<'_, Executor> {
        crate::gates::GateRunContext {
            repo_root: self.work,
            parent_env: &self.env.vars,
            sandbox: &self.config.sandbox,
            policy: &self.policy,
            report_root: self.reports.path(),
            limits: crate::report::Limits {
                max_test_ids: MAX_TEST_IDS,
                ..crate::report::Limits::default()
            },
            concurrency: 1,
            runner: self.executor,
            events: &crate::protocol::event::TracingSink,
            deadline: Default::default(),
        }
    }
}

/// The network of an evaluation's gates: offline unless a gate says `network: on`.
pub(crate) fn offline_unless_on() -> crate::gates::GateNetworkMode {
    crate::gates::GateNetworkMode::AsConfigured {
        can_cut: crate::gates::runner::network_can_be_cut(),
    }
}

/// Runs `gates` in `work` with `config`'s sandbox, offline unless a gate says otherwise; the
/// JUnit reports keep every test's id and outcome (up to [`MAX_TEST_IDS`]).
pub(crate) async fn gates_in(
    work: &Path,
    config: &crate::config::Config,
    gates: &[crate::config::GateSpec],
    executor: &Executor,
    env: &Environment,
) -> crate::gates::GatesSummary {
    let Some(place) = GatePlace::new(work, config, executor, env) else {
        return crate::gates::GatesSummary::from_results(Vec::new());
    };
    crate::gates::run_gates_with(&place.context(), gates, offline_unless_on()).await
}
