//! The audit log: one JSON line per auditable event (commands, file changes, git operations, LLM
//! calls, tool calls, resolutions, tamper refusals, the commit or the escalation), each with
//! `time`, `actor`, `action`, `target`, `result` and the event itself as `detail`. Appends to an
//! existing file; every line is flushed as it is written. Non-auditable events (state changes,
//! gate verdicts, decisions) belong to the trace, not here.

use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;

use serde::Serialize;

use super::clock::{Clock, format_time};
use super::line_writer::LineWriter;
use super::{Redact, TelemetryError};
use meta_agent_protocol::event::{Event, EventSink};

/// Who performed an audited action.
///
/// - `meta-agent`, the orchestrator: commands run through `exec` (gates, resolutions, and the
///   commands it runs for the agent), LLM requests (it holds the key), its git operations,
///   hindsight resolutions, the commit and the escalation.
/// - `agent`, the LLM-driven coding agent: its tool calls and the file changes they make.
/// - `gate`, a check that judges the work: the test-tamper guard's refusals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Actor {
    #[serde(rename = "meta-agent")]
    MetaAgent,
    #[serde(rename = "agent")]
    Agent,
    #[serde(rename = "gate")]
    Gate,
}

/// One line of the audit log.
#[derive(Debug, Serialize)]
struct AuditRecord<'a> {
    time: String,
    actor: Actor,
    action: Cow<'a, str>,
    /// What was acted on; `null` when nothing is named (an escalation without a branch).
    target: Option<&'a str>,
    result: Cow<'a, str>,
    detail: &'a Event,
}

/// The audit log file; see the module documentation.
pub struct AuditLog {
    lines: LineWriter<std::fs::File>,
    clock: Arc<dyn Clock>,
}

impl AuditLog {
    /// Opens (or creates) the log at `path` for appending.
    pub fn open(
        path: &Path,
        clock: Arc<dyn Clock>,
        redactor: Arc<dyn Redact>,
    ) -> Result<Self, TelemetryError> {
        let lines = LineWriter::append_to(path, redactor)?;
        Ok(Self { lines, clock })
    }
}

impl EventSink for AuditLog {
    fn emit(&self, event: &Event) {
        self.lines.write_line(|_| {
            let entry = audit_entry(event)?;
            let record = AuditRecord {
                time: format_time(self.clock.now()),
                actor: entry.actor,
                action: entry.action,
                target: entry.target,
                result: entry.result,
                detail: event,
            };
            Some(serde_json::to_string(&record))
        });
    }
}

/// What the audit log says about an event.
#[derive(Debug, PartialEq)]
struct AuditEntry<'a> {
    actor: Actor,
    action: Cow<'a, str>,
    target: Option<&'a str>,
    result: Cow<'a, str>,
}

fn entry<'a>(
    actor: Actor,
    action: impl Into<Cow<'a, str>>,
    target: Option<&'a str>,
    result: impl Into<Cow<'a, str>>,
) -> Option<AuditEntry<'a>> {
    Some(AuditEntry {
        actor,
        action: action.into(),
        target,
        result: result.into(),
    })
}

/// The audit entry of an event, or `None` when the event is not auditable.
fn audit_entry(event: &Event) -> Option<AuditEntry<'_>> {
    use Actor::{Agent, Gate, MetaAgent};
    match event {
        Event::CommandRun {
            command, result, ..
        } => entry(MetaAgent, "command.run", Some(command), result.as_str()),
        Event::FileChanged { path, .. } => entry(Agent, "file.change", Some(path), "changed"),
        Event::GitOperation {
            operation,
            target,
            result,
        } => entry(
            MetaAgent,
            format!("git.{operation}"),
            Some(target),
            result.as_str(),
        ),
        Event::LlmCall { model, .. } => entry(MetaAgent, "llm.call", Some(model), "completed"),
        Event::ToolCalled { tool, success, .. } => {
            let result = if *success { "success" } else { "failure" };
            entry(Agent, "tool.call", Some(tool), result)
        }
        Event::ResolutionApplied { signature, .. } => {
            entry(MetaAgent, "resolution.apply", Some(signature), "applied")
        }
        Event::TamperRefused { .. } => entry(Gate, "tamper.check", Some("worktree"), "refused"),
        Event::PatchRefused { stage, .. } => {
            entry(Gate, "patch.check", Some(stage.as_str()), "refused")
        }
        Event::Committed { branch, .. } => entry(MetaAgent, "commit", Some(branch), "committed"),
        Event::Escalated { branch, .. } => {
            entry(MetaAgent, "escalate", branch.as_deref(), "escalated")
        }
        Event::RunStarted { .. }
        | Event::Recovered { .. }
        | Event::Paused { .. }
        | Event::StateChanged { .. }
        | Event::PhaseStarted { .. }
        | Event::PhaseFinished { .. }
        | Event::GateStarted { .. }
        | Event::GateSkipped { .. }
        | Event::GateFinished { .. }
        | Event::SignatureFound { .. }
        | Event::ResolutionOutcome { .. }
        | Event::FlakyTest { .. }
        | Event::ModelExchange { .. }
        | Event::RerunRejected { .. }
        | Event::Decided { .. }
        | Event::RunFinished { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_operations_are_named_by_operation() {
        let event = Event::GitOperation {
            operation: "push".into(),
            target: "origin meta-agent/fix".into(),
            result: "ok".into(),
        };
        let entry = audit_entry(&event).unwrap();
        assert_eq!(entry.actor, Actor::MetaAgent);
        assert_eq!(entry.action, "git.push");
        assert_eq!(entry.target, Some("origin meta-agent/fix"));
        assert_eq!(entry.result, "ok");
    }

    #[test]
    fn tool_failures_are_the_agents() {
        let event = Event::ToolCalled {
            tool: "edit_file".into(),
            input: "{}".into(),
            success: false,
            started_unix_ms: 1_795_314_548_000,
            duration_ms: 3,
        };
        let entry = audit_entry(&event).unwrap();
        assert_eq!(
            (entry.actor, entry.result.as_ref()),
            (Actor::Agent, "failure")
        );
    }

    #[test]
    fn an_escalation_without_branch_has_no_target() {
        let event = Event::Escalated {
            reason: "budget".into(),
            branch: None,
        };
        assert_eq!(audit_entry(&event).unwrap().target, None);
    }

    #[test]
    fn gate_verdicts_are_not_audited() {
        let event = Event::GateFinished {
            gate: "tests".into(),
            status: meta_agent_protocol::records::GateStatus::Passed,
            duration_ms: 1,
            detail: String::new(),
            counts: Default::default(),
        };
        assert_eq!(audit_entry(&event), None);
    }
}
