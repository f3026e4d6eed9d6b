//! `meta-agent memory ...` and the hindsight commands that work on shared memory
//! (`hindsight approve`, `hindsight sync`): loads the repository and its configuration, then
//! hands over to [`crate::session::memory_cli`].

use std::path::{Path, PathBuf};

use super::prepared::{executor, load_config, repo_root};
use super::run::open_repo;
use super::{Done, Environment, Overrides, SessionError};
use crate::config::Config;
use crate::session::hindsight_cli::SharedCommand;
use crate::session::memory_cli::{self as memory_cli, MemoryArgs, MemoryContext};

/// `meta-agent memory ...`: migrate, status, export, import.
pub async fn memory(
    overrides: &Overrides,
    env: &Environment,
    args: &MemoryArgs,
) -> Result<Done, SessionError> {
    let (repo, config) = setup(overrides, env).await?;
    let ctx = context(&repo, &config, env)?;
    Ok(Done::ok(memory_cli::run(args, &ctx).await?))
}

/// `meta-agent hindsight approve|sync`.
pub async fn shared_hindsight(
    overrides: &Overrides,
    env: &Environment,
    command: SharedCommand<'_>,
) -> Result<Done, SessionError> {
    let (repo, config) = setup(overrides, env).await?;
    let ctx = context(&repo, &config, env)?;
    let out = match command {
        SharedCommand::Approve(approve) => memory_cli::approve(approve, &ctx).await?,
        SharedCommand::Sync(sync) => memory_cli::sync(sync, &ctx).await?,
    };
    Ok(Done::ok(out))
}

async fn setup(
    overrides: &Overrides,
    env: &Environment,
) -> Result<(PathBuf, Config), SessionError> {
    let repo = repo_root(overrides)?;
    let config = load_config(overrides, &repo, &executor()?, env).await?;
    Ok((repo, config))
}

fn context<'a>(
    repo: &'a Path,
    config: &'a Config,
    env: &'a Environment,
) -> Result<MemoryContext<'a>, SessionError> {
    Ok(MemoryContext {
        repo_root: repo,
        git_dir: crate::git::Repository::git_dir(&open_repo(repo)?),
        settings: &config.memory,
        store_dir: repo.join(&config.hindsight.path),
        catalog: config.hindsight.catalog,
        env: &env.vars,
        redactor: env.redactor.clone(),
    })
}
