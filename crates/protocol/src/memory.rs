//! What the shared memory reports of itself ([`MemoryStatus`]): its backend, where it is, its
//! schema and its counts. The memory fills it; the renderers show it.

use serde::Serialize;

/// What `meta-agent memory status` reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryStatus {
    /// `files` or `postgres`.
    pub backend: &'static str,
    /// Where: a directory, or `host:port/dbname` (never credentials).
    pub location: String,
    /// Applied schema version and the newest this binary knows (PostgreSQL).
    pub schema_version: Option<i32>,
    pub known_version: Option<i32>,
    pub entries: u64,
    pub resolutions: u64,
    pub reviewed: u64,
    pub repositories: u64,
    pub sessions: u64,
    pub messages: u64,
}
