//! The narrow slice of the GitHub REST API meta-agent uses, as a trait ([`GitHubApi`]) with one
//! real implementation over reqwest ([`super::rest::RestClient`]), and the typed values it
//! exchanges. Only the fields the bot reads are modelled; GitHub's answers carry many more.
//!
//! Pull requests are decoded with octocrab's model (then kept as [`PullRequest`]). Issues,
//! comments, collaborator permissions, jobs and artifacts keep models of their own, because
//! octocrab's are stricter than the API's schema: its `Issue.user` and `Comment.user` are a
//! non-null `Author` with seventeen required URL fields where the schema has
//! `nullable-simple-user`, its `RepoPermission.user` is required where the schema has
//! `nullable-collaborator`, its `Job.workflow_name`/`head_branch` are required strings and its
//! `Conclusion` a closed enum (one new conclusion would fail the whole page), and its
//! `WorkflowListArtifact.expires_at` is required where the schema allows `null`.
//!
//! Nothing here decides anything: authorization, idempotency and what to write live in the
//! modules that call this one. This module must not log tokens or bodies.

use std::future::Future;

use serde::{Deserialize, Serialize};

/// `owner/name`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepoId {
    pub owner: String,
    pub name: String,
}

impl RepoId {
    /// Parses `owner/name` (as in `GITHUB_REPOSITORY`); `None` unless exactly two non-empty
    /// parts made of letters, digits, `-`, `_` and `.`.
    pub fn parse(text: &str) -> Option<Self> {
        let (owner, name) = text.split_once('/')?;
        let valid = |part: &str| {
            !part.is_empty()
                && part != "."
                && part != ".."
                && part
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        };
        (valid(owner) && valid(name)).then(|| Self {
            owner: owner.to_owned(),
            name: name.to_owned(),
        })
    }
}

impl std::fmt::Display for RepoId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.owner, self.name)
    }
}

/// A collaborator's permission on the repository, as
/// `GET /repos/{owner}/{repo}/collaborators/{username}/permission` reports it in `permission`
/// (`admin`, `maintain`, `write`, `triage`, `read`, `none`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Permission {
    Admin,
    Maintain,
    Write,
    Triage,
    Read,
    None,
}

impl Permission {
    /// Reads GitHub's word; anything unknown counts as `None` (fail closed).
    pub fn parse(word: &str) -> Self {
        match word {
            "admin" => Self::Admin,
            "maintain" => Self::Maintain,
            "write" => Self::Write,
            "triage" => Self::Triage,
            "read" => Self::Read,
            _ => Self::None,
        }
    }

    /// Whether this permission may trigger the bot: write, maintain or admin.
    pub fn can_trigger(self) -> bool {
        matches!(self, Self::Admin | Self::Maintain | Self::Write)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Admin => "admin",
            Self::Maintain => "maintain",
            Self::Write => "write",
            Self::Triage => "triage",
            Self::Read => "read",
            Self::None => "none",
        }
    }
}

/// A GitHub account as the API shows it (`login`, `type`). Where the schema allows `null` (a
/// deleted account: `nullable-simple-user`), the account is the default one: an empty login that
/// never matches the bot, a maintainer or an allowed bot.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Account {
    pub login: String,
    /// `User`, `Bot` or `Organization`.
    #[serde(rename = "type", default)]
    pub kind: String,
}

impl Account {
    pub fn is_bot(&self) -> bool {
        self.kind == "Bot" || self.login.ends_with("[bot]")
    }
}

/// An issue (or pull request) comment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Comment {
    pub id: u64,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub body: String,
    /// `null` on GitHub for a deleted account.
    #[serde(default, deserialize_with = "null_as_default")]
    pub user: Account,
    /// RFC 3339, as GitHub writes it (`2026-11-22T04:30:00Z`).
    pub created_at: String,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub html_url: String,
}

