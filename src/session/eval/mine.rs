//! `meta-agent eval mine`: a suite from the repository's history. Each single-parent commit
//! that changes both code and tests is a candidate: its test files are written into a clone of
//! its parent and the test gates run there once (the one full-suite run); the tests that failed
//! are then re-run alone on the commit (each runner's filter, checked to have run exactly them;
//! the test gates whole when they cannot be selected). A test that failed before and passes on
//! the commit is the task's `fail_to_pass`; the parent is the source, the commit message the task
//! (with the issues it refers to, [`super::issues`], fenced as untrusted), the commit's test
//! files the hidden tests. That is no more than the grading itself runs.
//!
//! Progress goes to stderr, a line per step of each candidate (which of how many, what, how
//! long). Every finished candidate is appended to `mine-journal.jsonl` and the suite rewritten, so
//! an interruption (Ctrl-C, SIGTERM: the running gate is stopped) keeps what was finished, and
//! `--resume` goes on from there. Each candidate works in a temporary directory of its own,
//! removed when the candidate ends, however it ends; its path is noted in the output directory
//! while it lives, so one left by a process killed outright is removed by the next run.
//!
//! The suite is self-contained: its source is named relative to the suite directory (never by an
//! absolute path), the configuration the tasks were mined with is written beside it and named by
//! each task, and its description says where the history came from.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::issues::{IssueSource, Lookup};
use super::{GatePlace, gates_in, offline_unless_on};
use crate::config::Config;
use crate::config::raw::GateKind;
use crate::eval::EvalError;
use crate::eval::mine::{
    JournalLine, LinkedIssue, Skip, fail_to_pass, issue_refs, relative_path, shown_url,
    split_changes, task_id, task_text,
};
use crate::eval::results::{append_line, read_lines};
use crate::exec::Executor;
use crate::exit::Outcome;
use crate::gates::GatesSummary;
use crate::gates::fast::{self, Plan};
use crate::git::workspace::{self, HistoryCommit};
use crate::git::{Git2Repository, Repository};
use crate::protocol::interrupt::Interrupt;
use crate::protocol::records::GateScope;
use crate::protocol::test_id::TestId;
use crate::render::mine::{self as lines, MineCost, MineProgress, MineStep};
use crate::session::prepared::{executor, load_config, repo_root};
use crate::session::{Done, Environment, Overrides, SessionError};

/// Commits looked at, at most.
const WALK_LIMIT: usize = 500;
/// The journal of finished candidates in the output directory.
pub const JOURNAL_FILE: &str = "mine-journal.jsonl";
/// Notes the temporary directory of the candidate being mined, while it lives.
const SCRATCH_NOTE: &str = ".mine-scratch";
/// The prefix of a candidate's temporary directory.
const SCRATCH_PREFIX: &str = "meta-agent-mine-";
/// The configuration the tasks were mined with, when one was given (`--config`).
const CONFIG_FILE: &str = "config.yml";

/// What `meta-agent eval mine` was asked.
#[derive(Debug, Clone)]
pub struct MineRequest {
    /// Only commits after this revision.
    pub since: Option<String>,
    /// Tasks at most.
    pub max: usize,
    pub out: PathBuf,
    /// `--issues-from`: linked issues from a JSON export instead of the GitHub API.
    pub issues_from: Option<PathBuf>,
    /// Go on with the journal an earlier, interrupted run left in `out`.
    pub resume: bool,
}

/// What one mining session shares.
struct Miner<'a> {
    overrides: &'a Overrides,
    env: &'a Environment,
    executor: Executor,
    repo: Git2Repository,
    root: PathBuf,
    out: &'a Path,
    interrupt: Interrupt,
    started: Instant,
    cost: MineCost,
}

/// One candidate under way.
struct Candidate<'a> {
    commit: &'a HistoryCommit,
    parent: &'a str,
    tests: Vec<String>,
    index: usize,
    candidates: usize,
    started: Instant,
}

