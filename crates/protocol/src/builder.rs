//! The Builder contract: what the loop asks of whatever edits the repository (the LLM agent, the
//! scripted builder, the offline stand-in) and what it gets back. Plain data and one trait; the
//! engine calls it, the agent implements it, neither knows the other.

use std::future::Future;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::kinds::SignatureKind;
use crate::event::{Discard, Event, EventSink};
use crate::pause::{AgentView, Arrival, PauseGate};
use crate::records::{Plan, Usage};
use crate::task::Task;

/// What the previous attempts taught: given to every improve step, so the next attempt knows what
/// failed, what was tried and that it must try something different.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FailureContext {
    /// Stated requirements the last change did not meet (the requirements review's findings).
    pub unmet: Vec<String>,
    /// The failures still present (parsed, not raw logs): one per failing test or finding, a
    /// failure several gates reported told once.
    pub failures: Vec<FailureDigest>,
    /// Actions attempted in earlier iterations.
    pub attempts: Vec<String>,
    pub files_changed: Vec<String>,
    /// Relevant command output, bounded.
    pub output: String,
    /// A summary of the failure patterns (kinds and counts, persistence).
    pub patterns: String,
    /// Explicit instruction for this attempt.
    pub instruction: String,
    /// Guidance from hindsight and from maintainers (untrusted text).
    pub guidance: Vec<String>,
}

/// Where a builder reports what it does while it does it: each tool call as it ends, each model
/// call as it answers (`ToolCalled`, `LlmCall`), on the run's one event stream. Nothing else
/// reports them: the act's report only sums them up.
/// It is also where the act arrives at pause points (see [`crate::pause`]): an arrival
/// that pauses tells the builder to stop its act at once.
#[derive(Clone, Copy)]
pub struct Progress<'a> {
    sink: &'a dyn EventSink,
    pauses: Option<&'a PauseGate>,
}

impl<'a> Progress<'a> {
    pub fn to(sink: &'a dyn EventSink) -> Self {
        Progress { sink, pauses: None }
    }

    /// Reports to `sink` and arrives at the run's pause points.
    pub fn pausing(sink: &'a dyn EventSink, pauses: &'a PauseGate) -> Self {
        Progress {
            sink,
            pauses: Some(pauses),
        }
    }

    /// Reports nowhere (tools, benchmarks and tests that watch nothing).
    pub fn nowhere() -> Progress<'static> {
        Progress::to(&Discard)
    }

    pub fn emit(&self, event: &Event) {
        self.sink.emit(event);
    }

    /// Arrives at a pause point; true when the act must stop there (`view`: what the agent holds,
    /// for the context at the pause; asked only then).
    pub fn arrive(&self, arrival: &Arrival, view: impl FnOnce() -> Option<AgentView>) -> bool {
        self.pauses.is_some_and(|gate| gate.reach(arrival, view))
    }

    /// Whether arrivals are counted at all (building their values can then be skipped).
    pub fn watched(&self) -> bool {
        self.pauses.is_some_and(PauseGate::armed)
    }
}

impl std::fmt::Debug for Progress<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Progress")
    }
}

/// One failure as the next act is told it: what failed, where, and what the runner said about
/// it (a test's assertion with its diff; an error's message).
#[derive(Debug, Clone, PartialEq)]
pub struct FailureDigest {
    pub kind: SignatureKind,
    /// The gates that reported it, in order.
    pub gates: Vec<String>,
    /// The failing test as its runner names it.
    pub test: Option<crate::test_id::TestName>,
    /// One line: the test's id, or the error's first line.
    pub headline: String,
    /// The assertion and its diff, or the rest of the error's message (may be several lines).
    pub detail: String,
    /// Repository-relative `path:line` where it failed.
    pub location: Option<String>,
    /// The other in-repo frames, innermost first (`path:line`).
    pub frames: Vec<String>,
    /// The 1-based number of an earlier failure of the same shape (its family): this one's
    /// detail then differs only in its values.
    pub same_as: Option<usize>,
}

impl FailureDigest {
    /// A failing test reported by one gate, as tests and benchmarks write one.
    pub fn test(test: &str, location: Option<&str>, detail: &str) -> FailureDigest {
        FailureDigest {
            kind: SignatureKind::TestFailure,
            gates: vec!["tests".to_owned()],
            test: Some(crate::test_id::TestName::new(test)),
            headline: test.to_owned(),
            detail: detail.to_owned(),
            location: location.map(str::to_owned),
            frames: Vec::new(),
            same_as: None,
        }
    }
}

