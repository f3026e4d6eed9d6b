//! The file backend: one YAML file per entry under `<dir>/entries/<first 2 hex>/<id>.yaml`.
//!
//! Every file is reached through [`StoreDir`]: beneath a trusted anchor, never through a link,
//! regular files only. Loading skips and reports corrupt files by name instead of failing. Writes are atomic (a
//! temporary file in the same directory, fsync, rename, fsync of the directory), and a
//! read-modify-write of an entry happens under an exclusive advisory lock on `<dir>/.lock`, so two
//! processes writing at once lose no update. A corrupt file is never overwritten: reading it for an
//! update is an error naming it. This module knows nothing about ranking or the catalog.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::StoreError;
use super::cache::{self, LoadCache};
pub use super::dir::StoreDir;
use super::entry::Entry;

const ENTRIES_DIR: &str = "entries";
const LOCK_FILE: &str = ".lock";
const GITIGNORE: &str = "# written by meta-agent: lock and temporary files are not history\n/.lock\n/.cache.jsonl\n.tmp*\n";

/// Why an entry file is unusable.
#[derive(Debug, thiserror::Error)]
pub enum EntryError {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    File(#[from] meta_agent_fsafe::FsError),
    #[error("not UTF-8: {0}")]
    Utf8(#[from] std::string::FromUtf8Error),
    #[error(transparent)]
    Yaml(#[from] serde_yaml::Error),
    #[error("signature {0:?} is not a hex id")]
    BadId(String),
    #[error("holds signature {signature} but that belongs in {}", belongs.display())]
    Misplaced { signature: String, belongs: PathBuf },
    #[error("resolution {id} does not match its content (its id is {actual})")]
    ResolutionId { id: String, actual: String },
    #[error("the reader thread panicked")]
    ReaderPanicked,
}

pub use meta_agent_protocol::signature::SkippedFile;

/// What a load found.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct LoadReport {
    pub loaded: usize,
    pub skipped: Vec<SkippedFile>,
}

/// Whether `id` is safe to use as a file name: 2 to 64 lowercase hex digits.
pub fn valid_id(id: &str) -> bool {
    (2..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Where the entry for `id` lives.
pub fn entry_path(dir: &Path, id: &str) -> PathBuf {
    let shard = id.get(..2).unwrap_or(id);
    dir.join(ENTRIES_DIR).join(shard).join(format!("{id}.yaml"))
}

/// Loads every entry file under `dir` (a missing directory is an empty store). With
/// `use_cache`, unchanged files come from the derived [`cache`] and the cache is
/// refreshed afterwards when the store's `.gitignore` ignores it (best effort: a cache that
/// cannot be written is simply not written).
pub fn load_dir(dir: &StoreDir, use_cache: bool) -> Result<(Vec<Entry>, LoadReport), StoreError> {
    let root = dir.path().join(ENTRIES_DIR);
    let mut report = LoadReport::default();
    if !dir.is_dir(&root) {
        return Ok((Vec::new(), report));
    }
    let paths = entry_files(&root, &mut report);
    let cache = if use_cache {
        LoadCache::read(dir)
    } else {
        LoadCache::default()
    };
    let mut loaded = Vec::new();
    for (path, read) in paths.iter().zip(read_all(dir, &paths, &cache)) {
        match read {
            Ok(file) => loaded.push((path.as_path(), file)),
            Err(reason) => report.skipped.push(SkippedFile {
                path: path.clone(),
                reason: reason.to_string(),
            }),
        }
    }
    let stale = loaded.iter().any(|(_, f)| !f.from_cache) || loaded.len() != cache.len();
    if use_cache && stale {
        let rows: Vec<(&Path, &str, &Entry)> = loaded
            .iter()
            .map(|(p, f)| (*p, f.hash.as_str(), &f.entry))
            .collect();
        if cache_is_ignored(dir) {
            let _best_effort = cache::write(dir, &rows);
        }
    }
    let mut entries: Vec<Entry> = loaded.into_iter().map(|(_, f)| f.entry).collect();
    entries.sort_by(|a, b| a.signature.cmp(&b.signature));
    report.loaded = entries.len();
    Ok((entries, report))
}

/// Whether the store's `.gitignore` (written with the first entry) keeps the cache out of git.
/// A load never creates files that git would pick up.
fn cache_is_ignored(dir: &StoreDir) -> bool {
    dir.read(&dir.path().join(".gitignore")).is_ok_and(|bytes| {
        String::from_utf8_lossy(&bytes)
            .lines()
            .any(|l| l.trim() == "/.cache.jsonl")
    })
}

/// One usable entry file.
struct FileRead {
    entry: Entry,
    hash: String,
    from_cache: bool,
}

/// Reads `paths` in order, on as many threads as there are cores (parsing YAML dominates).
fn read_all(
    dir: &StoreDir,
    paths: &[PathBuf],
    cache: &LoadCache,
) -> Vec<Result<FileRead, EntryError>> {
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let chunk = paths.len().div_ceil(threads).max(256);
    std::thread::scope(|scope| {
        let workers: Vec<_> = paths
            .chunks(chunk)
            .map(|part| {
                let worker = scope.spawn(move || {
                    part.iter()
                        .map(|p| read_file(dir, p, cache))
                        .collect::<Vec<_>>()
                });
                (part.len(), worker)
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|(len, worker)| {
                worker
                    .join()
                    .unwrap_or_else(|_| (0..len).map(|_| Err(EntryError::ReaderPanicked)).collect())
            })
            .collect()
    })
}

/// One entry file, from the cache when its bytes are unchanged.
fn read_file(dir: &StoreDir, path: &Path, cache: &LoadCache) -> Result<FileRead, EntryError> {
    let bytes = dir.read(path)?;
    let hash = cache::content_hash(&bytes);
    if let Some(entry) = cache.get(path, &hash) {
        return Ok(FileRead {
            entry: entry.clone(),
            hash,
            from_cache: true,
        });
    }
    let text = String::from_utf8(bytes)?;
    let entry = parse_entry(dir.path(), path, &text)?;
    Ok(FileRead {
        entry,
        hash,
        from_cache: false,
    })
}

fn entry_files(root: &Path, report: &mut LoadReport) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for item in walkdir::WalkDir::new(root).sort_by_file_name() {
        match item {
            Ok(item) if item.file_type().is_file() && is_entry_file(item.path()) => {
                files.push(item.into_path());
            }
            Ok(_) => {}
            Err(e) => report.skipped.push(SkippedFile {
                path: e.path().map_or_else(|| root.to_owned(), Path::to_owned),
                reason: e.to_string(),
            }),
        }
    }
    files
}

fn is_entry_file(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "yaml")
        && !path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.'))
}

/// Reads and checks one entry file; the error is the reason it is unusable.
fn read_entry(dir: &StoreDir, path: &Path) -> Result<Entry, EntryError> {
    let text = String::from_utf8(dir.read(path)?)?;
    parse_entry(dir.path(), path, &text)
}

fn parse_entry(dir: &Path, path: &Path, text: &str) -> Result<Entry, EntryError> {
    let mut entry: Entry = serde_yaml::from_str(text)?;
    check_entry(dir, path, &entry)?;
    entry.normalize();
    Ok(entry)
}

fn check_entry(dir: &Path, path: &Path, entry: &Entry) -> Result<(), EntryError> {
    if !valid_id(&entry.signature) {
        return Err(EntryError::BadId(entry.signature.clone()));
    }
    let belongs = entry_path(dir, &entry.signature);
    if belongs != path {
        return Err(EntryError::Misplaced {
            signature: entry.signature.clone(),
            belongs,
        });
    }
    for resolution in &entry.resolutions {
        let actual = resolution.fix.id();
        if resolution.id != actual {
            return Err(EntryError::ResolutionId {
                id: resolution.id.clone(),
                actual,
            });
        }
    }
    Ok(())
}

/// The current on-disk entry for `id`, if any. A file that exists but cannot be used is
/// [`StoreError::Corrupt`]: the caller must not overwrite it.
pub fn read_current(dir: &StoreDir, id: &str) -> Result<Option<Entry>, StoreError> {
    let path = entry_path(dir.path(), id);
    if !dir.exists(&path)? {
        return Ok(None);
    }
    read_entry(dir, &path)
        .map(Some)
        .map_err(|reason| StoreError::Corrupt { path, reason })
}

/// Writes `entry` atomically to its file.
pub fn write_entry(dir: &StoreDir, entry: &Entry) -> Result<(), StoreError> {
    let path = entry_path(dir.path(), &entry.signature);
    let text = serde_yaml::to_string(entry).map_err(|source| StoreError::Serialize {
        path: path.clone(),
        source,
    })?;
    dir.write(&path, text.as_bytes())
}

/// Replaces `path` with `bytes` durably, for files the user names (exports); the store's own
/// files go through [`StoreDir`].
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    meta_agent_fsafe::write_atomic(path, bytes, true).map_err(|source| StoreError::Io {
        path: path.to_owned(),
        source,
    })
}

/// Removes the entry file for `id` (missing is fine).
pub fn remove_entry(dir: &StoreDir, id: &str) -> Result<(), StoreError> {
    dir.remove(&entry_path(dir.path(), id))
}

/// An exclusive advisory lock on the store directory, released on drop.
#[derive(Debug)]
pub struct StoreLock {
    _file: File,
}

impl StoreLock {
    /// Blocks until this process holds the store's lock. Creates the directory (with a
    /// `.gitignore` for the lock and temporary files) on first use.
    pub fn acquire(dir: &StoreDir) -> Result<StoreLock, StoreError> {
        let path = dir.path().join(LOCK_FILE);
        dir.create()?;
        ensure_gitignore(dir)?;
        let file = dir.lock_file(&path)?;
        file.lock()
            .map_err(|source| StoreError::Io { path, source })?;
        Ok(StoreLock { _file: file })
    }
}

fn ensure_gitignore(dir: &StoreDir) -> Result<(), StoreError> {
    let path = dir.path().join(".gitignore");
    if dir.exists(&path)? {
        return Ok(());
    }
    dir.write(&path, GITIGNORE.as_bytes())
}
