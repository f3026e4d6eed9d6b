//! The bot's GitHub App identity: the App's id and private key read from the environment
//! (`META_AGENT_APP_ID`, `META_AGENT_APP_PRIVATE_KEY`), the JWT signed with octocrab (RS256,
//! issued 60 s in the past for clock skew, expiring 9 minutes later: GitHub accepts at most
//! 10), and the exchange of that JWT for an installation token scoped to this one repository
//! and the permissions the run needs. Pushes, comments and pull requests made with that token
//! are the App's (`<slug>[bot]`), so its pull requests trigger the repository's CI, which
//! GitHub suppresses for the workflow's own `GITHUB_TOKEN`.
//!
//! GitHub's installation tokens last an hour; [`TokenKeeper`] mints one again, with the same
//! scope, when the one in use is within [`REFRESH_MARGIN`] of its expiry ([`needs_refresh`] is
//! the decision), so a step may last longer.
//!
//! The private key, the JWT and the minted token are secrets: never logged, never part of an
//! error's text or `Debug`, and the caller adds the JWT and the token to the run's redactor
//! (the key is already there, by its variable's name).

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, SystemTime};

use octocrab::models::AppId;
use octocrab::models::apps::CreateInstallationAccessToken;

use super::api::{GitHubError, RepoId};
use super::rest::{RestClient, RestSettings};

/// The variable holding the App's numeric id.
pub const APP_ID_VAR: &str = "META_AGENT_APP_ID";
/// The variable holding the App's private key (PEM).
pub const APP_KEY_VAR: &str = "META_AGENT_APP_PRIVATE_KEY";

/// An App's id and parsed private key.
#[derive(Clone)]
pub struct AppCredentials {
    pub app_id: u64,
    key: octocrab::EncodingKey,
}

impl fmt::Debug for AppCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AppCredentials")
            .field("app_id", &self.app_id)
            .field("key", &"[hidden]")
            .finish()
    }
}

/// Why the App identity could not be used.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error(
        "{present} is set but {missing} is not: a GitHub App needs both its id and its private key"
    )]
    Incomplete {
        present: &'static str,
        missing: &'static str,
    },
    #[error(
        "META_AGENT_APP_ID is {value:?}: expected the App's numeric id (its settings page shows it)"
    )]
    BadId { value: String },
    #[error(
        "META_AGENT_APP_PRIVATE_KEY is not an RSA private key in PEM form (GitHub's .pem file, `-----BEGIN RSA PRIVATE KEY-----`)"
    )]
    BadKey,
    #[error("signing the App's JWT failed: {0}")]
    Sign(String),
    #[error(
        "the GitHub App {app_id} is not installed on {repo}: install it on the repository first"
    )]
    NotInstalled { app_id: u64, repo: String },
    #[error("GitHub refused an installation token for {repo} with {permissions}: {source}")]
    TokenRefused {
        repo: String,
        permissions: String,
        source: GitHubError,
    },
    #[error("authenticating as the GitHub App: {0}")]
    Api(#[from] GitHubError),
}

impl AppError {
    /// A problem of configuration (credentials, installation, granted permissions) rather than
    /// of GitHub's service: the maintainers must fix it before a rerun can succeed.
    pub fn is_configuration(&self) -> bool {
        match self {
            Self::Incomplete { .. }
            | Self::BadId { .. }
            | Self::BadKey
            | Self::NotInstalled { .. }
            | Self::TokenRefused { .. } => true,
            Self::Sign(_) | Self::Api(_) => false,
        }
    }
}

impl AppCredentials {
    /// Reads the App credentials through `lookup` (the process environment in production):
    /// `None` when neither variable is set; an error when only one is, or either is malformed.
    /// A key pasted with literal `\n` escapes instead of line breaks is accepted.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, AppError> {
        let get = |name: &str| lookup(name).filter(|value| !value.trim().is_empty());
        let (id, key) = match (get(APP_ID_VAR), get(APP_KEY_VAR)) {
            (None, None) => return Ok(None),
            (Some(_), None) => {
                return Err(AppError::Incomplete {
                    present: APP_ID_VAR,
                    missing: APP_KEY_VAR,
                });
            }
            (None, Some(_)) => {
                return Err(AppError::Incomplete {
                    present: APP_KEY_VAR,
                    missing: APP_ID_VAR,
                });
            }
            (Some(id), Some(key)) => (id, key),
        };
        let app_id = id
            .trim()
            .parse::<u64>()
            .map_err(|_| AppError::BadId { value: id.clone() })?;
        let pem = if key.contains('\n') {
            key
        } else {
            key.replace("\\n", "\n")
        };
        let key = octocrab::EncodingKey::from_rsa_pem(pem.trim().as_bytes())
            .map_err(|_| AppError::BadKey)?;
        Ok(Some(Self { app_id, key }))
    }

    /// A JWT that authenticates as the App: RS256, `iss` the App id, `iat` 60 s in the past
    /// (clock skew between the runner and GitHub), `exp` 9 minutes ahead (GitHub refuses more
    /// than 10). Signed by octocrab's `create_jwt`.
    pub fn jwt(&self) -> Result<String, AppError> {
        octocrab::auth::create_jwt(AppId(self.app_id), &self.key)
            .map_err(|error| AppError::Sign(error.to_string()))
    }
}

