//! One act of the agent, in order: find the relevant files; explore a large codebase (read-only
//! sub-agent on the fast model); assemble the opening within the token budget; then either run
//! the coding loop once (simple tasks, improve steps) or plan with the fast model and run each
//! sub-task, in dependency order, as its own loop with its own step budget, replanning after a
//! failed sub-task at most [`MAX_REPLANS`] times.
//!
//! Sequencing only: prompts live in [`super::prompt`], the loop in [`super::turn`], the plan
//! logic in [`super::plan`] and [`super::planner`]. Never decides that the work is complete.

use std::collections::VecDeque;

use super::AgentSettings;
use super::context::INSTRUCTIONS_SHARE;
use super::instructions::{self, Chosen};
use super::plan::{Complexity, SubTask, TaskPlan, TaskShape, classify};
use super::planner::{MAX_REPLANS, Planned, Planner, Revision};
use super::prompt::{self, Opening};
use super::relevant::{self, FileExcerpt};
use super::tokens::TokenCounter;
use super::tools::{self, ToolBox};
use super::turn;
use meta_agent_exec::CommandRunner;
use meta_agent_llm::{LlmError, Message, Provider};
use meta_agent_protocol::builder::{ActReport, ActRequest, BuildError};
use meta_agent_protocol::pause::{AgentView, Arrival, Field, Location, Values};
use meta_agent_protocol::records::Plan;
use meta_agent_protocol::untrusted::fenced;

/// Steps the explorer may take.
pub const EXPLORE_STEPS: u32 = 8;
/// Steps added to a sub-task's estimate for its budget.
const STEP_SLACK: u32 = 2;

/// What an act works with.
pub struct Act<'a, P: Provider, R: CommandRunner> {
    /// The metered, budgeted provider.
    pub provider: &'a P,
    pub runner: &'a R,
    pub parent_env: &'a [(String, String)],
    pub settings: &'a AgentSettings,
    pub request: &'a ActRequest<'a>,
}

/// Which model and tools a loop gets.
#[derive(Clone, Copy)]
enum Role {
    Coder,
    Explorer,
}

