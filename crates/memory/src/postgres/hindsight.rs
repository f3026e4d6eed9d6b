//! Hindsight in PostgreSQL: recall (exact, then family; this repository's entries, then the
//! organisation's reviewed ones), one transaction per learned change with counts incremented
//! in SQL (so concurrent writers lose nothing), reviews and approvals, export and import.

use std::collections::{BTreeMap, BTreeSet};
use std::time::SystemTime;

use tokio_postgres::{Client, Row};

use crate::{
    Approval, Change, ClaimedNow, Learned, MemoryError, RecallQuery, Recorded, ReviewedFix,
    StoredEntry,
};
use meta_agent_hindsight::SignatureKind;
use meta_agent_hindsight::signature::family_key;
use meta_agent_hindsight::store::entry::Outcomes;
use meta_agent_hindsight::store::files::valid_id;
use meta_agent_hindsight::store::{Entry, EscalationContext, Fix, Resolution, Status, Timestamp};

const ENTRY_COLUMNS: &str = "e.repository, e.signature, e.family_key, e.kind, e.template, \
    e.status, e.occurrences, e.tags, e.escalation, e.first_seen, e.last_seen";

const RECALL: &str = "WITH hits AS (
        SELECT repository, signature FROM hindsight_entries WHERE signature = ANY($1)
        UNION
        SELECT e.repository, e.signature FROM hindsight_entries e
          JOIN unnest($2::text[], $3::text[]) AS f(kind, family_key)
            ON e.kind = f.kind AND e.family_key = f.family_key
    )
    SELECT {COLUMNS} FROM hits JOIN hindsight_entries e USING (repository, signature)
    WHERE e.repository = $4 OR EXISTS (
        SELECT 1 FROM hindsight_resolutions r
        WHERE r.repository = e.repository AND r.signature = e.signature AND r.reviewed)
    ORDER BY (e.repository = $4) DESC, (e.signature = ANY($1)) DESC, e.last_seen DESC,
             e.repository, e.signature
    LIMIT $5";

const RESOLUTIONS: &str = "SELECT r.repository, r.signature, r.resolution, r.fix, r.applied,
        r.succeeded, r.failed, r.last_used, r.reviewed
    FROM hindsight_resolutions r
    JOIN unnest($1::text[], $2::text[]) AS k(repository, signature)
      ON r.repository = k.repository AND r.signature = k.signature
    WHERE r.repository = $3 OR r.reviewed
    ORDER BY r.repository, r.signature, r.resolution";

/// Entries for the query's signatures, best first: this repository's, exact before family,
/// then other repositories' (with only their reviewed resolutions).
pub async fn recall(
    client: &Client,
    query: &RecallQuery<'_>,
) -> Result<Vec<StoredEntry>, MemoryError> {
    let ids: Vec<&str> = query.signatures.iter().map(|s| s.id.as_str()).collect();
    let kinds: Vec<String> = query.signatures.iter().map(|s| kind_text(s.kind)).collect();
    let families: Vec<String> = query
        .signatures
        .iter()
        .map(|s| family_key(s.kind, &s.template))
        .collect();
    let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
    let sql = RECALL.replace("{COLUMNS}", ENTRY_COLUMNS);
    let rows = client
        .query(&sql, &[&ids, &kinds, &families, &query.repository, &limit])
        .await?;
    let mut entries = rows.iter().map(entry_of).collect::<Result<Vec<_>, _>>()?;
    attach_resolutions(client, &mut entries, query.repository).await?;
    Ok(entries)
}

/// Loads the resolutions of `entries` (all of `repository`'s, others' reviewed ones only).
async fn attach_resolutions(
    client: &Client,
    entries: &mut [StoredEntry],
    repository: &str,
) -> Result<(), MemoryError> {
    if entries.is_empty() {
        return Ok(());
    }
    let repositories: Vec<&str> = entries.iter().map(|e| e.repository.as_str()).collect();
    let signatures: Vec<&str> = entries.iter().map(|e| e.entry.signature.as_str()).collect();
    let rows = client
        .query(RESOLUTIONS, &[&repositories, &signatures, &repository])
        .await?;
    let mut by_entry: BTreeMap<(String, String), Vec<(Resolution, bool)>> = BTreeMap::new();
    for row in &rows {
        let key = (row.get::<_, String>(0), row.get::<_, String>(1));
        by_entry.entry(key).or_default().push(resolution_of(row)?);
    }
    for stored in entries.iter_mut() {
        let key = (stored.repository.clone(), stored.entry.signature.clone());
        for (resolution, reviewed) in by_entry.remove(&key).unwrap_or_default() {
            if reviewed {
                stored.reviewed.insert(resolution.id.clone());
            }
            stored.entry.add_resolution(resolution);
        }
    }
    Ok(())
}