/// Read or write access to one area of the repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Access {
    Read,
    Write,
}

impl Access {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
        }
    }
}

/// What the installation token is asked for: this one repository and only the permissions
/// the run uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenScope {
    /// The repository's name (the installation's owner is implied).
    pub repository: String,
    /// GitHub's permission names (`contents`, `issues`, ...).
    pub permissions: BTreeMap<&'static str, Access>,
}

impl TokenScope {
    /// The bot's needs on `repo`: push its branch (`contents: write`), its status comment and
    /// reactions (`issues: write`), its pull request (`pull_requests: write`), the
    /// repository's metadata (always granted), and, to read a failed run's jobs, logs and
    /// artifacts, `actions: read`.
    pub fn for_run(repo: &RepoId, reads_workflow_runs: bool) -> Self {
        let mut permissions = BTreeMap::from([
            ("contents", Access::Write),
            ("issues", Access::Write),
            ("metadata", Access::Read),
            ("pull_requests", Access::Write),
        ]);
        if reads_workflow_runs {
            permissions.insert("actions", Access::Read);
        }
        Self {
            repository: repo.name.clone(),
            permissions,
        }
    }

    /// The body of `POST /app/installations/{id}/access_tokens`.
    pub fn request(&self) -> CreateInstallationAccessToken {
        CreateInstallationAccessToken {
            repositories: Some(vec![self.repository.clone()]),
            repository_ids: None,
            permissions: Some(
                self.permissions
                    .iter()
                    .map(|(name, access)| ((*name).to_owned(), access.as_str().to_owned()))
                    .collect(),
            ),
        }
    }

    /// `contents: write, issues: write, ...`, for messages.
    pub fn describe(&self) -> String {
        self.permissions
            .iter()
            .map(|(name, access)| format!("{name}: {}", access.as_str()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// An installation token minted for this run.
#[derive(Clone)]
pub struct Minted {
    pub token: String,
    /// RFC 3339, as GitHub answers (an hour after minting).
    pub expires_at: Option<String>,
    /// The App's bot account (`<slug>[bot]`), which authors what the token writes.
    pub bot_login: Option<String>,
    /// The JWT that minted it (still valid for minutes): a secret too.
    pub jwt: String,
}

impl fmt::Debug for Minted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Minted")
            .field("token", &"[hidden]")
            .field("expires_at", &self.expires_at)
            .field("bot_login", &self.bot_login)
            .finish_non_exhaustive()
    }
}

/// Authenticates as the App and mints an installation token for `scope` on `repo`: finds the
/// App's installation on the repository (`GET /repos/{owner}/{repo}/installation`), asks for
/// the token (`POST /app/installations/{id}/access_tokens` with `repositories` and
/// `permissions`), and reads the App's slug (`GET /app`) for its bot login. Every call goes
/// through the REST client, so it is paced and worded like any other; `settings.token` is
/// replaced by the JWT.
pub async fn mint(
    credentials: &AppCredentials,
    settings: RestSettings,
    repo: &RepoId,
    scope: &TokenScope,
) -> Result<Minted, AppError> {
    let jwt = credentials.jwt()?;
    let api = RestClient::new(RestSettings {
        token: jwt.clone(),
        ..settings
    })?;
    let installation = api
        .repository_installation(repo)
        .await
        .map_err(|error| match error {
            GitHubError::NotFound { .. } => AppError::NotInstalled {
                app_id: credentials.app_id,
                repo: repo.to_string(),
            },
            other => AppError::Api(other),
        })?;
    let token = api
        .create_installation_token(installation.id.0, &scope.request())
        .await
        .map_err(|error| match error {
            GitHubError::Http { status: 422, .. } | GitHubError::Unauthorized { .. } => {
                AppError::TokenRefused {
                    repo: repo.to_string(),
                    permissions: scope.describe(),
                    source: error,
                }
            }
            other => AppError::Api(other),
        })?;
    let app = api.authenticated_app().await?;
    Ok(Minted {
        token: token.token,
        expires_at: token.expires_at,
        bot_login: app.slug.map(|slug| format!("{slug}[bot]")),
        jwt,
    })
}

impl Minted {
    /// The minted secrets as variables a [`meta_agent_redact::Redactor`] reads by name (names that
    /// [`meta_agent_exec::env::is_secret_name`] flags): the token and the JWT.
    pub fn as_secret_env(&self) -> [(String, String); 2] {
        [
            (
                "META_AGENT_APP_INSTALLATION_TOKEN".to_owned(),
                self.token.clone(),
            ),
            ("META_AGENT_APP_JWT_TOKEN".to_owned(), self.jwt.clone()),
        ]
    }
}

/// How long before its expiry an installation token is minted again: a push of a large branch
/// or a rate-limited write must not start with a token about to lapse.
pub const REFRESH_MARGIN: Duration = Duration::from_secs(5 * 60);

/// Whether a token expiring at `expires_at` must be replaced at `now`: it expires within
/// `margin` (or already has).
pub fn needs_refresh(expires_at: SystemTime, now: SystemTime, margin: Duration) -> bool {
    now.checked_add(margin)
        .is_none_or(|horizon| expires_at <= horizon)
}

impl Minted {
    /// When the token expires, from GitHub's RFC 3339 `expires_at`; `None` when GitHub did not
    /// say or said something unreadable (the token is then kept: minting again on every check
    /// would be worse than a write refused at the end).
    pub fn expiry(&self) -> Option<SystemTime> {
        let text = self.expires_at.as_deref()?;
        humantime::parse_rfc3339_weak(text.trim()).ok()
    }
}

/// The step's installation token, minted again with the same scope when it nears its expiry
/// (GitHub's last an hour; a step may last longer). Holds the App's credentials and what
/// [`mint`] needs; the caller puts each new token in its API client, its pushes and its
/// redactor.
pub struct TokenKeeper {
    credentials: AppCredentials,
    settings: RestSettings,
    repo: RepoId,
    scope: TokenScope,
    margin: Duration,
    current: tokio::sync::Mutex<Minted>,
}

impl fmt::Debug for TokenKeeper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenKeeper")
            .field("app_id", &self.credentials.app_id)
            .field("repo", &self.repo)
            .field("scope", &self.scope)
            .field("margin", &self.margin)
            .finish_non_exhaustive()
    }
}

