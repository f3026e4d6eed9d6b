//! The builder a session wires into the engine: the task's scripted edits when it has them, the
//! LLM agent when a provider is configured, otherwise offline. The one place the engine and the
//! agent meet, through the Builder contract of [`crate::protocol::builder`].

use std::sync::Arc;

use super::SessionError;
use super::run::RunContext;
use crate::agent::{AgentBuilder, AgentParts, AgentSettings, CommandSettings};
use crate::config::raw::LlmProvider;
use crate::engine::scripted::{Offline, ScriptedBuilder};
use crate::exec::Executor;
use crate::exec::sandbox::Isolation;
use crate::llm::{LlmConfig, LlmEnv, LlmError, RetryPolicy, connect};
use crate::protocol::builder::{
    ActReport, ActRequest, BuildError, Builder, ReviewReport, ReviewRequest,
};
use crate::protocol::task::Task;

/// When a missing API key is an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyNeed {
    /// Before the run starts (a new run: the build asks the model).
    Now,
    /// Only when the model is called: a resumed session with no model call left runs without one.
    WhenCalled,
}

/// The builder for `task`: its scripted edits when it has them, the LLM agent when a provider
/// is configured, offline otherwise. Keys come from the parent's environment, read here only.
pub fn builder_for(
    ctx: &RunContext<'_>,
    task: &Task,
    key: KeyNeed,
) -> Result<TaskBuilder, SessionError> {
    if !task.script.is_empty() || ctx.config.llm.provider == LlmProvider::None {
        return Ok(TaskBuilder::for_task(task));
    }
    let env = LlmEnv::from_lookup(&ctx.config.llm, |name| ctx.env.get(name).map(str::to_owned));
    let llm =
        LlmConfig::from_settings(&ctx.config.llm, &env).with_redactor(ctx.env.redactor.clone());
    let retry = RetryPolicy {
        deadline: ctx.deadline,
        ..RetryPolicy::default()
    };
    let provider = match (connect(&llm, retry), key) {
        (Ok(provider), _) => provider,
        (Err(missing @ LlmError::MissingKey { .. }), KeyNeed::WhenCalled) => {
            return Ok(TaskBuilder::NoKey(missing));
        }
        (Err(err), KeyNeed::Now | KeyNeed::WhenCalled) => {
            return Err(SessionError::Usage(err.to_string()));
        }
    };
    let sandbox = &ctx.config.sandbox;
    let command = CommandSettings {
        kill_grace: sandbox.kill_grace,
        output_cap: usize::try_from(sandbox.output_cap).unwrap_or(usize::MAX),
        env_allow: sandbox.env_allow.clone(),
        isolation: Isolation::strict().reading(ctx.policy.readable_dirs()),
        ..CommandSettings::default()
    };
    let agent = AgentBuilder::new(AgentParts {
        provider,
        caps: llm.budget,
        runner: ctx.executor.clone(),
        parent_env: ctx.env.vars.clone(),
        settings: AgentSettings {
            policy: ctx.policy.clone(),
            instructions: ctx.instructions.clone(),
            ..AgentSettings::from_llm(&llm, command)
        },
    });
    Ok(TaskBuilder::Agent(Arc::new(agent)))
}

/// The builder a run uses: scripted edits when the task has them, the LLM agent when a provider
/// is configured, otherwise offline.
#[derive(Debug, Clone)]
pub enum TaskBuilder {
    Offline(Offline),
    Scripted(ScriptedBuilder),
    /// The LLM agent, when a provider is configured.
    Agent(Arc<AgentBuilder<crate::llm::AnyProvider, Executor>>),
    /// A provider is configured but its key is missing: fine until the model is called, then the
    /// act fails with the missing key (a refusal: the run escalates naming the variable).
    NoKey(LlmError),
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
            TaskBuilder::NoKey(_) => true,
        }
    }

    async fn act(&self, request: ActRequest<'_>) -> Result<ActReport, BuildError> {
        match self {
            TaskBuilder::Offline(builder) => builder.act(request).await,
            TaskBuilder::Scripted(builder) => builder.act(request).await,
            TaskBuilder::Agent(builder) => builder.act(request).await,
            TaskBuilder::NoKey(missing) => Err(missing.clone().into()),
        }
    }

    /// The agent's requirements review; the other builders have no model to review with.
    async fn review(&self, request: ReviewRequest<'_>) -> Result<Option<ReviewReport>, BuildError> {
        match self {
            TaskBuilder::Agent(builder) => builder.review(request).await,
            TaskBuilder::Offline(_) | TaskBuilder::Scripted(_) | TaskBuilder::NoKey(_) => Ok(None),
        }
    }
}
