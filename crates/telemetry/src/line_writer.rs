//! The one way the text sinks write: one serialized line at a time, redacted, written with a single
//! `write_all` and flushed, so a crash loses at most the line being written. A failure is logged
//! once as a `tracing` warning and never propagates: telemetry must not end a run.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::{Redact, TelemetryError};

/// A destination of JSON lines, shared by the sinks.
pub(crate) struct LineWriter<W> {
    /// How errors name the destination (a path, or e.g. `<stdout>`).
    destination: PathBuf,
    redactor: Arc<dyn Redact>,
    state: Mutex<Lines<W>>,
    warned: AtomicBool,
}

struct Lines<W> {
    writer: W,
    /// Lines in the destination so far, including those there before it was opened.
    count: u64,
}

impl LineWriter<File> {
    /// Opens `path` for appending (creating it and its directory), counting the lines already there.
    pub(crate) fn append_to(
        path: &Path,
        redactor: Arc<dyn Redact>,
    ) -> Result<Self, TelemetryError> {
        let open_error = |source| TelemetryError::Open {
            path: path.to_path_buf(),
            source,
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(open_error)?;
        }
        let existing = existing_lines(path).map_err(open_error)?;
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(open_error)?;
        if existing.torn {
            file.write_all(b"\n").map_err(open_error)?;
        }
        Ok(Self::with_count(
            file,
            path.to_path_buf(),
            redactor,
            existing.lines,
        ))
    }
}

impl<W: Write> LineWriter<W> {
    pub(crate) fn new(writer: W, destination: PathBuf, redactor: Arc<dyn Redact>) -> Self {
        Self::with_count(writer, destination, redactor, 0)
    }

    fn with_count(writer: W, destination: PathBuf, redactor: Arc<dyn Redact>, count: u64) -> Self {
        Self {
            destination,
            redactor,
            state: Mutex::new(Lines { writer, count }),
            warned: AtomicBool::new(false),
        }
    }

    /// Writes the line `render` makes from the 1-based number of that line; a failure is warned
    /// about once and otherwise ignored. `render` returning `None` writes nothing.
    pub(crate) fn write_line<F>(&self, render: F)
    where
        F: FnOnce(u64) -> Option<Result<String, serde_json::Error>>,
    {
        if let Err(err) = self.try_write_line(render) {
            self.warn_once(&err);
        }
    }

    fn try_write_line<F>(&self, render: F) -> Result<(), TelemetryError>
    where
        F: FnOnce(u64) -> Option<Result<String, serde_json::Error>>,
    {
        let mut lines = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(rendered) = render(lines.count + 1) else {
            return Ok(());
        };
        let line = rendered.map_err(|source| TelemetryError::Serialize {
            path: self.destination.clone(),
            source,
        })?;
        let mut redacted = self.redactor.redact(&line).into_owned();
        redacted.push('\n');
        let written = lines.writer.write_all(redacted.as_bytes());
        written
            .and_then(|()| lines.writer.flush())
            .map_err(|source| TelemetryError::Write {
                path: self.destination.clone(),
                source,
            })?;
        lines.count += 1;
        Ok(())
    }

    fn warn_once(&self, err: &TelemetryError) {
        if !self.warned.swap(true, Ordering::Relaxed) {
            tracing::warn!("telemetry: {err}; further failures of this sink are not reported");
        }
    }

    /// The destination back (for tests and for callers that own a buffer).
    pub(crate) fn into_inner(self) -> W {
        self.state
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
            .writer
    }
}

/// The lines already in a file; a last line without its newline (a write cut short by a crash)
/// counts, and is reported as torn so that the next line starts on a line of its own.
#[derive(Debug, Default, PartialEq)]
struct Existing {
    lines: u64,
    torn: bool,
}

fn existing_lines(path: &Path) -> std::io::Result<Existing> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Existing::default()),
        Err(err) => return Err(err),
    };
    // Only a regular file has lines to count (not e.g. a FIFO or `/dev/full`).
    if !file.metadata()?.is_file() {
        return Ok(Existing::default());
    }
    let mut buffer = vec![0; 64 * 1024];
    let mut existing = Existing::default();
    let mut last = b'\n';
    loop {
        let read = file.read(&mut buffer)?;
        let Some(&end) = buffer[..read].last() else {
            break;
        };
        existing.lines += memchr::memchr_iter(b'\n', &buffer[..read]).count() as u64;
        last = end;
    }
    existing.torn = last != b'\n';
    existing.lines += u64::from(existing.torn);
    Ok(existing)
}

#[cfg(test)]
mod tests {
    use std::io;

    use super::*;
    use crate::NoRedaction;

    /// Fails every write, counting the attempts.
    struct Broken(u32);

    impl Write for Broken {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            self.0 += 1;
            Err(io::Error::other("disk full"))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_failing_destination_is_tried_again_and_never_panics() {
        let writer = LineWriter::new(Broken(0), "broken".into(), Arc::new(NoRedaction));
        writer.write_line(|_| Some(Ok("one".into())));
        writer.write_line(|_| Some(Ok("two".into())));
        assert!(writer.warned.load(Ordering::Relaxed));
        assert_eq!(writer.into_inner().0, 2);
    }

    #[test]
    fn error_names_the_destination() {
        let writer = LineWriter::new(Broken(0), "/tmp/x.jsonl".into(), Arc::new(NoRedaction));
        let err = writer
            .try_write_line(|_| Some(Ok("one".into())))
            .unwrap_err();
        assert_eq!(err.to_string(), "cannot write /tmp/x.jsonl: disk full");
    }

    #[test]
    fn numbers_lines_and_continues_after_existing_ones() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/log.jsonl");
        let first = LineWriter::append_to(&path, Arc::new(NoRedaction)).unwrap();
        first.write_line(|n| Some(Ok(format!("line {n}"))));
        first.write_line(|_| None);
        first.write_line(|n| Some(Ok(format!("line {n}"))));
        drop(first);
        let again = LineWriter::append_to(&path, Arc::new(NoRedaction)).unwrap();
        again.write_line(|n| Some(Ok(format!("line {n}"))));
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, "line 1\nline 2\nline 3\n");
    }

    #[test]
    fn a_torn_last_line_is_counted_and_closed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.jsonl");
        std::fs::write(&path, "{\"seq\":1}\n{\"seq\":2,\"ev").unwrap();
        let writer = LineWriter::append_to(&path, Arc::new(NoRedaction)).unwrap();
        writer.write_line(|n| Some(Ok(format!("{{\"seq\":{n}}}"))));
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, "{\"seq\":1}\n{\"seq\":2,\"ev\n{\"seq\":3}\n");
    }

    #[test]
    fn counts_lines_across_read_buffers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.jsonl");
        let big = format!("{}\n", "y".repeat(200_000)).repeat(3);
        std::fs::write(&path, big).unwrap();
        let existing = existing_lines(&path).unwrap();
        assert_eq!(
            existing,
            Existing {
                lines: 3,
                torn: false
            }
        );
    }

    #[test]
    fn redacts_each_line() {
        let hide = |line: &str| line.replace("secret", "[REDACTED]");
        let writer = LineWriter::new(Vec::new(), "buffer".into(), Arc::new(hide));
        writer.write_line(|_| Some(Ok("a secret here".into())));
        assert_eq!(writer.into_inner(), b"a [REDACTED] here\n");
    }
}
