//! The PostgreSQL server `scripts/test.sh` starts for the memory tests (Debian's package, a
//! throwaway cluster on a Unix socket and a loopback port), and one fresh database per test.
//!
//! Without `META_AGENT_TEST_DATABASE_URL` the PostgreSQL tests skip, saying so loudly on stderr
//! — unless `META_AGENT_TEST_PG_REQUIRED=1` (set by `scripts/test.sh`), when a missing server
//! fails them.

use std::sync::atomic::{AtomicU32, Ordering};

/// The superuser connection (key=value form ending in `dbname=postgres`).
pub const URL_ENV: &str = "META_AGENT_TEST_DATABASE_URL";

/// A database of its own for one test.
#[derive(Debug, Clone)]
pub struct TestDb {
    pub name: String,
    /// key=value connection string to it (Unix socket, superuser, no password).
    pub url: String,
}

/// The server's admin connection string, or `None` (after a loud notice) when there is none.
pub fn server(test: &str) -> Option<String> {
    match std::env::var(URL_ENV) {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            let required = std::env::var("META_AGENT_TEST_PG_REQUIRED").is_ok_and(|v| v == "1");
            assert!(
                !required,
                "{test}: scripts/test.sh ran but {URL_ENV} is not set: the PostgreSQL server is missing"
            );
            eprintln!(
                "\n!!! SKIPPED {test}: no PostgreSQL server ({URL_ENV} unset). Run scripts/test.sh, \
                 which installs and starts one. !!!\n"
            );
            None
        }
    }
}

static NEXT: AtomicU32 = AtomicU32::new(0);

/// Creates a fresh database for `test`.
pub async fn database(test: &str) -> Option<TestDb> {
    let admin = server(test)?;
    let (client, connection) = tokio_postgres::connect(&admin, tokio_postgres::NoTls)
        .await
        .expect("connect to the test server");
    tokio::spawn(connection);
    let name = format!(
        "t_{}_{}_{}",
        test.chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            .take(30)
            .collect::<String>(),
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    )
    .to_lowercase();
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .expect("create database");
    let url = admin.replace("dbname=postgres", &format!("dbname={name}"));
    Some(TestDb { name, url })
}

/// A plain connection to `db` for checks.
pub async fn connect(db: &TestDb) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(&db.url, tokio_postgres::NoTls)
        .await
        .expect("connect to the test database");
    tokio::spawn(connection);
    client
}

/// The password role over loopback TCP: `(url without password, password, CA file)`.
pub fn tcp() -> Option<(String, String, String)> {
    Some((
        std::env::var("META_AGENT_TEST_DATABASE_TCP_URL").ok()?,
        std::env::var("META_AGENT_TEST_DATABASE_PASSWORD").ok()?,
        std::env::var("META_AGENT_TEST_DATABASE_CA").ok()?,
    ))
}