pub(super) async fn mine(
    overrides: &Overrides,
    env: &Environment,
    request: &MineRequest,
) -> Result<Done, SessionError> {
    let root = repo_root(overrides)?;
    let history = workspace::history(&root, request.since.as_deref(), WALK_LIMIT)
        .map_err(|err| SessionError::Usage(format!("{}: {err}", root.display())))?;
    let repo = Git2Repository::open(&root).map_err(|err| SessionError::Usage(err.to_string()))?;
    let issues = IssueSource::open(request.issues_from.as_deref(), env)?;
    let out = prepare_out(request)?;
    let interrupt = crate::session::signals::interrupt();
    let mut miner = Miner {
        overrides,
        env,
        executor: executor()?.interruptible(interrupt.clone()),
        repo,
        root,
        out: &out,
        interrupt,
        started: Instant::now(),
        cost: MineCost::default(),
    };
    let mut journal: BTreeMap<String, JournalLine> =
        read_lines::<JournalLine>(&journal_path(&out))?
            .into_iter()
            .map(|line| (line.commit.clone(), line))
            .collect();
    let candidates = history
        .iter()
        .filter(|c| c.parent.is_some() && !c.merge && split_changes(&c.paths).is_ok())
        .count();
    let mut tasks: Vec<serde_json::Value> = Vec::new();
    let mut printed = Vec::new();
    let mut index = 0;
    for commit in &history {
        if tasks.len() >= request.max || miner.interrupt.reason().is_some() {
            break;
        }
        let title = commit.message.lines().next().unwrap_or_default();
        let short = &commit.id[..commit.id.len().min(10)];
        let Some((parent, tests)) = cheap_check(commit, short, title, &mut printed) else {
            continue;
        };
        index += 1;
        let line = match journal.remove(&commit.id) {
            Some(done) => done,
            None => {
                let candidate = Candidate {
                    commit,
                    parent,
                    tests,
                    index,
                    candidates,
                    started: Instant::now(),
                };
                let Some(line) = miner.candidate(&candidate).await? else {
                    break;
                };
                append_line(&journal_path(&out), &line)?;
                line
            }
        };
        match (line.task, line.skip) {
            (Some(mut task), _) => {
                printed.push(lines::commit_line(short, title, None));
                let linked = linked_issues(&issues, &commit.message, short, &mut printed).await;
                task["task"] = serde_json::Value::String(task_text(&commit.message, &linked));
                tasks.push(task);
                miner.write_suite(&tasks, request)?;
            }
            (None, skip) => {
                let why = skip.map_or("", |s| s.why());
                printed.push(lines::commit_line(short, title, Some(why)));
            }
        }
    }
    let path = miner.write_suite(&tasks, request)?;
    let interrupted = miner.interrupt.reason();
    miner.cost.elapsed = miner.started.elapsed();
    printed.push(
        lines::closing(
            tasks.len(),
            &path.display().to_string(),
            &miner.cost,
            interrupted.as_deref(),
        )
        .trim_end()
        .to_owned(),
    );
    Ok(Done {
        stdout: format!("{}\n", printed.join("\n")),
        outcome: if interrupted.is_some() {
            Outcome::Interrupted
        } else {
            Outcome::Success
        },
    })
}

/// The checks that need no gate run: a single parent, tests and code both changed. `None` (a
/// line printed) when the commit is skipped.
fn cheap_check<'c>(
    commit: &'c HistoryCommit,
    short: &str,
    title: &str,
    printed: &mut Vec<String>,
) -> Option<(&'c str, Vec<String>)> {
    let checked = match commit.parent.as_deref().filter(|_| !commit.merge) {
        None => Err(Skip::NotASingleParent),
        Some(parent) => split_changes(&commit.paths).map(|tests| (parent, tests)),
    };
    match checked {
        Ok(candidate) => Some(candidate),
        Err(skip) => {
            printed.push(lines::commit_line(short, title, Some(skip.why())));
            None
        }
    }
}

/// The output directory, made; a journal left there needs `--resume`; a candidate's temporary
/// directory left by a run killed outright is removed.
fn prepare_out(request: &MineRequest) -> Result<PathBuf, SessionError> {
    std::fs::create_dir_all(&request.out)
        .map_err(|err| SessionError::Usage(format!("--out {}: {err}", request.out.display())))?;
    let out = request
        .out
        .canonicalize()
        .map_err(|err| SessionError::Usage(format!("--out {}: {err}", request.out.display())))?;
    if journal_path(&out).exists() && !request.resume {
        return Err(SessionError::Usage(format!(
            "{} holds an earlier `eval mine` ({JOURNAL_FILE}): add --resume to go on with it, or choose another --out",
            request.out.display()
        )));
    }
    remove_left_scratch(&out);
    Ok(out)
}

