//! Benchmarks of shared memory: recall latency (exact signature, and a new signature found
//! through its family) on 100,000 and 1,000,000 entries in PostgreSQL against the file backend,
//! recording throughput with 8 concurrent writers, and the cold start of connecting.
//!
//! Needs a PostgreSQL server: run `scripts/bench-memory.sh`, which starts the same throwaway
//! server as the tests and runs `cargo bench --bench memory`. Sizes come from
//! `MEMORY_BENCH_SIZES` (default `100000,1000000`). Without a server it says so and measures
//! nothing.

use std::collections::BTreeSet;
use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use meta_agent::hindsight::signature::{family_key, signature_id};
use meta_agent::hindsight::store::{CommandLine, Entry, Fix, Resolution, StoreOptions, Timestamp};
use meta_agent::hindsight::{Signature, SignatureKind};
use meta_agent::memory::files::FileMemory;
use meta_agent::memory::postgres::{ConnectOptions, PgMemory};
use meta_agent::memory::settings::{self, MemorySettings};
use meta_agent::memory::{Change, Learned, MemoryBackend, RecallQuery, StoredEntry};
use meta_agent::redact::Redactor;

const REPOSITORIES: usize = 100;
const FAMILY: usize = 10;

/// `n` as letters (`bcd...`), so that the family template keeps it (numbers are normalised).
fn word(mut n: usize) -> String {
    let mut out = String::new();
    loop {
        out.push((b'a' + (n % 26) as u8) as char);
        n /= 26;
        if n == 0 {
            return out;
        }
    }
}

/// Entry `i`: families of ten (one group word, ten test ids), a hundred repositories.
fn signature(i: usize) -> Signature {
    let template = format!(
        "pytest tests/test_{}.py::test_case_{i}: AssertionError: mismatch in field_{}",
        word(i / FAMILY),
        word(i / FAMILY)
    );
    Signature {
        id: signature_id(SignatureKind::TestFailure, &template),
        kind: SignatureKind::TestFailure,
        template,
    }
}

fn stored(i: usize) -> StoredEntry {
    let signature = signature(i);
    let now = Timestamp::from_unix_secs(1_790_000_000);
    let mut entry = Entry::new(&signature, now);
    entry.occurrences = 1;
    let mut resolution = Resolution::new(Fix::Command(CommandLine::Shell(format!(
        "fix --case {}",
        i % 97
    ))));
    resolution.outcomes.record(true, now);
    let reviewed: BTreeSet<String> = if i.is_multiple_of(2) {
        BTreeSet::from([resolution.id.clone()])
    } else {
        BTreeSet::new()
    };
    entry.add_resolution(resolution);
    StoredEntry {
        repository: format!("org/repo{}", i % REPOSITORIES),
        family: family_key(signature.kind, &signature.template),
        entry,
        reviewed,
    }
}

fn admin_url() -> Option<String> {
    std::env::var("META_AGENT_TEST_DATABASE_URL")
        .ok()
        .filter(|u| !u.is_empty())
}

fn options(url: &str, pool_size: usize) -> ConnectOptions {
    let settings = MemorySettings {
        pool_size,
        statement_timeout: Duration::from_secs(600),
        ..MemorySettings::default()
    };
    let env = vec![(settings::DATABASE_URL_ENV.to_owned(), url.to_owned())];
    let target = settings::database_target(&settings, &env)
        .expect("url")
        .expect("target");
    ConnectOptions::new(
        &settings,
        target,
        Path::new("/"),
        Arc::new(Redactor::default()),
    )
}

