//! The pause-point locations of issue #28 ([`Location`], owned by `protocol::pause`) as the
//! replay sees them: a location is *marked* in a trace by the events that happen there.
//!
//! A pause writes its own [`Event::Paused`]; the other locations are keyed on the events that
//! happen there ([`marks`], the one function to change when a location gets an event of its
//! own). `on_delegate` and `before_push` are marked by a pause there only (the explorer's sub-task
//! emits no event; the push happens after the engine's trace ends).

use meta_agent_protocol::event::{Event, LoopPhase};
pub use meta_agent_protocol::pause::Location;
use meta_agent_protocol::records::StepPhase;
use meta_agent_telemetry::Traced;

/// A name that is not a location.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{given}` is not a pause-point location (one of: {})", names())]
pub struct UnknownLocation {
    pub given: String,
}

fn names() -> String {
    Location::ALL.map(Location::as_str).join(", ")
}

/// The location named `given`.
pub fn parse(given: &str) -> Result<Location, UnknownLocation> {
    Location::named(given).ok_or_else(|| UnknownLocation {
        given: given.to_owned(),
    })
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
        Event::Paused { location, .. } => vec![*location],
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
        for location in Location::ALL {
            assert_eq!(parse(location.as_str()), Ok(location));
        }
        let error = parse("before_lunch").unwrap_err().to_string();
        assert!(
            error.starts_with(
                "`before_lunch` is not a pause-point location (one of: after_plan, on_delegate"
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
