//! The file backend: the repository's hindsight store as today (one YAML file per signature,
//! reviewed through the pull request that adds it), plus what the files cannot say themselves,
//! kept outside the worktree under `.git/meta-agent/memory/`: which resolutions are reviewed
//! (`reviewed.jsonl`: seen on the default branch, or approved), the ids of the writes applied
//! (`writes.log`, so a replayed journal counts nothing twice), sessions and conversations
//! (`sessions/<id>.json`, `sessions/<id>.jsonl`).
//!
//! It holds one repository's memory; a query for another repository sees only reviewed
//! resolutions. Every write happens under an exclusive lock on `memory/.lock` (entries also
//! under the store's own lock) and passes the store's redactor.

use std::collections::{BTreeSet, HashMap};
use std::fs::{self, File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use super::{
    Approval, Change, ClaimedNow, ConversationMessage, Learned, MemoryBackend, MemoryError,
    MemoryStatus, RecallQuery, Recorded, ReviewedFix, SessionRecord, StoredEntry,
};
use meta_agent_hindsight::signature::family_key;
use meta_agent_hindsight::store::{Entry, Store, StoreOptions};
use meta_agent_hindsight::{Signature, SignatureKind};

const REVIEWED: &str = "reviewed.jsonl";
const WRITES: &str = "writes.log";
const SESSIONS: &str = "sessions";
const LOCK: &str = ".lock";

/// The file backend of one repository. The store is read on the first hindsight operation,
/// so sessions and conversations cost no store load.
#[derive(Debug)]
pub struct FileMemory {
    repository: String,
    memory_dir: PathBuf,
    options: StoreOptions,
    state: Mutex<Option<Loaded>>,
}

/// The store in memory, with its family index and the reviewed set.
#[derive(Debug)]
struct Loaded {
    store: Store,
    families: HashMap<(SignatureKind, String), BTreeSet<String>>,
    reviewed: BTreeSet<ReviewedFix>,
}

impl Loaded {
    fn index(&mut self, entry_id: &str) {
        if let Some(entry) = self.store.get(entry_id) {
            let key = (entry.kind, family_key(entry.kind, &entry.template));
            self.families
                .entry(key)
                .or_default()
                .insert(entry.signature.clone());
        }
    }

    fn stored(&self, repository: &str, entry: &Entry) -> StoredEntry {
        let reviewed = entry
            .resolutions
            .iter()
            .filter(|r| {
                self.reviewed.contains(&ReviewedFix {
                    signature: entry.signature.clone(),
                    resolution: r.id.clone(),
                })
            })
            .map(|r| r.id.clone())
            .collect();
        StoredEntry {
            repository: repository.to_owned(),
            family: family_key(entry.kind, &entry.template),
            entry: entry.clone(),
            reviewed,
        }
    }
}

impl FileMemory {
    /// Opens the memory of `repository`: its store (`options.dir`, which must be set) and
    /// `memory_dir` (normally `.git/meta-agent/memory`).
    pub fn open(repository: &str, options: StoreOptions, memory_dir: &Path) -> FileMemory {
        FileMemory {
            repository: repository.to_owned(),
            memory_dir: memory_dir.to_owned(),
            options,
            state: Mutex::new(None),
        }
    }

    fn load(&self) -> Result<Loaded, MemoryError> {
        let store = Store::open(self.options.clone())?;
        let reviewed = read_lines::<ReviewedFix>(&self.memory_dir.join(REVIEWED))?
            .into_iter()
            .collect();
        let mut loaded = Loaded {
            store,
            families: HashMap::new(),
            reviewed,
        };
        let ids: Vec<String> = loaded
            .store
            .entries()
            .iter()
            .map(|e| e.signature.clone())
            .collect();
        for id in &ids {
            loaded.index(id);
        }
        Ok(loaded)
    }

    /// The resolutions marked reviewed here (approved, or seen on the default branch), without
    /// reading the store.
    pub fn approvals(&self) -> Result<Vec<ReviewedFix>, MemoryError> {
        read_lines(&self.memory_dir.join(REVIEWED))
    }

    /// The directory of sessions, reviews and applied writes.
    pub fn memory_dir(&self) -> &Path {
        &self.memory_dir
    }

    /// Runs `work` on the loaded store (loading it the first time).
    fn with_loaded<T>(
        &self,
        work: impl FnOnce(&mut Loaded) -> Result<T, MemoryError>,
    ) -> Result<T, MemoryError> {
        let mut guard: MutexGuard<'_, Option<Loaded>> = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if guard.is_none() {
            *guard = Some(self.load()?);
        }
        match guard.as_mut() {
            Some(loaded) => work(loaded),
            None => Err(MemoryError::Stored {
                what: "file store".into(),
                reason: "not loaded".into(),
            }),
        }
    }

    /// Ids of the writes applied here (`writes.log`); none when it cannot be read.
    fn applied_writes(&self) -> BTreeSet<String> {
        fs::read_to_string(self.memory_dir.join(WRITES))
            .map(|text| text.lines().map(str::to_owned).collect())
            .unwrap_or_default()
    }

    /// Appends ids to `writes.log` (under [`FileMemory::lock`]).
    fn log_writes(&self, ids: &[&str]) -> Result<(), MemoryError> {
        let log = self.memory_dir.join(WRITES);
        let io = |source| MemoryError::Io {
            path: log.clone(),
            source,
        };
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .map_err(io)?;
        for id in ids {
            writeln!(file, "{id}").map_err(io)?;
        }
        Ok(())
    }

    fn lock(&self) -> Result<File, MemoryError> {
        let path = self.memory_dir.join(LOCK);
        let io = |source| MemoryError::Io {
            path: path.clone(),
            source,
        };
        let file = meta_agent_fsafe::lock_file(&path).map_err(io)?;
        file.lock().map_err(io)?;
        Ok(file)
    }

    /// Entries matching `signature` exactly or by family, for `repository`.
    fn matching(
        &self,
        loaded: &Loaded,
        signature: &Signature,
        repository: &str,
    ) -> Vec<StoredEntry> {
        let mut ids: Vec<String> = loaded
            .store
            .get(&signature.id)
            .map(|e| e.signature.clone())
            .into_iter()
            .collect();
        let family = (
            signature.kind,
            family_key(signature.kind, &signature.template),
        );
        ids.extend(
            loaded
                .families
                .get(&family)
                .into_iter()
                .flatten()
                .filter(|id| **id != signature.id)
                .cloned(),
        );
        let own = repository == self.repository;
        ids.iter()
            .filter_map(|id| loaded.store.get(id))
            .map(|entry| loaded.stored(&self.repository, entry))
            .filter(|stored| own || !stored.reviewed.is_empty())
            .map(|mut stored| {
                if !own {
                    stored.entry = stored.reviewed_only();
                }
                stored
            })
            .collect()
    }

    fn apply(&self, learned: &Learned) -> Result<(), MemoryError> {
        self.with_loaded(|loaded| {
            let store = &mut loaded.store;
            let signature = &learned.signature;
            let at = learned.at;
            match &learned.change {
                Change::Seen => store.record_seen(std::slice::from_ref(signature), at)?,
                Change::Outcome { fix, cured } => {
                    store.record_fix_outcome(signature, fix.clone(), *cured, at)?;
                }
                Change::Patch { patch } => {
                    store.capture_patch(signature, patch.clone(), at)?;
                }
                Change::Unresolved { context } => {
                    store.record_unresolved(std::slice::from_ref(signature), context, at)?;
                }
            }
            loaded.index(&signature.id);
            Ok(())
        })
    }

    fn add_reviewed(&self, fixes: &[ReviewedFix]) -> Result<u64, MemoryError> {
        let _lock = self.lock()?;
        self.with_loaded(|loaded| {
            let fresh: Vec<ReviewedFix> = fixes
                .iter()
                .filter(|fix| !loaded.reviewed.contains(fix))
                .cloned()
                .collect();
            append_lines(&self.memory_dir.join(REVIEWED), &fresh)?;
            let changed = fresh
                .iter()
                .filter(|fix| {
                    loaded
                        .store
                        .get(&fix.signature)
                        .is_some_and(|e| e.resolution(&fix.resolution).is_some())
                })
                .count();
            loaded.reviewed.extend(fresh);
            Ok(changed as u64)
        })
    }

    fn session_path(&self, id: &str, extension: &str) -> Result<PathBuf, MemoryError> {
        let safe = !id.is_empty()
            && id.len() <= 128
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !safe {
            return Err(MemoryError::InvalidId(id.to_owned()));
        }
        Ok(self
            .memory_dir
            .join(SESSIONS)
            .join(format!("{id}.{extension}")))
    }

    fn sessions(&self) -> Result<Vec<SessionRecord>, MemoryError> {
        let dir = self.memory_dir.join(SESSIONS);
        let Ok(items) = fs::read_dir(&dir) else {
            return Ok(Vec::new());
        };
        let mut sessions = Vec::new();
        for item in items.flatten() {
            let path = item.path();
            if path.extension().is_some_and(|e| e == "json") {
                let text = read_text(&path)?;
                let session = serde_json::from_str(&text).map_err(|err| MemoryError::Input {
                    path: path.clone(),
                    line: 1,
                    reason: err.to_string(),
                })?;
                sessions.push(session);
            }
        }
        Ok(sessions)
    }
}

