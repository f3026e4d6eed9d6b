//! The pause-point locations of issue #28 (`after_plan`, `before_llm_call`, …, `on_delegate`) as
//! the replay sees them: a location is *marked* in a trace by the events that happen there.
//!
//! The seam: pause points (the live runs that stop and wait) own these names and, as they land,
//! their own events; until then [`marks`] keys each location on the events that exist today,
//! and `on_delegate` is marked by none (the explorer's sub-task emits no event yet). When a
//! location gets an event of its own, [`marks`] is the one function to change.

use std::fmt;
use std::str::FromStr;

use crate::protocol::event::{Event, LoopPhase};
use crate::protocol::records::StepPhase;
use crate::telemetry::Traced;

/// A named place in a run where a pause point can stop it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Location {
    AfterPlan,
    BeforeLlmCall,
    AfterLlmAnswer,
    OnToolCall,
    AfterToolCall,
    OnToolError,
    AfterGates,
    BeforeCommit,
    BeforePush,
    OnDelegate,
}

/// Every location, in the order a run meets them.
pub const LOCATIONS: [Location; 10] = [
    Location::AfterPlan,
    Location::BeforeLlmCall,
    Location::AfterLlmAnswer,
    Location::OnToolCall,
    Location::AfterToolCall,
    Location::OnToolError,
    Location::AfterGates,
    Location::BeforeCommit,
    Location::BeforePush,
    Location::OnDelegate,
];

impl Location {
    /// The name used on the command line and in `.meta-agent.yml`.
    pub fn name(self) -> &'static str {
        match self {
            Location::AfterPlan => "after_plan",
            Location::BeforeLlmCall => "before_llm_call",
            Location::AfterLlmAnswer => "after_llm_answer",
            Location::OnToolCall => "on_tool_call",
            Location::AfterToolCall => "after_tool_call",
            Location::OnToolError => "on_tool_error",
            Location::AfterGates => "after_gates",
            Location::BeforeCommit => "before_commit",
            Location::BeforePush => "before_push",
            Location::OnDelegate => "on_delegate",
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not a location.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{given}` is not a pause-point location (one of: {})", names())]
pub struct UnknownLocation {
    pub given: String,
}

fn names() -> String {
    LOCATIONS.map(Location::name).join(", ")
}

impl FromStr for Location {
    type Err = UnknownLocation;

    fn from_str(given: &str) -> Result<Self, Self::Err> {
        LOCATIONS
            .into_iter()
            .find(|location| location.name() == given)
            .ok_or_else(|| UnknownLocation {
                given: given.to_owned(),
            })
    }
}

/// The locations an event of a trace marks (most mark none). A model call's one event marks
/// both sides of it; a tool call's marks its start and end (and the error when it failed): the
/// trace records each once it has answered.
pub fn marks(traced: &Traced) -> Vec<Location> {
    let Traced::Known(event) = traced else {
        return Vec::new();
    };
    match event {
        Event::StateChanged {
            from: LoopPhase::Planning,
            ..
        } => vec![Location::AfterPlan],
        Event::LlmCall { .. } => vec![Location::BeforeLlmCall, Location::AfterLlmAnswer],
        Event::ToolCalled { success: true, .. } => {
            vec![Location::OnToolCall, Location::AfterToolCall]
        }
        Event::ToolCalled { success: false, .. } => vec![
            Location::OnToolCall,
            Location::AfterToolCall,
            Location::OnToolError,
        ],
        Event::PhaseFinished { phase, .. } if phase.is_check_after_act() => {
            vec![Location::AfterGates]
        }
        Event::PhaseFinished {
            phase: StepPhase::Baseline,
            ..
        } => vec![Location::AfterGates],
        Event::Committed { .. } => vec![Location::BeforeCommit],
        Event::GitOperation { operation, .. } if operation.starts_with("push") => {
            vec![Location::BeforePush]
        }
        Event::RunStarted { .. }
        | Event::Recovered { .. }
        | Event::StateChanged { .. }
        | Event::PhaseStarted { .. }
        | Event::PhaseFinished { .. }
        | Event::GateStarted { .. }
        | Event::GateSkipped { .. }
        | Event::GateFinished { .. }
        | Event::SignatureFound { .. }
        | Event::ResolutionApplied { .. }
        | Event::ResolutionOutcome { .. }
        | Event::FlakyTest { .. }
        | Event::ModelExchange { .. }
        | Event::RerunRejected { .. }
        | Event::CommandRun { .. }
        | Event::FileChanged { .. }
        | Event::GitOperation { .. }
        | Event::Decided { .. }
        | Event::TamperRefused { .. }
        | Event::PatchRefused { .. }
        | Event::Escalated { .. }
        | Event::RunFinished { .. } => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_reads_back_and_a_wrong_one_lists_them() {
        for location in LOCATIONS {
            assert_eq!(location.name().parse::<Location>(), Ok(location));
        }
        let error = "before_lunch".parse::<Location>().unwrap_err().to_string();
        assert!(
            error.starts_with(
                "`before_lunch` is not a pause-point location (one of: after_plan, before_llm_call"
            ),
            "{error}"
        );
    }

    #[test]
    fn a_failed_tool_call_marks_the_tool_error() {
        let call = |success| {
            Traced::Known(Event::ToolCalled {
                tool: "run_command".into(),
                input: String::new(),
                success,
                started_unix_ms: 0,
                duration_ms: 1,
            })
        };
        assert!(marks(&call(false)).contains(&Location::OnToolError));
        assert!(!marks(&call(true)).contains(&Location::OnToolError));
        assert_eq!(marks(&Traced::Unknown { name: "x".into() }), Vec::new());
    }
}
