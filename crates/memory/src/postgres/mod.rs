//! The PostgreSQL backend: one database shared by every repository of an organisation.
//!
//! [`PgMemory::connect`] opens a bounded pool (deadpool) over tokio-postgres with rustls (TLS
//! required for hosts that are not local, certificates and host names verified against the
//! Mozilla roots plus `memory.ca_file`), sets a statement timeout on every connection, and
//! applies the embedded migrations ([`migrate`]) before anything else. Hindsight queries live in
//! [`hindsight`], sessions and conversations in [`sessions`]. Every text written passes the
//! redactor; errors name the database as `host:port/dbname`, never with credentials.

pub mod hindsight;
pub mod migrate;
pub mod sessions;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use tokio_postgres::config::SslMode;
use tokio_postgres_rustls::MakeRustlsConnect;

use super::settings::{self, DatabaseTarget, MemorySettings};
use super::{
    Approval, ConversationMessage, Learned, MemoryBackend, MemoryError, MemoryStatus, RecallQuery,
    Recorded, ReviewedFix, SessionRecord, StoredEntry,
};
use meta_agent_redact::Redactor;

/// How to connect.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    pub target: DatabaseTarget,
    pub pool_size: usize,
    pub statement_timeout: Duration,
    pub connect_timeout: Duration,
    /// Extra CA certificates (PEM), resolved to a path.
    pub ca_file: Option<PathBuf>,
    /// Every text written passes it.
    pub redactor: Arc<Redactor>,
}

impl ConnectOptions {
    /// The options of `settings` for `target` (a relative `ca_file` is under `repo_root`).
    pub fn new(
        settings: &MemorySettings,
        target: DatabaseTarget,
        repo_root: &Path,
        redactor: Arc<Redactor>,
    ) -> ConnectOptions {
        ConnectOptions {
            target,
            pool_size: settings.pool_size,
            statement_timeout: settings.statement_timeout,
            connect_timeout: settings.connect_timeout,
            ca_file: settings.ca_file.as_ref().map(|p| repo_root.join(p)),
            redactor,
        }
    }
}

/// The shared memory in PostgreSQL.
#[derive(Clone)]
pub struct PgMemory {
    pool: Pool,
    location: String,
    redactor: Arc<Redactor>,
}

impl std::fmt::Debug for PgMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgMemory")
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

impl PgMemory {
    /// Opens the pool, checks one connection and applies missing migrations.
    pub async fn connect(options: ConnectOptions) -> Result<PgMemory, MemoryError> {
        let memory = PgMemory::pool_only(&options)?;
        let mut client = memory.client().await?;
        migrate::migrate(&mut client).await?;
        Ok(memory)
    }

