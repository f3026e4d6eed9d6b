//! Planning, the pure part: how hard a task looks ([`classify`]), what a plan is ([`TaskPlan`],
//! [`SubTask`]), reading and checking the plan the fast model proposes ([`parse_plan`]), and the
//! order sub-tasks run in ([`dependency_order`], a stable topological sort).
//!
//! No LLM calls and no I/O: [`super::planner`] asks the model and uses these functions.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::relevant::mentions;
use meta_agent_llm::ToolSpec;
use meta_agent_protocol::task::Task;

pub use meta_agent_protocol::subplan::{SubTask, TaskPlan};

/// Sub-tasks a plan may have.
pub const MAX_SUBTASKS: usize = 8;
/// The estimate a sub-task may claim.
pub const MAX_ESTIMATE: u32 = 20;

/// How much planning a task needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Complexity {
    /// Short, or about a single file: no plan, straight to the tools.
    Simple,
    /// A few steps: a short plan.
    Medium,
    /// Long, many criteria or many files: a full plan.
    Complex,
}

impl Complexity {
    /// Sub-tasks a plan of this complexity may have.
    pub fn max_subtasks(self) -> usize {
        match self {
            Complexity::Simple => 1,
            Complexity::Medium => 4,
            Complexity::Complex => MAX_SUBTASKS,
        }
    }
}

/// What [`classify`] looks at, measured from a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskShape {
    /// Characters of title, requirements and acceptance criteria.
    pub chars: usize,
    /// Acceptance criteria plus list items in the requirements.
    pub items: usize,
    /// Distinct files the text names.
    pub files: usize,
}

impl TaskShape {
    pub fn of(task: &Task) -> Self {
        let text = task.brief();
        let list_items = task
            .requirements
            .lines()
            .map(str::trim_start)
            .filter(|line| is_list_item(line))
            .count();
        let files: BTreeSet<String> = mentions(&text).into_iter().map(|m| m.path).collect();
        TaskShape {
            chars: text.trim().chars().count(),
            items: task.acceptance.len() + list_items,
            files: files.len(),
        }
    }
}

fn is_list_item(line: &str) -> bool {
    line.starts_with("- ")
        || line.starts_with("* ")
        || line.split_once(". ").is_some_and(|(number, _)| {
            !number.is_empty() && number.chars().all(|c| c.is_ascii_digit())
        })
}

/// Simple when short (≤ 300 characters, ≤ 2 items) or about one file (≤ 3 items); complex when
/// long (> 1500 characters), with 5 items or more, or naming 3 files or more; medium otherwise.
pub fn classify(shape: TaskShape) -> Complexity {
    let short = shape.chars <= 300 && shape.items <= 2 && shape.files <= 1;
    let single_file = shape.files == 1 && shape.items <= 3 && shape.chars <= 1500;
    if short || single_file {
        Complexity::Simple
    } else if shape.chars > 1500 || shape.items >= 5 || shape.files >= 3 {
        Complexity::Complex
    } else {
        Complexity::Medium
    }
}

/// Why a proposed plan was refused (told to the model when it is asked again).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("the plan is not in the expected shape: {0}")]
    Malformed(String),
    #[error("the plan has no sub-tasks")]
    Empty,
    #[error("the plan has {count} sub-tasks; at most {max} are allowed")]
    TooMany { count: usize, max: usize },
    #[error("two sub-tasks share the id `{0}`")]
    DuplicateId(String),
    #[error("sub-task `{subtask}` depends on `{dependency}`, which is not in the plan")]
    UnknownDependency { subtask: String, dependency: String },
    #[error("the dependencies form a cycle through: {}", .0.join(", "))]
    Cycle(Vec<String>),
}

/// Reads a plan (the `plan` tool's arguments, or a JSON object in text), checks it and puts its
/// sub-tasks in dependency order.
pub fn parse_plan(value: &Value, max_subtasks: usize) -> Result<TaskPlan, PlanError> {
    let mut plan: TaskPlan = serde_json::from_value(value.clone())
        .map_err(|err| PlanError::Malformed(err.to_string()))?;
    if plan.subtasks.is_empty() {
        return Err(PlanError::Empty);
    }
    if plan.subtasks.len() > max_subtasks {
        return Err(PlanError::TooMany {
            count: plan.subtasks.len(),
            max: max_subtasks,
        });
    }
    for sub in &mut plan.subtasks {
        sub.estimated_iterations = sub.estimated_iterations.clamp(1, MAX_ESTIMATE);
    }
    let order = dependency_order(&plan.subtasks)?;
    plan.subtasks = order
        .into_iter()
        .map(|i| plan.subtasks[i].clone())
        .collect();
    Ok(plan)
}

