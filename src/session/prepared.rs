//! What every session that runs repository commands needs first: the repository root, the
//! executor (our own binary, for the supervisor), the configuration with the command line's
//! overrides, and the one policy built from it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Environment, Overrides, SessionError};
use crate::config::raw::LlmProvider;
use crate::config::{self, Config};
use crate::exec::Executor;
use crate::exec::sandbox::{Isolation, WritePolicy};
use crate::exec::trusted;
use crate::policy::Policy;

/// What `run`, `resume` and a GitHub step need, loaded once.
pub struct Prepared {
    pub repo: PathBuf,
    pub executor: Executor,
    /// `git` for fetch and push, resolved once at start-up ([`crate::exec::trusted`]).
    pub git: PathBuf,
    pub env: Environment,
    pub config: Config,
    pub policy: Arc<Policy>,
}

impl Prepared {
    /// Loads everything for a run; a configuration without gates is a usage error (nothing could
    /// verify a change). `given`: the configuration file read from somewhere trusted instead of
    /// the checkout (see [`config::LoadInput::given`]).
    pub async fn load(
        overrides: &Overrides,
        env: &Environment,
        given: Option<config::GivenFile>,
    ) -> Result<Prepared, SessionError> {
        let repo = repo_root(overrides)?;
        Prepared::load_at(overrides, env, repo, &[], given, None).await
    }

    /// Loads everything for a local run in `worktree`, a linked worktree of the checkout at
    /// `--repo`: the configuration is the worktree's (where the run started from), named in
    /// messages by its path in the user's checkout, and the checkout and the worktrees' directory
    /// count as writable too when deciding which programs to trust.
    pub async fn load_in_worktree(
        overrides: &Overrides,
        env: &Environment,
        worktree: &Path,
        worktrees: &Path,
    ) -> Result<Prepared, SessionError> {
        let checkout = repo_root(overrides)?;
        let shown = Shown {
            worktree,
            checkout: &checkout,
        };
        let writable = [checkout.clone(), worktrees.to_owned()];
        Prepared::load_at(
            overrides,
            env,
            worktree.to_owned(),
            &writable,
            None,
            Some(shown),
        )
        .await
    }

    async fn load_at(
        overrides: &Overrides,
        env: &Environment,
        repo: PathBuf,
        also_writable: &[PathBuf],
        given: Option<config::GivenFile>,
        shown: Option<Shown<'_>>,
    ) -> Result<Prepared, SessionError> {
        let executor = executor()?;
        let loaded = load_config_from(overrides, &repo, &executor, env, given).await;
        let config = match shown {
            Some(shown) => shown.config(loaded)?,
            None => loaded?,
        };
        if config.gates.is_empty() {
            return Err(SessionError::Usage(format!(
                "no gates to verify a change with: {}",
                config.preset_reason
            )));
        }
        let policy = Arc::new(Policy::from_config(&config, &repo));
        let git = trusted_programs(&repo, also_writable, &policy, env)?;
        Ok(Prepared {
            repo,
            executor,
            git,
            env: env.clone(),
            config,
            policy,
        })
    }
}

/// How a local run names its worktree's files to the user: by their path in the checkout.
#[derive(Debug, Clone, Copy)]
struct Shown<'a> {
    worktree: &'a Path,
    checkout: &'a Path,
}

impl Shown<'_> {
    /// The configuration loaded in the worktree, its errors and its preset's reason naming the
    /// user's files.
    fn config(self, loaded: Result<Config, SessionError>) -> Result<Config, SessionError> {
        match loaded {
            Ok(mut config) => {
                config.preset_reason = config.preset_reason.replace(
                    &*self.worktree.to_string_lossy(),
                    &self.checkout.to_string_lossy(),
                );
                Ok(config)
            }
            Err(SessionError::Config(err)) => Err(SessionError::Config(
                err.rebased(self.worktree, self.checkout),
            )),
            Err(other) => Err(other),
        }
    }
}

/// The supervisor's executable: this binary, held open and re-executed through its descriptor.
pub fn executor() -> Result<Executor, SessionError> {
    trusted::OwnBinary::open()
        .map(Executor::from_own_binary)
        .map_err(|err| SessionError::Internal(err.to_string()))
}