/// An issue (pull requests are issues too).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Issue {
    pub number: u64,
    pub title: String,
    /// `null` on GitHub for an empty body; empty here.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub body: String,
    /// `null` on GitHub for a deleted account.
    #[serde(default, deserialize_with = "null_as_default")]
    pub user: Account,
    #[serde(default, deserialize_with = "null_as_default")]
    pub labels: Vec<Label>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub state: String,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub html_url: String,
    /// Present when the issue is a pull request.
    #[serde(default)]
    pub pull_request: Option<serde_json::Value>,
}

/// An issue label.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Label {
    pub name: String,
}

/// A pull request, as much as the bot needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullRequest {
    pub number: u64,
    pub html_url: String,
    pub state: String,
    /// The head branch's name (`head.ref`).
    pub head_ref: String,
    /// The base branch's name (`base.ref`).
    pub base_ref: String,
    #[serde(default)]
    pub body: String,
    /// Who opened it (empty when GitHub answers `user: null`).
    #[serde(default)]
    pub author: String,
    /// The commit it proposes (`head.sha`).
    #[serde(default)]
    pub head_sha: String,
    /// The repository its code lives in (`head.repo.full_name`); `None` when that repository
    /// was deleted.
    #[serde(default)]
    pub head_repo: Option<String>,
    /// `maintainer_can_modify` (false when absent).
    #[serde(default)]
    pub maintainer_can_modify: bool,
    #[serde(default)]
    pub draft: bool,
}

/// One file a pull request changes (`GET /repos/{owner}/{repo}/pulls/{n}/files`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullFile {
    pub filename: String,
    /// `added`, `removed`, `modified`, `renamed`, ...
    #[serde(default, deserialize_with = "null_as_empty")]
    pub status: String,
    /// The file's hunks (absent for binary and very large changes): where a review may comment.
    #[serde(default)]
    pub patch: Option<String>,
}

/// A pull request review, as much as the bot needs to find its own again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Review {
    pub id: u64,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub body: String,
    /// `null` on GitHub for a deleted account.
    #[serde(default, deserialize_with = "null_as_default")]
    pub user: Account,
}

/// What `POST /repos/{owner}/{repo}/pulls/{n}/reviews` needs: a review that comments (it
/// neither approves nor requests changes) on the commit it was made for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewReview {
    pub commit_id: String,
    pub body: String,
    /// Always `COMMENT`.
    pub event: &'static str,
    pub comments: Vec<NewReviewComment>,
}

/// A comment of a new review on lines of the pull request's head (`side: RIGHT`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewReviewComment {
    pub path: String,
    pub body: String,
    /// The last line the comment covers.
    pub line: usize,
    pub side: &'static str,
    /// The first line, when it covers more than one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_line: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_side: Option<&'static str>,
}

/// What `POST /repos/{owner}/{repo}/pulls` needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewPullRequest {
    pub title: String,
    pub body: String,
    /// The bot's branch (same repository).
    pub head: String,
    pub base: String,
    pub draft: bool,
}

/// A job of a workflow run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Job {
    pub id: u64,
    pub name: String,
    /// `success`, `failure`, `cancelled`, ... or `None` while running.
    pub conclusion: Option<String>,
    /// `null` on GitHub while a job is queued.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub html_url: String,
}

/// An artifact of a workflow run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Artifact {
    pub id: u64,
    pub name: String,
    pub size_in_bytes: u64,
    #[serde(default)]
    pub expired: bool,
}

/// The reactions the bot adds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reaction {
    /// Acknowledgement: "seen, working on it".
    Eyes,
    /// Refused (not authorized, or not understood).
    Confused,
}

impl Reaction {
    /// The API's `content` word.
    pub fn content(self) -> &'static str {
        match self {
            Self::Eyes => "eyes",
            Self::Confused => "confused",
        }
    }
}