fn read_text(path: &Path) -> Result<String, MemoryError> {
    fs::read_to_string(path).map_err(|source| MemoryError::Io {
        path: path.to_owned(),
        source,
    })
}

/// JSON lines of `path` (a missing file is empty); a bad line is an error naming it.
fn read_lines<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>, MemoryError> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(MemoryError::Io {
                path: path.to_owned(),
                source,
            });
        }
    };
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(n, line)| {
            serde_json::from_str(line).map_err(|err| MemoryError::Input {
                path: path.to_owned(),
                line: n + 1,
                reason: err.to_string(),
            })
        })
        .collect()
}

/// Appends JSON lines to `path` (created with its directory).
fn append_lines<T: serde::Serialize>(path: &Path, items: &[T]) -> Result<(), MemoryError> {
    if items.is_empty() {
        return Ok(());
    }
    let io = |source| MemoryError::Io {
        path: path.to_owned(),
        source,
    };
    let mut text = String::new();
    for item in items {
        let line = serde_json::to_string(item).map_err(|err| MemoryError::Stored {
            what: path.display().to_string(),
            reason: err.to_string(),
        })?;
        text.push_str(&line);
        text.push('\n');
    }
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(io)?;
    }
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(io)?;
    file.write_all(text.as_bytes()).map_err(io)?;
    file.sync_data().map_err(io)
}