fn entry_of(row: &Row) -> Result<StoredEntry, MemoryError> {
    let kind: String = row.get(3);
    let status: String = row.get(5);
    let occurrences: i64 = row.get(6);
    let tags: Vec<String> = row.get(7);
    let escalation: Option<serde_json::Value> = row.get(8);
    let escalation = escalation
        .map(serde_json::from_value::<EscalationContext>)
        .transpose()
        .map_err(|err| stored("escalation context", err))?;
    let family: String = row.get(2);
    Ok(StoredEntry {
        repository: row.get(0),
        entry: Entry {
            signature: row.get(1),
            kind: parse_kind(&kind)?,
            template: row.get(4),
            family: family.clone(),
            first_seen: Timestamp::new(row.get::<_, SystemTime>(9)),
            last_seen: Timestamp::new(row.get::<_, SystemTime>(10)),
            occurrences: u64::try_from(occurrences).unwrap_or(0),
            status: parse_status(&status)?,
            tags: tags.into_iter().collect(),
            resolutions: Vec::new(),
            escalation,
        },
        family,
        reviewed: BTreeSet::new(),
    })
}

fn resolution_of(row: &Row) -> Result<(Resolution, bool), MemoryError> {
    let fix: serde_json::Value = row.get(3);
    let fix: Fix = serde_json::from_value(fix).map_err(|err| stored("fix", err))?;
    let count = |index: usize| u64::try_from(row.get::<_, i64>(index)).unwrap_or(0);
    let last_used: Option<SystemTime> = row.get(7);
    let resolution = Resolution {
        id: row.get(2),
        fix,
        outcomes: Outcomes {
            applied: count(4),
            succeeded: count(5),
            failed: count(6),
            last_used: last_used.map(Timestamp::new),
        },
    };
    Ok((resolution, row.get(8)))
}

fn stored(what: &str, err: impl std::fmt::Display) -> MemoryError {
    MemoryError::Stored {
        what: what.to_owned(),
        reason: err.to_string(),
    }
}

/// The serde name of a kind (`test_failure`).
pub fn kind_text(kind: SignatureKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn parse_kind(text: &str) -> Result<SignatureKind, MemoryError> {
    serde_json::from_value(serde_json::Value::String(text.to_owned()))
        .map_err(|err| stored("signature kind", err))
}

fn parse_status(text: &str) -> Result<Status, MemoryError> {
    serde_json::from_value(serde_json::Value::String(text.to_owned()))
        .map_err(|err| stored("entry status", err))
}

const CLAIM: &str = "INSERT INTO memory_writes (id, repository) VALUES ($1, $2)
    ON CONFLICT (id) DO NOTHING";

const UPSERT_ENTRY: &str = "INSERT INTO hindsight_entries
        (repository, signature, family_key, kind, template, occurrences, first_seen, last_seen)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $7)
    ON CONFLICT (repository, signature) DO UPDATE SET
        occurrences = hindsight_entries.occurrences + EXCLUDED.occurrences,
        first_seen = LEAST(hindsight_entries.first_seen, EXCLUDED.first_seen),
        last_seen = GREATEST(hindsight_entries.last_seen, EXCLUDED.last_seen),
        updated_at = now()";

const UPSERT_RESOLUTION: &str = "INSERT INTO hindsight_resolutions
        (repository, signature, resolution, fix, applied, succeeded, failed, last_used, reviewed)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
    ON CONFLICT (repository, signature, resolution) DO UPDATE SET
        applied = hindsight_resolutions.applied + EXCLUDED.applied,
        succeeded = hindsight_resolutions.succeeded + EXCLUDED.succeeded,
        failed = hindsight_resolutions.failed + EXCLUDED.failed,
        last_used = GREATEST(hindsight_resolutions.last_used, EXCLUDED.last_used),
        reviewed = hindsight_resolutions.reviewed OR EXCLUDED.reviewed,
        updated_at = now()";

const RESOLVED: &str = "UPDATE hindsight_entries SET status = 'resolved', updated_at = now()
    WHERE repository = $1 AND signature = $2";

const ESCALATED: &str = "UPDATE hindsight_entries SET status = 'escalated', escalation = $3,
        tags = ARRAY(SELECT DISTINCT t FROM unnest(tags || $4::text[]) AS t ORDER BY t),
        updated_at = now()
    WHERE repository = $1 AND signature = $2";

