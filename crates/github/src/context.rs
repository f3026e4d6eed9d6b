//! The run's context as GitHub Actions provides it: `GITHUB_*` variables read once, through a
//! lookup function, into one value. Pure: no file is read here (the event payload is read by the
//! caller from [`ActionsContext::event_path`]).
//!
//! The token and the App's key are kept in memory only and never shown by `Debug`.

use std::path::PathBuf;

use super::api::RepoId;
use super::app::{AppCredentials, AppError};

/// What a `meta-agent github` step knows about where it runs.
#[derive(Clone)]
pub struct ActionsContext {
    pub event_name: String,
    pub event_path: PathBuf,
    pub repository: RepoId,
    /// `GITHUB_API_URL` (`https://api.github.com`, or a GitHub Enterprise Server's `/api/v3`).
    pub api_url: String,
    /// `GITHUB_SERVER_URL` (`https://github.com`): the push remote is built from it.
    pub server_url: String,
    pub run_id: Option<u64>,
    pub run_attempt: Option<u32>,
    /// `GITHUB_STEP_SUMMARY`: the job summary file, when Actions provides one.
    pub step_summary: Option<PathBuf>,
    /// `GITHUB_OUTPUT`: the step's outputs file.
    pub output: Option<PathBuf>,
    /// `GITHUB_TOKEN`, in memory only; replaced by the App's installation token once minted
    /// (empty until then when only an App is configured).
    pub token: String,
    /// The GitHub App to act as (`META_AGENT_APP_ID`, `META_AGENT_APP_PRIVATE_KEY`), if any.
    pub app: Option<AppCredentials>,
}

impl std::fmt::Debug for ActionsContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActionsContext")
            .field("event_name", &self.event_name)
            .field("event_path", &self.event_path)
            .field("repository", &self.repository)
            .field("api_url", &self.api_url)
            .field("server_url", &self.server_url)
            .field("run_id", &self.run_id)
            .field("token", &"[hidden]")
            .field("app", &self.app)
            .finish_non_exhaustive()
    }
}

/// A variable missing or malformed.
#[derive(Debug, thiserror::Error)]
pub enum ContextError {
    #[error(
        "{0} is not set: `meta-agent github` runs inside a GitHub Actions job (use `meta-agent run` elsewhere)"
    )]
    Missing(&'static str),
    #[error("{name} is {value:?}: {expected}")]
    Invalid {
        name: &'static str,
        value: String,
        expected: &'static str,
    },
    #[error(transparent)]
    App(#[from] AppError),
}

impl ActionsContext {
    /// Reads the context through `lookup` (the process environment in production). Empty values
    /// count as unset. `GITHUB_TOKEN` may be missing only when a GitHub App is configured.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ContextError> {
        let get = |name: &str| lookup(name).filter(|value| !value.trim().is_empty());
        let require = |name: &'static str| get(name).ok_or(ContextError::Missing(name));
        let repository_text = require("GITHUB_REPOSITORY")?;
        let repository = RepoId::parse(&repository_text).ok_or(ContextError::Invalid {
            name: "GITHUB_REPOSITORY",
            value: repository_text.clone(),
            expected: "owner/name",
        })?;
        let api_url = get("GITHUB_API_URL").unwrap_or_else(|| "https://api.github.com".into());
        let server_url = get("GITHUB_SERVER_URL").unwrap_or_else(|| "https://github.com".into());
        for (name, url) in [
            ("GITHUB_API_URL", &api_url),
            ("GITHUB_SERVER_URL", &server_url),
        ] {
            if !(url.starts_with("https://") || url.starts_with("http://")) {
                return Err(ContextError::Invalid {
                    name,
                    value: url.clone(),
                    expected: "an http(s) URL",
                });
            }
        }
        let app = AppCredentials::from_lookup(get)?;
        let token = match (get("GITHUB_TOKEN"), &app) {
            (Some(token), _) => token,
            (None, Some(_)) => String::new(),
            (None, None) => return Err(ContextError::Missing("GITHUB_TOKEN")),
        };
        Ok(Self {
            event_name: require("GITHUB_EVENT_NAME")?,
            event_path: PathBuf::from(require("GITHUB_EVENT_PATH")?),
            repository,
            api_url: api_url.trim_end_matches('/').to_owned(),
            server_url: server_url.trim_end_matches('/').to_owned(),
            run_id: number(&get, "GITHUB_RUN_ID")?,
            run_attempt: number(&get, "GITHUB_RUN_ATTEMPT")?,
            step_summary: get("GITHUB_STEP_SUMMARY").map(PathBuf::from),
            output: get("GITHUB_OUTPUT").map(PathBuf::from),
            token,
            app,
        })
    }

    /// The repository's git URL for pushes and fetches (credentials never in it).
    pub fn git_url(&self) -> String {
        format!("{}/{}.git", self.server_url, self.repository)
    }

    /// The page of an issue (or pull request) of this repository.
    pub fn issue_url(&self, number: u64) -> String {
        format!("{}/{}/issues/{number}", self.server_url, self.repository)
    }

    /// The page of a pull request of this repository.
    pub fn pull_url(&self, number: u64) -> String {
        format!("{}/{}/pull/{number}", self.server_url, self.repository)
    }

    /// The page of a workflow run of this repository.
    pub fn workflow_run_url(&self, id: u64) -> String {
        format!("{}/{}/actions/runs/{id}", self.server_url, self.repository)
    }

    /// The page of this job's workflow run, when Actions says which.
    pub fn run_url(&self) -> Option<String> {
        self.run_id.map(|id| self.workflow_run_url(id))
    }
}

