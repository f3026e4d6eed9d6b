//! The LLM coding agent: a [`Builder`] that meets a task (or fixes failures) by letting a model
//! explore and edit the worktree through tools, in a ReAct loop (thought → tool call →
//! observation) that ends when the model calls `finish` or the step cap is hit.
//!
//! Layers: [`AgentBuilder::act`] meters every model call ([`metered`]) and runs the act ([`act`]:
//! relevant files, explorer, token-budgeted opening from [`context`], plan from [`planner`]);
//! [`AgentBuilder::review`] checks a change whose gates pass against the task's stated
//! requirements ([`reflect`], only when the engine asks: a verdict it acts on); [`turn`] runs each loop, one turn at a time, sending back only what
//! [`answer`] sorted as sendable and shortening the conversation ([`compact`]) when the model
//! refuses it as too long; [`tools::paths`] keeps every path inside the worktree.
//! The agent proposes edits in the worktree only: the engine validates the change, runs the
//! gates and commits. It never reads the process environment (the parent's variables are passed
//! in) and never prints.

#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod act;
pub mod answer;
pub mod compact;
pub mod context;
pub mod excerpt;
pub mod instructions;
pub mod metered;
pub mod plan;
pub mod planner;
pub mod prompt;
pub mod reflect;
pub mod relevant;
pub use meta_agent_llm::tokens;
pub mod tools;
pub mod turn;

use std::fmt;

use act::Act;
use metered::Metered;
use reflect::{Attempt, Reflector};

use meta_agent_exec::CommandRunner;
use meta_agent_llm::{BudgetCaps, Budgeted, LlmConfig, Provider, first_exceeded};
use meta_agent_protocol::builder::{
    ActReport, ActRequest, BuildError, Builder, ReviewReport, ReviewRequest,
};

pub use tools::CommandSettings;

/// Bytes of the change shown to the requirements review.
const REVIEW_DIFF_BYTES: usize = 12_000;

/// Repositories with more files than this get an explorer's summary before a build.
pub const EXPLORE_MIN_FILES: usize = 400;

/// How the agent asks the model and runs commands.
#[derive(Debug, Clone)]
pub struct AgentSettings {
    /// The primary model: writes code.
    pub model: String,
    /// The fast model: plans, explores, reflects.
    pub fast_model: String,
    /// Token budget of the opening context.
    pub context_tokens: usize,
    /// Review a change whose gates pass against the task's stated requirements.
    pub reflect: bool,
    /// A build in a repository with more files than this starts with the explorer.
    pub explore_min_files: usize,
    pub max_output_tokens: u32,
    pub temperature: Option<f32>,
    /// Ask for streamed answers.
    pub stream: bool,
    pub command: CommandSettings,
    /// What the agent may write: the run's one policy.
    pub policy: std::sync::Arc<meta_agent_policy::Policy>,
    /// The repository's instructions for agents, read from the trusted tree of the run (see
    /// [`instructions`]); the applicable ones open every act.
    pub instructions: std::sync::Arc<instructions::RepoInstructions>,
}

impl AgentSettings {
    /// The model settings from the resolved LLM configuration, with the built-in policy.
    pub fn from_llm(config: &LlmConfig, command: CommandSettings) -> Self {
        AgentSettings {
            model: config.model.clone(),
            fast_model: config.fast_model.clone(),
            context_tokens: usize::try_from(config.context_tokens).unwrap_or(usize::MAX),
            reflect: config.reflect,
            explore_min_files: EXPLORE_MIN_FILES,
            max_output_tokens: config.max_output_tokens,
            temperature: config.temperature,
            stream: config.stream,
            command,
            policy: std::sync::Arc::new(meta_agent_policy::Policy::default()),
            instructions: std::sync::Arc::new(instructions::RepoInstructions::none()),
        }
    }
}

/// What an agent is made of.
pub struct AgentParts<P: Provider, R: CommandRunner> {
    pub provider: P,
    pub caps: BudgetCaps,
    pub runner: R,
    /// The parent's environment; each command gets `child_env` of it (secrets never pass).
    pub parent_env: Vec<(String, String)>,
    pub settings: AgentSettings,
}

/// The LLM agent as the loop's builder.
pub struct AgentBuilder<P: Provider, R: CommandRunner> {
    provider: Budgeted<P>,
    caps: BudgetCaps,
    runner: R,
    parent_env: Vec<(String, String)>,
    settings: AgentSettings,
}

impl<P: Provider, R: CommandRunner> AgentBuilder<P, R> {
    pub fn new(parts: AgentParts<P, R>) -> Self {
        AgentBuilder {
            provider: Budgeted::new(parts.provider, parts.caps),
            caps: parts.caps,
            runner: parts.runner,
            parent_env: parts.parent_env,
            settings: parts.settings,
        }
    }
}

impl<P: Provider, R: CommandRunner> fmt::Debug for AgentBuilder<P, R> {
    /// Leaves out the parent's environment (it may hold secrets).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentBuilder")
            .field("provider", &self.provider.name())
            .field("caps", &self.caps)
            .field("spent", &self.provider.spent())
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl<P: Provider, R: CommandRunner> Builder for AgentBuilder<P, R> {
    /// True while the LLM budget allows another call.
    fn available(&self, _call_index: u32) -> bool {
        first_exceeded(&self.caps, &self.provider.spent()).is_none()
    }

    async fn act(&self, request: ActRequest<'_>) -> Result<ActReport, BuildError> {
        let metered = Metered::new(&self.provider, request.progress);
        let act = Act {
            provider: &metered,
            runner: &self.runner,
            parent_env: &self.parent_env,
            settings: &self.settings,
            request: &request,
        };
        let mut report = act.run().await?;
        report.usage = metered.usage();
        Ok(report)
    }

    /// Only when reviews are on and the budget allows a call.
    async fn review(&self, request: ReviewRequest<'_>) -> Result<Option<ReviewReport>, BuildError> {
        if !self.settings.reflect || first_exceeded(&self.caps, &self.provider.spent()).is_some() {
            return Ok(None);
        }
        Ok(Some(self.review_change(&request).await))
    }
}

impl<P: Provider, R: CommandRunner> AgentBuilder<P, R> {
    /// The requirements review on the fast model: the change whose gates pass, against the
    /// task's stated requirements. A failed review is noted and the change stands.
    async fn review_change(&self, request: &ReviewRequest<'_>) -> ReviewReport {
        let metered = Metered::new(&self.provider, request.progress);
        let reflector = Reflector {
            provider: &metered,
            model: &self.settings.fast_model,
            max_tokens: self.settings.max_output_tokens,
            stream: self.settings.stream,
        };
        let change = ActReport {
            summary: format!(
                "the gates pass with this change:\n{}",
                meta_agent_report::trim_to(request.diff, REVIEW_DIFF_BYTES)
            ),
            ..ActReport::default()
        };
        let attempt = Attempt {
            task: request.task,
            report: &change,
        };
        let (line, missing) = match reflector.reflect(&attempt).await {
            Ok(reflection) => (reflection.line(), reflection.missing),
            Err(err) => (
                format!("requirements review unavailable: {err}"),
                Vec::new(),
            ),
        };
        ReviewReport {
            missing,
            line,
            usage: metered.usage(),
        }
    }
}
