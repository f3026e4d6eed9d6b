//! Agent sessions and their conversations in PostgreSQL, and the status counts.

use std::time::SystemTime;

use tokio_postgres::{Client, Row};

use super::migrate;
use crate::{ConversationMessage, MemoryError, MemoryStatus, Role, SessionRecord, SessionState};
use meta_agent_hindsight::store::Timestamp;

const SAVE: &str = "INSERT INTO agent_sessions
        (id, repository, task, state, started_at, updated_at, outcome)
    VALUES ($1, $2, $3, $4, $5, $6, $7)
    ON CONFLICT (id) DO UPDATE SET
        task = EXCLUDED.task,
        state = EXCLUDED.state,
        updated_at = GREATEST(agent_sessions.updated_at, EXCLUDED.updated_at),
        outcome = COALESCE(EXCLUDED.outcome, agent_sessions.outcome)";

/// Creates or updates a session.
pub async fn save(client: &Client, session: &SessionRecord) -> Result<(), MemoryError> {
    client
        .execute(
            SAVE,
            &[
                &session.id,
                &session.repository,
                &session.task,
                &session.state.as_str(),
                &session.started.system_time(),
                &session.updated.system_time(),
                &session.outcome,
            ],
        )
        .await?;
    Ok(())
}

/// The most recently updated session of a task.
pub async fn latest(
    client: &Client,
    repository: &str,
    task: &str,
) -> Result<Option<SessionRecord>, MemoryError> {
    let row = client
        .query_opt(
            "SELECT id, repository, task, state, started_at, updated_at, outcome
             FROM agent_sessions WHERE repository = $1 AND task = $2
             ORDER BY updated_at DESC, id DESC LIMIT 1",
            &[&repository, &task],
        )
        .await?;
    row.as_ref().map(session_of).transpose()
}

fn session_of(row: &Row) -> Result<SessionRecord, MemoryError> {
    let state: String = row.get(3);
    Ok(SessionRecord {
        id: row.get(0),
        repository: row.get(1),
        task: row.get(2),
        state: SessionState::parse(&state).ok_or_else(|| MemoryError::Stored {
            what: "session state".into(),
            reason: format!("unknown state {state:?}"),
        })?,
        started: Timestamp::new(row.get::<_, SystemTime>(4)),
        updated: Timestamp::new(row.get::<_, SystemTime>(5)),
        outcome: row.get(6),
    })
}

/// Appends one message.
pub async fn append(client: &Client, message: &ConversationMessage) -> Result<(), MemoryError> {
    let tokens = i32::try_from(message.tokens).unwrap_or(i32::MAX);
    client
        .execute(
            "INSERT INTO agent_conversations (session, role, content, tokens, created_at)
             VALUES ($1, $2, $3, $4, $5)",
            &[
                &message.session,
                &message.role.as_str(),
                &message.content,
                &tokens,
                &message.at.system_time(),
            ],
        )
        .await?;
    Ok(())
}

/// A session's messages, oldest first.
pub async fn conversation(
    client: &Client,
    session: &str,
) -> Result<Vec<ConversationMessage>, MemoryError> {
    let rows = client
        .query(
            "SELECT session, role, content, tokens, created_at FROM agent_conversations
             WHERE session = $1 ORDER BY id",
            &[&session],
        )
        .await?;
    rows.iter()
        .map(|row| {
            let role: String = row.get(1);
            Ok(ConversationMessage {
                session: row.get(0),
                role: Role::parse(&role).ok_or_else(|| MemoryError::Stored {
                    what: "message role".into(),
                    reason: format!("unknown role {role:?}"),
                })?,
                content: row.get(2),
                tokens: u32::try_from(row.get::<_, i32>(3)).unwrap_or(0),
                at: Timestamp::new(row.get::<_, SystemTime>(4)),
            })
        })
        .collect()
}

const COUNTS: &str = "SELECT
    (SELECT count(*) FROM hindsight_entries),
    (SELECT count(*) FROM hindsight_resolutions),
    (SELECT count(*) FROM hindsight_resolutions WHERE reviewed),
    (SELECT count(DISTINCT repository) FROM hindsight_entries),
    (SELECT count(*) FROM agent_sessions),
    (SELECT count(*) FROM agent_conversations)";

/// Counts, the schema version and where the database is.
pub async fn status(client: &Client, location: &str) -> Result<MemoryStatus, MemoryError> {
    let version = migrate::current_version(client).await?;
    let counts = if version >= migrate::known_version() {
        let row = client.query_one(COUNTS, &[]).await?;
        (0..6)
            .map(|i| u64::try_from(row.get::<_, i64>(i)).unwrap_or(0))
            .collect()
    } else {
        vec![0; 6]
    };
    Ok(MemoryStatus {
        backend: "postgres",
        location: location.to_owned(),
        schema_version: Some(version),
        known_version: Some(migrate::known_version()),
        entries: counts[0],
        resolutions: counts[1],
        reviewed: counts[2],
        repositories: counts[3],
        sessions: counts[4],
        messages: counts[5],
    })
}