/// Refuses to start when meta-agent's own binary or the `git` it would push with lies where a
/// sandboxed command may write (the worktree, the temporary directories, the toolchain caches,
/// the configured writable directories); returns that `git`, resolved once, now.
fn trusted_programs(
    repo: &Path,
    also_writable: &[PathBuf],
    policy: &Policy,
    env: &Environment,
) -> Result<PathBuf, SessionError> {
    let vars: BTreeMap<String, String> = env.vars.iter().cloned().collect();
    let mut writable = vec![
        repo.to_owned(),
        std::env::temp_dir(),
        PathBuf::from("/tmp"),
        PathBuf::from("/dev/shm"),
    ];
    writable.extend_from_slice(also_writable);
    if let WritePolicy::Confined { extra, caches } =
        Isolation::for_repository_commands(&vars, &policy.writable_dirs(repo)).writes
    {
        // The setup phase writes the caches for real.
        writable.extend(extra.into_iter().chain(caches));
    }
    let refused = |err: trusted::TrustError| SessionError::Usage(err.to_string());
    let own = trusted::OwnBinary::open().map_err(refused)?;
    trusted::refuse_if_writable("meta-agent's own binary", own.path(), &writable)
        .map_err(refused)?;
    let path = vars.get("PATH").map_or("/usr/bin:/bin", String::as_str);
    let git =
        trusted::resolve_on_path("git", path).unwrap_or_else(|| PathBuf::from("/usr/bin/git"));
    trusted::refuse_if_writable("git", &git, &writable).map_err(refused)?;
    Ok(git)
}

/// The first of `--model`, `--fast-model` and `--llm-base-url` given (by flag or variable).
fn model_flag_without_provider(overrides: &Overrides) -> Option<&'static str> {
    [
        ("--model", overrides.model.is_some()),
        ("--fast-model", overrides.fast_model.is_some()),
        ("--llm-base-url", overrides.llm_base_url.is_some()),
    ]
    .into_iter()
    .find_map(|(flag, given)| given.then_some(flag))
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
    load_config_from(overrides, repo, executor, env, None).await
}

/// [`load_config`], with the file's text `given` instead of the checkout's when set.
async fn load_config_from(
    overrides: &Overrides,
    repo: &Path,
    executor: &Executor,
    env: &Environment,
    given: Option<config::GivenFile>,
) -> Result<Config, SessionError> {
    let input = config::LoadInput {
        repo_root: repo,
        explicit: overrides.config.as_deref(),
        parent_env: &env.vars,
        given,
    };
    let mut config = config::load(input, executor).await?;
    if let Some(provider) = overrides.llm_provider {
        config.llm.provider = provider;
    }
    if config.llm.provider == LlmProvider::None
        && let Some(flag) = model_flag_without_provider(overrides)
    {
        return Err(SessionError::Usage(format!(
            "{flag} is given but no LLM provider is set, so it would change nothing: add \
             --llm-provider openai or --llm-provider anthropic (or META_AGENT_LLM_PROVIDER, or \
             llm.provider in .meta-agent.yml)"
        )));
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
    for point in &overrides.pause_at {
        config.pause.push(pause_at(point)?);
    }
    Ok(config)
}

/// One `--pause-at LOCATION[:CONDITION]`.
fn pause_at(point: &str) -> Result<crate::protocol::pause::Rule, SessionError> {
    use crate::protocol::pause::{Location, Rule};
    let (name, condition) = match point.split_once(':') {
        Some((name, condition)) => (name.trim(), Some(condition)),
        None => (point.trim(), None),
    };
    let Some(at) = Location::named(name) else {
        let known: Vec<&str> = Location::ALL.iter().map(|l| l.as_str()).collect();
        return Err(SessionError::Usage(format!(
            "--pause-at {point}: unknown location `{name}` (known: {})",
            known.join(", ")
        )));
    };
    if at == Location::BeforePush {
        return Err(SessionError::Usage(format!(
            "--pause-at {point}: a local run never pushes, so it never reaches `before_push` (a \
             pause point of runs on GitHub: `pause:` in .meta-agent.yml); `before_commit` is the \
             last one of a local run"
        )));
    }
    Rule::new(at, condition, 0, 1)
        .map_err(|bad| SessionError::Usage(format!("--pause-at {point}: the condition, {bad}")))
}