/// Applies one learned change in one transaction, at most once per id. Counts are added in SQL
/// under the row lock the upsert takes, so parallel writers of one signature lose nothing.
pub async fn record(client: &mut Client, learned: &Learned) -> Result<Recorded, MemoryError> {
    let signature = &learned.signature;
    if !valid_id(&signature.id) {
        return Err(MemoryError::InvalidId(signature.id.clone()));
    }
    let tx = client.transaction().await?;
    if !claim(&tx, &learned.id, &learned.repository).await? {
        tx.rollback().await?;
        return Ok(Recorded::AlreadyApplied);
    }
    let at = learned.at.system_time();
    let seen: i64 = i64::from(matches!(learned.change, Change::Seen));
    let key = [&learned.repository, &signature.id];
    tx.execute(
        UPSERT_ENTRY,
        &[
            key[0],
            key[1],
            &learned.family(),
            &kind_text(signature.kind),
            &signature.template,
            &seen,
            &at,
        ],
    )
    .await?;
    match &learned.change {
        Change::Seen => {}
        Change::Outcome { fix, cured } => {
            let (succeeded, failed) = if *cured { (1i64, 0i64) } else { (0, 1) };
            upsert_resolution(&tx, key, fix, [1, succeeded, failed], Some(at), false).await?;
            if *cured {
                tx.execute(RESOLVED, &[key[0], key[1]]).await?;
            }
        }
        Change::Patch { patch } => {
            let fix = Fix::Patch(patch.clone());
            upsert_resolution(&tx, key, &fix, [1, 1, 0], Some(at), false).await?;
            tx.execute(RESOLVED, &[key[0], key[1]]).await?;
        }
        Change::Unresolved { context } => {
            let mut context = context.clone();
            context.at = Some(learned.at);
            let tags: Vec<&String> = context.tags.iter().collect();
            let json = serde_json::to_value(&context).map_err(|err| stored("escalation", err))?;
            tx.execute(ESCALATED, &[key[0], key[1], &json, &tags])
                .await?;
        }
    }
    tx.commit().await?;
    Ok(Recorded::Applied)
}

async fn upsert_resolution(
    tx: &tokio_postgres::Transaction<'_>,
    key: [&String; 2],
    fix: &Fix,
    counts: [i64; 3],
    last_used: Option<SystemTime>,
    reviewed: bool,
) -> Result<(), MemoryError> {
    let json = serde_json::to_value(fix).map_err(|err| stored("fix", err))?;
    tx.execute(
        UPSERT_RESOLUTION,
        &[
            key[0],
            key[1],
            &fix.id(),
            &json,
            &counts[0],
            &counts[1],
            &counts[2],
            &last_used,
            &reviewed,
        ],
    )
    .await?;
    Ok(())
}

const MARK_REVIEWED: &str = "UPDATE hindsight_resolutions r
    SET reviewed = true, reviewed_at = now(), reviewed_by = 'default branch', updated_at = now()
    FROM unnest($2::text[], $3::text[]) AS f(signature, resolution)
    WHERE r.repository = $1 AND r.signature = f.signature AND r.resolution = f.resolution
      AND NOT r.reviewed";

/// Marks resolutions of `repository` that its default branch holds as reviewed.
pub async fn mark_reviewed(
    client: &Client,
    repository: &str,
    fixes: &[ReviewedFix],
) -> Result<u64, MemoryError> {
    if fixes.is_empty() {
        return Ok(0);
    }
    let signatures: Vec<&str> = fixes.iter().map(|f| f.signature.as_str()).collect();
    let resolutions: Vec<&str> = fixes.iter().map(|f| f.resolution.as_str()).collect();
    Ok(client
        .execute(MARK_REVIEWED, &[&repository, &signatures, &resolutions])
        .await?)
}

const APPROVE: &str = "UPDATE hindsight_resolutions
    SET reviewed = true, reviewed_at = now(), reviewed_by = $4, updated_at = now()
    WHERE repository = $1 AND signature = $2 AND NOT reviewed
      AND ($3::text IS NULL OR starts_with(resolution, $3))
    RETURNING signature, resolution";

/// A maintainer's approval: the entry is found by id or unique prefix in the repository.
pub async fn approve(
    client: &Client,
    approval: &Approval<'_>,
) -> Result<Vec<ReviewedFix>, MemoryError> {
    let rows = client
        .query(
            "SELECT signature FROM hindsight_entries
             WHERE repository = $1 AND starts_with(signature, $2) ORDER BY signature LIMIT 10",
            &[&approval.repository, &approval.signature],
        )
        .await?;
    let signature: String = match rows.as_slice() {
        [one] => one.get(0),
        [] => {
            return Err(MemoryError::NothingToApprove(format!(
                "no entry of {} matches {:?}",
                approval.repository, approval.signature
            )));
        }
        many => {
            let ids: Vec<String> = many.iter().map(|r| r.get(0)).collect();
            return Err(MemoryError::NothingToApprove(format!(
                "{:?} is ambiguous: {}",
                approval.signature,
                ids.join(", ")
            )));
        }
    };
    let rows = client
        .query(
            APPROVE,
            &[
                &approval.repository,
                &signature,
                &approval.resolution,
                &approval.by,
            ],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|row| ReviewedFix {
            signature: row.get(0),
            resolution: row.get(1),
        })
        .collect())
}

