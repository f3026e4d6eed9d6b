//! meta-agent on GitHub: the run's context as Actions provides it, the triggering event,
//! authorization, the GitHub App identity, the REST calls, the idempotent status comment, where
//! a run's code comes from and what it may publish ([`provenance`]), the push and its check, the
//! pull request, and a fix as suggestions ([`suggest`]) (the texts themselves are rendered in
//! `meta_agent_render`). The orchestrator holds the token here, in
//! memory; no child process ever sees it (the push hands it to git through the environment of
//! that one trusted command).

#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod api;
pub mod app;
pub mod authz;
pub mod ci_failure;
pub mod command;
pub mod context;
pub mod held;
pub mod provenance;
pub mod push;
pub mod rate;
pub mod rest;
pub mod status;
pub mod suggest;
pub mod thread;
pub mod trigger;

pub use api::{GitHubApi, GitHubError, Permission, RepoId};
pub use rest::unzip;