fn number<T: std::str::FromStr>(
    get: &impl Fn(&str) -> Option<String>,
    name: &'static str,
) -> Result<Option<T>, ContextError> {
    get(name)
        .map(|value| {
            value.trim().parse().map_err(|_| ContextError::Invalid {
                name,
                value,
                expected: "a number",
            })
        })
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    const FULL: &[(&str, &str)] = &[
        ("GITHUB_EVENT_NAME", "issue_comment"),
        ("GITHUB_EVENT_PATH", "/tmp/event.json"),
        ("GITHUB_REPOSITORY", "octo/hello"),
        ("GITHUB_API_URL", "https://ghe.example/api/v3/"),
        ("GITHUB_SERVER_URL", "https://ghe.example"),
        ("GITHUB_RUN_ID", "42"),
        ("GITHUB_RUN_ATTEMPT", "2"),
        ("GITHUB_TOKEN", "ghs_secret"),
    ];

    #[test]
    fn a_full_context_reads_and_hides_the_token() {
        let context = ActionsContext::from_lookup(env(FULL)).unwrap();
        assert_eq!(context.repository.to_string(), "octo/hello");
        assert_eq!(context.api_url, "https://ghe.example/api/v3");
        assert_eq!(context.git_url(), "https://ghe.example/octo/hello.git");
        assert_eq!(context.run_attempt, Some(2));
        assert_eq!(
            context.run_url().as_deref(),
            Some("https://ghe.example/octo/hello/actions/runs/42")
        );
        assert!(!format!("{context:?}").contains("ghs_secret"));
    }

    #[test]
    fn an_app_stands_in_for_a_missing_token_and_half_an_app_is_refused() {
        let key = include_str!("../../../fixtures/github-app/test-only-private-key.pem");
        let mut with_app: Vec<_> = FULL
            .iter()
            .copied()
            .filter(|(k, _)| *k != "GITHUB_TOKEN")
            .collect();
        with_app.push(("META_AGENT_APP_ID", "12345"));
        with_app.push(("META_AGENT_APP_PRIVATE_KEY", key));
        let context = ActionsContext::from_lookup(env(&with_app)).unwrap();
        assert_eq!(context.app.as_ref().map(|app| app.app_id), Some(12345));
        assert_eq!(context.token, "");
        assert!(!format!("{context:?}").contains("MII"));
        with_app.pop();
        let err = ActionsContext::from_lookup(env(&with_app)).unwrap_err();
        assert!(
            err.to_string().contains("META_AGENT_APP_PRIVATE_KEY"),
            "{err}"
        );
    }

    #[test]
    fn missing_and_malformed_variables_are_named() {
        let without_token: Vec<_> = FULL
            .iter()
            .copied()
            .filter(|(k, _)| *k != "GITHUB_TOKEN")
            .collect();
        assert!(matches!(
            ActionsContext::from_lookup(env(&without_token)).unwrap_err(),
            ContextError::Missing("GITHUB_TOKEN")
        ));
        let mut bad = FULL.to_vec();
        bad[2] = ("GITHUB_REPOSITORY", "no-slash");
        let err = ActionsContext::from_lookup(env(&bad)).unwrap_err();
        assert!(err.to_string().contains("GITHUB_REPOSITORY"), "{err}");
        let mut bad = FULL.to_vec();
        bad[5] = ("GITHUB_RUN_ID", "forty");
        let err = ActionsContext::from_lookup(env(&bad)).unwrap_err();
        assert!(err.to_string().contains("GITHUB_RUN_ID"), "{err}");
    }
}