    /// The pool, without connecting yet (`memory migrate` and `status` connect themselves).
    pub fn pool_only(options: &ConnectOptions) -> Result<PgMemory, MemoryError> {
        let mut config = options.target.config.clone();
        let location = settings::describe(&config);
        let mode = settings::effective_ssl_mode(&config);
        if mode == SslMode::Disable && !settings::all_hosts_local(&config) {
            tracing::warn!("memory: TLS is off for {location} (sslmode=disable in the URL)");
        }
        config
            .ssl_mode(mode)
            .connect_timeout(options.connect_timeout)
            .application_name("meta-agent")
            .options(format!(
                "-c statement_timeout={}",
                options.statement_timeout.as_millis().max(1)
            ));
        let tls = tls_connector(options.ca_file.as_deref())?;
        let manager = Manager::from_config(
            config,
            tls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let timeout = Some(options.connect_timeout);
        let pool = Pool::builder(manager)
            .max_size(options.pool_size.max(1))
            .runtime(Runtime::Tokio1)
            .wait_timeout(timeout)
            .create_timeout(timeout)
            .recycle_timeout(timeout)
            .build()
            .map_err(|err| MemoryError::Connect {
                target: location.clone(),
                reason: err.to_string(),
            })?;
        Ok(PgMemory {
            pool,
            location,
            redactor: options.redactor.clone(),
        })
    }

    /// `host:port/dbname`.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// The pool (bounded by `memory.pool_size`).
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// A pooled connection.
    pub async fn client(&self) -> Result<Object, MemoryError> {
        self.pool.get().await.map_err(|err| MemoryError::Connect {
            target: self.location.clone(),
            reason: chain(&err),
        })
    }

    fn redact(&self, text: &str) -> String {
        self.redactor.redact_text(text).into_owned()
    }
}

/// An error with its causes (`error performing TLS handshake: invalid peer certificate: ...`).
fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// rustls with the Mozilla roots and the certificates of `ca_file`.
fn tls_connector(ca_file: Option<&Path>) -> Result<MakeRustlsConnect, MemoryError> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(path) = ca_file {
        let certificates = CertificateDer::pem_file_iter(path)
            .map_err(|err| MemoryError::Tls(format!("{}: {err}", path.display())))?;
        for certificate in certificates {
            let certificate = certificate
                .map_err(|err| MemoryError::Tls(format!("{}: {err}", path.display())))?;
            roots
                .add(certificate)
                .map_err(|err| MemoryError::Tls(format!("{}: {err}", path.display())))?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|err| MemoryError::Tls(err.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

impl MemoryBackend for PgMemory {
    async fn recall(&self, query: &RecallQuery<'_>) -> Result<Vec<StoredEntry>, MemoryError> {
        let client = self.client().await?;
        hindsight::recall(&client, query).await
    }

    async fn record(&self, learned: &Learned) -> Result<Recorded, MemoryError> {
        let mut learned = learned.clone();
        learned.redact(&|text: &str| self.redact(text));
        let mut client = self.client().await?;
        hindsight::record(&mut client, &learned).await
    }

    async fn mark_reviewed(
        &self,
        repository: &str,
        fixes: &[ReviewedFix],
    ) -> Result<u64, MemoryError> {
        let client = self.client().await?;
        hindsight::mark_reviewed(&client, repository, fixes).await
    }

    async fn approve(&self, approval: &Approval<'_>) -> Result<Vec<ReviewedFix>, MemoryError> {
        let client = self.client().await?;
        hindsight::approve(&client, approval).await
    }

    async fn export(&self) -> Result<Vec<StoredEntry>, MemoryError> {
        let client = self.client().await?;
        hindsight::export(&client).await
    }

    async fn import(&self, entries: &[StoredEntry]) -> Result<u64, MemoryError> {
        let mut client = self.client().await?;
        for stored in entries {
            let mut stored = stored.clone();
            stored.entry.redact(&|text: &str| self.redact(text));
            hindsight::import_one(&mut client, &stored).await?;
        }
        Ok(entries.len() as u64)
    }

    async fn save_session(&self, session: &SessionRecord) -> Result<(), MemoryError> {
        let mut session = session.clone();
        session.task = self.redact(&session.task);
        let client = self.client().await?;
        sessions::save(&client, &session).await
    }

    async fn latest_session(
        &self,
        repository: &str,
        task: &str,
    ) -> Result<Option<SessionRecord>, MemoryError> {
        let task = self.redact(task);
        let client = self.client().await?;
        sessions::latest(&client, repository, &task).await
    }

    async fn append_message(&self, message: &ConversationMessage) -> Result<(), MemoryError> {
        let mut message = message.clone();
        message.content = self.redact(&message.content);
        let client = self.client().await?;
        sessions::append(&client, &message).await
    }

    async fn conversation(&self, session: &str) -> Result<Vec<ConversationMessage>, MemoryError> {
        let client = self.client().await?;
        sessions::conversation(&client, session).await
    }

    async fn status(&self) -> Result<MemoryStatus, MemoryError> {
        let client = self.client().await?;
        sessions::status(&client, &self.location).await
    }
}