/// A fresh database holding `n` entries, loaded with `unnest` batches.
async fn database(admin: &str, n: usize) -> (String, PgMemory) {
    let name = format!("bench_memory_{n}_{}", std::process::id());
    let (client, connection) = tokio_postgres::connect(admin, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(connection);
    for statement in [
        format!("DROP DATABASE IF EXISTS {name}"),
        format!("CREATE DATABASE {name}"),
    ] {
        client.batch_execute(&statement).await.expect("create");
    }
    let url = admin.replace("dbname=postgres", &format!("dbname={name}"));
    let memory = PgMemory::connect(options(&url, 8)).await.expect("memory");
    let started = Instant::now();
    let db = memory.client().await.expect("client");
    for chunk in (0..n).collect::<Vec<_>>().chunks(20_000) {
        load_chunk(&db, chunk).await;
    }
    db.batch_execute("ANALYZE").await.expect("analyze");
    eprintln!(
        "loaded {n} entries into PostgreSQL in {:?}",
        started.elapsed()
    );
    (url, memory)
}

/// Removes a benchmark database (a million entries take a gigabyte of disk).
async fn drop_database(admin: &str, url: &str) {
    let Some(name) = url.rsplit("dbname=").next() else {
        return;
    };
    let (client, connection) = tokio_postgres::connect(admin, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(connection);
    client
        .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .await
        .expect("drop");
}

async fn load_chunk(db: &tokio_postgres::Client, chunk: &[usize]) {
    let rows: Vec<StoredEntry> = chunk.iter().map(|&i| stored(i)).collect();
    let col = |f: &dyn Fn(&StoredEntry) -> String| rows.iter().map(f).collect::<Vec<String>>();
    let repos = col(&|s| s.repository.clone());
    let sigs = col(&|s| s.entry.signature.clone());
    let families = col(&|s| s.family.clone());
    let templates = col(&|s| s.entry.template.clone());
    let resolutions = col(&|s| s.entry.resolutions[0].id.clone());
    let fixes: Vec<serde_json::Value> = rows
        .iter()
        .map(|s| serde_json::to_value(&s.entry.resolutions[0].fix).expect("json"))
        .collect();
    let reviewed: Vec<bool> = rows.iter().map(|s| !s.reviewed.is_empty()).collect();
    db.execute(
        "INSERT INTO hindsight_entries
            (repository, signature, family_key, kind, template, occurrences, first_seen, last_seen)
         SELECT r, s, f, 'test_failure', t, 1, now(), now()
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS u(r, s, f, t)",
        &[&repos, &sigs, &families, &templates],
    )
    .await
    .expect("entries");
    db.execute(
        "INSERT INTO hindsight_resolutions
            (repository, signature, resolution, fix, applied, succeeded, last_used, reviewed)
         SELECT r, s, id, fix, 1, 1, now(), rv
         FROM unnest($1::text[], $2::text[], $3::text[], $4::jsonb[], $5::bool[])
           AS u(r, s, id, fix, rv)",
        &[&repos, &sigs, &resolutions, &fixes, &reviewed],
    )
    .await
    .expect("resolutions");
}

/// The file backend of `org/repo0` holding the same `n` entries (in memory: the store's load
/// from disk is measured by the hindsight_store benchmark).
async fn files(n: usize) -> FileMemory {
    let dir = tempfile::tempdir().expect("tempdir");
    let memory = FileMemory::open(
        "org/repo0",
        StoreOptions::default(),
        &dir.path().join("memory"),
    );
    let started = Instant::now();
    let rows: Vec<StoredEntry> = (0..n).map(stored).collect();
    memory.import(&rows).await.expect("import");
    eprintln!(
        "loaded {n} entries into the file backend in {:?}",
        started.elapsed()
    );
    memory
}

fn recall<B: MemoryBackend>(
    rt: &tokio::runtime::Runtime,
    memory: &B,
    signature: &Signature,
) -> usize {
    let query = RecallQuery {
        repository: "org/repo0",
        signatures: std::slice::from_ref(signature),
        limit: 50,
    };
    rt.block_on(memory.recall(&query)).expect("recall").len()
}

fn lookups(c: &mut Criterion) {
    let Some(admin) = admin_url() else {
        eprintln!(
            "\n!!! memory benchmark skipped: no PostgreSQL (run scripts/bench-memory.sh) !!!\n"
        );
        return;
    };
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let sizes: Vec<usize> = std::env::var("MEMORY_BENCH_SIZES")
        .unwrap_or_else(|_| "100000,1000000".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let mut group = c.benchmark_group("memory_recall");
    group
        .sample_size(50)
        .measurement_time(Duration::from_secs(4));
    for &n in &sizes {
        let (url, pg) = rt.block_on(database(&admin, n));
        let files = rt.block_on(files(n));
        let exact = signature(n / 2);
        // A test id never stored, in a stored family.
        let mut sibling = signature(n / 2);
        sibling.template = sibling.template.replace("test_case_", "test_other_");
        sibling.id = signature_id(sibling.kind, &sibling.template);
        assert!(recall(&rt, &pg, &exact) >= 1);
        assert!(recall(&rt, &pg, &sibling) >= 5, "the family is found");
        assert!(recall(&rt, &files, &sibling) >= 1);
        for (name, signature) in [("exact", &exact), ("family", &sibling)] {
            group.bench_with_input(
                BenchmarkId::new(format!("postgres_{name}"), n),
                &n,
                |b, _| {
                    b.iter(|| black_box(recall(&rt, &pg, signature)));
                },
            );
            group.bench_with_input(BenchmarkId::new(format!("files_{name}"), n), &n, |b, _| {
                b.iter(|| black_box(recall(&rt, &files, signature)));
            });
        }
        drop(pg);
        rt.block_on(drop_database(&admin, &url));
    }
    group.finish();
}

/// 8 writers, 200 outcomes each, all on one signature (the contended case) in PostgreSQL.
fn recording(c: &mut Criterion) {
    let Some(admin) = admin_url() else {
        return;
    };
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (_, pg) = rt.block_on(database(&admin, 0));
    let pg = Arc::new(pg);
    let mut group = c.benchmark_group("memory_record");
    group.sample_size(10);
    let mut round = 0u64;
    group.bench_function("postgres_8_writers_1600_outcomes", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                round += 1;
                total += rt.block_on(write_round(pg.clone(), round));
            }
            total
        });
    });
    group.finish();
}