impl TokenKeeper {
    /// Keeps `minted` (made for `scope` on `repo`) fresh, `margin` ahead of its expiry.
    pub fn new(
        credentials: AppCredentials,
        settings: RestSettings,
        repo: RepoId,
        scope: TokenScope,
        minted: Minted,
    ) -> Self {
        Self {
            credentials,
            settings,
            repo,
            scope,
            margin: REFRESH_MARGIN,
            current: tokio::sync::Mutex::new(minted),
        }
    }

    /// A new token when the one in use expires within the margin at `now`, else `None`.
    /// Concurrent callers wait for one another: a token is minted once per expiry.
    pub async fn refresh_if_needed(&self, now: SystemTime) -> Result<Option<Minted>, AppError> {
        let mut current = self.current.lock().await;
        let due = current
            .expiry()
            .is_some_and(|expiry| needs_refresh(expiry, now, self.margin));
        if !due {
            return Ok(None);
        }
        let fresh = mint(
            &self.credentials,
            self.settings.clone(),
            &self.repo,
            &self.scope,
        )
        .await?;
        tracing::info!(
            "minted a new installation token for {} ({}): the last one expired at {}; this one at {}",
            self.repo,
            self.scope.describe(),
            current.expires_at.as_deref().unwrap_or("an unknown time"),
            fresh.expires_at.as_deref().unwrap_or("an unknown time"),
        );
        *current = fresh.clone();
        Ok(Some(fresh))
    }
}

