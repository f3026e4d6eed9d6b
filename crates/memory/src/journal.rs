//! The queue of what a run learned while the database was unreachable: `memory-pending.jsonl`
//! in the run's session directory (and in `--out`, so CI keeps it as an artifact), one
//! [`Learned`] a line. `meta-agent hindsight sync` replays it: each line is one transaction,
//! applied at most once by its id, and the file keeps exactly the lines not yet written.

use std::path::{Path, PathBuf};

use super::{Learned, MemoryBackend, MemoryError, Recorded};
use meta_agent_hindsight::store::files::write_atomic;

/// The queue's file name in a session directory.
pub const PENDING_FILE: &str = "memory-pending.jsonl";

/// Writes `learned` as the queue in `dir` (replacing it); returns its path.
pub fn write_pending(dir: &Path, learned: &[Learned]) -> Result<PathBuf, MemoryError> {
    let path = dir.join(PENDING_FILE);
    write_queue(&path, learned)?;
    Ok(path)
}

/// Replaces the queue file at `path` with `learned`.
fn write_queue(path: &Path, learned: &[Learned]) -> Result<(), MemoryError> {
    let mut text = String::new();
    for item in learned {
        let line = serde_json::to_string(item).map_err(|err| MemoryError::Stored {
            what: "queued lesson".into(),
            reason: err.to_string(),
        })?;
        text.push_str(&line);
        text.push('\n');
    }
    write_atomic(path, text.as_bytes())?;
    Ok(())
}

/// The queue at `path`; a line that is not a lesson is an error naming the line.
pub fn read_pending(path: &Path) -> Result<Vec<Learned>, MemoryError> {
    meta_agent_hindsight::jsonl::json_lines_of(path, |line| serde_json::from_str(line))
        .map_err(|err| MemoryError::of_lines(err, "a queued lesson"))
}

/// Queue files: `from` itself when it is a file, else every `*/memory-pending.jsonl` (and
/// `memory-pending.jsonl`) under the directory, sorted.
pub fn pending_files(from: &Path) -> Vec<PathBuf> {
    if from.is_file() {
        return vec![from.to_owned()];
    }
    let mut found: Vec<PathBuf> = walkdir::WalkDir::new(from)
        .max_depth(2)
        .into_iter()
        .flatten()
        .filter(|item| item.file_type().is_file() && item.file_name() == PENDING_FILE)
        .map(walkdir::DirEntry::into_path)
        .collect();
    found.sort();
    found
}

/// What a replay did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Replayed {
    pub applied: usize,
    /// Already written before (a replay after a lost acknowledgement).
    pub already: usize,
    /// Still queued (the database went away again).
    pub remaining: usize,
}

/// Writes `learned` in order; stops at the first failure and returns what is left.
pub async fn write_all<B: MemoryBackend>(
    backend: &B,
    learned: &[Learned],
) -> (Replayed, Vec<Learned>, Option<MemoryError>) {
    let mut done = Replayed::default();
    for (index, item) in learned.iter().enumerate() {
        match backend.record(item).await {
            Ok(Recorded::Applied) => done.applied += 1,
            Ok(Recorded::AlreadyApplied) => done.already += 1,
            Err(err) => {
                let left = learned[index..].to_vec();
                done.remaining = left.len();
                return (done, left, Some(err));
            }
        }
    }
    (done, Vec::new(), None)
}

/// Replays the queue at `path`: the file is removed once everything is written, or rewritten
/// with what is left when a write fails (the error is returned).
pub async fn replay<B: MemoryBackend>(backend: &B, path: &Path) -> Result<Replayed, MemoryError> {
    let learned = read_pending(path)?;
    let (done, left, failure) = write_all(backend, &learned).await;
    match failure {
        None => {
            std::fs::remove_file(path).map_err(|source| MemoryError::Io {
                path: path.to_owned(),
                source,
            })?;
            Ok(done)
        }
        Some(err) => {
            write_queue(path, &left)?;
            Err(err)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Change;
    use meta_agent_hindsight::store::Timestamp;
    use meta_agent_hindsight::{Signature, SignatureKind};

    #[test]
    fn the_queue_round_trips_and_a_bad_line_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let learned = Learned {
            id: "s/1/0".into(),
            repository: "org/calc".into(),
            at: Timestamp::from_unix_secs(1),
            signature: Signature {
                id: "00aa".into(),
                kind: SignatureKind::Lint,
                template: "t".into(),
            },
            change: Change::Seen,
        };
        let path = write_pending(dir.path(), std::slice::from_ref(&learned)).unwrap();
        assert_eq!(read_pending(&path).unwrap(), [learned]);
        assert_eq!(pending_files(dir.path()), std::slice::from_ref(&path));
        std::fs::write(&path, "{\"id\": 1}\n").unwrap();
        let err = read_pending(&path).unwrap_err().to_string();
        assert!(
            err.contains("memory-pending.jsonl:1: not a queued lesson"),
            "{err}"
        );
    }
}
