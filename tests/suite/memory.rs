//! Shared memory against a real PostgreSQL server (started by `scripts/test.sh`, one database
//! per test) and the file backend: migrations, the trait's contract on both backends, parallel
//! writers, trust and recall order, conversations, fallback and sync, TLS, pooling, timeouts.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use meta_agent::hindsight::signature::signature_id;
use meta_agent::hindsight::store::{
    CommandLine, EscalationContext, Fix, PatchFix, Store, StoreOptions, Timestamp,
};
use meta_agent::hindsight::{Signature, SignatureKind};
use meta_agent::memory::conversation::Summarizer;
use meta_agent::memory::files::FileMemory;
use meta_agent::memory::postgres::{ConnectOptions, PgMemory, migrate};
use meta_agent::memory::settings::{self, MemorySettings, OrganisationUse};
use meta_agent::memory::shared::{OpenMemory, RunMemory};
use meta_agent::memory::{
    Approval, Change, ConversationMessage, Learned, MemoryBackend, MemoryError, RecallQuery,
    Recorded, ReviewedFix, Role, SessionRecord, SessionState, StoredEntry,
};
use meta_agent::redact::Redactor;
use std::time::Duration;

use crate::common::postgres::{self, TestDb};

const T0: u64 = 1_790_000_000;

fn at(secs: u64) -> Timestamp {
    Timestamp::from_unix_secs(T0 + secs)
}

fn sig(kind: SignatureKind, template: &str) -> Signature {
    Signature {
        id: signature_id(kind, template),
        kind,
        template: template.to_owned(),
    }
}

fn mean_failure(test: &str) -> Signature {
    sig(
        SignatureKind::TestFailure,
        &format!("pytest tests/test_calc.py::{test}: AssertionError: assert 2 == 2.5"),
    )
}

fn fmt_fix() -> Fix {
    Fix::Command(CommandLine::Shell("ruff check --fix".into()))
}

fn patch_fix() -> PatchFix {
    PatchFix {
        diff: "--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-    return a // b\n+    return a / b\n"
            .into(),
        files: ["calc.py".to_owned()].into(),
        source: Some("test".into()),
    }
}

fn learned(id: &str, repository: &str, signature: &Signature, change: Change) -> Learned {
    Learned {
        id: id.to_owned(),
        repository: repository.to_owned(),
        at: at(10),
        signature: signature.clone(),
        change,
    }
}

fn options(db: &TestDb) -> ConnectOptions {
    let settings = MemorySettings::default();
    let env = vec![(settings::DATABASE_URL_ENV.to_owned(), db.url.clone())];
    let target = settings::database_target(&settings, &env).unwrap().unwrap();
    ConnectOptions::new(
        &settings,
        target,
        Path::new("."),
        Arc::new(Redactor::default()),
    )
}

async fn pg(db: &TestDb) -> PgMemory {
    PgMemory::connect(options(db)).await.unwrap()
}

fn file_memory(dir: &Path, repository: &str) -> FileMemory {
    FileMemory::open(
        repository,
        StoreOptions {
            dir: Some(dir.join("store")),
            ..StoreOptions::default()
        },
        &dir.join("memory"),
    )
}