impl<P: Provider, R: CommandRunner> Act<'_, P, R> {
    /// Runs the act; the report's usage is left to the caller (it meters every call).
    pub async fn run(&self) -> Result<ActReport, BuildError> {
        let request = self.request;
        let files = relevant::find(
            request.repo_root,
            request.task,
            &request.context,
            &self.settings.policy,
        );
        let mut report = ActReport::default();
        let building = matches!(request.plan, Plan::Build);
        let mut codebase = None;
        if building && self.large_repository() {
            codebase = self.explore(&mut report).await?;
        }
        let complexity = classify(TaskShape::of(request.task));
        let brief = self.opening(&files, codebase.as_deref(), &mut report);
        if !building || complexity == Complexity::Simple {
            let done = self.coding_loop(brief, request.max_steps).await?;
            merge(&mut report, done);
            return Ok(report);
        }
        let planner = Planner {
            provider: self.provider,
            model: &self.settings.fast_model,
            max_tokens: self.settings.max_output_tokens,
            stream: self.settings.stream,
            complexity,
        };
        let planned = match request.approved_plan {
            // The plan the maintainers saw at `after_plan` and let go on, as it is.
            Some(plan) => Planned {
                plan: plan.clone(),
                fell_back: None,
            },
            None => match planner.plan(request.task, &brief).await {
                Ok(planned) => {
                    self.planned(&planned.plan)?;
                    planned
                }
                Err(err) => return stopped(report, err),
            },
        };
        let mut brief = brief;
        if planned.plan.explore
            && codebase.is_none()
            && let Some(summary) = self.explore(&mut report).await?
        {
            brief.push_str(&format!(
                "\n# Codebase summary (from the explorer)\n{}",
                fenced("untrusted-summary", &summary)
            ));
        }
        self.run_plan(&planner, &brief, planned, report).await
    }

    /// The opening message within the token budget, with the repository's instructions that
    /// apply to the files it shows and the files changed so far (noted in `report`).
    fn opening(
        &self,
        files: &[FileExcerpt],
        codebase: Option<&str>,
        report: &mut ActReport,
    ) -> String {
        let counter = TokenCounter::for_model(&self.settings.model);
        let instructions = self.instructions(files, &counter);
        report.instructions = instructions.used;
        let opening = Opening {
            files,
            codebase,
            instructions: &instructions.text,
            budget: self.settings.context_tokens,
            counter: &counter,
        };
        prompt::task_message(self.request, &opening).text
    }

    /// The repository's instructions for the files of this act, within their share of the
    /// opening's budget, introduced by where they were read.
    fn instructions(&self, files: &[FileExcerpt], counter: &TokenCounter) -> Chosen {
        let paths: Vec<String> = files
            .iter()
            .map(|file| file.path.clone())
            .chain(self.request.context.files_changed.iter().cloned())
            .collect();
        let budget = (self.settings.context_tokens as f32 * INSTRUCTIONS_SHARE) as usize;
        let repository = &self.settings.instructions;
        let mut chosen = repository.choose(&paths, budget, counter);
        for skipped in &chosen.left_out {
            tracing::info!("instructions: {} left out: {}", skipped.path, skipped.why);
        }
        if !chosen.text.is_empty() {
            chosen.text = format!(
                "{}{}",
                instructions::preamble(&repository.origin),
                chosen.text
            );
        }
        chosen
    }

    /// Sub-tasks in order; a failed one is replanned, at most [`MAX_REPLANS`] times.
    async fn run_plan(
        &self,
        planner: &Planner<'_, P>,
        brief: &str,
        planned: Planned,
        mut report: ActReport,
    ) -> Result<ActReport, BuildError> {
        note_plan(&mut report, &planned, "plan");
        let mut plan = planned.plan;
        let mut queue: VecDeque<SubTask> = plan.subtasks.clone().into();
        let (mut done, mut summaries, mut replans) = (Vec::new(), Vec::new(), 0);
        while let Some(sub) = queue.pop_front() {
            let steps =
                (sub.estimated_iterations + STEP_SLACK).clamp(1, self.request.max_steps.max(1));
            let message = subtask_message(brief, &plan, &sub);
            let result = self.coding_loop(message, steps).await?;
            let failure = result.gave_up.clone();
            let summary = format!("[{}] {}", sub.id, result.summary);
            merge(&mut report, result);
            let Some(reason) = failure else {
                summaries.push(summary);
                done.push(sub);
                continue;
            };
            if report.refusal.is_some() {
                return Ok(report);
            }
            if reason.contains("LLM budget ran out") || replans == MAX_REPLANS {
                report.gave_up = Some(format!(
                    "sub-task `{}` failed after {replans} replans: {reason}",
                    sub.id
                ));
                report.summary = report.gave_up.clone().unwrap_or_default();
                return Ok(report);
            }
            replans += 1;
            let revision = Revision {
                done: &done,
                failed: &sub,
                reason: &reason,
            };
            let revised = match planner.revise(self.request.task, brief, &revision).await {
                Ok(revised) => revised,
                Err(err) => return stopped(report, err),
            };
            note_plan(&mut report, &revised, &format!("replan {replans}"));
            plan = revised.plan;
            queue = plan.subtasks.clone().into();
        }
        report.gave_up = None;
        report.summary = summaries.join("; ");
        Ok(report)
    }

    /// The read-only explorer's summary of the codebase (None when it did not finish).
    async fn explore(&self, report: &mut ActReport) -> Result<Option<String>, BuildError> {
        let task = self.request.task;
        let user = format!(
            "# The task\n{}\n# What to do\nSurvey the repository for this task and call finish \
             with the summary.\n",
            fenced("untrusted-task", &task.brief())
        );
        self.delegate(&user)?;
        let explored = self.run_loop(Role::Explorer, user, EXPLORE_STEPS).await?;
        let summary = explored.gave_up.is_none().then(|| explored.summary.clone());
        let mut explored = explored;
        explored.actions = explored
            .actions
            .iter()
            .map(|action| format!("explore: {action}"))
            .collect();
        explored.summary = String::new();
        explored.gave_up = None;
        merge(report, explored);
        Ok(summary)
    }

    /// Arrives at `after_plan` with the sub-task plan the planner made (`plan` is `subtasks`);
    /// stops the act when the run pauses there (the plan kept for the maintainers to approve).
    fn planned(&self, plan: &TaskPlan) -> Result<(), BuildError> {
        let values = Values::default()
            .number_of(Field::Iteration, u64::from(self.request.iteration))
            .text_of(Field::Plan, "subtasks");
        let view = || {
            Some(AgentView {
                role: "planner".to_owned(),
                model: self.settings.fast_model.clone(),
                max_tokens: self.settings.max_output_tokens,
                temperature: self.settings.temperature,
                sub_plan: Some(plan.clone()),
                ..AgentView::default()
            })
        };
        if self
            .request
            .progress
            .arrive(&Arrival::one(Location::AfterPlan, values), view)
        {
            return Err(BuildError::Paused);
        }
        Ok(())
    }

    /// Arrives at `on_delegate` with the explorer's opening (`user`); stops the act when the run
    /// pauses there.
    fn delegate(&self, user: &str) -> Result<(), BuildError> {
        let values = Values::default()
            .number_of(Field::Iteration, u64::from(self.request.iteration))
            .text_of(Field::Role, "explorer");
        let view = || {
            Some(AgentView {
                role: "explorer".to_owned(),
                model: self.settings.fast_model.clone(),
                max_tokens: self.settings.max_output_tokens,
                temperature: self.settings.temperature,
                messages: vec![
                    Message::system(prompt::explorer_system()),
                    Message::user(user),
                ],
                tool_call: None,
                tool_result: None,
                sub_plan: None,
            })
        };
        let arrival = Arrival::one(Location::OnDelegate, values);
        if self.request.progress.arrive(&arrival, view) {
            return Err(BuildError::Paused);
        }
        Ok(())
    }

    async fn coding_loop(&self, user: String, steps: u32) -> Result<ActReport, BuildError> {
        self.run_loop(Role::Coder, user, steps).await
    }

    async fn run_loop(
        &self,
        role: Role,
        user: String,
        steps: u32,
    ) -> Result<ActReport, BuildError> {
        let (model, specs, system, read_only) = match role {
            Role::Coder => (
                &self.settings.model,
                tools::specs(),
                prompt::system(),
                false,
            ),
            Role::Explorer => (
                &self.settings.fast_model,
                tools::read_only_specs(),
                prompt::explorer_system(),
                true,
            ),
        };
        let session = turn::Session {
            provider: self.provider,
            shape: turn::RequestShape {
                model,
                tools: &specs,
                max_tokens: self.settings.max_output_tokens,
                temperature: self.settings.temperature,
                stream: self.settings.stream,
            },
            tools: ToolBox {
                root: self.request.repo_root,
                policy: &self.settings.policy,
                runner: self.runner,
                command: &self.settings.command,
                parent_env: self.parent_env,
                read_only,
            },
            max_steps: steps,
            progress: self.request.progress,
            role: match role {
                Role::Coder => "builder",
                Role::Explorer => "explorer",
            },
            iteration: self.request.iteration,
        };
        turn::run(&session, vec![Message::system(system), Message::user(user)]).await
    }

    fn large_repository(&self) -> bool {
        let limit = self.settings.explore_min_files;
        tools::walk(self.request.repo_root).take(limit + 1).count() > limit
    }
}

