//! meta-agent on GitHub: the run's context as Actions provides it, the triggering event,
//! authorization, the REST calls, the idempotent status comment, the push and the pull request,
//! and the job summary. The orchestrator holds the token here, in memory; no child process ever
//! sees it.

pub mod api;
pub mod rate;
pub mod rest;

pub use api::{GitHubApi, GitHubError, Permission, RepoId};