#[tokio::test]
async fn migrations_are_applied_once_in_order_even_by_runs_connecting_at_once() {
    let Some(db) = postgres::database("migrations").await else {
        return;
    };
    let connects = (0..4).map(|_| PgMemory::connect(options(&db)));
    for result in futures::future::join_all(connects).await {
        result.unwrap();
    }
    let client = postgres::connect(&db).await;
    let versions: Vec<i32> = client
        .query(
            "SELECT version FROM meta_agent_migrations ORDER BY version",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(versions, [1, 2]);
    let memory = pg(&db).await;
    let again = migrate::migrate(&mut memory.client().await.unwrap())
        .await
        .unwrap();
    assert!(again.applied.is_empty(), "{again:?}");
    assert_eq!(again.version, migrate::known_version());

    client
        .execute(
            "UPDATE meta_agent_migrations SET checksum = 'edited' WHERE version = 2",
            &[],
        )
        .await
        .unwrap();
    let err = PgMemory::connect(options(&db)).await.unwrap_err();
    assert!(
        matches!(err, MemoryError::MigrationChanged { version: 2, .. }),
        "{err}"
    );
    client
        .execute(
            "UPDATE meta_agent_migrations SET checksum = $1 WHERE version = 2",
            &[&migrate::MIGRATIONS[1].checksum()],
        )
        .await
        .unwrap();
    client
        .execute(
            "INSERT INTO meta_agent_migrations (version, name, checksum) VALUES (99, 'future', 'x')",
            &[],
        )
        .await
        .unwrap();
    let err = PgMemory::connect(options(&db)).await.unwrap_err();
    assert!(
        matches!(err, MemoryError::SchemaTooNew { found: 99, .. }),
        "{err}"
    );
}

/// The trait's contract, the same on both backends.
async fn contract<B: MemoryBackend>(memory: &B, repository: &str) {
    let one = mean_failure("test_mean");
    let seen = learned("run/0", repository, &one, Change::Seen);
    assert_eq!(memory.record(&seen).await.unwrap(), Recorded::Applied);
    assert_eq!(
        memory.record(&seen).await.unwrap(),
        Recorded::AlreadyApplied,
        "a replayed write counts once"
    );
    let outcome = Change::Outcome {
        fix: fmt_fix(),
        cured: true,
    };
    memory
        .record(&learned("run/1", repository, &one, outcome))
        .await
        .unwrap();
    let patch = Change::Patch { patch: patch_fix() };
    memory
        .record(&learned("run/2", repository, &one, patch))
        .await
        .unwrap();
    let context = EscalationContext {
        reason: "budget".into(),
        tags: ["gate:tests".to_owned()].into(),
        ..EscalationContext::default()
    };
    let other = sig(SignatureKind::Lint, "ruff F401: `os` imported but unused");
    memory
        .record(&learned(
            "run/3",
            repository,
            &other,
            Change::Unresolved { context },
        ))
        .await
        .unwrap();

    let sibling = mean_failure("test_median");
    let query = RecallQuery {
        repository,
        signatures: std::slice::from_ref(&sibling),
        limit: 10,
    };
    let found = memory.recall(&query).await.unwrap();
    assert_eq!(found.len(), 1, "found through the family: {found:?}");
    let entry = &found[0].entry;
    assert_eq!(entry.signature, one.id);
    assert_eq!(entry.occurrences, 1);
    assert_eq!(entry.resolutions.len(), 2);
    assert!(
        found[0].reviewed.is_empty(),
        "learned entries are candidates"
    );

    let elsewhere = RecallQuery {
        repository: "org/elsewhere",
        signatures: std::slice::from_ref(&one),
        limit: 10,
    };
    assert!(
        memory.recall(&elsewhere).await.unwrap().is_empty(),
        "other repositories see no candidate"
    );
    let patch_id = Fix::Patch(patch_fix()).id();
    let approved = memory
        .approve(&Approval {
            repository,
            signature: &one.id[..6],
            resolution: Some(&patch_id[..5]),
            by: "alice",
        })
        .await
        .unwrap();
    assert_eq!(
        approved,
        [ReviewedFix {
            signature: one.id.clone(),
            resolution: patch_id.clone()
        }]
    );
    let reviewed = memory
        .mark_reviewed(
            repository,
            &[ReviewedFix {
                signature: one.id.clone(),
                resolution: fmt_fix().id(),
            }],
        )
        .await
        .unwrap();
    assert_eq!(reviewed, 1);
    let found = memory.recall(&elsewhere).await.unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(
        found[0].reviewed,
        BTreeSet::from([patch_id.clone(), fmt_fix().id()])
    );

    let exported = memory.export().await.unwrap();
    assert_eq!(exported.len(), 2);
    let escalated = exported
        .iter()
        .find(|s| s.entry.signature == other.id)
        .unwrap();
    assert_eq!(escalated.entry.status.as_str(), "escalated");
    assert!(escalated.entry.tags.contains("gate:tests"));

    let session = SessionRecord {
        id: "s-1".into(),
        repository: repository.into(),
        task: "issue #7".into(),
        state: SessionState::AwaitingGuidance,
        started: at(0),
        updated: at(5),
        outcome: Some("escalated".into()),
    };
    memory.save_session(&session).await.unwrap();
    for (n, role) in [Role::Maintainer, Role::Bot].into_iter().enumerate() {
        let message = ConversationMessage {
            session: "s-1".into(),
            role,
            content: format!("message {n}"),
            tokens: 2,
            at: at(n as u64),
        };
        memory.append_message(&message).await.unwrap();
    }
    let latest = memory
        .latest_session(repository, "issue #7")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(latest, session);
    let messages = memory.conversation("s-1").await.unwrap();
    assert_eq!(
        messages
            .iter()
            .map(|m| m.content.as_str())
            .collect::<Vec<_>>(),
        ["message 0", "message 1"]
    );
    let status = memory.status().await.unwrap();
    assert_eq!(
        (status.entries, status.sessions, status.messages),
        (2, 1, 2)
    );
}

/// Importing one export twice counts it once; another entry, or the same entry with other
/// counts (a later export), is another import.
async fn import_twice<B: MemoryBackend>(memory: &B, repository: &str) {
    let one = mean_failure("test_mean");
    let mut first = stored(repository, &one, fmt_fix(), true);
    first.entry.occurrences = 3;
    let two = mean_failure("test_median");
    let second = stored(repository, &two, fmt_fix(), false);
    let counts = |exported: &[StoredEntry], id: &str| {
        let entry = &exported
            .iter()
            .find(|s| s.entry.signature == id)
            .unwrap()
            .entry;
        let outcomes = &entry.resolutions[0].outcomes;
        (entry.occurrences, outcomes.applied, outcomes.succeeded)
    };
    for _ in 0..2 {
        let imported = memory.import(&[first.clone()]).await.unwrap();
        assert_eq!(imported, 1);
    }
    let exported = memory.export().await.unwrap();
    assert_eq!(counts(&exported, &one.id), (3, 5, 5), "counted once");
    let reviewed = exported.iter().find(|s| s.entry.signature == one.id);
    assert!(reviewed.unwrap().reviewed.contains(&fmt_fix().id()));

    memory.import(&[first.clone(), second]).await.unwrap();
    let exported = memory.export().await.unwrap();
    assert_eq!(counts(&exported, &one.id), (3, 5, 5), "still once");
    assert_eq!(
        counts(&exported, &two.id),
        (0, 5, 5),
        "another entry is imported"
    );

    let mut later = first.clone();
    later.entry.occurrences = 4;
    later.entry.resolutions[0].outcomes.record(false, at(9));
    memory.import(&[later]).await.unwrap();
    let exported = memory.export().await.unwrap();
    assert_eq!(
        counts(&exported, &one.id),
        (7, 11, 10),
        "an export with other counts adds them"
    );
}

#[tokio::test]
async fn the_postgres_backend_imports_an_export_once() {
    let Some(db) = postgres::database("import_twice").await else {
        return;
    };
    import_twice(&pg(&db).await, "org/calc").await;
}

#[tokio::test]
async fn the_file_backend_imports_an_export_once() {
    let dir = tempfile::tempdir().unwrap();
    import_twice(&file_memory(dir.path(), "org/calc"), "org/calc").await;
}

#[tokio::test]
async fn the_postgres_backend_keeps_the_contract() {
    let Some(db) = postgres::database("contract").await else {
        return;
    };
    contract(&pg(&db).await, "org/calc").await;
}

#[tokio::test]
async fn the_file_backend_keeps_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    contract(&file_memory(dir.path(), "org/calc"), "org/calc").await;
    let store = Store::open(StoreOptions {
        dir: Some(dir.path().join("store")),
        ..StoreOptions::default()
    })
    .unwrap();
    assert_eq!(store.len(), 2, "entries are the store's YAML files");
}

