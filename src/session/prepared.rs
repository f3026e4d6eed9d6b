//! What every session that runs repository commands needs first: the repository root, the
//! executor (our own binary, for the supervisor), the configuration with the command line's
//! overrides, and the one policy built from it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Environment, Overrides, SessionError};
use crate::config::{self, Config};
use crate::exec::Executor;
use crate::policy::Policy;

/// What `run`, `resume` and a GitHub step need, loaded once.
pub struct Prepared {
    pub repo: PathBuf,
    pub executor: Executor,
    pub env: Environment,
    pub config: Config,
    pub policy: Arc<Policy>,
}

impl Prepared {
    /// Loads everything for a run; a configuration without gates is a usage error (nothing could
    /// verify a change).
    pub async fn load(overrides: &Overrides, env: &Environment) -> Result<Prepared, SessionError> {
        let repo = repo_root(overrides)?;
        let executor = executor()?;
        let config = load_config(overrides, &repo, &executor, env).await?;
        if config.gates.is_empty() {
            return Err(SessionError::Usage(format!(
                "no gates to verify a change with: {}",
                config.preset_reason
            )));
        }
        let policy = Arc::new(Policy::from_config(&config, &repo));
        Ok(Prepared {
            repo,
            executor,
            env: env.clone(),
            config,
            policy,
        })
    }
}

/// The supervisor's executable: this binary.
pub fn executor() -> Result<Executor, SessionError> {
    std::env::current_exe().map(Executor::new).map_err(|err| {
        SessionError::Internal(format!("cannot locate the meta-agent binary: {err}"))
    })
}

/// `--repo`, resolved.
pub fn repo_root(overrides: &Overrides) -> Result<PathBuf, SessionError> {
    std::fs::canonicalize(&overrides.repo)
        .map_err(|err| SessionError::Usage(format!("--repo {}: {err}", overrides.repo.display())))
}

/// The repository's configuration with the command line's LLM overrides applied.
pub async fn load_config(
    overrides: &Overrides,
    repo: &Path,
    executor: &Executor,
    env: &Environment,
) -> Result<Config, SessionError> {
    let input = config::LoadInput {
        repo_root: repo,
        explicit: overrides.config.as_deref(),
        parent_env: &env.vars,
    };
    let mut config = config::load(input, executor).await?;
    if let Some(provider) = overrides.llm_provider {
        config.llm.provider = provider;
    }
    if let Some(model) = &overrides.model {
        config.llm.model = Some(model.clone());
    }
    if let Some(model) = &overrides.fast_model {
        config.llm.fast_model = Some(model.clone());
    }
    if let Some(url) = &overrides.llm_base_url {
        config.llm.base_url = Some(url.clone());
    }
    Ok(config)
}
