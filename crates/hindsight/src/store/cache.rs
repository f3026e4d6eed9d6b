//! A derived load cache, `<dir>/.cache.jsonl` (git-ignored): the parsed entries keyed by file
//! path and a hash of the file's bytes, so a load re-parses only files whose content changed.
//!
//! The entry files stay the only source of truth: a cached entry is used only when the file's
//! bytes hash to what was cached, and a missing, stale or unreadable cache is simply rebuilt.
//! A cache written by another version of meta-agent is ignored.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::StoreError;
use super::dir::StoreDir;
use super::entry::{Entry, stable_hash_bytes};

/// The cache file, relative to the store directory.
pub const CACHE_FILE: &str = ".cache.jsonl";

#[derive(Debug, Serialize, Deserialize)]
struct Header {
    meta_agent: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct Cached<E> {
    path: PathBuf,
    hash: String,
    entry: E,
}

/// Parsed entries from the last load, by entry file path.
#[derive(Debug, Default)]
pub struct LoadCache {
    entries: HashMap<PathBuf, (String, Entry)>,
}

impl LoadCache {
    /// The cache of `dir`, or an empty one when it is missing, unreadable or from another version.
    pub fn read(dir: &StoreDir) -> LoadCache {
        let Ok(bytes) = dir.read(&dir.path().join(CACHE_FILE)) else {
            return LoadCache::default();
        };
        let text = String::from_utf8_lossy(&bytes);
        let mut lines = text.lines();
        let current = lines
            .next()
            .and_then(|l| serde_json::from_str::<Header>(l).ok())
            .is_some_and(|h| h.meta_agent == env!("CARGO_PKG_VERSION"));
        if !current {
            return LoadCache::default();
        }
        let entries = lines
            .filter_map(|l| serde_json::from_str::<Cached<Entry>>(l).ok())
            .map(|c| (c.path, (c.hash, c.entry)))
            .collect();
        LoadCache { entries }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The cached entry for `path` if the file's bytes still hash to what was cached.
    pub fn get(&self, path: &Path, hash: &str) -> Option<&Entry> {
        self.entries
            .get(path)
            .filter(|(cached, _)| cached == hash)
            .map(|(_, entry)| entry)
    }
}

/// The hash a file's bytes are cached under.
pub fn content_hash(bytes: &[u8]) -> String {
    stable_hash_bytes(bytes)
}

/// Replaces the cache with `loaded`: (file path, content hash, entry) of every usable file.
pub fn write(dir: &StoreDir, loaded: &[(&Path, &str, &Entry)]) -> Result<(), StoreError> {
    let header = Header {
        meta_agent: env!("CARGO_PKG_VERSION").to_string(),
    };
    let mut text = json_line(dir.path(), &header)?;
    for (path, hash, entry) in loaded {
        let cached = Cached {
            path: path.to_path_buf(),
            hash: hash.to_string(),
            entry,
        };
        text.push_str(&json_line(dir.path(), &cached)?);
    }
    dir.write(&dir.path().join(CACHE_FILE), text.as_bytes())
}

fn json_line<T: Serialize>(dir: &Path, value: &T) -> Result<String, StoreError> {
    let mut line = serde_json::to_string(value).map_err(|e| StoreError::Io {
        path: dir.join(CACHE_FILE),
        source: std::io::Error::other(e),
    })?;
    line.push('\n');
    Ok(line)
}
