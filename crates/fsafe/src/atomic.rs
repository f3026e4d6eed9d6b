//! The one atomic file replacement by path, for files in places the bot trusts (its state
//! directory, an export the user named): a temporary file in the same directory, then a rename,
//! so a reader (or a run resumed after a kill at any instant) sees the old file or the new one,
//! never a mix. `durable` adds the fsyncs of the file and the directory (for the hindsight store,
//! which outlives the run). Inside a directory untrusted code can write, use
//! [`super::Beneath::write`] instead. Also the bot's lock files ([`lock_file`]).

use std::fs::File;
use std::io::Write;
use std::path::Path;

/// Replaces `path` with `bytes` (parents created).
pub fn write_atomic(path: &Path, bytes: &[u8], durable: bool) -> std::io::Result<()> {
    let parent = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(parent)?;
    let mut temp = tempfile::Builder::new()
        .prefix(".meta-agent-tmp")
        .tempfile_in(parent)?;
    temp.write_all(bytes)?;
    if durable {
        temp.as_file().sync_all()?;
    }
    temp.persist(path).map_err(|err| err.error)?;
    if durable {
        File::open(parent)?.sync_all()?;
    }
    Ok(())
}

/// Opens (creating it and its directory when missing, never truncating) the lock file at
/// `path` in one of the bot's own directories: the caller then locks it (`File::lock`, or
/// `File::try_lock` to learn whether another process holds it).
pub fn lock_file(path: &Path) -> std::io::Result<std::fs::File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
}
