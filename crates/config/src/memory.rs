//! How shared memory is configured: the `memory:` section resolved with its defaults, where the
//! database URL and its password come from, and the pure decisions about a connection (TLS for
//! hosts that are not local, statement timeout, pool bound).
//!
//! Credentials never come from the configuration file: `memory.url` must not hold a password
//! (an error naming the key); the password comes from `PGPASSWORD`, or the whole URL from
//! `META_AGENT_DATABASE_URL`. Nothing here connects, logs or reads the process environment: the
//! caller passes the environment it was given.

use std::net::IpAddr;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio_postgres::config::{Host, SslMode};

use crate::values::DurationSpec;

/// The environment variable holding the whole database URL (password included).
pub const DATABASE_URL_ENV: &str = "META_AGENT_DATABASE_URL";
/// The environment variable holding the password for a `memory.url` without one (libpq's name).
pub const PASSWORD_ENV: &str = "PGPASSWORD";
/// Default bound of the connection pool.
pub const DEFAULT_POOL_SIZE: usize = 4;
/// Default longest statement.
pub const DEFAULT_STATEMENT_TIMEOUT: Duration = Duration::from_secs(5);
/// Default longest connection attempt.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Default idle time after which a session is over (unless it awaits guidance).
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(24 * 3600);

/// `memory:`: shared memory across repositories in PostgreSQL. Without `url` (and without
/// `META_AGENT_DATABASE_URL` in the environment) everything stays in the repository's files.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawMemory {
    /// PostgreSQL URL without a password (`postgres://meta_agent@db.example.com/meta_agent`).
    /// The password comes from `PGPASSWORD`; `META_AGENT_DATABASE_URL` replaces the whole URL.
    pub url: Option<String>,
    /// This repository's name in the shared memory (default: `GITHUB_REPOSITORY`, else the
    /// `origin` remote's `owner/name`, else the directory name).
    pub repository: Option<String>,
    /// Most connections the pool opens at once (default 4).
    pub pool_size: Option<u32>,
    /// Longest a statement may run before the server cancels it (default 5s).
    pub statement_timeout: Option<DurationSpec>,
    /// Longest a connection attempt may take (default 5s).
    pub connect_timeout: Option<DurationSpec>,
    /// PEM file of CA certificates trusted besides the Mozilla roots (a managed database's CA).
    pub ca_file: Option<String>,
    /// Idle time after which a session is over unless it awaits guidance (default 24h).
    pub session_idle: Option<DurationSpec>,
    /// What the organisation's reviewed entries (learned in other repositories) are used for,
    /// per resolution kind. Default: commands are applied, patches and guidance are hints.
    pub organisation: Option<RawOrganisation>,
}

/// `memory.organisation`: `apply`, `hint` or `off` per resolution kind.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawOrganisation {
    pub command: Option<OrganisationUse>,
    pub patch: Option<OrganisationUse>,
    pub guidance: Option<OrganisationUse>,
}

/// What a reviewed resolution from another repository is good for here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OrganisationUse {
    /// Applied like this repository's own reviewed resolutions (patches only if they apply).
    Apply,
    /// Shown to the agent as guidance, never applied.
    Hint,
    /// Ignored.
    Off,
}

/// The resolved `memory.organisation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrganisationPolicy {
    pub command: OrganisationUse,
    pub patch: OrganisationUse,
    pub guidance: OrganisationUse,
}

impl Default for OrganisationPolicy {
    fn default() -> Self {
        OrganisationPolicy {
            command: OrganisationUse::Apply,
            patch: OrganisationUse::Hint,
            guidance: OrganisationUse::Hint,
        }
    }
}

/// The resolved `memory:` section.
#[derive(Debug, Clone, PartialEq)]
pub struct MemorySettings {
    /// `memory.url` as written (checked to hold no password).
    pub url: Option<String>,
    pub repository: Option<String>,
    pub pool_size: usize,
    pub statement_timeout: Duration,
    pub connect_timeout: Duration,
    /// Relative paths are under the repository root.
    pub ca_file: Option<PathBuf>,
    pub session_idle: Duration,
    pub organisation: OrganisationPolicy,
}

impl Default for MemorySettings {
    fn default() -> Self {
        MemorySettings {
            url: None,
            repository: None,
            pool_size: DEFAULT_POOL_SIZE,
            statement_timeout: DEFAULT_STATEMENT_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            ca_file: None,
            session_idle: DEFAULT_SESSION_IDLE,
            organisation: OrganisationPolicy::default(),
        }
    }
}

/// A `memory:` value that cannot be used: the dotted key, the text to find its line by, why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {message}")]
pub struct SettingsError {
    pub key: String,
    pub needle: String,
    pub message: String,
}