/// The message for one sub-task: the brief, the plan, and which step is now.
fn subtask_message(brief: &str, plan: &TaskPlan, sub: &SubTask) -> String {
    format!(
        "{brief}\n# The plan\n{}\n# Your sub-task now\n[{}] {}\nDo only this sub-task, then call \
         finish with a summary of what you changed.\n",
        plan.outline(),
        sub.id,
        sub.description
    )
}

fn note_plan(report: &mut ActReport, planned: &Planned, label: &str) {
    let ids: Vec<&str> = planned
        .plan
        .subtasks
        .iter()
        .map(|s| s.id.as_str())
        .collect();
    report.actions.push(format!(
        "{label}: {} sub-tasks ({})",
        ids.len(),
        ids.join(" → ")
    ));
    if let Some(why) = &planned.fell_back {
        report
            .actions
            .push(format!("{label}: {why}; the task runs as one sub-task"));
    }
}

/// Appends a loop's report to the act's.
fn merge(report: &mut ActReport, part: ActReport) {
    report.actions.extend(part.actions);
    report.instructions.extend(part.instructions);
    if !part.summary.is_empty() {
        report.summary = part.summary;
    }
    report.gave_up = part.gave_up;
    report.refusal = part.refusal;
}

/// A planning call failed: a spent budget ends the act honestly, anything else as the loop
/// would end it.
fn stopped(mut report: ActReport, err: LlmError) -> Result<ActReport, BuildError> {
    match err {
        LlmError::BudgetExceeded { what } => {
            let reason = format!("the LLM budget ran out: {what}");
            report.summary = reason.clone();
            report.gave_up = Some(reason);
            Ok(report)
        }
        other => Err(other.into()),
    }
}