async fn write_round(memory: Arc<PgMemory>, round: u64) -> Duration {
    let started = Instant::now();
    let writers = (0..8).map(|writer| {
        let memory = memory.clone();
        tokio::spawn(async move {
            let signature = signature(writer % 2);
            for n in 0..200 {
                let learned = Learned {
                    id: format!("bench/{round}/{writer}/{n}"),
                    repository: "org/repo0".into(),
                    at: Timestamp::from_unix_secs(1_790_000_000),
                    signature: signature.clone(),
                    change: Change::Outcome {
                        fix: Fix::Command(CommandLine::Shell("ruff check --fix".into())),
                        cured: n % 3 != 0,
                    },
                };
                memory.record(&learned).await.expect("record");
            }
        })
    });
    for writer in futures::future::join_all(writers).await {
        writer.expect("writer");
    }
    started.elapsed()
}

/// From nothing to a usable, migrated pool: over the Unix socket, and over TCP with TLS when
/// `scripts/test-postgres.sh` exported the TLS role.
fn cold_start(c: &mut Criterion) {
    let Some(admin) = admin_url() else {
        return;
    };
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (url, _) = rt.block_on(database(&admin, 0));
    let mut group = c.benchmark_group("memory_connect");
    group.sample_size(20);
    group.bench_function("unix_socket", |b| {
        b.iter(|| {
            rt.block_on(PgMemory::connect(options(&url, 4)))
                .expect("connect")
        });
    });
    let tls = (
        std::env::var("META_AGENT_TEST_DATABASE_TCP_URL"),
        std::env::var("META_AGENT_TEST_DATABASE_PASSWORD"),
        std::env::var("META_AGENT_TEST_DATABASE_CA"),
    );
    if let (Ok(tcp), Ok(password), Ok(ca)) = tls {
        let port = tcp
            .rsplit(':')
            .next()
            .unwrap_or("5432")
            .split('/')
            .next()
            .unwrap_or("5432");
        let remote = format!(
            "host=db.meta-agent.test hostaddr=127.0.0.1 port={port} user=meta_agent \
             dbname=meta_agent password={password}"
        );
        let mut options = options(&remote, 4);
        options.ca_file = Some(ca.into());
        group.bench_function("tcp_tls_verified", |b| {
            b.iter(|| {
                rt.block_on(PgMemory::connect(options.clone()))
                    .expect("connect")
            });
        });
    }
    group.finish();
}

criterion_group!(benches, lookups, recording, cold_start);
criterion_main!(benches);
