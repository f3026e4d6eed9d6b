//! The sub-task plan the agent's planner makes inside a build act (plain data): the agent reads
//! and checks it (`agent::plan`), the run shows it at an `after_plan` pause and keeps it as the
//! maintainers approved it, so the act runs that plan when it goes on.

use serde::{Deserialize, Serialize};

use super::task::Task;

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubTask {
    pub id: String,
    pub description: String,
    /// Ids of the sub-tasks that must be done first.
    #[serde(default)]
    pub depends_on: Vec<String>,
    /// Agent steps the planner expects it to take.
    #[serde(default = "one")]
    pub estimated_iterations: u32,
}

fn one() -> u32 {
    1
}

/// A checked plan, its sub-tasks in dependency order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskPlan {
    pub subtasks: Vec<SubTask>,
    /// The planner asked for an exploration of the codebase first.
    #[serde(default)]
    pub explore: bool,
}

impl TaskPlan {
    /// The whole task as one sub-task (what a plan falls back to).
    pub fn single(task: &Task, estimate: u32) -> Self {
        TaskPlan {
            subtasks: vec![SubTask {
                id: "task".into(),
                description: task.title.clone(),
                depends_on: Vec::new(),
                estimated_iterations: estimate,
            }],
            explore: false,
        }
    }

    /// One line per sub-task, for the model and the report.
    pub fn outline(&self) -> String {
        self.subtasks
            .iter()
            .enumerate()
            .map(|(index, sub)| {
                let after = if sub.depends_on.is_empty() {
                    String::new()
                } else {
                    format!(" (after {})", sub.depends_on.join(", "))
                };
                format!("{}. [{}] {}{after}\n", index + 1, sub.id, sub.description)
            })
            .collect()
    }
}