/// A JSON object in a text answer (a fenced ```json block, or the outermost braces).
pub fn json_in_text(text: &str) -> Option<Value> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    serde_json::from_str(text.get(start..=end)?).ok()
}

/// The indexes of `subtasks` in an order where every sub-task comes after its dependencies;
/// among the ready ones, the earliest listed goes first (so a valid order is kept as written).
pub fn dependency_order(subtasks: &[SubTask]) -> Result<Vec<usize>, PlanError> {
    let mut index = BTreeMap::new();
    for (position, sub) in subtasks.iter().enumerate() {
        if index.insert(sub.id.as_str(), position).is_some() {
            return Err(PlanError::DuplicateId(sub.id.clone()));
        }
    }
    let mut waiting_on = vec![0usize; subtasks.len()];
    let mut dependents = vec![Vec::new(); subtasks.len()];
    for (position, sub) in subtasks.iter().enumerate() {
        let deps: BTreeSet<&str> = sub.depends_on.iter().map(String::as_str).collect();
        for dependency in deps {
            let Some(&before) = index.get(dependency) else {
                return Err(PlanError::UnknownDependency {
                    subtask: sub.id.clone(),
                    dependency: dependency.to_owned(),
                });
            };
            waiting_on[position] += 1;
            dependents[before].push(position);
        }
    }
    let mut ready: BTreeSet<usize> = (0..subtasks.len())
        .filter(|&i| waiting_on[i] == 0)
        .collect();
    let mut order = Vec::with_capacity(subtasks.len());
    while let Some(next) = ready.pop_first() {
        order.push(next);
        for &dependent in &dependents[next] {
            waiting_on[dependent] -= 1;
            if waiting_on[dependent] == 0 {
                ready.insert(dependent);
            }
        }
    }
    if order.len() < subtasks.len() {
        let stuck = (0..subtasks.len())
            .filter(|i| waiting_on[*i] > 0)
            .map(|i| subtasks[i].id.clone())
            .collect();
        return Err(PlanError::Cycle(stuck));
    }
    Ok(order)
}

