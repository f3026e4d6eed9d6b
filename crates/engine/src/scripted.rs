//! The engine's own builders (see [`meta_agent_protocol::builder::Builder`]): [`ScriptedBuilder`]
//! plays scripted edits from a task file (offline runs and reproductions), and [`Offline`] stands
//! for "no LLM configured". The loop is complete and testable with either; the LLM agent is the
//! third, wired where sessions are assembled.

use std::path::Path;

use meta_agent_policy::PolicyError;
use meta_agent_policy::paths::inside;
use meta_agent_protocol::builder::{ActReport, ActRequest, BuildError, Builder};
use meta_agent_protocol::task::{Edit, ScriptStep};

/// Why a scripted edit could not be applied (reported as an action, never fatal).
#[derive(Debug, thiserror::Error)]
enum EditError {
    #[error(transparent)]
    Path(#[from] PolicyError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("the search text was not found")]
    NotFound,
    #[error("the search text occurs {0} times; it must be unique")]
    NotUnique(usize),
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
        Edit::Write { path, content } => (path, write(root, path, content)),
        Edit::Delete { path } => (path, delete(root, path)),
    };
    match result {
        Ok(()) => format!("edited {path}"),
        Err(err) => format!("edit of {path} failed: {err}"),
    }
}

fn replace_once(root: &Path, path: &str, search: &str, replace: &str) -> Result<(), EditError> {
    let full = inside(root, path)?;
    let text = std::fs::read_to_string(&full)?;
    match text.matches(search).count() {
        1 => write(root, path, &text.replacen(search, replace, 1)),
        0 => Err(EditError::NotFound),
        n => Err(EditError::NotUnique(n)),
    }
}

fn write(root: &Path, path: &str, content: &str) -> Result<(), EditError> {
    let full = inside(root, path)?;
    if let Some(parent) = full.parent() {
        std::fs::create_dir_all(parent)?;
    }
    Ok(std::fs::write(full, content)?)
}

fn delete(root: &Path, path: &str) -> Result<(), EditError> {
    Ok(std::fs::remove_file(inside(root, path)?)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use meta_agent_protocol::builder::FailureContext;
    use meta_agent_protocol::records::Plan;
    use meta_agent_protocol::task::Task;

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
            progress: meta_agent_protocol::builder::Progress::nowhere(),
            approved_plan: None,
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