#[tokio::test]
async fn parallel_writers_of_one_signature_lose_no_update() {
    let Some(db) = postgres::database("parallel").await else {
        return;
    };
    let memory = Arc::new(pg(&db).await);
    let one = mean_failure("test_mean");
    let writers = (0..8).map(|writer| {
        let memory = memory.clone();
        let one = one.clone();
        tokio::spawn(async move {
            for n in 0..25 {
                let change = Change::Outcome {
                    fix: fmt_fix(),
                    cured: n % 5 != 0,
                };
                let id = format!("w{writer}/{n}");
                memory
                    .record(&learned(&id, "org/calc", &one, change))
                    .await
                    .unwrap();
                let seen = learned(&format!("{id}/seen"), "org/calc", &one, Change::Seen);
                memory.record(&seen).await.unwrap();
            }
        })
    });
    for writer in futures::future::join_all(writers).await {
        writer.unwrap();
    }
    let exported = memory.export().await.unwrap();
    let entry = &exported[0].entry;
    assert_eq!(entry.occurrences, 200);
    let outcomes = entry.resolutions[0].outcomes;
    assert_eq!(
        (outcomes.applied, outcomes.succeeded, outcomes.failed),
        (200, 160, 40)
    );
}

fn stored(repository: &str, signature: &Signature, fix: Fix, reviewed: bool) -> StoredEntry {
    let mut entry = meta_agent::hindsight::store::Entry::new(signature, at(0));
    let mut resolution = meta_agent::hindsight::store::Resolution::new(fix);
    for _ in 0..5 {
        resolution.outcomes.record(true, at(1));
    }
    let id = resolution.id.clone();
    entry.add_resolution(resolution);
    StoredEntry {
        repository: repository.into(),
        family: meta_agent::hindsight::signature::family_key(signature.kind, &signature.template),
        entry,
        reviewed: if reviewed {
            BTreeSet::from([id])
        } else {
            BTreeSet::new()
        },
    }
}

async fn run_memory(db: &TestDb, dir: &Path, settings: MemorySettings) -> RunMemory {
    let env = vec![(settings::DATABASE_URL_ENV.to_owned(), db.url.clone())];
    RunMemory::open(OpenMemory {
        settings: &settings,
        env: &env,
        repo_root: dir,
        memory_dir: dir.join("memory"),
        store: StoreOptions::default(),
        repository: "org/calc".into(),
        reviewed: Vec::new(),
        redactor: Arc::new(Redactor::default()),
        summarizer: Summarizer::Extractive,
    })
    .await
}

#[tokio::test]
async fn this_repository_comes_first_then_the_organisations_reviewed_entries() {
    let Some(db) = postgres::database("recall_order").await else {
        return;
    };
    let memory = pg(&db).await;
    let mine = mean_failure("test_mean");
    let guidance = |text: &str| Fix::Guidance(text.into());
    let command = |line: &str| Fix::Command(CommandLine::Shell(line.into()));
    memory
        .import(&[
            stored("org/calc", &mine, command("own reviewed"), true),
            stored("org/other", &mine, command("their reviewed"), true),
            stored(
                "org/other",
                &mean_failure("test_sum"),
                Fix::Patch(patch_fix()),
                true,
            ),
            stored("org/third", &mine, guidance("their candidate"), false),
        ])
        .await
        .unwrap();
    let own_candidate = stored("org/calc", &mine, command("own candidate"), false);
    memory.import(&[own_candidate]).await.unwrap();

    let dir = tempfile::tempdir().unwrap();
    let run = run_memory(&db, dir.path(), MemorySettings::default()).await;
    assert!(run.shared());
    run.recall(std::slice::from_ref(&mine)).await;
    let files = Store::default();
    let applicable = run.applicable(&mine, Vec::new(), &files, at(2));
    let lines: Vec<String> = applicable
        .iter()
        .map(|r| r.resolution.fix.summary())
        .collect();
    assert_eq!(
        lines,
        ["command: own reviewed", "command: their reviewed"],
        "own first; candidates and other repositories' unreviewed entries never"
    );
    let hints = run.hints(&mine, at(2));
    assert_eq!(hints.len(), 1, "{hints:?}");
    assert!(
        hints[0]
            .starts_with("In org/other, this reviewed change cured a failure of the same family"),
        "the organisation's patch is a hint by default: {}",
        hints[0]
    );

    let mut settings = MemorySettings::default();
    settings.organisation.command = OrganisationUse::Hint;
    settings.organisation.patch = OrganisationUse::Apply;
    let run = run_memory(&db, dir.path(), settings).await;
    run.recall(std::slice::from_ref(&mine)).await;
    let lines: Vec<String> = run
        .applicable(&mine, Vec::new(), &files, at(2))
        .iter()
        .map(|r| r.resolution.fix.summary())
        .collect();
    assert_eq!(lines, ["command: own reviewed", "patch: calc.py"]);
    assert!(run.hints(&mine, at(2))[0].contains("running `their reviewed`"));
}

