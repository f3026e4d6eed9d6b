//! Quality gates: run the configured gate commands, read what they produced, and decide.
//!
//! [`runner`] is the effectful shell (expands placeholders, runs commands through the exec module,
//! finds and reads the reports); [`verdict`] is the pure decision over what was observed. What
//! they find is protocol data ([`GatesSummary`]), which `meta-agent-render` shows as a terminal
//! table, Markdown, JSON and JUnit cases. Results are always in the configuration's order, whatever order the gates finished in.

#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod fast;
pub mod filter;
pub mod runner;
pub mod setup;
pub mod start;
pub mod verdict;

pub use meta_agent_protocol::gates::{CoverageOutcome, GateResult, GatesSummary, LintOutcome};
pub use runner::{GateNetworkMode, GateRunContext, run_gates, run_gates_with};
