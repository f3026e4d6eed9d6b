//! Tasks: what a run is asked to do. Read from a YAML task file (`--task`) or a line of text
//! (`--text`). Every text in a task is untrusted data: it is shown to the model in a delimited
//! section and never interpreted by meta-agent itself.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// A task file, as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskFile {
    pub title: String,
    #[serde(default)]
    pub requirements: String,
    /// Acceptance criteria, one per item.
    #[serde(default)]
    pub acceptance: Vec<String>,
    /// The issue this task comes from (`Fixes #N` in the commit).
    #[serde(default)]
    pub issue: Option<u64>,
    /// Scripted edits, one step per build or improve call (offline runs and reproductions).
    #[serde(default)]
    pub edits: Vec<ScriptStep>,
    /// What a maintainer allows this task beyond the defaults (`allow_test_edits: true`).
    #[serde(default)]
    pub permissions: TaskPermissions,
}

/// One scripted build or improve step: edits applied in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptStep {
    pub summary: String,
    /// Written as `- replace: {path, search, replace}`, `- write: {path, content}`,
    /// `- delete: {path}`.
    #[serde(with = "serde_yaml::with::singleton_map_recursive")]
    pub changes: Vec<Edit>,
}

/// One scripted edit of a file, relative to the repository root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Edit {
    /// Replace the one occurrence of `search` with `replace`.
    Replace {
        path: String,
        search: String,
        replace: String,
    },
    /// Write the whole file.
    Write { path: String, content: String },
    /// Delete the file.
    Delete { path: String },
}

/// Where a task came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum TaskSource {
    /// A task file (`--task`).
    File { path: PathBuf },
    /// A line of text (`--text`).
    Text,
    /// A GitHub issue (labelled, commented on, or named by a dispatch).
    Issue { number: u64, url: String },
    /// A failed GitHub Actions workflow run.
    WorkflowRun {
        id: u64,
        url: String,
        workflow: String,
    },
    /// A pull request (`/agent fix` in its conversation or a review of it, or a failed run of
    /// its head): the work starts from its head, `head_ref` in the repository `head_repo`.
    PullRequest {
        number: u64,
        url: String,
        head_ref: String,
        head_repo: String,
        /// The failed workflow run of its head the task is to heal (a failing check), if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        failed_run: Option<FailedRun>,
    },
}

/// A failed GitHub Actions workflow run a task heals.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailedRun {
    pub id: u64,
    pub url: String,
    pub workflow: String,
}

impl TaskSource {
    /// The task is a failure seen elsewhere (a failed CI run, of the default branch or of a pull
    /// request's head): the gates must show it before anything is built, and a green baseline
    /// means it did not reproduce.
    pub fn is_failing_check(&self) -> bool {
        match self {
            TaskSource::WorkflowRun { .. } => true,
            TaskSource::PullRequest { failed_run, .. } => failed_run.is_some(),
            TaskSource::File { .. } | TaskSource::Text | TaskSource::Issue { .. } => false,
        }
    }
}

/// What maintainers allowed for this one task, beyond the defaults.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskPermissions {
    /// The model may change existing test code and test configuration (every such change is
    /// listed in the pull request).
    #[serde(default)]
    pub allow_test_edits: bool,
}

/// The task of a run. Every text in it is untrusted: shown to the model fenced, never obeyed by
/// the bot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    pub title: String,
    pub requirements: String,
    pub acceptance: Vec<String>,
    pub issue: Option<u64>,
    pub source: TaskSource,
    /// Guidance from maintainers, oldest first: given with the task (`/agent fix <guidance>`, a
    /// dispatch input) or later, when a run is resumed.
    #[serde(default)]
    pub guidance: Vec<String>,
    /// The discussion the task came with (an issue's comments, windowed and summarized), if any.
    #[serde(default)]
    pub thread: String,
    #[serde(default)]
    pub permissions: TaskPermissions,
    pub script: Vec<ScriptStep>,
}

/// Why a task could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    #[error("cannot read task file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}:{column}: {message}")]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{0}: the task has an empty title")]
    EmptyTitle(String),
}

