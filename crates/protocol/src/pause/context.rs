//! What a paused run holds where it stopped: the context `meta-agent debug context` prints and a
//! GitHub run puts in its artifact (`context.json`). Plain data; the engine fills it at the pause
//! and the session store writes it through the one redactor.

use serde::{Deserialize, Serialize};

use super::PauseHit;
use crate::chat::{Message, ToolCall};
use crate::phase::LoopPhase;
use crate::records::{GateRecord, Plan, ResolutionTried, SignatureRecord, Usage};
use crate::task::Task;

/// The name of the file in the session directory.
pub const CONTEXT_FILE: &str = "context.json";

/// The run's context at a pause.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PauseContext {
    pub session: String,
    /// Where and why the run paused.
    pub hit: PauseHit,
    /// As a person reads it (the status line of the pause).
    pub why: String,
    pub phase: LoopPhase,
    pub iteration: u32,
    pub max_iterations: u32,
    pub task: Task,
    /// The plan of the act under way (or the next one).
    pub plan: Option<Plan>,
    /// The sub-task plan the agent's planner made in the act (at `after_plan` inside it).
    #[serde(default)]
    pub sub_plan: Option<crate::subplan::TaskPlan>,
    /// The steps taken so far, one line each.
    pub progress: Vec<StepLine>,
    pub usage: Usage,
    /// The model and its parameters (the act's, at a pause inside an act; else the configured).
    pub model: ModelSettings,
    /// The conversation as it was sent (at a pause inside an act; empty elsewhere).
    pub messages: Vec<Message>,
    /// The tool call about to run (`on_tool_call`) or that just ran, and its result.
    pub tool_call: Option<ToolCall>,
    pub tool_result: Option<String>,
    /// The gates of the last observation.
    pub gates: Vec<GateRecord>,
    /// The failures those gates left.
    pub signatures: Vec<SignatureRecord>,
    /// The hindsight resolutions tried so far.
    pub hindsight: Vec<ResolutionTried>,
    /// What hindsight and the shared memory hold for the current failures, as the next prompt
    /// gets it: guidance from the store and the catalog, hints from the organisation's memory and
    /// from fixes of the same family, the notes recalled from earlier conversations.
    #[serde(default)]
    pub memory: Vec<String>,
    /// The repository's instruction files the model was shown.
    pub instructions: Vec<String>,
}

/// One step of the run so far.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepLine {
    pub phase: String,
    pub iteration: u32,
    pub outcome: String,
    pub files_changed: Vec<String>,
}

/// The model and its parameters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelSettings {
    /// Who uses it: `builder`, `explorer`, or empty outside an act.
    pub role: String,
    pub provider: String,
    pub model: String,
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
}