/// The `plan` tool the planner is offered.
pub fn plan_tool() -> ToolSpec {
    ToolSpec {
        name: "plan".into(),
        description: "Submit the plan: sub-tasks with ids, dependencies and estimated agent steps."
            .into(),
        parameters: json!({"type": "object", "required": ["subtasks"], "properties": {
            "subtasks": {"type": "array", "minItems": 1, "items": {
                "type": "object", "required": ["id", "description"], "properties": {
                    "id": {"type": "string"},
                    "description": {"type": "string"},
                    "depends_on": {"type": "array", "items": {"type": "string"}},
                    "estimated_iterations": {"type": "integer", "minimum": 1}
                }}},
            "explore": {"type": "boolean", "description": "True to have the codebase summarised first."}
        }}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sub(id: &str, deps: &[&str]) -> SubTask {
        SubTask {
            id: id.into(),
            description: format!("do {id}"),
            depends_on: deps.iter().map(|d| (*d).to_owned()).collect(),
            estimated_iterations: 2,
        }
    }

    #[test]
    fn short_or_single_file_tasks_are_simple() {
        let shape = |chars, items, files| TaskShape {
            chars,
            items,
            files,
        };
        assert_eq!(classify(shape(40, 0, 0)), Complexity::Simple);
        assert_eq!(classify(shape(1200, 3, 1)), Complexity::Simple);
        assert_eq!(classify(shape(700, 3, 2)), Complexity::Medium);
        assert_eq!(classify(shape(2000, 1, 0)), Complexity::Complex);
        assert_eq!(classify(shape(600, 6, 0)), Complexity::Complex);
        assert_eq!(classify(shape(400, 1, 3)), Complexity::Complex);
    }

    #[test]
    fn a_task_is_measured_from_its_text() {
        let mut task = Task::from_text("Add a CLI").unwrap();
        task.requirements =
            "- parse args in src/cli.rs\n- print help\n1. test it in tests/cli.rs\n".into();
        task.acceptance = vec!["--help works".into()];
        let shape = TaskShape::of(&task);
        assert_eq!((shape.items, shape.files), (4, 2));
        assert_eq!(classify(shape), Complexity::Medium);
    }

    #[test]
    fn dependencies_order_the_plan_and_bad_ones_are_refused() {
        let value = json!({"subtasks": [
            {"id": "tests", "description": "t", "depends_on": ["api"], "estimated_iterations": 99},
            {"id": "api", "description": "a"},
        ]});
        let plan = parse_plan(&value, 8).unwrap();
        let ids: Vec<&str> = plan.subtasks.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["api", "tests"]);
        assert_eq!(plan.subtasks[1].estimated_iterations, MAX_ESTIMATE);
        assert_eq!(plan.subtasks[0].estimated_iterations, 1);
        let unknown = json!({"subtasks": [{"id": "a", "description": "x", "depends_on": ["zz"]}]});
        assert!(matches!(
            parse_plan(&unknown, 8),
            Err(PlanError::UnknownDependency { .. })
        ));
        let cycle = [sub("a", &["b"]), sub("b", &["a"]), sub("c", &[])];
        assert_eq!(
            dependency_order(&cycle),
            Err(PlanError::Cycle(vec!["a".into(), "b".into()]))
        );
        assert!(matches!(
            parse_plan(&json!({"subtasks": []}), 8),
            Err(PlanError::Empty)
        ));
        assert!(matches!(
            parse_plan(&json!({"steps": 1}), 8),
            Err(PlanError::Malformed(_))
        ));
        let many =
            json!({"subtasks": [{"id": "a", "description": "x"}, {"id": "b", "description": "y"}]});
        assert!(matches!(
            parse_plan(&many, 1),
            Err(PlanError::TooMany { count: 2, max: 1 })
        ));
    }

    #[test]
    fn json_is_found_inside_text() {
        let text = "Here is the plan:\n```json\n{\"subtasks\": [{\"id\": \"a\", \"description\": \"x\"}]}\n```";
        let value = json_in_text(text).unwrap();
        assert!(parse_plan(&value, 8).is_ok());
        assert!(json_in_text("no plan").is_none());
    }

    /// Random acyclic graphs: edges only point from later to earlier ids, listed shuffled.
    fn acyclic() -> impl Strategy<Value = Vec<SubTask>> {
        (1usize..10).prop_flat_map(|n| {
            let edges = proptest::collection::vec(proptest::collection::vec(any::<bool>(), n), n);
            (edges, Just(n)).prop_flat_map(|(edges, n)| {
                let subs: Vec<SubTask> = (0..n)
                    .map(|i| SubTask {
                        id: format!("s{i}"),
                        description: String::new(),
                        depends_on: (0..i)
                            .filter(|&j| edges[i][j])
                            .map(|j| format!("s{j}"))
                            .collect(),
                        estimated_iterations: 1,
                    })
                    .collect();
                Just(subs).prop_shuffle()
            })
        })
    }

    proptest! {
        #[test]
        fn every_subtask_runs_after_its_dependencies(subs in acyclic()) {
            let order = dependency_order(&subs).unwrap();
            prop_assert_eq!(order.len(), subs.len());
            let position: BTreeMap<&str, usize> = order
                .iter()
                .enumerate()
                .map(|(at, &i)| (subs[i].id.as_str(), at))
                .collect();
            for sub in &subs {
                for dep in &sub.depends_on {
                    prop_assert!(position[dep.as_str()] < position[sub.id.as_str()]);
                }
            }
        }

        #[test]
        fn a_back_edge_is_always_a_cycle(subs in acyclic()) {
            let mut subs = subs;
            let Some(target) = subs.iter().position(|s| !s.depends_on.is_empty()) else {
                return Ok(());
            };
            let dep = subs[target].depends_on[0].clone();
            let back = subs[target].id.clone();
            if let Some(source) = subs.iter_mut().find(|s| s.id == dep) {
                source.depends_on.push(back);
            }
            prop_assert!(matches!(dependency_order(&subs), Err(PlanError::Cycle(_))));
        }
    }
}
