//! The linked issues of `eval mine`: where their text comes from (a local JSON export given with
//! `--issues-from`, else the GitHub API when `GITHUB_TOKEN` and `GITHUB_REPOSITORY` are set,
//! else nowhere: the lookup is skipped and said so) and the lookup of one reference. The text is
//! untrusted; [`crate::eval::mine::task_text`] fences it.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::eval::EvalError;
use crate::eval::mine::{IssueRef, LinkedIssue};
use crate::github::api::{GitHubApi, RepoId};
use crate::github::rate::RatePolicy;
use crate::github::rest::{RestClient, RestSettings};
use crate::session::{Environment, SessionError};

/// Where linked issues are looked up.
pub(super) enum IssueSource {
    /// `--issues-from`: issues by number (references to other repositories are not in it).
    Export(BTreeMap<u64, (String, String)>),
    /// The GitHub API, `#N` meaning this repository.
    Api {
        client: Box<RestClient>,
        repo: RepoId,
    },
    /// No source: each lookup is skipped, for this reason.
    Offline(&'static str),
}

/// One issue of a JSON export.
#[derive(serde::Deserialize)]
struct Exported {
    number: u64,
    #[serde(default)]
    title: String,
    #[serde(default)]
    body: Option<String>,
}

/// What the lookup of one reference gave.
pub(super) enum Lookup {
    Found(LinkedIssue),
    /// Not found, or the lookup failed: why.
    Missing(String),
    /// No source to look in.
    Skipped(&'static str),
}

impl IssueSource {
    /// The export when given (a malformed one is a usage error naming file, line and column),
    /// else the API when configured, else offline.
    pub(super) fn open(export: Option<&Path>, env: &Environment) -> Result<Self, SessionError> {
        if let Some(path) = export {
            return read_export(path).map(IssueSource::Export);
        }
        let (Some(token), Some(repo)) = (
            env.get("GITHUB_TOKEN").filter(|t| !t.trim().is_empty()),
            env.get("GITHUB_REPOSITORY").and_then(RepoId::parse),
        ) else {
            return Ok(IssueSource::Offline(
                "no --issues-from, and no GITHUB_TOKEN with GITHUB_REPOSITORY",
            ));
        };
        let api_url = env
            .get("GITHUB_API_URL")
            .unwrap_or("https://api.github.com")
            .trim_end_matches('/')
            .to_owned();
        let client = RestClient::new(RestSettings {
            api_url,
            token: token.to_owned(),
            user_agent: format!("meta-agent/{}", env!("CARGO_PKG_VERSION")),
            deadline: Some(Instant::now() + Duration::from_secs(600)),
            rate: RatePolicy::default(),
        })
        .map_err(|err| SessionError::Usage(err.to_string()))?;
        Ok(IssueSource::Api {
            client: Box::new(client),
            repo,
        })
    }

    /// Looks one reference up.
    pub(super) async fn lookup(&self, reference: &IssueRef) -> Lookup {
        match self {
            IssueSource::Offline(why) => Lookup::Skipped(why),
            IssueSource::Export(issues) => match (&reference.repo, issues.get(&reference.number)) {
                (None, Some((title, body))) => Lookup::Found(LinkedIssue {
                    reference: reference.clone(),
                    title: title.clone(),
                    body: body.clone(),
                }),
                (Some(_), _) => Lookup::Missing("another repository: not in the export".into()),
                (None, None) => Lookup::Missing("not in the export".into()),
            },
            IssueSource::Api { client, repo } => {
                let target = match &reference.repo {
                    Some(named) => match RepoId::parse(named) {
                        Some(named) => named,
                        None => return Lookup::Missing(format!("`{named}` is not owner/name")),
                    },
                    None => repo.clone(),
                };
                match client.issue(&target, reference.number).await {
                    Ok(issue) => Lookup::Found(LinkedIssue {
                        reference: reference.clone(),
                        title: issue.title,
                        body: issue.body,
                    }),
                    Err(err) => Lookup::Missing(err.to_string()),
                }
            }
        }
    }
}

/// Issues are read from a JSON array of `{number, title, body}` (what `gh issue list --json
/// number,title,body` writes).
fn read_export(path: &Path) -> Result<BTreeMap<u64, (String, String)>, SessionError> {
    let text = std::fs::read_to_string(path).map_err(|source| EvalError::Read {
        path: path.to_owned(),
        source,
    })?;
    let issues: Vec<Exported> = serde_json::from_str(&text).map_err(|err| EvalError::Parse {
        path: path.to_owned(),
        line: err.line(),
        column: err.column(),
        message: format!("an array of {{number, title, body}} was expected: {err}"),
    })?;
    Ok(issues
        .into_iter()
        .map(|issue| (issue.number, (issue.title, issue.body.unwrap_or_default())))
        .collect())
}
