//! meta-agent: a CI-native build-test-improve bot.
//!
//! The library holds everything; `main.rs` only parses the command line and maps the outcome to
//! an exit code (see [`exit`]). Layers, from the outside in:
//!
//! - [`cli`]: the command-line surface (clap types and dispatch only);
//! - [`session`]: assembles runs (`run`, `resume`, the GitHub step, the smaller commands) from
//!   the layers below, builds the redactor once;
//! - [`render`]: every text a person reads (terminal summary, report, commit message, status
//!   comment, pull request body, job summary), pure functions of typed records;
//! - [`replay`]: a recorded run read back: `trace show`, `trace replay` (clock and keys as
//!   traits);
//! - [`eval`]: evaluation suites, their graders and statistics (`meta-agent eval`);
//! - [`run_report`]: what a run hands over ([`run_report::RunReport`]);
//! - [`engine`]: the build-test-improve loop, its pure decisions and persisted state;
//! - [`agent`]: the LLM-driven coding agent that implements the protocol's builder contract;
//! - [`llm`]: the provider connections (OpenAI, Anthropic), budgets and retries;
//! - [`github`]: the GitHub side (event, authorization, REST, status comment, push);
//! - [`policy`]: the one policy of what may be read, written and run;
//! - [`config`]: `.meta-agent.yml`, presets, defaults;
//! - [`gates`]: running quality gates and their verdicts;
//! - [`report`]: JUnit, coverage and SARIF readers (and the JUnit writer);
//! - [`hindsight`]: error signatures and the store of fixes that worked;
//! - [`memory`]: hindsight, sessions and conversations shared across repositories in
//!   PostgreSQL, with the file store as default and fallback;
//! - [`git`]: the bot's own git, without hooks;
//! - [`exec`]: the one place child processes run, and their sandbox (crate `meta-agent-exec`);
//! - [`fsafe`]: opening and writing files beneath the worktree without following links;
//! - [`redact`]: secrets taken out of everything that leaves;
//! - [`net`]: the HTTP clients' shared helpers (an error's cause, a capped body);
//! - [`telemetry`]: the event consumers (metrics, audit log, trace, JSON lines, OTLP);
//! - [`protocol`]: the plain data every layer shares (task, records, events, the builder
//!   contract, untrusted text), depending on none of them;
//! - [`exit`]: the documented exit codes.

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