/// Every entry with every resolution.
pub async fn export(client: &Client) -> Result<Vec<StoredEntry>, MemoryError> {
    let sql = format!(
        "SELECT {ENTRY_COLUMNS} FROM hindsight_entries e ORDER BY e.repository, e.signature"
    );
    let rows = client.query(&sql, &[]).await?;
    let mut entries = rows.iter().map(entry_of).collect::<Result<Vec<_>, _>>()?;
    let rows = client
        .query(
            "SELECT repository, signature, resolution, fix, applied, succeeded, failed,
                    last_used, reviewed
             FROM hindsight_resolutions ORDER BY repository, signature, resolution",
            &[],
        )
        .await?;
    let mut by_entry: BTreeMap<(String, String), Vec<(Resolution, bool)>> = BTreeMap::new();
    for row in &rows {
        let key = (row.get::<_, String>(0), row.get::<_, String>(1));
        by_entry.entry(key).or_default().push(resolution_of(row)?);
    }
    for stored in &mut entries {
        let key = (stored.repository.clone(), stored.entry.signature.clone());
        for (resolution, reviewed) in by_entry.remove(&key).unwrap_or_default() {
            if reviewed {
                stored.reviewed.insert(resolution.id.clone());
            }
            stored.entry.add_resolution(resolution);
        }
    }
    Ok(entries)
}

const MERGE_ENTRY: &str = "INSERT INTO hindsight_entries AS h
        (repository, signature, family_key, kind, template, status, occurrences, tags,
         escalation, first_seen, last_seen)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
    ON CONFLICT (repository, signature) DO UPDATE SET
        occurrences = h.occurrences + EXCLUDED.occurrences,
        first_seen = LEAST(h.first_seen, EXCLUDED.first_seen),
        last_seen = GREATEST(h.last_seen, EXCLUDED.last_seen),
        status = CASE
            WHEN array_position(ARRAY['unresolved', 'escalated', 'resolved'], EXCLUDED.status)
               > array_position(ARRAY['unresolved', 'escalated', 'resolved'], h.status)
            THEN EXCLUDED.status ELSE h.status END,
        tags = ARRAY(SELECT DISTINCT t FROM unnest(h.tags || EXCLUDED.tags) AS t ORDER BY t),
        escalation = COALESCE(EXCLUDED.escalation, h.escalation),
        updated_at = now()";

/// Merges one exported entry in one transaction: counts added, resolutions unioned, reviewed
/// flags kept. Each count is claimed in `memory_writes` by its identity in the same
/// transaction, so importing the same export again adds nothing.
pub async fn import_one(client: &mut Client, exported: &StoredEntry) -> Result<(), MemoryError> {
    if !valid_id(&exported.entry.signature) {
        return Err(MemoryError::InvalidId(exported.entry.signature.clone()));
    }
    let tx = client.transaction().await?;
    let claims = exported.import_claims();
    let mut fresh = ClaimedNow {
        entry: claim(&tx, &claims.entry, &exported.repository).await?,
        resolutions: Vec::new(),
    };
    for id in &claims.resolutions {
        fresh
            .resolutions
            .push(claim(&tx, id, &exported.repository).await?);
    }
    let exported = exported.unclaimed(&fresh);
    let entry = &exported.entry;
    let escalation = entry
        .escalation
        .as_ref()
        .map(serde_json::to_value)
        .transpose()
        .map_err(|err| stored("escalation", err))?;
    let tags: Vec<&String> = entry.tags.iter().collect();
    let occurrences = i64::try_from(entry.occurrences).unwrap_or(i64::MAX);
    tx.execute(
        MERGE_ENTRY,
        &[
            &exported.repository,
            &entry.signature,
            &family_key(entry.kind, &entry.template),
            &kind_text(entry.kind),
            &entry.template,
            &entry.status.as_str(),
            &occurrences,
            &tags,
            &escalation,
            &entry.first_seen.system_time(),
            &entry.last_seen.system_time(),
        ],
    )
    .await?;
    for resolution in &entry.resolutions {
        let o = &resolution.outcomes;
        let counts = [o.applied, o.succeeded, o.failed].map(|n| i64::try_from(n).unwrap_or(0));
        let key = [&exported.repository, &entry.signature];
        let last_used = o.last_used.map(Timestamp::system_time);
        let reviewed = exported.reviewed.contains(&resolution.id);
        upsert_resolution(&tx, key, &resolution.fix, counts, last_used, reviewed).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Records write `id` as applied; false when it was applied before.
async fn claim(
    tx: &tokio_postgres::Transaction<'_>,
    id: &str,
    repository: &str,
) -> Result<bool, MemoryError> {
    Ok(tx.execute(CLAIM, &[&id, &repository]).await? == 1)
}