fn journal_path(out: &Path) -> PathBuf {
    out.join(JOURNAL_FILE)
}

/// Removes the temporary directory a killed run noted, when it is one of ours (in the system's
/// temporary directory, with our prefix): the note is a file anyone could have written.
fn remove_left_scratch(out: &Path) {
    let note = out.join(SCRATCH_NOTE);
    let Ok(text) = std::fs::read_to_string(&note) else {
        return;
    };
    let left = PathBuf::from(text.trim());
    let ours = left.parent() == Some(std::env::temp_dir().as_path())
        && left
            .file_name()
            .is_some_and(|name| name.to_string_lossy().starts_with(SCRATCH_PREFIX));
    if ours && left.is_dir() {
        match std::fs::remove_dir_all(&left) {
            Ok(()) => tracing::info!("removed {} left by an interrupted run", left.display()),
            Err(err) => tracing::warn!("cannot remove {}: {err}", left.display()),
        }
    }
    let _removed = std::fs::remove_file(note);
}

impl Miner<'_> {
    /// Mines one candidate in a temporary directory of its own, removed when it returns. `None`
    /// when mining was interrupted meanwhile: what the gates said then means nothing.
    async fn candidate(
        &mut self,
        candidate: &Candidate<'_>,
    ) -> Result<Option<JournalLine>, SessionError> {
        let scratch = tempfile::Builder::new()
            .prefix(SCRATCH_PREFIX)
            .tempdir()
            .map_err(|err| SessionError::Internal(err.to_string()))?;
        let note = self.out.join(SCRATCH_NOTE);
        crate::engine::state::write_atomic(&note, scratch.path().to_string_lossy().as_bytes())
            .map_err(|err| SessionError::Internal(err.to_string()))?;
        let mined = self.try_commit(candidate, scratch.path()).await;
        drop(scratch);
        let _removed = std::fs::remove_file(note);
        self.cost.tried += 1;
        if self.interrupt.reason().is_some() {
            return Ok(None);
        }
        let (task, skip) = match mined? {
            Ok(task) => (Some(task), None),
            Err(skip) => (None, Some(skip)),
        };
        Ok(Some(JournalLine {
            commit: candidate.commit.id.clone(),
            task,
            skip,
        }))
    }

    fn progress(&self, candidate: &Candidate<'_>, step: MineStep) {
        let commit = candidate.commit;
        tracing::info!(
            "{}",
            lines::progress(&MineProgress {
                index: candidate.index,
                candidates: candidate.candidates,
                short: &commit.id[..commit.id.len().min(10)],
                title: commit.message.lines().next().unwrap_or_default(),
                step,
                on_candidate: candidate.started.elapsed(),
                overall: self.started.elapsed(),
            })
        );
    }

    /// The task `candidate` makes, or why it makes none.
    async fn try_commit(
        &mut self,
        candidate: &Candidate<'_>,
        scratch: &Path,
    ) -> Result<Result<serde_json::Value, Skip>, SessionError> {
        self.progress(candidate, MineStep::Preparing);
        let before = scratch.join("before");
        self.clone_at(candidate.parent, &before)?;
        for path in &candidate.tests {
            write(&before.join(path), &self.blob(&candidate.commit.id, path)?)?;
        }
        let config = self.config_of(&before).await?;
        let test_gates: Vec<_> = config
            .gates
            .iter()
            .filter(|g| g.kind == GateKind::Tests)
            .cloned()
            .collect();
        if test_gates.is_empty() {
            return Ok(Err(Skip::NoTestGate));
        }
        self.progress(
            candidate,
            MineStep::TestsBefore {
                test_files: candidate.tests.len(),
            },
        );
        self.cost.suite_runs += 1;
        let with_tests = gates_in(&before, &config, &test_gates, &self.executor, self.env).await;
        if with_tests.passed {
            return Ok(Err(Skip::TestsPassBefore));
        }
        let failing: Vec<TestId> = with_tests
            .gates
            .iter()
            .flat_map(|g| g.failing.iter().cloned())
            .collect();
        let after = scratch.join("after");
        self.clone_at(&candidate.commit.id, &after)?;
        let ran = self
            .on_commit(candidate, &after, &config, &with_tests)
            .await;
        let named = if failing.is_empty() {
            // No test was named before (nothing reported, e.g. a build that failed): the task
            // stands on the test gates passing on the commit.
            if !ran.iter().all(|g| g.passed()) {
                return Ok(Err(Skip::TestsFailAfter));
            }
            Vec::new()
        } else {
            let outcomes: Vec<_> = ran
                .into_iter()
                .filter_map(|result| result.tests)
                .flat_map(|tests| tests.outcomes)
                .collect();
            fail_to_pass(&failing, &outcomes)
        };
        if named.is_empty() && !failing.is_empty() {
            return Ok(Err(Skip::TestsFailAfter));
        }
        self.task(candidate, &config, &named).map(Ok)
    }

    /// The commit's run of the gates that failed before: their failing tests alone when every
    /// one of them can select its failing tests, else those gates whole.
    async fn on_commit(
        &mut self,
        candidate: &Candidate<'_>,
        after: &Path,
        config: &Config,
        before: &GatesSummary,
    ) -> Vec<crate::gates::GateResult> {
        let failed: Vec<_> = before.gates.iter().filter(|g| !g.passed()).collect();
        let plans: Vec<Plan> = failed
            .iter()
            .filter_map(|result| {
                let spec = config.gates.iter().find(|g| g.name == result.name)?;
                let omitted = result.tests.as_ref().is_none_or(|t| t.failures_omitted > 0);
                let rerun = (!omitted).then(|| fast::partial(spec, &result.failing))??;
                Some(Plan::Partial(Box::new(rerun), GateScope::Full))
            })
            .collect();
        let specs: Vec<_> = failed
            .iter()
            .filter_map(|r| config.gates.iter().find(|g| g.name == r.name).cloned())
            .collect();
        if plans.len() < failed.len() || plans.is_empty() {
            self.progress(candidate, MineStep::TestsOnCommit);
            self.cost.suite_runs += 1;
            return gates_in(after, config, &specs, &self.executor, self.env)
                .await
                .gates;
        }
        let tests = plans.iter().map(selected).sum();
        self.progress(candidate, MineStep::FailingOnCommit { tests });
        let Some(place) = GatePlace::new(after, config, &self.executor, self.env) else {
            return Vec::new();
        };
        let ran = fast::run_plans(&place.context(), &plans, offline_unless_on()).await;
        let partial = ran.iter().filter(|(_, scope)| scope.is_some()).count();
        self.cost.failing_runs += usize::from(partial > 0);
        self.cost.suite_runs += usize::from(partial < ran.len());
        ran.into_iter().map(|(result, _)| result).collect()
    }

    /// The task a mined commit becomes, its hidden test files written under the output
    /// directory and its configuration named.
    fn task(
        &self,
        candidate: &Candidate<'_>,
        config: &Config,
        named: &[TestId],
    ) -> Result<serde_json::Value, SessionError> {
        let id = task_id(&candidate.commit.id);
        let mut files = BTreeMap::new();
        for path in &candidate.tests {
            let kept = PathBuf::from("hidden").join(&id).join(path);
            write(
                &self.out.join(&kept),
                &self.blob(&candidate.commit.id, path)?,
            )?;
            files.insert(path.clone(), kept);
        }
        let fail_to_pass: Vec<String> = named.iter().map(ToString::to_string).collect();
        let mut grader = serde_json::json!({"files": files});
        if !fail_to_pass.is_empty() {
            grader["fail_to_pass"] = serde_json::json!(fail_to_pass);
        }
        Ok(serde_json::json!({
            "id": id,
            "source": {
                "git": relative_path(self.out, &self.root).to_string_lossy(),
                "commit": candidate.parent,
            },
            "task": candidate.commit.message,
            "config_file": self.config_file(&id, config)?,
            "graders": [{"hidden_tests": grader}],
        }))
    }

    /// The configuration file a task names, written beside the suite: `config.yml`, the one
    /// given with `--config`; else the parent's own configuration as it was
    /// (`configs/<task>.yml`), or the preset it was mined with.
    fn config_file(&self, task: &str, config: &Config) -> Result<String, SessionError> {
        if let Some(given) = &self.overrides.config {
            let text = read_text(given)?;
            write(&self.out.join(CONFIG_FILE), text.as_bytes())?;
            return Ok(CONFIG_FILE.to_owned());
        }
        let text = match &config.source {
            Some(file) => read_text(file)?,
            None => format!(
                "# No configuration in the repository: mined with the preset detected then.\nversion: 1\npreset: {}\n",
                config.preset.as_deref().unwrap_or("none")
            ),
        };
        let name = format!("configs/{task}.yml");
        write(&self.out.join(&name), text.as_bytes())?;
        Ok(name)
    }

    /// Writes the suite (atomically), with what was mined so far. Returns its path.
    fn write_suite(
        &self,
        tasks: &[serde_json::Value],
        request: &MineRequest,
    ) -> Result<PathBuf, SessionError> {
        let name = self
            .root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let head = self.repo.head().map(|h| h.commit).unwrap_or_default();
        let from = workspace::origin_url(&self.root)
            .and_then(|url| shown_url(&url))
            .unwrap_or_else(|| format!("the repository `{name}`"));
        let description = format!(
            "Mined by meta-agent {} from {from} at {}{}, at most {} tasks; its source is the repository at `{}` from this directory.",
            env!("CARGO_PKG_VERSION"),
            &head[..head.len().min(10)],
            request
                .since
                .as_deref()
                .map(|since| format!(" (commits after {since})"))
                .unwrap_or_default(),
            request.max,
            relative_path(self.out, &self.root).display()
        );
        let suite = serde_json::json!({
            "version": 1,
            "name": format!("mined-{name}"),
            "description": description,
            "tasks": tasks,
        });
        let yaml =
            serde_yaml::to_string(&suite).map_err(|err| SessionError::Internal(err.to_string()))?;
        let path = self.out.join("suite.yml");
        crate::engine::state::write_atomic(&path, yaml.as_bytes())
            .map_err(|err| SessionError::Internal(err.to_string()))?;
        Ok(path)
    }

    fn clone_at(&self, rev: &str, dest: &Path) -> Result<(), SessionError> {
        workspace::clone_at(&self.root.to_string_lossy(), Some(rev), dest)
            .map(|_| ())
            .map_err(|err| SessionError::Internal(err.to_string()))
    }

    fn blob(&self, commit: &str, path: &str) -> Result<Vec<u8>, SessionError> {
        Ok(self
            .repo
            .read_blob(commit, path)
            .map_err(|err| SessionError::Internal(err.to_string()))?
            .unwrap_or_default())
    }

    async fn config_of(&self, work: &Path) -> Result<Config, SessionError> {
        let local = Overrides {
            repo: work.to_owned(),
            ..self.overrides.clone()
        };
        load_config(&local, work, &self.executor, self.env).await
    }
}

fn selected(plan: &Plan) -> usize {
    match plan {
        Plan::Partial(rerun, _) => rerun.selected.len(),
        Plan::Whole(_) => 0,
    }
}

/// The issues `message` refers to, looked up; a line each says what was found, or why not.
async fn linked_issues(
    issues: &IssueSource,
    message: &str,
    short: &str,
    printed: &mut Vec<String>,
) -> Vec<LinkedIssue> {
    let mut found = Vec::new();
    for reference in issue_refs(message) {
        let what = match issues.lookup(&reference).await {
            Lookup::Found(issue) => {
                let title = issue.title.clone();
                found.push(issue);
                title
            }
            Lookup::Missing(why) => why,
            Lookup::Skipped(why) => format!("lookup skipped ({why})"),
        };
        printed.push(lines::issue_line(short, &reference.to_string(), &what));
    }
    found
}

fn read_text(path: &Path) -> Result<String, SessionError> {
    std::fs::read_to_string(path).map_err(|source| {
        EvalError::Read {
            path: path.to_owned(),
            source,
        }
        .into()
    })
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), SessionError> {
    path.parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(path, bytes))
        .map_err(|err| SessionError::Internal(format!("{}: {err}", path.display())))
}
