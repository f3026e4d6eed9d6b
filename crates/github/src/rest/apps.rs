//! The three calls a GitHub App makes with its JWT before it has an installation token: the
//! installation on a repository, the token exchange, and the App itself (for its slug). The
//! answers are octocrab's typed models (`Installation`, `InstallationToken`, `App`), whose
//! required fields GitHub always sends for these objects. Sent like every other call: paced,
//! capped, worded by the client in [`super`].

use octocrab::models::apps::{App, CreateInstallationAccessToken};
use octocrab::models::{Installation, InstallationToken};
use reqwest::Method;
use serde_json::Value;

use super::{Call, RestClient};
use crate::api::{GitHubError, RepoId};

impl RestClient {
    /// `GET /repos/{owner}/{repo}/installation` (authenticated as the App).
    pub async fn repository_installation(
        &self,
        repo: &RepoId,
    ) -> Result<Installation, GitHubError> {
        let url = self.repo_url(repo, &["installation"]);
        let what = format!("the GitHub App's installation on {repo}");
        self.json(Call::get(url, what)).await
    }

    /// `POST /app/installations/{id}/access_tokens` (authenticated as the App): a token for
    /// the repositories and permissions `request` names. Sent once, like every write.
    pub async fn create_installation_token(
        &self,
        installation: u64,
        request: &CreateInstallationAccessToken,
    ) -> Result<InstallationToken, GitHubError> {
        let id = installation.to_string();
        let url = self.api_url(&["app", "installations", &id, "access_tokens"]);
        let what = format!("an installation token of installation {installation}");
        let body = serde_json::to_value(request).unwrap_or(Value::Null);
        self.json(Call::write(Method::POST, url, what, body)).await
    }

    /// `GET /app`: the App the JWT authenticates (its `slug` names its bot account).
    pub async fn authenticated_app(&self) -> Result<App, GitHubError> {
        let url = self.api_url(&["app"]);
        self.json(Call::get(url, "the authenticated GitHub App".to_owned()))
            .await
    }
}
