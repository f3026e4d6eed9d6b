//! `meta-agent memory migrate|status|export|import`, and the shared-memory subcommands of
//! `meta-agent hindsight` (`approve`, `sync`).
//!
//! Operations use the database when one is configured (`memory.url` or
//! `META_AGENT_DATABASE_URL`) and fail loudly when it is unreachable — unlike runs, which fall
//! back; `--files` picks the repository's file backend instead. Functions return what to print;
//! nothing here prints or picks an exit code.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::hindsight_cli;
use crate::hindsight::store::{Catalog, Entry, StoreOptions};
use crate::memory::files::FileMemory;
use crate::memory::journal::{self, Replayed};
use crate::memory::postgres::{ConnectOptions, PgMemory, migrate};
use crate::memory::settings::{self, MemorySettings};
use crate::memory::{AnyMemory, Approval, MemoryBackend, MemoryError, StoredEntry};
use crate::redact::Redactor;
use crate::render::memory as memory_text;

/// `meta-agent memory`.
#[derive(Debug, Clone, clap::Args)]
pub struct MemoryArgs {
    #[command(subcommand)]
    pub command: MemoryCommand,
}

/// The memory subcommands.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum MemoryCommand {
    /// Apply the embedded schema migrations to the database (runs also do it on first use).
    Migrate {
        #[arg(long)]
        json: bool,
    },
    /// Where memory lives, its schema version, and what it holds.
    Status {
        #[arg(long)]
        json: bool,
        /// The repository's file backend, even when a database is configured.
        #[arg(long)]
        files: bool,
    },
    /// Write every entry (repository, family, entry, reviewed resolutions) as JSON lines.
    Export {
        /// Write here instead of stdout.
        #[arg(long, short)]
        output: Option<PathBuf>,
        #[arg(long)]
        files: bool,
    },
    /// Merge an export (or a `hindsight export` of a file store) into memory: counts added,
    /// resolutions unioned, reviewed flags kept.
    Import {
        file: PathBuf,
        /// The repository that learned plain `hindsight export` entries (default: this one).
        #[arg(long)]
        repository: Option<String>,
        #[arg(long)]
        files: bool,
    },
}

/// `meta-agent hindsight approve`.
#[derive(Debug, Clone, clap::Args)]
pub struct ApproveArgs {
    /// The entry: a full signature id or a unique prefix.
    pub signature: String,
    /// Only this resolution (id or prefix); default: every candidate of the entry.
    #[arg(long)]
    pub resolution: Option<String>,
    /// The repository that learned it (default: this one).
    #[arg(long)]
    pub repository: Option<String>,
    /// Who approves (recorded with the flag; default `$USER`).
    #[arg(long)]
    pub by: Option<String>,
}

/// `meta-agent hindsight sync`.
#[derive(Debug, Clone, clap::Args)]
pub struct SyncArgs {
    /// Queue files, or directories holding `memory-pending.jsonl` files (such as a downloaded
    /// run artifact). Default: this repository's session directories.
    pub from: Vec<PathBuf>,
}

/// What the memory commands need.
pub struct MemoryContext<'a> {
    pub repo_root: &'a Path,
    /// `.git` of the repository (sessions, `meta-agent/memory`).
    pub git_dir: PathBuf,
    pub settings: &'a MemorySettings,
    pub store_dir: PathBuf,
    pub catalog: bool,
    pub env: &'a [(String, String)],
    /// The process's redactor (built once from `env`).
    pub redactor: Arc<Redactor>,
}

impl MemoryContext<'_> {
    fn redactor(&self) -> Arc<Redactor> {
        self.redactor.clone()
    }

    fn repository(&self) -> String {
        crate::memory::shared::repository_name(self.settings, self.env, self.repo_root)
    }

    fn files(&self) -> Result<FileMemory, MemoryError> {
        let catalog = if self.catalog {
            Catalog::bundled().map_err(|err| MemoryError::Stored {
                what: "bundled catalog".into(),
                reason: err.to_string(),
            })?
        } else {
            Catalog::default()
        };
        Ok(FileMemory::open(
            &self.repository(),
            StoreOptions {
                dir: Some(self.store_dir.clone()),
                catalog,
                redactor: self.redactor(),
                ..StoreOptions::default()
            },
            &self.git_dir.join("meta-agent").join("memory"),
        ))
    }

    /// The database, unconnected, when one is configured.
    fn database(&self) -> Result<Option<PgMemory>, MemoryError> {
        let Some(target) = settings::database_target(self.settings, self.env)? else {
            return Ok(None);
        };
        let options = ConnectOptions::new(self.settings, target, self.repo_root, self.redactor());
        Ok(Some(PgMemory::pool_only(&options)?))
    }

    /// The database (migrated) when configured and `files` is not asked, else the files.
    async fn backend(&self, files: bool) -> Result<AnyMemory, MemoryError> {
        match self.database()? {
            Some(database) if !files => {
                let mut client = database.client().await?;
                migrate::migrate(&mut client).await?;
                Ok(AnyMemory::Postgres(database))
            }
            Some(_) | None => Ok(AnyMemory::Files(Box::new(self.files()?))),
        }
    }

    async fn require_database(&self, why: &'static str) -> Result<PgMemory, MemoryError> {
        match self.database()? {
            Some(database) => {
                let mut client = database.client().await?;
                migrate::migrate(&mut client).await?;
                Ok(database)
            }
            None => Err(MemoryError::NoDatabase(why)),
        }
    }
}