/// Resolves `memory:` (defaults applied, the URL checked).
pub fn resolve(raw: RawMemory) -> Result<MemorySettings, SettingsError> {
    if let Some(url) = &raw.url {
        check_file_url(url)?;
    }
    let pool_size = match raw.pool_size {
        Some(0) => {
            return Err(SettingsError {
                key: "memory.pool_size".into(),
                needle: "pool_size".into(),
                message: "the pool needs at least one connection".into(),
            });
        }
        Some(size) => size as usize,
        None => DEFAULT_POOL_SIZE,
    };
    let organisation = raw.organisation.unwrap_or_default();
    let defaults = OrganisationPolicy::default();
    Ok(MemorySettings {
        url: raw.url,
        repository: raw.repository,
        pool_size,
        statement_timeout: raw
            .statement_timeout
            .map_or(DEFAULT_STATEMENT_TIMEOUT, |d| d.0),
        connect_timeout: raw.connect_timeout.map_or(DEFAULT_CONNECT_TIMEOUT, |d| d.0),
        ca_file: raw.ca_file.map(PathBuf::from),
        session_idle: raw.session_idle.map_or(DEFAULT_SESSION_IDLE, |d| d.0),
        organisation: OrganisationPolicy {
            command: organisation.command.unwrap_or(defaults.command),
            patch: organisation.patch.unwrap_or(defaults.patch),
            guidance: organisation.guidance.unwrap_or(defaults.guidance),
        },
    })
}

/// `memory.url` must parse and must not carry a password (the file is committed).
fn check_file_url(url: &str) -> Result<(), SettingsError> {
    let invalid = |message: String| SettingsError {
        key: "memory.url".into(),
        needle: "url:".into(),
        message,
    };
    let config = tokio_postgres::Config::from_str(url)
        .map_err(|err| invalid(format!("not a PostgreSQL URL: {err}")))?;
    if config.get_password().is_some() {
        return Err(invalid(format!(
            "holds a password: credentials come only from the environment ({PASSWORD_ENV}, or \
             the whole URL in {DATABASE_URL_ENV})"
        )));
    }
    Ok(())
}

/// Where the database is, with its password: `META_AGENT_DATABASE_URL`, else `memory.url` with
/// `PGPASSWORD`. `None` when neither is set: memory stays in files.
#[derive(Clone)]
pub struct DatabaseTarget {
    pub config: tokio_postgres::Config,
    /// Texts to redact everywhere (the URL and the password, when there are any).
    pub secrets: Vec<String>,
}

impl std::fmt::Debug for DatabaseTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DatabaseTarget")
            .field("target", &describe(&self.config))
            .finish_non_exhaustive()
    }
}

/// Why the database URL from the environment is unusable (it is never quoted: it holds the
/// password).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name} is not a usable PostgreSQL URL: {reason}")]
pub struct UrlError {
    pub source_name: &'static str,
    pub reason: String,
}

/// The database to use, from the environment and the settings.
pub fn database_target(
    settings: &MemorySettings,
    env: &[(String, String)],
) -> Result<Option<DatabaseTarget>, UrlError> {
    let lookup = |name: &str| {
        env.iter()
            .find(|(key, value)| key == name && !value.is_empty())
            .map(|(_, value)| value.clone())
    };
    let (url, source_name) = match (lookup(DATABASE_URL_ENV), &settings.url) {
        (Some(url), _) => (url, DATABASE_URL_ENV),
        (None, Some(url)) => (url.clone(), "memory.url"),
        (None, None) => return Ok(None),
    };
    let mut config = tokio_postgres::Config::from_str(&url).map_err(|err| UrlError {
        source_name,
        reason: err.to_string(),
    })?;
    let mut secrets = vec![url];
    if config.get_password().is_none()
        && let Some(password) = lookup(PASSWORD_ENV)
    {
        config.password(password.as_bytes());
    }
    if let Some(password) = config.get_password() {
        secrets.push(String::from_utf8_lossy(password).into_owned());
    }
    Ok(Some(DatabaseTarget { config, secrets }))
}

/// Whether every host of `config` is this machine: a Unix socket, `localhost`, a loopback
/// address. A `hostaddr` does not make a named host local: the name is what TLS verifies.
pub fn all_hosts_local(config: &tokio_postgres::Config) -> bool {
    let hosts = config.get_hosts();
    !hosts.is_empty()
        && hosts.iter().all(|host| match host {
            Host::Unix(_) => true,
            Host::Tcp(name) => is_local_name(name),
        })
}

