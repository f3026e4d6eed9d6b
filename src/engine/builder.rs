//! The Build and Improve steps' worker, behind a narrow trait: something that edits the
//! repository to meet the requirements or to fix failures. The LLM-driven agent implements it
//! (agent issue); [`ScriptedBuilder`] plays scripted edits from a task file, and [`Offline`]
//! stands for "no LLM configured". The loop is complete and testable with either.

use std::future::Future;
use std::path::{Component, Path, PathBuf};

use super::state::{Plan, Usage};
use super::task::{Edit, ScriptStep, Task};

/// What the previous attempts taught: given to every improve step, so the next attempt knows what
/// failed, what was tried and that it must try something different.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FailureContext {
    /// The failures still present (parsed digests, not raw logs), one per signature.
    pub failures: Vec<String>,
    /// Actions attempted in earlier iterations.
    pub attempts: Vec<String>,
    pub files_changed: Vec<String>,
    /// Relevant command output, bounded.
    pub output: String,
    /// A summary of the failure patterns (kinds and counts, persistence).
    pub patterns: String,
    /// Explicit instruction for this attempt.
    pub instruction: String,
    /// Guidance from hindsight and from maintainers (untrusted text).
    pub guidance: Vec<String>,
}

/// One request to the builder.
#[derive(Debug, Clone)]
pub struct ActRequest<'a> {
    pub task: &'a Task,
    pub plan: &'a Plan,
    pub iteration: u32,
    /// How many requests came before this one in the session (scripted steps resume from here).
    pub call_index: u32,
    pub repo_root: &'a Path,
    pub context: FailureContext,
    /// Cap on agent steps within this phase.
    pub max_steps: u32,
}

/// What the builder did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ActReport {
    pub summary: String,
    pub actions: Vec<String>,
    /// Every tool call the agent made, for the audit log (empty for scripted and offline).
    pub tool_calls: Vec<ToolCallRecord>,
    pub usage: Usage,
    /// Set when the builder could do nothing (no LLM, script exhausted).
    pub gave_up: Option<String>,
    /// Every model call of the act (planning, exploring, coding, reflecting), in order, for the
    /// `LlmCall` events (empty for scripted and offline).
    pub llm_calls: Vec<LlmCallRecord>,
}

/// One model call, as the `LlmCall` event reports it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LlmCallRecord {
    pub provider: String,
    pub model: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
    pub duration_ms: u64,
    /// Why the call failed (empty when it answered).
    pub error: String,
}

/// One tool call of the agent, as the audit log records it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolCallRecord {
    pub tool: String,
    /// The call's arguments, shortened.
    pub input: String,
    pub success: bool,
    pub duration_ms: u64,
}

/// Why the builder failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BuildError {
    /// Worth retrying (network, rate limit).
    #[error("transient: {0}")]
    Transient(String),
    /// Not worth retrying.
    #[error("{0}")]
    Fatal(String),
    /// The LLM provider refused the request for good (key, model, request, context length): the
    /// run ends escalated with the provider's reason, the work so far kept.
    #[error("the LLM provider refused the request: {0}")]
    Refused(crate::llm::LlmError),
}

/// Edits the repository for the loop.
pub trait Builder: Send + Sync {
    /// Whether a request with this index could do anything.
    fn available(&self, call_index: u32) -> bool;
    fn act(
        &self,
        request: ActRequest<'_>,
    ) -> impl Future<Output = Result<ActReport, BuildError>> + Send;
}

/// No LLM configured: builds nothing, fixes nothing. The loop still runs gates and hindsight.
#[derive(Debug, Default, Clone, Copy)]
pub struct Offline;

impl Builder for Offline {
    fn available(&self, _: u32) -> bool {
        false
    }

    async fn act(&self, _: ActRequest<'_>) -> Result<ActReport, BuildError> {
        Ok(ActReport {
            summary: "no LLM provider is configured".into(),
            gave_up: Some("no LLM provider is configured (llm.provider: none)".into()),
            ..ActReport::default()
        })
    }
}

/// The builder a run uses: scripted edits when the task has them, the LLM agent when a provider
/// is configured (chosen by the CLI), otherwise offline.
#[derive(Debug, Clone)]
pub enum TaskBuilder {
    Offline(Offline),
    Scripted(ScriptedBuilder),
    /// The LLM agent, when a provider is configured.
    Agent(
        std::sync::Arc<crate::agent::AgentBuilder<crate::llm::AnyProvider, crate::exec::Executor>>,
    ),
}

impl TaskBuilder {
    /// Scripted when the task carries edits, offline otherwise.
    pub fn for_task(task: &Task) -> TaskBuilder {
        if task.script.is_empty() {
            TaskBuilder::Offline(Offline)
        } else {
            TaskBuilder::Scripted(ScriptedBuilder::new(task.script.clone()))
        }
    }
}

impl Builder for TaskBuilder {
    fn available(&self, call_index: u32) -> bool {
        match self {
            TaskBuilder::Offline(builder) => builder.available(call_index),
            TaskBuilder::Scripted(builder) => builder.available(call_index),
            TaskBuilder::Agent(builder) => builder.available(call_index),
        }
    }