/// Runs one `memory` command; returns what to print.
pub async fn run(args: &MemoryArgs, ctx: &MemoryContext<'_>) -> Result<String, MemoryError> {
    match &args.command {
        MemoryCommand::Migrate { json } => migrate_command(ctx, *json).await,
        MemoryCommand::Status { json, files } => {
            let status = ctx.backend(*files).await?.status().await?;
            Ok(if *json {
                to_json(&status)?
            } else {
                memory_text::status(&status)
            })
        }
        MemoryCommand::Export { output, files } => {
            let entries = ctx.backend(*files).await?.export().await?;
            export(&entries, output.as_deref())
        }
        MemoryCommand::Import {
            file,
            repository,
            files,
        } => {
            let repository = repository.clone().unwrap_or_else(|| ctx.repository());
            let entries = read_export(file, &repository)?;
            let count = ctx.backend(*files).await?.import(&entries).await?;
            Ok(crate::render::hindsight::imported(count as usize))
        }
    }
}

async fn migrate_command(ctx: &MemoryContext<'_>, json: bool) -> Result<String, MemoryError> {
    let database = ctx
        .database()?
        .ok_or(MemoryError::NoDatabase("nothing to migrate"))?;
    let mut client = database.client().await?;
    let report = migrate::migrate(&mut client).await?;
    if json {
        return to_json(&report);
    }
    Ok(memory_text::migrated(
        database.location(),
        &report.applied,
        report.version,
    ))
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<String, MemoryError> {
    serde_json::to_string_pretty(value)
        .map(|text| text + "\n")
        .map_err(|err| MemoryError::Stored {
            what: "JSON output".into(),
            reason: err.to_string(),
        })
}

fn export(entries: &[StoredEntry], output: Option<&Path>) -> Result<String, MemoryError> {
    let lines = hindsight_cli::json_lines(entries).map_err(|err| MemoryError::Stored {
        what: "export".into(),
        reason: err.to_string(),
    })?;
    Ok(hindsight_cli::deliver_export(lines, entries.len(), output)?)
}

/// Reads `memory export` lines, or plain `hindsight export` entries (learned by `repository`,
/// nothing reviewed). A bad line is an error naming the file and line.
pub fn read_export(path: &Path, repository: &str) -> Result<Vec<StoredEntry>, MemoryError> {
    let stored_or_plain = |line: &str| {
        serde_json::from_str::<StoredEntry>(line).or_else(|first| {
            let entry = serde_json::from_str::<Entry>(line).map_err(|_| first)?;
            Ok::<_, serde_json::Error>(StoredEntry {
                repository: repository.to_owned(),
                family: crate::hindsight::signature::family_key(entry.kind, &entry.template),
                entry,
                reviewed: Default::default(),
            })
        })
    };
    hindsight_cli::json_lines_of(path, stored_or_plain)
        .map_err(|err| MemoryError::of_lines(err, "an exported entry"))
}

/// Whose fault a memory error is, for the exit code: bad input and configuration are the
/// user's; a database that cannot be used is not.
pub fn failure_class(err: &MemoryError) -> crate::exit::FailureClass {
    use crate::exit::FailureClass;
    match err {
        MemoryError::Url(_)
        | MemoryError::Input { .. }
        | MemoryError::InvalidId(_)
        | MemoryError::NothingToApprove(_)
        | MemoryError::NoDatabase(_)
        | MemoryError::Tls(_)
        | MemoryError::SchemaTooNew { .. }
        | MemoryError::MigrationChanged { .. } => FailureClass::Usage,
        MemoryError::Connect { .. }
        | MemoryError::Database(_)
        | MemoryError::Stored { .. }
        | MemoryError::Store(_)
        | MemoryError::Io { .. } => FailureClass::Internal,
    }
}

/// `meta-agent hindsight approve`: marks candidates reviewed (in the database when configured,
/// else in the repository's file backend).
pub async fn approve(args: &ApproveArgs, ctx: &MemoryContext<'_>) -> Result<String, MemoryError> {
    let repository = args.repository.clone().unwrap_or_else(|| ctx.repository());
    let by = args.by.clone().unwrap_or_else(|| {
        ctx.env
            .iter()
            .find(|(k, _)| k == "USER" || k == "GITHUB_ACTOR")
            .map_or_else(|| "maintainer".into(), |(_, v)| v.clone())
    });
    let approval = Approval {
        repository: &repository,
        signature: &args.signature,
        resolution: args.resolution.as_deref(),
        by: &by,
    };
    let approved = ctx.backend(false).await?.approve(&approval).await?;
    if approved.is_empty() {
        return Err(MemoryError::NothingToApprove(format!(
            "{} has no candidate resolution left to approve in {repository}",
            args.signature
        )));
    }
    let approved: Vec<(&str, &str)> = approved
        .iter()
        .map(|fix| (fix.signature.as_str(), fix.resolution.as_str()))
        .collect();
    Ok(memory_text::approved(&approved, &repository, &by))
}

/// `meta-agent hindsight sync`: writes every queued lesson to the database.
pub async fn sync(args: &SyncArgs, ctx: &MemoryContext<'_>) -> Result<String, MemoryError> {
    let database = ctx.require_database("nothing to sync to").await?;
    let sources = if args.from.is_empty() {
        vec![ctx.git_dir.join("meta-agent").join("sessions")]
    } else {
        args.from.clone()
    };
    let mut total = Replayed::default();
    let mut files = 0;
    for source in &sources {
        for path in journal::pending_files(source) {
            let done = journal::replay(&database, &path).await?;
            files += 1;
            total.applied += done.applied;
            total.already += done.already;
        }
    }
    Ok(memory_text::synced(
        files,
        database.location(),
        total.applied,
        total.already,
    ))
}