impl MemoryBackend for FileMemory {
    async fn recall(&self, query: &RecallQuery<'_>) -> Result<Vec<StoredEntry>, MemoryError> {
        self.with_loaded(|loaded| {
            let mut found: Vec<StoredEntry> = Vec::new();
            for signature in query.signatures {
                for stored in self.matching(loaded, signature, query.repository) {
                    if !found
                        .iter()
                        .any(|f| f.entry.signature == stored.entry.signature)
                    {
                        found.push(stored);
                    }
                }
            }
            found.truncate(query.limit);
            Ok(found)
        })
    }

    async fn record(&self, learned: &Learned) -> Result<Recorded, MemoryError> {
        let _lock = self.lock()?;
        if self.applied_writes().contains(&learned.id) {
            return Ok(Recorded::AlreadyApplied);
        }
        self.apply(learned)?;
        self.log_writes(&[learned.id.as_str()])?;
        Ok(Recorded::Applied)
    }

    async fn mark_reviewed(
        &self,
        repository: &str,
        fixes: &[ReviewedFix],
    ) -> Result<u64, MemoryError> {
        if repository != self.repository {
            return Ok(0);
        }
        self.add_reviewed(fixes)
    }

    async fn approve(&self, approval: &Approval<'_>) -> Result<Vec<ReviewedFix>, MemoryError> {
        let candidates: Vec<ReviewedFix> = self.with_loaded(|loaded| {
            let entries = loaded.store.find_prefix(approval.signature);
            let entry = match entries.as_slice() {
                [one] => *one,
                [] => {
                    return Err(MemoryError::NothingToApprove(format!(
                        "no entry matches {:?}",
                        approval.signature
                    )));
                }
                many => {
                    let ids: Vec<&str> = many.iter().map(|e| e.signature.as_str()).collect();
                    return Err(MemoryError::NothingToApprove(format!(
                        "{:?} is ambiguous: {}",
                        approval.signature,
                        ids.join(", ")
                    )));
                }
            };
            Ok(entry
                .resolutions
                .iter()
                .filter(|r| approval.resolution.is_none_or(|p| r.id.starts_with(p)))
                .map(|r| ReviewedFix {
                    signature: entry.signature.clone(),
                    resolution: r.id.clone(),
                })
                .filter(|fix| !loaded.reviewed.contains(fix))
                .collect())
        })?;
        self.add_reviewed(&candidates)?;
        Ok(candidates)
    }