#[tokio::test]
async fn a_candidate_is_applied_once_approved() {
    let Some(db) = postgres::database("approve").await else {
        return;
    };
    let memory = pg(&db).await;
    let mine = mean_failure("test_mean");
    let candidate = stored("org/calc", &mine, Fix::Patch(patch_fix()), false);
    memory.import(&[candidate]).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let files = Store::default();
    let before = run_memory(&db, dir.path(), MemorySettings::default()).await;
    before.recall(std::slice::from_ref(&mine)).await;
    assert!(
        before
            .applicable(&mine, Vec::new(), &files, at(2))
            .is_empty()
    );
    memory
        .approve(&Approval {
            repository: "org/calc",
            signature: &mine.id,
            resolution: None,
            by: "alice",
        })
        .await
        .unwrap();
    let after = run_memory(&db, dir.path(), MemorySettings::default()).await;
    after.recall(std::slice::from_ref(&mine)).await;
    assert_eq!(after.applicable(&mine, Vec::new(), &files, at(2)).len(), 1);
    let client = postgres::connect(&db).await;
    let by: String = client
        .query_one("SELECT reviewed_by FROM hindsight_resolutions", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(by, "alice");
}

fn tcp_options(url: &str, password: &str, ca: Option<&str>) -> ConnectOptions {
    let settings = MemorySettings {
        ca_file: ca.map(Into::into),
        connect_timeout: Duration::from_secs(5),
        ..MemorySettings::default()
    };
    let env = vec![
        (settings::DATABASE_URL_ENV.to_owned(), url.to_owned()),
        (settings::PASSWORD_ENV.to_owned(), password.to_owned()),
    ];
    let target = settings::database_target(&settings, &env).unwrap().unwrap();
    ConnectOptions::new(
        &settings,
        target,
        Path::new("/"),
        Arc::new(Redactor::default()),
    )
}

async fn uses_tls(memory: &PgMemory) -> bool {
    memory
        .client()
        .await
        .unwrap()
        .query_one(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .await
        .unwrap()
        .get(0)
}

#[tokio::test]
async fn a_host_that_is_not_local_gets_verified_tls_by_default() {
    let Some(_) = postgres::server("tls") else {
        return;
    };
    let (url, password, ca) = postgres::tcp().expect("scripts/test.sh exports the TCP role");
    let port = url.rsplit(':').next().unwrap().split('/').next().unwrap();
    // A name that is not local (the certificate carries it), reached on loopback.
    let remote = format!(
        "host=db.meta-agent.test hostaddr=127.0.0.1 port={port} user=meta_agent dbname=meta_agent"
    );
    let memory = PgMemory::connect(tcp_options(&remote, &password, Some(&ca)))
        .await
        .unwrap();
    assert!(uses_tls(&memory).await, "TLS without asking for it");

    let unknown_ca = PgMemory::connect(tcp_options(&remote, &password, None))
        .await
        .unwrap_err();
    assert!(
        unknown_ca.to_string().contains("invalid peer certificate"),
        "the certificate is verified: {unknown_ca}"
    );
    assert!(!unknown_ca.to_string().contains(&password));

    let opted_out = format!("{remote} sslmode=disable");
    let plain = PgMemory::connect(tcp_options(&opted_out, &password, None))
        .await
        .unwrap();
    assert!(!uses_tls(&plain).await, "sslmode=disable is honoured");
}

#[tokio::test]
async fn statements_time_out_and_the_pool_is_bounded() {
    let Some(db) = postgres::database("pool").await else {
        return;
    };
    let mut options = options(&db);
    options.statement_timeout = Duration::from_millis(200);
    options.pool_size = 2;
    options.connect_timeout = Duration::from_millis(500);
    let memory = PgMemory::connect(options).await.unwrap();
    let client = memory.client().await.unwrap();
    let err = client.query("SELECT pg_sleep(2)", &[]).await.unwrap_err();
    assert_eq!(
        err.code(),
        Some(&tokio_postgres::error::SqlState::QUERY_CANCELED),
        "{err}"
    );
    let second = memory.client().await.unwrap();
    let third = memory.client().await;
    assert!(
        matches!(third, Err(MemoryError::Connect { .. })),
        "a third connection waits for one of two and times out"
    );
    assert_eq!(memory.pool().status().max_size, 2);
    drop((client, second));
    let freed = memory.client().await.unwrap();
    assert!(!freed.is_closed(), "a returned connection is reused");
}

#[tokio::test]
async fn conversations_recall_ten_messages_and_summarise_the_rest_with_the_fast_model() {
    use crate::common::mock_llm::{MockLlm, Reply};
    let Some(db) = postgres::database("conversation").await else {
        return;
    };
    let summary = "The maintainers asked for true division; two runs escalated.";
    let llm = MockLlm::start(vec![Reply::ok(serde_json::json!({
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": summary}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    }))])
    .await;
    let memory = pg(&db).await;
    let now = Timestamp::new(std::time::SystemTime::now());
    let session = SessionRecord {
        id: "s-old".into(),
        repository: "org/calc".into(),
        task: "issue #7".into(),
        state: SessionState::AwaitingGuidance,
        started: now,
        updated: now,
        outcome: Some("escalated".into()),
    };
    memory.save_session(&session).await.unwrap();
    for n in 1..=24u64 {
        let role = if n % 2 == 0 {
            Role::Bot
        } else {
            Role::Maintainer
        };
        let message = ConversationMessage {
            session: "s-old".into(),
            role,
            content: format!("note {n}"),
            tokens: 2,
            at: now,
        };
        memory.append_message(&message).await.unwrap();
    }
    let llm_settings = meta_agent::config::LlmSettings {
        provider: meta_agent::config::raw::LlmProvider::Openai,
        model: Some("big".into()),
        fast_model: Some("fast-model".into()),
        base_url: Some(llm.base_url.clone()),
        ..meta_agent::config::LlmSettings::default()
    };
    let env = vec![
        (settings::DATABASE_URL_ENV.to_owned(), db.url.clone()),
        (
            "OPENAI_API_KEY".to_owned(),
            "sk-test-key-0123456789".to_owned(),
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    let open = |summarizer| OpenMemory {
        settings: Box::leak(Box::new(MemorySettings::default())),
        env: Box::leak(env.clone().into_boxed_slice()),
        repo_root: Box::leak(dir.path().to_owned().into_boxed_path()),
        memory_dir: dir.path().join("memory"),
        store: StoreOptions::default(),
        repository: "org/calc".into(),
        reviewed: Vec::new(),
        redactor: Arc::new(Redactor::default()),
        summarizer,
    };
    let summarizer =
        meta_agent::memory::shared::summarizer(&llm_settings, &env, Arc::new(Redactor::default()));
    let run = RunMemory::open(open(summarizer)).await;
    let mut state = loop_state("s-new", Some(7));
    state.task.guidance.push("use true division".into());
    run.begin(&state).await;
    let notes = run.notes().join("\n");
    assert!(notes.contains(summary), "{notes}");
    assert!(notes.contains("14 earlier messages, summarised"), "{notes}");
    assert!(
        notes.contains("note 15") && notes.contains("note 24"),
        "{notes}"
    );
    assert!(
        !notes.contains("note 14"),
        "older ones only in the summary: {notes}"
    );
    let request = &llm.requests()[0];
    assert_eq!(request.json()["model"], "fast-model");
    assert!(
        request.body.contains("note 14\\n"),
        "the older messages go to the model"
    );
    assert!(
        !request.body.contains("note 15\\n"),
        "the recent ones do not"
    );
    let messages = memory.conversation("s-old").await.unwrap();
    assert_eq!(
        messages.len(),
        25,
        "the session awaiting guidance continues"
    );
    assert_eq!(messages[24].content, "Guidance: use true division");

    state.outcome = Some(meta_agent::protocol::records::RunOutcome::Committed);
    run.finish(&state, dir.path()).await;
    let finished = memory
        .latest_session("org/calc", "issue #7")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(finished.state, SessionState::Finished);
    assert_eq!(
        memory.conversation("s-old").await.unwrap()[25].role,
        Role::Bot
    );

    // Idle past the limit and no longer awaiting guidance: the next run starts afresh.
    let client = postgres::connect(&db).await;
    client
        .execute(
            "UPDATE agent_sessions SET updated_at = now() - interval '25 hours'",
            &[],
        )
        .await
        .unwrap();
    let later = RunMemory::open(open(Summarizer::Extractive)).await;
    later.begin(&loop_state("s-later", Some(7))).await;
    assert!(
        later.notes().is_empty(),
        "an expired session is not recalled"
    );
    assert_eq!(
        memory
            .latest_session("org/calc", "issue #7")
            .await
            .unwrap()
            .unwrap()
            .id,
        "s-later"
    );
}

fn loop_state(session: &str, issue: Option<u64>) -> meta_agent::protocol::state::LoopState {
    let mut task =
        meta_agent::protocol::task::Task::from_text("Fix the mean\nIt divides wrongly.").unwrap();
    task.issue = issue;
    meta_agent::protocol::state::LoopState::new(
        session.into(),
        task,
        "meta-agent/fix-the-mean".into(),
        "0".repeat(40),
        3,
    )
}

/// `memory import` reads `memory export` lines and plain `hindsight export` entries alike; a
/// bad line is an error naming the file and the line (blank lines counted), the rest unread.
#[test]
fn an_export_file_mixes_both_formats_and_a_bad_line_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let entry = meta_agent::hindsight::store::Entry::new(&mean_failure("test_mean"), at(0));
    let plain = serde_json::to_string(&entry).unwrap();
    let path = dir.path().join("export.jsonl");
    std::fs::write(&path, format!("{plain}\n\n")).unwrap();
    let read = meta_agent::session::memory_cli::read_export(&path, "org/calc").unwrap();
    assert_eq!(read.len(), 1);
    assert_eq!(read[0].repository, "org/calc");
    let stored = serde_json::to_string(&read[0]).unwrap();
    std::fs::write(&path, format!("{stored}\n\n{plain}\n[1, 2]\n")).unwrap();
    let error = meta_agent::session::memory_cli::read_export(&path, "org/calc").unwrap_err();
    assert!(
        matches!(&error, MemoryError::Input { line: 4, .. }),
        "{error:?}"
    );
    let text = error.to_string();
    assert!(
        text.starts_with(&format!("{}:4: not an exported entry: ", path.display())),
        "{text}"
    );
    let missing = dir.path().join("missing.jsonl");
    let error = meta_agent::session::memory_cli::read_export(&missing, "org/calc").unwrap_err();
    assert!(matches!(error, MemoryError::Io { .. }), "{error:?}");
    assert!(error.to_string().contains("missing.jsonl"), "{error}");
}

mod end_to_end {
    //! The real binary against the real server: runs that learn into the organisation's memory
    //! and use it, the trust rule across a merge, the fallback when the database is down, and
    //! the `memory` and `hindsight approve|sync` commands.

    use std::path::{Path, PathBuf};

    use serde_json::Value;

    use super::postgres::{self, TestDb};
    use crate::common::{git, meta_agent, scratch_repo};

    fn broken_calc() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/broken-calc")
    }

    /// broken-calc with its learned entries removed from the repository (kept in `saved`).
    fn without_learned_entries() -> (tempfile::TempDir, PathBuf, tempfile::TempDir) {
        let (dir, work) = scratch_repo(&broken_calc());
        let saved = tempfile::tempdir().unwrap();
        crate::common::copy_tree(&work.join(".meta-agent/hindsight/entries"), saved.path());
        git(&work, &["rm", "-q", "-r", ".meta-agent/hindsight/entries"]);
        git(&work, &["commit", "-q", "-m", "no learned entries"]);
        (dir, work, saved)
    }

    fn with_config(work: &Path, extra: &str) {
        let path = work.join(".meta-agent.yml");
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, format!("{text}{extra}")).unwrap();
        git(work, &["commit", "-q", "-am", "memory settings"]);
    }

    fn cmd(work: &Path, db: &str) -> assert_cmd::Command {
        let mut cmd = meta_agent();
        cmd.arg("--repo")
            .arg(work)
            .env("META_AGENT_DATABASE_URL", db)
            .env("GITHUB_REPOSITORY", "org/calc")
            .env_remove("PGPASSWORD");
        cmd
    }

    fn run(work: &Path, db: &str, args: &[&str]) -> (i32, Value, String) {
        let out = cmd(work, db).args(args).arg("--json").output().unwrap();
        let stdout = String::from_utf8(out.stdout).unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        let outcome = stdout
            .lines()
            .last()
            .and_then(|l| serde_json::from_str(l).ok())
            .unwrap_or_else(|| panic!("no outcome; stderr: {stderr}"));
        (out.status.code().unwrap(), outcome, stderr)
    }

    fn applied(work: &Path, session: &str) -> Vec<String> {
        let trace = work.join(format!(".git/meta-agent/sessions/{session}/trace.jsonl"));
        let text = std::fs::read_to_string(trace).unwrap();
        let mut found: Vec<String> = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|e| e["event"] == "resolution_applied")
            .map(|e| e["description"].as_str().unwrap().to_owned())
            .collect();
        found.dedup();
        found
    }

    /// The saved entries, as another repository's reviewed memory.
    fn seed_other_repository(work: &Path, db: &TestDb, saved: &Path) {
        let export = tempfile::NamedTempFile::new().unwrap();
        let mut lines = String::new();
        for entry in walkdir::WalkDir::new(saved).into_iter().flatten() {
            if entry.path().extension().is_some_and(|e| e == "yaml") {
                let text = std::fs::read_to_string(entry.path()).unwrap();
                let entry: meta_agent::hindsight::store::Entry =
                    serde_yaml::from_str(&text).unwrap();
                let reviewed: Vec<String> =
                    entry.resolutions.iter().map(|r| r.id.clone()).collect();
                let line = serde_json::json!({
                    "repository": "org/other",
                    "family": meta_agent::hindsight::signature::family_key(entry.kind, &entry.template),
                    "entry": entry,
                    "reviewed": reviewed,
                });
                lines.push_str(&format!("{line}\n"));
            }
        }
        std::fs::write(export.path(), lines).unwrap();
        let out = cmd(work, &db.url)
            .args(["memory", "import"])
            .arg(export.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&out.stdout), "imported 2 entries\n");
    }

    #[test]
    fn a_fix_reviewed_in_another_repository_cures_this_one_and_what_it_learns_stays_a_candidate_until_merged()
     {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let Some(db) = rt.block_on(postgres::database("e2e_org")) else {
            return;
        };
        let (_dir, work, saved) = without_learned_entries();
        with_config(&work, "memory:\n  organisation: {patch: apply}\n");
        seed_other_repository(&work, &db, saved.path());

        let (code, outcome, stderr) =
            run(&work, &db.url, &["run", "--text", "Make the gates pass"]);
        assert_eq!(code, 0, "{outcome:#}\n{stderr}");
        assert_eq!(outcome["outcome"], "committed");
        assert_eq!(outcome["llm_calls"], 0);
        let session = outcome["session"].as_str().unwrap();
        assert_eq!(
            applied(&work, session),
            ["command: ruff check --fix", "patch: calc.py"],
            "the organisation's reviewed patch, with no model"
        );

        let client = rt.block_on(postgres::connect(&db));
        let rows = rt
            .block_on(client.query(
                "SELECT resolution, reviewed, applied FROM hindsight_resolutions
                 WHERE repository = 'org/calc' AND fix ? 'patch'",
                &[],
            ))
            .unwrap();
        assert!(
            !rows.is_empty(),
            "the outcome is recorded for this repository"
        );
        assert!(
            rows.iter().all(|r| !r.get::<_, bool>(1)),
            "learned in an unreviewed run: candidates"
        );
        let sessions = rt
            .block_on(client.query(
                "SELECT s.state, s.outcome, count(c.id) FROM agent_sessions s
                 JOIN agent_conversations c ON c.session = s.id
                 WHERE s.repository = 'org/calc' GROUP BY s.id",
                &[],
            ))
            .unwrap();
        assert_eq!(sessions.len(), 1);
        assert_eq!(sessions[0].get::<_, String>(0), "finished");
        assert_eq!(
            sessions[0].get::<_, Option<String>>(1).as_deref(),
            Some("committed")
        );
        assert_eq!(
            sessions[0].get::<_, i64>(2),
            2,
            "the request and the outcome"
        );

        // The bot's branch is merged: the next run sees the entries on the default branch.
        let branch = outcome["branch"].as_str().unwrap().to_owned();
        git(&work, &["checkout", "-q", "main"]);
        git(&work, &["merge", "-q", "--ff-only", &branch]);
        let (code, outcome, stderr) = run(
            &work,
            &db.url,
            &["run", "--text", "Make the gates pass", "--dry-run"],
        );
        assert_eq!(code, 0, "{outcome:#}\n{stderr}");
        let rows = rt
            .block_on(client.query(
                "SELECT reviewed, reviewed_by FROM hindsight_resolutions
                 WHERE repository = 'org/calc' AND fix ? 'patch'",
                &[],
            ))
            .unwrap();
        assert!(
            rows.iter().all(|r| r.get::<_, bool>(0)),
            "merged on the default branch: reviewed"
        );
        assert_eq!(
            rows[0].get::<_, Option<String>>(1).as_deref(),
            Some("default branch")
        );
    }

    #[test]
    fn without_the_organisation_patch_policy_the_run_only_gets_a_hint() {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let Some(db) = rt.block_on(postgres::database("e2e_hint")) else {
            return;
        };
        let (_dir, work, saved) = without_learned_entries();
        seed_other_repository(&work, &db, saved.path());
        let (code, outcome, _) = run(
            &work,
            &db.url,
            &["run", "--text", "Make the gates pass", "--dry-run"],
        );
        assert_eq!(code, 4, "{outcome:#}");
        let session = outcome["session"].as_str().unwrap();
        assert_eq!(applied(&work, session), ["command: ruff check --fix"]);
    }

    #[test]
    fn with_the_database_down_the_run_goes_on_says_so_once_and_sync_writes_it_later() {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let Some(db) = rt.block_on(postgres::database("e2e_down")) else {
            return;
        };
        let (_dir, work) = scratch_repo(&broken_calc());
        let password = "DownCanary-pw-0123456789";
        let dead = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let port = listener.local_addr().unwrap().port();
            format!("postgres://bot:{password}@127.0.0.1:{port}/memory?connect_timeout=2")
        };
        let out_dir = tempfile::tempdir().unwrap();
        let out = cmd(&work, &dead)
            .args(["run", "--text", "Make the gates pass", "--json", "--out"])
            .arg(out_dir.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
        assert_eq!(
            stderr
                .matches("this run continues on the file store")
                .count(),
            1,
            "said once: {stderr}"
        );
        assert!(!stderr.contains(password) && !stdout.contains(password));
        for file in walkdir::WalkDir::new(work.join(".git/meta-agent"))
            .into_iter()
            .flatten()
        {
            if file.file_type().is_file() {
                let text = std::fs::read(file.path()).unwrap();
                assert!(
                    !String::from_utf8_lossy(&text).contains(password),
                    "{}",
                    file.path().display()
                );
            }
        }
        let queue = out_dir.path().join("memory-pending.jsonl");
        let queued = std::fs::read_to_string(&queue).unwrap();
        assert!(queued.lines().count() >= 3, "{queued}");
        assert!(queued.contains("\"change\":\"outcome\""), "{queued}");

        let synced = cmd(&work, &db.url)
            .args(["hindsight", "sync"])
            .arg(out_dir.path())
            .output()
            .unwrap();
        assert!(
            synced.status.success(),
            "{}",
            String::from_utf8_lossy(&synced.stderr)
        );
        let text = String::from_utf8_lossy(&synced.stdout);
        assert!(text.starts_with("synced 1 queue file(s)"), "{text}");
        assert!(!queue.exists(), "a written queue is removed");
        let client = rt.block_on(postgres::connect(&db));
        let row = rt
            .block_on(client.query_one(
                "SELECT count(*), sum(occurrences)::bigint FROM hindsight_entries WHERE repository = 'org/calc'",
                &[],
            ))
            .unwrap();
        assert!(row.get::<_, i64>(0) >= 2, "the run's lessons arrived");
        std::fs::write(&queue, &queued).unwrap();
        let again = cmd(&work, &db.url)
            .args(["hindsight", "sync"])
            .arg(&queue)
            .output()
            .unwrap();
        assert!(
            String::from_utf8_lossy(&again.stdout).contains(" 0 written"),
            "a replayed queue counts nothing twice: {}",
            String::from_utf8_lossy(&again.stdout)
        );
        let after = rt
            .block_on(client.query_one(
                "SELECT count(*), sum(occurrences)::bigint FROM hindsight_entries WHERE repository = 'org/calc'",
                &[],
            ))
            .unwrap();
        assert_eq!(after.get::<_, i64>(1), row.get::<_, i64>(1));
    }

    fn output(cmd: &mut assert_cmd::Command) -> (i32, String, String) {
        let out = cmd.output().unwrap();
        (
            out.status.code().unwrap(),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    }

    #[test]
    fn memory_commands_migrate_report_export_import_and_approve() {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let Some(db) = rt.block_on(postgres::database("e2e_cli")) else {
            return;
        };
        let (_dir, work) = scratch_repo(&broken_calc());
        let (code, out, err) = output(cmd(&work, &db.url).args(["memory", "migrate"]));
        assert_eq!(code, 0, "{err}");
        assert!(
            out.contains("applied migration(s) 1, 2 (schema version 2)"),
            "{out}"
        );
        let (_, again, _) = output(cmd(&work, &db.url).args(["memory", "migrate"]));
        assert!(
            again.contains("schema is up to date (version 2)"),
            "{again}"
        );

        let export = work.parent().unwrap().join("files.jsonl");
        let (code, out, err) = output(
            cmd(&work, &db.url)
                .args(["memory", "export", "--files", "-o"])
                .arg(&export),
        );
        assert_eq!(code, 0, "{err}");
        assert!(out.starts_with("exported 2 entries to "), "{out}");
        let (code, out, err) = output(cmd(&work, &db.url).args(["memory", "import"]).arg(&export));
        assert_eq!((code, out.as_str()), (0, "imported 2 entries\n"), "{err}");

        let (code, out, err) = output(cmd(&work, &db.url).args(["memory", "status", "--json"]));
        assert_eq!(code, 0, "{err}");
        let status: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(status["backend"], "postgres");
        assert_eq!(status["entries"], 2);
        assert_eq!(status["reviewed"], 0);
        assert_eq!(status["schema_version"], 2);
        assert!(status["location"].as_str().unwrap().ends_with(&db.name));

        let (_, exported, _) = output(cmd(&work, &db.url).args(["memory", "export"]));
        let rows: Vec<Value> = exported
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(rows.len(), 2);
        assert!(rows.iter().all(|r| r["repository"] == "org/calc"));

        let (code, out, err) =
            output(cmd(&work, &db.url).args(["hindsight", "approve", "4253", "--by", "tester"]));
        assert_eq!(code, 0, "{err}");
        assert_eq!(
            out,
            "approved 4253c1defa546be7 38e62ffa54764c53 (org/calc, by tester)\n"
        );
        let (code, _, err) = output(cmd(&work, &db.url).args(["hindsight", "approve", "4253"]));
        assert_eq!(code, 2, "nothing left to approve is the user's to know");
        assert!(err.contains("no candidate resolution left"), "{err}");
    }

    #[test]
    fn a_password_in_memory_url_is_refused_and_never_shown() {
        let (_dir, work) = scratch_repo(&broken_calc());
        with_config(
            &work,
            "memory:\n  url: postgres://bot:FilePw-0123456789@db.example.com/memory\n",
        );
        let (code, out, err) = output(
            meta_agent()
                .arg("--repo")
                .arg(&work)
                .args(["config", "check"]),
        );
        assert_eq!(code, 2, "{out}");
        assert!(
            err.contains("memory.url") && err.contains("PGPASSWORD"),
            "{err}"
        );
        assert!(!err.contains("FilePw") && !out.contains("FilePw"));
    }

    #[test]
    fn memory_commands_fail_loudly_without_a_usable_database() {
        let (_dir, work) = scratch_repo(&broken_calc());
        let password = "DeadPw-0123456789";
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let dead = format!("postgres://bot:{password}@127.0.0.1:{port}/memory?connect_timeout=2");
        let (code, out, err) = output(cmd(&work, &dead).args(["memory", "status"]));
        assert_eq!(code, 3, "{out}");
        assert!(
            err.contains(&format!(
                "cannot reach the memory database at 127.0.0.1:{port}/memory"
            )),
            "{err}"
        );
        assert!(!err.contains(password) && !out.contains(password));
        let (code, _, err) = output(
            meta_agent()
                .arg("--repo")
                .arg(&work)
                .env_remove("META_AGENT_DATABASE_URL")
                .args(["hindsight", "sync"]),
        );
        assert_eq!(code, 2);
        assert!(
            err.contains("nothing to sync to: no database is configured"),
            "{err}"
        );
    }

    #[test]
    fn without_a_database_an_approval_in_this_clone_lets_a_learned_patch_apply() {
        let (_dir, work, saved) = without_learned_entries();
        git(&work, &["checkout", "-q", "-b", "feature"]);
        crate::common::copy_tree(saved.path(), &work.join(".meta-agent/hindsight/entries"));
        git(&work, &["add", "-A"]);
        git(
            &work,
            &["commit", "-q", "-m", "entries learned by an unreviewed run"],
        );
        let plain = |args: &[&str]| {
            let mut cmd = meta_agent();
            cmd.arg("--repo")
                .arg(&work)
                .env_remove("META_AGENT_DATABASE_URL")
                .args(args);
            cmd
        };
        let (code, _, _) = output(&mut plain(&[
            "run",
            "--text",
            "Make the gates pass",
            "--dry-run",
        ]));
        assert_eq!(code, 4, "unreviewed: not applied");
        git(&work, &["checkout", "-q", "--", "."]);
        let (code, out, err) = output(&mut plain(&["hindsight", "approve", "4253"]));
        assert_eq!(code, 0, "{err}");
        assert!(
            out.starts_with("approved 4253c1defa546be7 38e62ffa54764c53"),
            "{out}"
        );
        let (code, out, err) = output(&mut plain(&["hindsight", "approve", "147a"]));
        assert_eq!(code, 0, "{out}{err}");
        let (code, stdout, stderr) = output(&mut plain(&[
            "run",
            "--text",
            "Make the gates pass",
            "--dry-run",
            "--json",
        ]));
        assert_eq!(code, 0, "approved: applied\n{stdout}\n{stderr}");
    }
}