impl Task {
    /// The task as a prompt states it, the one way every prompt does (the first prompt, the
    /// explorer, reflection, planning, the memory's record of the request): its title, its
    /// requirements and its acceptance criteria, each only when present. Untrusted text: the
    /// caller fences it.
    pub fn brief(&self) -> String {
        let mut body = format!("Title: {}\n", self.title);
        if !self.requirements.trim().is_empty() {
            body.push_str(&format!("Requirements:\n{}\n", self.requirements.trim()));
        }
        if !self.acceptance.is_empty() {
            body.push_str("Acceptance criteria:\n");
            for criterion in &self.acceptance {
                body.push_str(&format!("- {criterion}\n"));
            }
        }
        body
    }

    /// Reads a YAML task file.
    pub fn from_file(path: &Path) -> Result<Task, TaskError> {
        let text = std::fs::read_to_string(path).map_err(|source| TaskError::Read {
            path: path.to_owned(),
            source,
        })?;
        let file: TaskFile = serde_yaml::from_str(&text).map_err(|err| {
            let (line, column) = err
                .location()
                .map_or((0, 0), |loc| (loc.line(), loc.column()));
            TaskError::Parse {
                path: path.to_owned(),
                line,
                column,
                message: err.to_string(),
            }
        })?;
        if file.title.trim().is_empty() {
            return Err(TaskError::EmptyTitle(path.display().to_string()));
        }
        Ok(Task {
            title: file.title.trim().to_owned(),
            requirements: file.requirements,
            acceptance: file.acceptance,
            issue: file.issue,
            source: TaskSource::File {
                path: path.to_owned(),
            },
            guidance: Vec::new(),
            thread: String::new(),
            permissions: file.permissions,
            script: file.edits,
        })
    }

    /// A task from a line of text: the first line is the title, the whole text the requirements.
    pub fn from_text(text: &str) -> Result<Task, TaskError> {
        let title = text
            .lines()
            .map(str::trim)
            .find(|line| !line.is_empty())
            .unwrap_or("");
        if title.is_empty() {
            return Err(TaskError::EmptyTitle("--text".into()));
        }
        Ok(Task {
            title: title.chars().take(120).collect(),
            requirements: text.to_owned(),
            acceptance: Vec::new(),
            issue: None,
            source: TaskSource::Text,
            guidance: Vec::new(),
            thread: String::new(),
            permissions: TaskPermissions::default(),
            script: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_file_reads_with_its_script() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("task.yml");
        std::fs::write(
            &path,
            "title: Fix mean\nissue: 7\nrequirements: |\n  mean([]) must raise\nacceptance: [tests pass]\nedits:\n  - summary: fix\n    changes:\n      - replace: {path: a.py, search: x, replace: y}\n",
        )
        .unwrap();
        let task = Task::from_file(&path).unwrap();
        assert_eq!(task.title, "Fix mean");
        assert_eq!(task.issue, Some(7));
        assert_eq!(task.script.len(), 1);
        assert_eq!(
            task.script[0].changes[0],
            Edit::Replace {
                path: "a.py".into(),
                search: "x".into(),
                replace: "y".into()
            }
        );
    }

    #[test]
    fn unknown_keys_in_a_task_file_name_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("task.yml");
        std::fs::write(&path, "title: x\nrequirments: typo\n").unwrap();
        let err = Task::from_file(&path).unwrap_err().to_string();
        assert!(err.contains("task.yml:2:"), "{err}");
        assert!(err.contains("requirments"), "{err}");
    }

    #[test]
    fn text_tasks_take_their_first_line_as_title() {
        let task = Task::from_text("\n  Make mean() safe  \nmore words").unwrap();
        assert_eq!(task.title, "Make mean() safe");
        assert!(Task::from_text("   ").is_err());
    }

    #[test]
    fn a_brief_states_what_the_task_has_and_nothing_else() {
        let mut task = Task::from_text("Make mean() safe").unwrap();
        task.requirements = " \n".into();
        assert_eq!(task.brief(), "Title: Make mean() safe\n");
        task.requirements = "  Empty input raises ValueError.\n".into();
        task.acceptance = vec!["mean([]) raises".into(), "mean([2]) == 2".into()];
        assert_eq!(
            task.brief(),
            "Title: Make mean() safe\nRequirements:\nEmpty input raises ValueError.\n\
             Acceptance criteria:\n- mean([]) raises\n- mean([2]) == 2\n"
        );
    }
}