/// Why a GitHub call failed.
#[derive(Debug, thiserror::Error)]
pub enum GitHubError {
    #[error("GitHub refused the token ({status}) on {what}: {message}")]
    Unauthorized {
        status: u16,
        what: String,
        message: String,
    },
    #[error("{what}: not found on GitHub (404)")]
    NotFound { what: String },
    #[error(
        "GitHub rate limit on {what}: waiting {wait_secs} s more would pass the job's deadline"
    )]
    RateLimited { what: String, wait_secs: u64 },
    #[error("GitHub answered {status} on {what}: {message}")]
    Http {
        status: u16,
        what: String,
        message: String,
    },
    #[error("cannot reach GitHub at {url}: {message}")]
    Unreachable { url: String, message: String },
    #[error("GitHub's answer to {what} is not what the API documents: {message}")]
    Decode { what: String, message: String },
}

impl GitHubError {
    /// A server-side failure (5xx) or a lost connection: the write may or may not have happened.
    pub fn is_uncertain(&self) -> bool {
        match self {
            Self::Http { status, .. } => *status >= 500,
            Self::Unreachable { .. } => true,
            Self::Unauthorized { .. }
            | Self::NotFound { .. }
            | Self::RateLimited { .. }
            | Self::Decode { .. } => false,
        }
    }
}

/// The calls meta-agent makes. Reads may retry; writes are sent once (callers make them
/// idempotent: find before create).
pub trait GitHubApi: Send + Sync {
    /// `GET /repos/{owner}/{repo}/collaborators/{login}/permission` (`permission` field).
    fn permission(
        &self,
        repo: &RepoId,
        login: &str,
    ) -> impl Future<Output = Result<Permission, GitHubError>> + Send;

    /// `GET /repos/{owner}/{repo}/issues/{number}`.
    fn issue(
        &self,
        repo: &RepoId,
        number: u64,
    ) -> impl Future<Output = Result<Issue, GitHubError>> + Send;

    /// Every comment of an issue, oldest first (all pages).
    fn comments(
        &self,
        repo: &RepoId,
        issue: u64,
    ) -> impl Future<Output = Result<Vec<Comment>, GitHubError>> + Send;

    /// `POST /repos/{owner}/{repo}/issues/{issue}/comments`.
    fn create_comment(
        &self,
        repo: &RepoId,
        issue: u64,
        body: &str,
    ) -> impl Future<Output = Result<Comment, GitHubError>> + Send;

    /// `PATCH /repos/{owner}/{repo}/issues/comments/{id}`.
    fn update_comment(
        &self,
        repo: &RepoId,
        id: u64,
        body: &str,
    ) -> impl Future<Output = Result<Comment, GitHubError>> + Send;

    /// `POST /repos/{owner}/{repo}/issues/comments/{id}/reactions`.
    fn react(
        &self,
        repo: &RepoId,
        comment: u64,
        reaction: Reaction,
    ) -> impl Future<Output = Result<(), GitHubError>> + Send;

    /// The open pull request whose head is `branch` in this repository, if any
    /// (`GET /repos/{owner}/{repo}/pulls?head={owner}:{branch}&state=open`).
    fn open_pull_for(
        &self,
        repo: &RepoId,
        branch: &str,
    ) -> impl Future<Output = Result<Option<PullRequest>, GitHubError>> + Send;

    /// Every open pull request of the repository, newest first (all pages), to find the
    /// session's own by the record in its body.
    fn open_pulls(
        &self,
        repo: &RepoId,
    ) -> impl Future<Output = Result<Vec<PullRequest>, GitHubError>> + Send;

    /// `GET /repos/{owner}/{repo}/pulls/{number}`.
    fn pull(
        &self,
        repo: &RepoId,
        number: u64,
    ) -> impl Future<Output = Result<PullRequest, GitHubError>> + Send;

    /// The files a pull request changes, with their hunks (all pages).
    fn pull_files(
        &self,
        repo: &RepoId,
        number: u64,
    ) -> impl Future<Output = Result<Vec<PullFile>, GitHubError>> + Send;

    /// A pull request's reviews, oldest first (all pages).
    fn reviews(
        &self,
        repo: &RepoId,
        number: u64,
    ) -> impl Future<Output = Result<Vec<Review>, GitHubError>> + Send;

