//! The LLM coding agent: a [`Builder`] that meets a task (or fixes failures) by letting a model
//! explore and edit the worktree through tools, in a ReAct loop (thought → tool call →
//! observation) that ends when the model calls `finish` or the step cap is hit.
//!
//! Layers: [`AgentBuilder::act`] assembles the opening ([`prompt`]) and the tool box ([`tools`]);
//! [`turn`] runs the loop, one turn at a time; [`paths`] keeps every path inside the worktree.
//! The agent proposes edits in the worktree only: the engine validates the change, runs the
//! gates and commits. It never reads the process environment (the parent's variables are passed
//! in) and never prints.

pub mod paths;
pub mod prompt;
pub mod tools;
pub mod turn;
pub mod untrusted;

use std::fmt;

use crate::engine::builder::{ActReport, ActRequest, BuildError, Builder};
use crate::exec::CommandRunner;
use crate::llm::{BudgetCaps, Budgeted, LlmConfig, Message, Provider, first_exceeded};

pub use paths::Protected;
pub use tools::CommandSettings;

/// How the agent asks the model and runs commands.
#[derive(Debug, Clone)]
pub struct AgentSettings {
    pub model: String,
    pub max_output_tokens: u32,
    pub temperature: Option<f32>,
    /// Ask for streamed answers.
    pub stream: bool,
    pub command: CommandSettings,
    /// Paths the agent may not write (built-ins plus `commit.protected_paths`).
    pub protected: Protected,
}

impl AgentSettings {
    /// The model settings from the resolved LLM configuration, with the built-in protected paths.
    pub fn from_llm(config: &LlmConfig, command: CommandSettings) -> Self {
        AgentSettings {
            model: config.model.clone(),
            max_output_tokens: config.max_output_tokens,
            temperature: config.temperature,
            stream: config.stream,
            command,
            protected: Protected::default(),
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
        let specs = tools::specs();
        let session = turn::Session {
            provider: &self.provider,
            shape: turn::RequestShape {
                model: &self.settings.model,
                tools: &specs,
                max_tokens: self.settings.max_output_tokens,
                temperature: self.settings.temperature,
                stream: self.settings.stream,
            },
            tools: tools::ToolBox {
                root: request.repo_root,
                protected: &self.settings.protected,
                runner: &self.runner,
                command: &self.settings.command,
                parent_env: &self.parent_env,
            },
            max_steps: request.max_steps,
        };
        let opening = vec![
            Message::system(prompt::system()),
            Message::user(prompt::task_message(&request)),
        ];
        turn::run(&session, opening).await
    }
}
