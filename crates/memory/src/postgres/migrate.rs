//! Schema migrations, embedded in the binary and applied on first use: versioned, in order,
//! forward-only. Each runs in the same transaction as its record in `meta_agent_migrations`,
//! under a transaction-scoped advisory lock, so runs that connect at once apply it exactly once.
//!
//! A database whose recorded migration text differs from the embedded one, or that is at a
//! newer version than this binary knows, is refused: nothing is ever rolled back or rewritten.

use tokio_postgres::Client;

use crate::MemoryError;
use meta_agent_hindsight::store::entry::stable_hash;

/// One migration: its version (1, 2, ...), a name, and its SQL.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    pub version: i32,
    pub name: &'static str,
    pub sql: &'static str,
}

impl Migration {
    /// What is recorded to notice an edited migration.
    pub fn checksum(&self) -> String {
        stable_hash(self.sql)
    }
}

/// Every migration, oldest first.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "hindsight",
        sql: include_str!("../migrations/0001_hindsight.sql"),
    },
    Migration {
        version: 2,
        name: "sessions",
        sql: include_str!("../migrations/0002_sessions.sql"),
    },
];

/// The newest version this binary knows.
pub fn known_version() -> i32 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

/// Key of the advisory lock migrations hold (an arbitrary constant: "meta-agent" in ASCII).
const LOCK_KEY: i64 = 0x6d65_7461_6167_6e74;

const CREATE_TABLE: &str = "CREATE TABLE IF NOT EXISTS meta_agent_migrations (
    version    integer     PRIMARY KEY,
    name       text        NOT NULL,
    checksum   text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now())";

/// What a migration pass did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MigrationReport {
    /// Versions applied now.
    pub applied: Vec<i32>,
    /// The schema version afterwards.
    pub version: i32,
}

/// Applies the missing migrations, in one transaction.
pub async fn migrate(client: &mut Client) -> Result<MigrationReport, MemoryError> {
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK_KEY])
        .await?;
    tx.batch_execute(CREATE_TABLE).await?;
    let rows = tx
        .query(
            "SELECT version, checksum FROM meta_agent_migrations ORDER BY version",
            &[],
        )
        .await?;
    let recorded: Vec<(i32, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    check_recorded(&recorded)?;
    let mut applied = Vec::new();
    for migration in MIGRATIONS {
        if recorded
            .iter()
            .any(|(version, _)| *version == migration.version)
        {
            continue;
        }
        tx.batch_execute(migration.sql).await?;
        tx.execute(
            "INSERT INTO meta_agent_migrations (version, name, checksum) VALUES ($1, $2, $3)",
            &[&migration.version, &migration.name, &migration.checksum()],
        )
        .await?;
        applied.push(migration.version);
    }
    tx.commit().await?;
    Ok(MigrationReport {
        applied,
        version: known_version(),
    })
}

/// Refuses a database migrated by a newer binary, or with an edited migration.
pub fn check_recorded(recorded: &[(i32, String)]) -> Result<(), MemoryError> {
    for (version, checksum) in recorded {
        let Some(migration) = MIGRATIONS.iter().find(|m| m.version == *version) else {
            return Err(MemoryError::SchemaTooNew {
                found: *version,
                known: known_version(),
            });
        };
        if &migration.checksum() != checksum {
            return Err(MemoryError::MigrationChanged {
                version: *version,
                name: migration.name.to_owned(),
            });
        }
    }
    Ok(())
}

/// The applied version (0 for a database never migrated).
pub async fn current_version(client: &Client) -> Result<i32, MemoryError> {
    let exists = client
        .query_one(
            "SELECT to_regclass('meta_agent_migrations') IS NOT NULL",
            &[],
        )
        .await?;
    if !exists.get::<_, bool>(0) {
        return Ok(0);
    }
    let row = client
        .query_one(
            "SELECT COALESCE(max(version), 0) FROM meta_agent_migrations",
            &[],
        )
        .await?;
    Ok(row.get(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_consecutive_from_one() {
        for (index, migration) in MIGRATIONS.iter().enumerate() {
            assert_eq!(migration.version, index as i32 + 1, "{}", migration.name);
        }
    }

    #[test]
    fn an_edited_or_unknown_migration_is_refused() {
        let good: Vec<(i32, String)> = MIGRATIONS
            .iter()
            .map(|m| (m.version, m.checksum()))
            .collect();
        assert!(check_recorded(&good).is_ok());
        let edited = vec![(1, "0000000000000000".to_owned())];
        assert!(matches!(
            check_recorded(&edited),
            Err(MemoryError::MigrationChanged { version: 1, .. })
        ));
        let newer = vec![(known_version() + 1, "x".to_owned())];
        assert!(matches!(
            check_recorded(&newer),
            Err(MemoryError::SchemaTooNew { .. })
        ));
    }
}