/// One request to the builder.
#[derive(Debug, Clone)]
pub struct ActRequest<'a> {
    pub task: &'a Task,
    pub plan: &'a Plan,
    pub iteration: u32,
    /// How many requests came before this one in the session (scripted steps resume from here).
    pub call_index: u32,
    pub repo_root: &'a Path,
    pub context: FailureContext,
    /// Cap on agent steps within this phase.
    pub max_steps: u32,
    /// Where the act's tool and model calls are reported as they happen.
    pub progress: Progress<'a>,
    /// The sub-task plan the maintainers saw at an `after_plan` pause and let go on: the act
    /// runs it as it is instead of asking the planner again.
    pub approved_plan: Option<&'a crate::subplan::TaskPlan>,
}

/// What the builder did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ActReport {
    pub summary: String,
    pub actions: Vec<String>,
    pub usage: Usage,
    /// Set when the builder could do nothing (no LLM, script exhausted).
    pub gave_up: Option<String>,
    /// The model declined to go on: the act ended on its refusal (and the run says so).
    pub refusal: Option<ModelRefusal>,
    /// The repository's instruction files the act's prompt showed (paths, in order).
    pub instructions: Vec<String>,
}

/// The model declined to go on (OpenAI's `refusal`, Anthropic's `stop_reason: "refusal"`): the
/// act ends there, and the run's "why it stopped" is this refusal, in the model's words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelRefusal {
    /// What the model said, trimmed and bounded; `None` when it gave no words.
    pub words: Option<String>,
}

/// A change whose gates pass, to be checked against the task's stated requirements.
#[derive(Debug, Clone)]
pub struct ReviewRequest<'a> {
    pub task: &'a Task,
    /// The change against the base commit.
    pub diff: &'a str,
    /// Where the review's model call is reported as it answers.
    pub progress: Progress<'a>,
}

/// What the requirements review found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReviewReport {
    /// Stated requirements the change does not meet (empty: it meets them).
    pub missing: Vec<String>,
    /// One line for the record.
    pub line: String,
    pub usage: Usage,
}

/// What a failed call to a model means for the loop, whatever the provider (the LLM layer
/// classifies its own errors into this).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelFault {
    /// The same request may succeed later (retries exhausted on such a fault included): another
    /// act may be tried.
    Transient,
    /// The run's deadline passed while the model was asked.
    Deadline,
    /// The provider refused the request for good (key, model, request, context length, spend
    /// limit): the run ends escalated with the provider's reason.
    Refused,
    /// Anything else (our side failed, the run's own LLM budget is spent): the act ends.
    Other,
}

/// A model's service failed: what it means ([`ModelFault`]) and the LLM layer's message, for
/// the person reading the outcome.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ModelFailure {
    pub fault: ModelFault,
    pub message: String,
}

/// Why the builder failed.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The model's service failed; [`BuildError::is_transient`] says whether another act may
    /// succeed later.
    #[error(transparent)]
    Llm(#[from] ModelFailure),
    /// The act reached a pause point and stopped there (the engine pauses the run; the act is
    /// redone on resume).
    #[error("the act stopped at a pause point")]
    Paused,
}

impl BuildError {
    /// Worth another act later: a transient fault, or retries exhausted on one (the engine then
    /// retries the act a bounded number of times). Everything else ends the run.
    pub fn is_transient(&self) -> bool {
        self.fault() == Some(ModelFault::Transient)
    }

    /// The run's deadline passed while the model was asked.
    pub fn is_deadline(&self) -> bool {
        self.fault() == Some(ModelFault::Deadline)
    }

    fn fault(&self) -> Option<ModelFault> {
        match self {
            BuildError::Llm(failure) => Some(failure.fault),
            BuildError::Paused => None,
        }
    }

    /// The provider refused the request for good (key, model, request, context length, spend
    /// limit): the run ends escalated with the provider's reason, not as an internal error.
    pub fn is_refusal(&self) -> bool {
        self.fault() == Some(ModelFault::Refused)
    }
}

/// Edits the repository for the loop.
pub trait Builder: Send + Sync {
    /// Whether a request with this index could do anything.
    fn available(&self, call_index: u32) -> bool;
    fn act(
        &self,
        request: ActRequest<'_>,
    ) -> impl Future<Output = Result<ActReport, BuildError>> + Send;
    /// Checks a change whose gates pass against the task's stated requirements; `None` when
    /// this builder does not review (no model, or reviews turned off).
    fn review(
        &self,
        _request: ReviewRequest<'_>,
    ) -> impl Future<Output = Result<Option<ReviewReport>, BuildError>> + Send {
        std::future::ready(Ok(None))
    }
}
