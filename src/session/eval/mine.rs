//! `meta-agent eval mine`: a suite from the repository's own history. Each single-parent commit
//! that changes both code and tests is tried: the parent must pass its gates, the commit's test
//! files on the parent must make them fail, and the commit itself must pass. Those become tasks
//! (the parent as source, the message as the task, the commit's test files as hidden tests with
//! the failing ones as `fail_to_pass`); the others are skipped with the reason. The issues a
//! task's commit message refers to are looked up ([`super::issues`]) and their text added to
//! the task, fenced as untrusted.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::gates_in;
use super::issues::{IssueSource, Lookup};
use crate::eval::mine::{LinkedIssue, Skip, issue_refs, split_changes, task_id, task_text};
use crate::git::workspace::{self, HistoryCommit};
use crate::git::{Git2Repository, Repository};
use crate::session::prepared::{executor, load_config, repo_root};
use crate::session::{Done, Environment, Overrides, SessionError};

/// Commits looked at, at most.
const WALK_LIMIT: usize = 500;

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
}

/// What happened to one commit.
enum Mined {
    Task(serde_json::Value),
    Skipped(Skip),
}

pub(super) async fn mine(
    overrides: &Overrides,
    env: &Environment,
    request: &MineRequest,
) -> Result<Done, SessionError> {
    let root = repo_root(overrides)?;
    let executor = executor()?;
    let history = workspace::history(&root, request.since.as_deref(), WALK_LIMIT)
        .map_err(|err| SessionError::Usage(format!("{}: {err}", root.display())))?;
    let repo = Git2Repository::open(&root).map_err(|err| SessionError::Usage(err.to_string()))?;
    let issues = IssueSource::open(request.issues_from.as_deref(), env)?;
    std::fs::create_dir_all(&request.out)
        .map_err(|err| SessionError::Usage(format!("--out {}: {err}", request.out.display())))?;
    let mut tasks = Vec::new();
    let mut lines = Vec::new();
    for commit in &history {
        if tasks.len() >= request.max {
            break;
        }
        let short = &commit.id[..commit.id.len().min(10)];
        let title = commit.message.lines().next().unwrap_or_default();
        match try_commit(
            overrides,
            env,
            &executor,
            &repo,
            &root,
            commit,
            &request.out,
        )
        .await?
        {
            Mined::Task(mut task) => {
                lines.push(format!("{short} task   {title}"));
                let linked = linked_issues(&issues, &commit.message, short, &mut lines).await;
                task["task"] = serde_json::Value::String(task_text(&commit.message, &linked));
                tasks.push(task);
            }
            Mined::Skipped(skip) => lines.push(format!("{short} skip   {title}: {}", skip.why())),
        }
    }
    let suite = serde_json::json!({
        "version": 1,
        "name": format!("mined-{}", root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()),
        "description": format!("Mined from the history of {}", root.display()),
        "tasks": tasks,
    });
    let yaml =
        serde_yaml::to_string(&suite).map_err(|err| SessionError::Internal(err.to_string()))?;
    let path = request.out.join("suite.yml");
    crate::engine::state::write_atomic(&path, yaml.as_bytes())
        .map_err(|err| SessionError::Internal(err.to_string()))?;
    lines.push(format!(
        "{} tasks written to {}",
        tasks.len(),
        path.display()
    ));
    Ok(Done::ok(format!("{}\n", lines.join("\n"))))
}

/// The issues `message` refers to, looked up; a line each says what was found, or why not.
async fn linked_issues(
    issues: &IssueSource,
    message: &str,
    short: &str,
    lines: &mut Vec<String>,
) -> Vec<LinkedIssue> {
    let mut found = Vec::new();
    for reference in issue_refs(message) {
        match issues.lookup(&reference).await {
            Lookup::Found(issue) => {
                lines.push(format!("{short} issue  {reference}: {}", issue.title));
                found.push(issue);
            }
            Lookup::Missing(why) => lines.push(format!("{short} issue  {reference}: {why}")),
            Lookup::Skipped(why) => {
                lines.push(format!(
                    "{short} issue  {reference}: lookup skipped ({why})"
                ));
            }
        }
    }
    found
}

async fn try_commit(
    overrides: &Overrides,
    env: &Environment,
    executor: &crate::exec::Executor,
    repo: &Git2Repository,
    root: &Path,
    commit: &HistoryCommit,
    out: &Path,
) -> Result<Mined, SessionError> {
    let Some(parent) = commit.parent.as_deref().filter(|_| !commit.merge) else {
        return Ok(Mined::Skipped(Skip::NotASingleParent));
    };
    let tests = match split_changes(&commit.paths) {
        Ok(tests) => tests,
        Err(skip) => return Ok(Mined::Skipped(skip)),
    };
    let location = root.to_string_lossy().into_owned();
    let scratch = tempfile::tempdir().map_err(|err| SessionError::Internal(err.to_string()))?;
    let before = scratch.path().join("before");
    workspace::clone_at(&location, Some(parent), &before)
        .map_err(|err| SessionError::Internal(err.to_string()))?;
    let gates = |work: PathBuf| async move {
        let local = Overrides {
            repo: work.clone(),
            ..overrides.clone()
        };
        let config = load_config(&local, &work, executor, env).await?;
        Ok::<_, SessionError>(gates_in(&work, &config, &config.gates, executor, env).await)
    };
    if !gates(before.clone()).await?.passed {
        return Ok(Mined::Skipped(Skip::BuildBrokenBefore));
    }
    let mut files = BTreeMap::new();
    for path in &tests {
        let blob = repo
            .read_blob(&commit.id, path)
            .map_err(|err| SessionError::Internal(err.to_string()))?
            .unwrap_or_default();
        write(&before.join(path), &blob)?;
        let kept = PathBuf::from("hidden").join(task_id(&commit.id)).join(path);
        write(&out.join(&kept), &blob)?;
        files.insert(path.clone(), kept);
    }
    let with_tests = gates(before.clone()).await?;
    if with_tests.passed {
        return Ok(Mined::Skipped(Skip::TestsPassBefore));
    }
    let after = scratch.path().join("after");
    workspace::clone_at(&location, Some(&commit.id), &after)
        .map_err(|err| SessionError::Internal(err.to_string()))?;
    if !gates(after).await?.passed {
        return Ok(Mined::Skipped(Skip::TestsFailAfter));
    }
    let failing: Vec<String> = with_tests
        .gates
        .iter()
        .filter_map(|g| g.tests.as_ref())
        .flat_map(|t| t.failures.iter())
        .map(|failure| failure.id().to_string())
        .collect();
    Ok(Mined::Task(serde_json::json!({
        "id": task_id(&commit.id),
        "source": {"git": location, "commit": parent},
        "task": commit.message,
        "graders": [{"hidden_tests": {"files": files, "fail_to_pass": failing}}],
    })))
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), SessionError> {
    path.parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(path, bytes))
        .map_err(|err| SessionError::Internal(format!("{}: {err}", path.display())))
}