    async fn export(&self) -> Result<Vec<StoredEntry>, MemoryError> {
        self.with_loaded(|loaded| {
            let mut entries: Vec<StoredEntry> = loaded
                .store
                .entries()
                .iter()
                .map(|entry| loaded.stored(&self.repository, entry))
                .collect();
            entries.sort_by(|a, b| a.entry.signature.cmp(&b.entry.signature));
            Ok(entries)
        })
    }

    async fn import(&self, entries: &[StoredEntry]) -> Result<u64, MemoryError> {
        let lock = self.lock()?;
        let mut applied = self.applied_writes();
        let mut reviewed = Vec::new();
        for stored in entries {
            let claims = stored.import_claims();
            let fresh = ClaimedNow {
                entry: applied.insert(claims.entry.clone()),
                resolutions: claims
                    .resolutions
                    .iter()
                    .map(|id| applied.insert(id.clone()))
                    .collect(),
            };
            let stored = stored.unclaimed(&fresh);
            self.with_loaded(|loaded| {
                loaded.store.merge_entry(&stored.entry)?;
                loaded.index(&stored.entry.signature);
                Ok(())
            })?;
            reviewed.extend(stored.reviewed.iter().map(|id| ReviewedFix {
                signature: stored.entry.signature.clone(),
                resolution: id.clone(),
            }));
            let new: Vec<&str> = std::iter::once(&claims.entry)
                .chain(&claims.resolutions)
                .zip(std::iter::once(fresh.entry).chain(fresh.resolutions))
                .filter_map(|(id, fresh)| fresh.then_some(id.as_str()))
                .collect();
            self.log_writes(&new)?;
        }
        drop(lock);
        self.add_reviewed(&reviewed)?;
        Ok(entries.len() as u64)
    }

    async fn save_session(&self, session: &SessionRecord) -> Result<(), MemoryError> {
        let path = self.session_path(&session.id, "json")?;
        let _lock = self.lock()?;
        let text = serde_json::to_string_pretty(session).map_err(|err| MemoryError::Stored {
            what: "session".into(),
            reason: err.to_string(),
        })?;
        meta_agent_hindsight::store::files::write_atomic(&path, text.as_bytes())?;
        Ok(())
    }

    async fn latest_session(
        &self,
        repository: &str,
        task: &str,
    ) -> Result<Option<SessionRecord>, MemoryError> {
        Ok(self
            .sessions()?
            .into_iter()
            .filter(|s| s.repository == repository && s.task == task)
            .max_by(|a, b| a.updated.cmp(&b.updated).then(a.id.cmp(&b.id))))
    }

    async fn append_message(&self, message: &ConversationMessage) -> Result<(), MemoryError> {
        let path = self.session_path(&message.session, "jsonl")?;
        let _lock = self.lock()?;
        append_lines(&path, std::slice::from_ref(message))
    }

    async fn conversation(&self, session: &str) -> Result<Vec<ConversationMessage>, MemoryError> {
        read_lines(&self.session_path(session, "jsonl")?)
    }

    async fn status(&self) -> Result<MemoryStatus, MemoryError> {
        let (entries, resolutions, reviewed) = self.with_loaded(|loaded| {
            let resolutions: usize = loaded
                .store
                .entries()
                .iter()
                .map(|e| e.resolutions.len())
                .sum();
            Ok((loaded.store.len(), resolutions, loaded.reviewed.len()))
        })?;
        let sessions = self.sessions()?;
        let mut messages = 0u64;
        for session in &sessions {
            messages += self.conversation(&session.id).await?.len() as u64;
        }
        let location = self
            .options
            .dir
            .as_ref()
            .map_or_else(String::new, |d| d.display().to_string());
        Ok(MemoryStatus {
            backend: "files",
            location,
            schema_version: None,
            known_version: None,
            entries: entries as u64,
            resolutions: resolutions as u64,
            reviewed: reviewed as u64,
            repositories: u64::from(entries > 0),
            sessions: sessions.len() as u64,
            messages,
        })
    }
}