fn is_local_name(name: &str) -> bool {
    let bare = name.trim_start_matches('[').trim_end_matches(']');
    bare.eq_ignore_ascii_case("localhost")
        || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The TLS mode a connection uses: as written for local hosts; for any other host TLS is
/// required unless the URL says `sslmode=disable` (then the caller warns). `prefer`, which
/// would fall back to plain text when a server (or someone in between) declines TLS, is raised
/// to `require`. With rustls, `require` also verifies the certificate and the host name.
pub fn effective_ssl_mode(config: &tokio_postgres::Config) -> SslMode {
    let written = config.get_ssl_mode();
    if all_hosts_local(config) || written == SslMode::Disable {
        written
    } else {
        SslMode::Require
    }
}

/// `host:port/dbname` for messages: never the user's password.
pub fn describe(config: &tokio_postgres::Config) -> String {
    let host = config
        .get_hosts()
        .first()
        .map(|host| match host {
            Host::Tcp(name) => name.clone(),
            Host::Unix(path) => path.display().to_string(),
        })
        .unwrap_or_else(|| "localhost".into());
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let db = config.get_dbname().unwrap_or("postgres");
    format!("{host}:{port}/{db}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(url: &str) -> tokio_postgres::Config {
        tokio_postgres::Config::from_str(url).unwrap()
    }

    #[test]
    fn tls_is_required_for_hosts_that_are_not_local() {
        let remote = config("postgres://bot@db.example.com/memory");
        assert_eq!(effective_ssl_mode(&remote), SslMode::Require);
        let prefer = config("postgres://bot@db.example.com/memory?sslmode=prefer");
        assert_eq!(effective_ssl_mode(&prefer), SslMode::Require);
        let named = config("host=db.example.com hostaddr=127.0.0.1 user=bot");
        assert_eq!(effective_ssl_mode(&named), SslMode::Require);
        let opted_out = config("postgres://bot@db.example.com/memory?sslmode=disable");
        assert_eq!(effective_ssl_mode(&opted_out), SslMode::Disable);
        for local in [
            "postgres://bot@localhost/memory",
            "postgres://bot@127.0.0.1:5433/memory",
            "postgres://bot@[::1]/memory",
            "host=/var/run/postgresql user=bot",
        ] {
            assert_eq!(
                effective_ssl_mode(&config(local)),
                SslMode::Prefer,
                "{local}"
            );
        }
    }

    #[test]
    fn a_password_in_the_file_is_refused_and_named() {
        let raw = RawMemory {
            url: Some("postgres://bot:hunter2-secret@db.example.com/memory".into()),
            ..RawMemory::default()
        };
        let err = resolve(raw).unwrap_err();
        assert_eq!(err.key, "memory.url");
        assert!(err.message.contains("PGPASSWORD"), "{err}");
        assert!(!err.to_string().contains("hunter2"), "{err}");
        let fine = resolve(RawMemory {
            url: Some("postgres://bot@db.example.com/memory".into()),
            ..RawMemory::default()
        })
        .unwrap();
        assert_eq!(fine.pool_size, DEFAULT_POOL_SIZE);
        assert_eq!(fine.session_idle, DEFAULT_SESSION_IDLE);
    }

    #[test]
    fn the_environment_url_wins_and_its_password_is_a_secret() {
        let settings = resolve(RawMemory {
            url: Some("postgres://bot@file-host/memory".into()),
            ..RawMemory::default()
        })
        .unwrap();
        let env = vec![
            (
                DATABASE_URL_ENV.to_owned(),
                "postgres://bot:s3cret-password@env-host/memory".to_owned(),
            ),
            (PASSWORD_ENV.to_owned(), "unused-password".to_owned()),
        ];
        let target = database_target(&settings, &env).unwrap().unwrap();
        assert_eq!(describe(&target.config), "env-host:5432/memory");
        assert!(target.secrets.contains(&"s3cret-password".to_owned()));
        assert!(!format!("{target:?}").contains("s3cret"));
        let file_only = vec![(PASSWORD_ENV.to_owned(), "pg-password-1".to_owned())];
        let target = database_target(&settings, &file_only).unwrap().unwrap();
        assert_eq!(target.config.get_password(), Some(&b"pg-password-1"[..]));
        assert!(target.secrets.contains(&"pg-password-1".to_owned()));
        assert!(
            database_target(&MemorySettings::default(), &[])
                .unwrap()
                .is_none()
        );
        let bad = vec![(
            DATABASE_URL_ENV.to_owned(),
            "postgres://x:pw@h/d?sslmode=bogus".to_owned(),
        )];
        let err = database_target(&settings, &bad).unwrap_err();
        assert!(!err.to_string().contains("pw@"), "{err}");
    }
}
