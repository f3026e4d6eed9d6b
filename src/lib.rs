//! meta-agent: a CI-native build-test-improve bot.
//!
//! The library holds everything; `main.rs` only parses the command line and maps the outcome to
//! an exit code (see [`exit`]). Layers, from the outside in: [`cli`] (the command-line surface),
//! [`engine`] (the build-test-improve loop, its pure decisions and persisted state),
//! [`config`] (`.meta-agent.yml`, presets, defaults), [`gates`] (running quality gates and their
//! verdicts), [`report`] (JUnit, coverage and SARIF readers), [`hindsight`] (error signatures and
//! the store of fixes that worked), [`memory`] (hindsight, sessions and conversations shared
//! across repositories in PostgreSQL, with the file store as default and fallback), [`git`] (the bot's own git, without hooks), [`exec`] (the one
//! place child processes run), [`event`] (the one event type) and [`telemetry`] (its consumers:
//! metrics, audit log, trace, JSON lines).

#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod agent;
pub mod cli;
pub mod config;
pub mod engine;
pub mod eval;
pub mod exec;
pub mod exit;
pub mod gates;
pub mod git;
pub mod github;
pub mod hindsight;
pub mod llm;
pub mod memory;
pub mod policy;
pub mod protocol;
pub mod redact;
pub mod report;
pub mod session;
pub mod telemetry;