    /// `POST /repos/{owner}/{repo}/pulls/{number}/reviews`.
    fn create_review(
        &self,
        repo: &RepoId,
        number: u64,
        review: &NewReview,
    ) -> impl Future<Output = Result<Review, GitHubError>> + Send;

    /// The repository's default branch (`GET /repos/{owner}/{repo}`, `default_branch`).
    fn default_branch(
        &self,
        repo: &RepoId,
    ) -> impl Future<Output = Result<String, GitHubError>> + Send;

    /// Whether GitHub protects `branch` (`GET /repos/{owner}/{repo}/branches/{branch}`,
    /// `protected`).
    fn branch_protected(
        &self,
        repo: &RepoId,
        branch: &str,
    ) -> impl Future<Output = Result<bool, GitHubError>> + Send;

    /// The text of the file at `path` on the branch `git_ref`
    /// (`GET /repos/{owner}/{repo}/contents/{path}?ref={git_ref}`), `None` when there is none;
    /// at most `cap` bytes.
    fn file_at(
        &self,
        repo: &RepoId,
        path: &str,
        git_ref: &str,
        cap: usize,
    ) -> impl Future<Output = Result<Option<String>, GitHubError>> + Send;

    /// `POST /repos/{owner}/{repo}/pulls`.
    fn create_pull(
        &self,
        repo: &RepoId,
        pull: &NewPullRequest,
    ) -> impl Future<Output = Result<PullRequest, GitHubError>> + Send;

    /// `PATCH /repos/{owner}/{repo}/pulls/{number}` with a new body.
    fn update_pull_body(
        &self,
        repo: &RepoId,
        number: u64,
        body: &str,
    ) -> impl Future<Output = Result<PullRequest, GitHubError>> + Send;

    /// The latest attempt's jobs of a workflow run
    /// (`GET /repos/{owner}/{repo}/actions/runs/{run}/jobs?filter=latest`, all pages).
    fn jobs(
        &self,
        repo: &RepoId,
        run: u64,
    ) -> impl Future<Output = Result<Vec<Job>, GitHubError>> + Send;

    /// A job's plain-text log (`GET /repos/{owner}/{repo}/actions/jobs/{job}/logs`, following
    /// the redirect), keeping at most `cap` bytes (the tail, where failures are).
    fn job_log(
        &self,
        repo: &RepoId,
        job: u64,
        cap: usize,
    ) -> impl Future<Output = Result<String, GitHubError>> + Send;

    /// A run's artifacts (`GET /repos/{owner}/{repo}/actions/runs/{run}/artifacts`).
    fn artifacts(
        &self,
        repo: &RepoId,
        run: u64,
    ) -> impl Future<Output = Result<Vec<Artifact>, GitHubError>> + Send;

    /// The files of an artifact (`GET .../actions/artifacts/{id}/zip`, following the redirect,
    /// unzipped in memory): `(path, contents)`, refusing archives over `cap` bytes unpacked.
    fn artifact_files(
        &self,
        repo: &RepoId,
        artifact: u64,
        cap: usize,
    ) -> impl Future<Output = Result<Vec<(String, Vec<u8>)>, GitHubError>> + Send;
}

/// A comment for unit tests: `login`'s `body` at `05:MM` on 2026-11-22.
#[cfg(test)]
pub(crate) fn test_comment(id: u64, login: &str, body: &str, minute: u64) -> Comment {
    Comment {
        id,
        body: body.into(),
        user: Account {
            login: login.into(),
            kind: if login.ends_with("[bot]") {
                "Bot"
            } else {
                "User"
            }
            .into(),
        },
        created_at: format!("2026-11-22T05:{minute:02}:00Z"),
        html_url: String::new(),
    }
}

fn null_as_empty<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(deserializer)?.unwrap_or_default())
}

/// `null` read as the type's default (the schema's nullable fields the bot can do without).
fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}
