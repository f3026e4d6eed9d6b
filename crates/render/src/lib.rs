//! The one home for what people read. Every text a person sees is rendered here, as a pure
//! function of typed records (the run's [`LoopState`](meta_agent_protocol::state::LoopState), the step
//! and gate records of [`meta_agent_protocol::records`], the typed
//! [`EscalationReason`](meta_agent_protocol::ending::EscalationReason), gate results): nothing here
//! does I/O, so every text has a snapshot test. It depends on the floor crate alone: what it
//! shows is protocol data, or a small view a caller fills (the hindsight tables' lines), never a
//! layer's own type.
//!
//! [`outcome`] the commit message with its trailers, the escalation report and the final
//! summary; `reason.rs` the sentence for each escalation reason; [`subject`] the commit's
//! subject line; [`terminal`] what `run` and `resume` print (and write to `report.md`);
//! [`gates`] gate results (terminal table, Markdown, JSON, JUnit cases); [`job`] the Actions job summary,
//! annotations and step outputs, the trigger's name, why an event is ignored, the step's log lines; [`status`] the status comment (the escalation comment is its
//! escalated view; a fork's pull request gets the fix offered as a patch); [`review`] the
//! suggestion review of a fork's pull request; [`pull`] the pull request body; [`fit`] keeps
//! what goes to GitHub
//! within GitHub's limits; [`evidence`] existing and new tests apart, and the allowed test
//! and configuration changes; [`environment`] gates that could not start, and what to do, and
//! the isolation line;
//! [`checklist`] the status comment's live checklist, folded from the event stream; [`live`]
//! the terminal's live status line and its plain lines;
//! [`local`] what a local run says about its worktree and the user's uncommitted work (and
//! `meta-agent worktrees`); [`mine`] the progress and lines of `eval mine`; [`eval`] an evaluation's report, JUnit cases
//! and comparison; [`hindsight`] the
//! tables of `meta-agent hindsight`; [`config`] what `meta-agent config check` prints; [`memory`] what the memory commands print; [`reports`]
//! what `meta-agent report` prints of a JUnit, coverage or SARIF report;
//! [`checks`] a pull request's failing checks: not reproduced, fixed on its own branch, or not
//! pushed because it moved, and why a pull request is left alone; [`task`] the titles,
//! requirements and acceptance of the tasks the GitHub step words itself, and a failed run's
//! digest; [`timeline`] a run's trace as a timeline (`trace show`, `trace
//! replay`); [`html`] the run's `report.html`.

#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod checklist;
pub mod checks;
pub mod config;
pub mod environment;
pub mod eval;
pub mod evidence;
pub mod fit;
pub mod gates;
pub mod hindsight;
pub mod html;
pub mod job;
pub mod live;
pub mod local;
pub mod memory;
pub mod mine;
pub mod outcome;
pub mod pause;
pub mod pull;
pub mod reason;
pub mod refusal;
pub mod reports;
pub mod review;
pub mod run_report;
pub mod status;
pub mod step;
pub mod subject;
pub mod task;
pub mod terminal;
pub mod timeline;
pub mod words;

/// Tests named in a line: `a, b, c`.
pub fn test_names(tests: &[meta_agent_protocol::test_id::TestId]) -> String {
    let names: Vec<String> = tests.iter().map(ToString::to_string).collect();
    names.join(", ")
}

#[cfg(test)]
mod tests;
