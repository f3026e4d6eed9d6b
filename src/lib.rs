//! meta-agent: a CI-native build-test-improve bot.
//!
//! This package holds the top of the workspace: [`session`] (assembles runs — `run`, `resume`,
//! the GitHub step, the smaller commands — from the crates below, builds the redactor once),
//! [`cli`] (the command-line surface: clap types and dispatch only) and [`exit`] (the
//! documented exit codes); `main.rs` only parses the command line and maps the outcome to an exit
//! code. Every other layer is its own crate of the workspace, re-exported here under its module
//! name (`meta_agent::engine` is `meta_agent_engine`), bottom up:
//!
//! - [`protocol`]: the floor, the plain data and shared rules every layer uses (task, state,
//!   records, events, pause points, the builder contract, untrusted text, paths, test paths),
//!   depending on no other crate of the workspace;
//! - [`redact`], [`report`], [`fsafe`], [`net`], [`exec`], [`code`], [`git`], [`telemetry`],
//!   [`hindsight`], [`config`]: on the floor (and each other, never upward): the redactor, the
//!   report readers, files beneath a root, HTTP helpers, child processes and their sandbox, source
//!   read as code, the bot's git, the event consumers, error signatures and the store of fixes,
//!   `.meta-agent.yml` and its presets;
//! - [`policy`], [`llm`], [`gates`]: what may be read, written and run; the LLM providers;
//!   running quality gates and their verdicts;
//! - [`render`] (with [`run_report`]): every text a person reads, pure functions of typed records;
//! - [`agent`]: the LLM-driven coding agent that implements the builder contract;
//! - [`github`]: the GitHub side (event, authorization, REST, status comment, push);
//! - [`memory`]: hindsight, sessions and conversations shared across repositories in
//!   PostgreSQL, with the file store as default and fallback;
//! - [`engine`]: the build-test-improve loop, its pure decisions and persisted state;
//! - [`eval`], [`replay`]: evaluation suites; a recorded run read back.

#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub use meta_agent_agent as agent;
pub mod cli;
pub use meta_agent_code as code;
pub use meta_agent_config as config;
pub use meta_agent_engine as engine;
pub use meta_agent_eval as eval;
pub use meta_agent_exec as exec;
pub mod exit;
pub use meta_agent_fsafe as fsafe;
pub use meta_agent_gates as gates;
pub use meta_agent_git as git;
pub use meta_agent_github as github;
pub use meta_agent_hindsight as hindsight;
pub use meta_agent_llm as llm;
pub use meta_agent_memory as memory;
pub use meta_agent_net as net;
pub use meta_agent_policy as policy;
pub use meta_agent_protocol as protocol;
pub use meta_agent_redact as redact;
pub use meta_agent_render as render;
pub use meta_agent_render::run_report;
pub use meta_agent_replay as replay;
pub use meta_agent_report as report;
pub mod session;
pub use meta_agent_telemetry as telemetry;