/// When the step acts as a GitHub App (`app` configured): mints an installation token for
/// `repository` with what the run needs (`actions: read` only when it reads a failed workflow
/// run), which the caller uses in place of the workflow's token for every API call and the
/// push. `None` when no App is configured; else the token and the keeper that mints it again
/// before it expires.
pub async fn authenticate(
    app: Option<&AppCredentials>,
    repository: &RepoId,
    reads_workflow_runs: bool,
    settings: RestSettings,
) -> Result<Option<(Minted, TokenKeeper)>, AppError> {
    let Some(credentials) = app.cloned() else {
        return Ok(None);
    };
    let scope = TokenScope::for_run(repository, reads_workflow_runs);
    let minted = mint(&credentials, settings.clone(), repository, &scope).await?;
    tracing::info!(
        "acting as the GitHub App {} ({}) with a token for {} ({}), expiring at {}",
        credentials.app_id,
        minted.bot_login.as_deref().unwrap_or("its bot"),
        repository,
        scope.describe(),
        minted.expires_at.as_deref().unwrap_or("an unknown time"),
    );
    let keeper = TokenKeeper::new(
        credentials,
        settings,
        repository.clone(),
        scope,
        minted.clone(),
    );
    Ok(Some((minted, keeper)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = include_str!("../../../fixtures/github-app/test-only-private-key.pem");

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        }
    }

    #[test]
    fn no_app_variables_mean_no_app() {
        assert!(AppCredentials::from_lookup(env(&[])).unwrap().is_none());
        let blank = [(APP_ID_VAR, " "), (APP_KEY_VAR, "")];
        assert!(AppCredentials::from_lookup(env(&blank)).unwrap().is_none());
    }

    #[test]
    fn half_an_app_is_an_error_naming_the_missing_half() {
        let error = AppCredentials::from_lookup(env(&[(APP_ID_VAR, "42")])).unwrap_err();
        assert!(error.to_string().contains(APP_KEY_VAR), "{error}");
        assert!(error.is_configuration());
        let error = AppCredentials::from_lookup(env(&[(APP_KEY_VAR, KEY)])).unwrap_err();
        assert!(
            error.to_string().contains("META_AGENT_APP_ID is not"),
            "{error}"
        );
    }

    #[test]
    fn a_bad_id_or_key_is_named_without_the_key() {
        let error = AppCredentials::from_lookup(env(&[(APP_ID_VAR, "my-app"), (APP_KEY_VAR, KEY)]))
            .unwrap_err();
        assert!(matches!(error, AppError::BadId { .. }), "{error}");
        let garbage = "-----BEGIN RSA PRIVATE KEY-----\nnot-base64-secret-material\n-----END RSA PRIVATE KEY-----";
        let error = AppCredentials::from_lookup(env(&[(APP_ID_VAR, "42"), (APP_KEY_VAR, garbage)]))
            .unwrap_err();
        assert!(matches!(error, AppError::BadKey), "{error}");
        assert!(!error.to_string().contains("secret-material"));
    }

    #[test]
    fn a_key_with_escaped_newlines_is_read_and_never_shown() {
        let escaped = KEY.trim().replace('\n', "\\n");
        let credentials =
            AppCredentials::from_lookup(env(&[(APP_ID_VAR, " 42 "), (APP_KEY_VAR, &escaped)]))
                .unwrap()
                .unwrap();
        assert_eq!(credentials.app_id, 42);
        let debug = format!("{credentials:?}");
        assert!(!debug.contains("MII"), "{debug}");
        assert!(credentials.jwt().unwrap().split('.').count() == 3);
    }

    #[test]
    fn a_token_is_minted_again_within_the_margin_of_its_expiry() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_320_000);
        let margin = REFRESH_MARGIN;
        let at = |seconds: i64| {
            let offset = Duration::from_secs(seconds.unsigned_abs());
            if seconds < 0 {
                now - offset
            } else {
                now + offset
            }
        };
        assert!(!needs_refresh(at(3600), now, margin), "an hour left");
        assert!(
            !needs_refresh(at(301), now, margin),
            "just outside the margin"
        );
        assert!(needs_refresh(at(300), now, margin), "at the margin");
        assert!(needs_refresh(at(60), now, margin), "a minute left");
        assert!(needs_refresh(at(-10), now, margin), "already expired");
        assert!(
            needs_refresh(at(3600), now, Duration::MAX),
            "a margin past time's end"
        );
    }

    #[test]
    fn the_expiry_is_read_from_githubs_rfc_3339() {
        let minted = |expires_at: Option<&str>| Minted {
            token: "t".into(),
            expires_at: expires_at.map(str::to_owned),
            bot_login: None,
            jwt: "j".into(),
        };
        let expiry = minted(Some("2026-11-22T05:00:00Z")).expiry();
        assert_eq!(
            expiry,
            Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_320_000 + 3600))
        );
        assert_eq!(minted(None).expiry(), None);
        assert_eq!(minted(Some("in an hour")).expiry(), None);
    }

    #[test]
    fn the_scope_is_one_repository_and_the_runs_permissions() {
        let repo = RepoId::parse("octo/calc").unwrap();
        let issue = TokenScope::for_run(&repo, false);
        assert_eq!(issue.repository, "calc");
        assert_eq!(
            issue.describe(),
            "contents: write, issues: write, metadata: read, pull_requests: write"
        );
        let failed_run = TokenScope::for_run(&repo, true);
        assert_eq!(failed_run.permissions.get("actions"), Some(&Access::Read));
        let body = serde_json::to_value(failed_run.request()).unwrap();
        assert_eq!(body["repositories"], serde_json::json!(["calc"]));
        assert_eq!(body["permissions"]["actions"], "read");
        assert_eq!(body["permissions"]["pull_requests"], "write");
        assert!(body.get("repository_ids").is_none());
    }
}
