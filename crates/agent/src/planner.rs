//! Asking the fast model for a plan, and for a revised one after a sub-task failed.
//!
//! The answer is read from a `plan` tool call or a JSON object in the text, then checked by
//! [`super::plan::parse_plan`]. A refused plan (unknown dependency, cycle, bad shape) is asked
//! for once more with the reason (the first answer sent back as [`super::answer`] sorts it: no
//! empty message, no cut call); a second refusal falls back to the whole task as one sub-task.
//! LLM errors are returned to the caller unchanged. No tool execution here.

use super::answer;
use super::plan::{self, Complexity, PlanError, SubTask, TaskPlan, json_in_text};
use meta_agent_llm::{ChatRequest, Completion, LlmError, Message, Provider, ToolResult};
use meta_agent_protocol::task::Task;

/// Revised plans after failed sub-tasks, at most, in one act.
pub const MAX_REPLANS: u32 = 3;

/// How a planning request is shaped.
pub struct Planner<'a, P: Provider> {
    pub provider: &'a P,
    /// The fast model.
    pub model: &'a str,
    pub max_tokens: u32,
    pub stream: bool,
    pub complexity: Complexity,
}

/// A plan and how it was reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    pub plan: TaskPlan,
    /// Set when the model's plans were refused twice and the whole task became one sub-task.
    pub fell_back: Option<String>,
}

/// What a revision is told.
pub struct Revision<'a> {
    pub done: &'a [SubTask],
    pub failed: &'a SubTask,
    pub reason: &'a str,
}

fn system() -> String {
    format!(
        "You are meta-agent's planner. Break the coding task into a few sub-tasks that a coding agent \
     with file and command tools carries out one at a time, in dependency order. Answer by \
     calling the `plan` tool: each sub-task has a short id, a description of the change, the ids \
     it depends on, and the agent steps you expect it to take (estimated_iterations). Set \
     `explore` to true when the agent should first survey an unfamiliar, large codebase. {}",
        meta_agent_protocol::untrusted::FENCE_RULE
    )
}

impl<P: Provider> Planner<'_, P> {
    /// A plan for the task described by `brief` (the assembled context).
    pub async fn plan(&self, task: &Task, brief: &str) -> Result<Planned, LlmError> {
        let ask = format!(
            "{brief}\n# What to do\nPlan this task in at most {} sub-tasks.\n",
            self.complexity.max_subtasks()
        );
        self.ask_checked(task, ask).await
    }

    /// A new plan for what remains after `revision.failed` failed.
    pub async fn revise(
        &self,
        task: &Task,
        brief: &str,
        revision: &Revision<'_>,
    ) -> Result<Planned, LlmError> {
        let done: String = revision
            .done
            .iter()
            .map(|sub| format!("- [{}] {}\n", sub.id, sub.description))
            .collect();
        let ask = format!(
            "{brief}\n# Done so far\n{}\n# Failed\n[{}] {}: {}\n# What to do\nPlan the remaining \
             work in at most {} sub-tasks, with a different approach for the failed part.\n",
            if done.is_empty() {
                "(nothing)\n"
            } else {
                &done
            },
            revision.failed.id,
            revision.failed.description,
            revision.reason,
            self.complexity.max_subtasks()
        );
        self.ask_checked(task, ask).await
    }

    /// Asks; on a refused plan asks once more with the reason; then falls back.
    async fn ask_checked(&self, task: &Task, ask: String) -> Result<Planned, LlmError> {
        let mut messages = vec![Message::system(system()), Message::user(ask)];
        let first = self.send(&messages).await?;
        let error = match self.read(&first) {
            Ok(plan) => {
                return Ok(Planned {
                    plan,
                    fell_back: None,
                });
            }
            Err(error) => error,
        };
        let refusal =
            format!("That plan cannot be used: {error}. Call `plan` again with a corrected plan.");
        let sorted = answer::sort(&first);
        messages.extend(sorted.echo);
        messages.extend(sorted.calls.iter().map(|call| {
            Message::Tool(ToolResult {
                call_id: call.id.clone(),
                content: refusal.clone(),
                is_error: true,
            })
        }));
        let note = sorted
            .note
            .map_or(String::new(), |note| format!("{note}\n\n"));
        if sorted.calls.is_empty() || !note.is_empty() {
            messages.push(Message::user(format!("{note}{refusal}")));
        }
        let second = self.send(&messages).await?;
        Ok(match self.read(&second) {
            Ok(plan) => Planned {
                plan,
                fell_back: None,
            },
            Err(error) => Planned {
                plan: TaskPlan::single(task, 10),
                fell_back: Some(format!("the planner's plans were refused twice ({error})")),
            },
        })
    }

    async fn send(&self, messages: &[Message]) -> Result<Completion, LlmError> {
        let request = ChatRequest {
            model: self.model.to_owned(),
            messages: messages.to_vec(),
            tools: vec![plan::plan_tool()],
            max_tokens: self.max_tokens,
            temperature: None,
            stream: self.stream,
        };
        self.provider.chat(&request).await
    }

    fn read(&self, completion: &Completion) -> Result<TaskPlan, PlanError> {
        let value = completion
            .tool_calls
            .iter()
            .find(|call| call.name == "plan")
            .map(|call| call.arguments.clone())
            .or_else(|| json_in_text(&completion.text))
            .ok_or_else(|| PlanError::Malformed("no `plan` call and no JSON plan".into()))?;
        plan::parse_plan(&value, self.complexity.max_subtasks())
    }
}