    async fn act(&self, request: ActRequest<'_>) -> Result<ActReport, BuildError> {
        match self {
            TaskBuilder::Offline(builder) => builder.act(request).await,
            TaskBuilder::Scripted(builder) => builder.act(request).await,
            TaskBuilder::Agent(builder) => builder.act(request).await,
        }
    }
}

/// Plays scripted steps: request N applies step N.
#[derive(Debug, Clone, Default)]
pub struct ScriptedBuilder {
    steps: Vec<ScriptStep>,
}

impl ScriptedBuilder {
    pub fn new(steps: Vec<ScriptStep>) -> Self {
        ScriptedBuilder { steps }
    }
}

impl Builder for ScriptedBuilder {
    fn available(&self, call_index: u32) -> bool {
        (call_index as usize) < self.steps.len()
    }

    async fn act(&self, request: ActRequest<'_>) -> Result<ActReport, BuildError> {
        let Some(step) = self.steps.get(request.call_index as usize) else {
            return Ok(ActReport {
                summary: "the script has no more steps".into(),
                gave_up: Some("the script has no more steps".into()),
                ..ActReport::default()
            });
        };
        let actions = step
            .changes
            .iter()
            .map(|edit| apply_edit(request.repo_root, edit))
            .collect();
        Ok(ActReport {
            summary: step.summary.clone(),
            actions,
            ..ActReport::default()
        })
    }
}

/// Applies one edit; the returned line says what happened (a failed edit is reported, not fatal).
fn apply_edit(root: &Path, edit: &Edit) -> String {
    let (path, result) = match edit {
        Edit::Replace {
            path,
            search,
            replace,
        } => (path, replace_once(root, path, search, replace)),
        Edit::Write { path, content } => (
            path,
            inside(root, path).and_then(|full| write(&full, content)),
        ),
        Edit::Delete { path } => (
            path,
            inside(root, path)
                .and_then(|full| std::fs::remove_file(&full).map_err(|err| err.to_string())),
        ),
    };
    match result {
        Ok(()) => format!("edited {path}"),
        Err(err) => format!("edit of {path} failed: {err}"),
    }
}

fn replace_once(root: &Path, path: &str, search: &str, replace: &str) -> Result<(), String> {
    let full = inside(root, path)?;
    let text = std::fs::read_to_string(&full).map_err(|err| err.to_string())?;
    match text.matches(search).count() {
        1 => write(&full, &text.replacen(search, replace, 1)),
        0 => Err("the search text was not found".into()),
        n => Err(format!(
            "the search text occurs {n} times; it must be unique"
        )),
    }
}

fn write(path: &Path, content: &str) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|err| err.to_string())?;
    }
    std::fs::write(path, content).map_err(|err| err.to_string())
}

/// The path under `root`, refusing absolute paths, `..` and `.git`.
pub fn inside(root: &Path, path: &str) -> Result<PathBuf, String> {
    let relative = Path::new(path);
    let mut clean = PathBuf::new();
    for component in relative.components() {
        match component {
            Component::Normal(part) if part == ".git" => {
                return Err(format!("`{path}` is inside .git"));
            }
            Component::Normal(part) => clean.push(part),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(format!("`{path}` is outside the repository"));
            }
        }
    }
    if clean.as_os_str().is_empty() {
        return Err("empty path".into());
    }
    Ok(root.join(clean))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_repository() {
        let root = Path::new("/repo");
        assert_eq!(
            inside(root, "src/a.py"),
            Ok(PathBuf::from("/repo/src/a.py"))
        );
        assert!(inside(root, "../etc/passwd").is_err());
        assert!(inside(root, "/etc/passwd").is_err());
        assert!(inside(root, ".git/hooks/pre-commit").is_err());
        assert!(inside(root, "a/../../b").is_err());
    }

    #[tokio::test]
    async fn scripted_steps_are_played_by_index() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one two").unwrap();
        let builder = ScriptedBuilder::new(vec![ScriptStep {
            summary: "rename".into(),
            changes: vec![
                Edit::Replace {
                    path: "a.txt".into(),
                    search: "two".into(),
                    replace: "three".into(),
                },
                Edit::Replace {
                    path: "a.txt".into(),
                    search: "missing".into(),
                    replace: "x".into(),
                },
            ],
        }]);
        let task = Task::from_text("t").unwrap();
        let request = ActRequest {
            task: &task,
            plan: &Plan::Build,
            iteration: 0,
            call_index: 0,
            repo_root: dir.path(),
            context: FailureContext::default(),
            max_steps: 15,
        };
        let report = builder.act(request.clone()).await.unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
            "one three"
        );
        assert_eq!(
            report.actions[1],
            "edit of a.txt failed: the search text was not found"
        );
        assert!(builder.available(0) && !builder.available(1));
        let exhausted = builder
            .act(ActRequest {
                call_index: 1,
                ..request
            })
            .await
            .unwrap();
        assert!(exhausted.gave_up.is_some());
    }
}
