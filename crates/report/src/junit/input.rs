//! The byte source under the XML reader: a `BufRead` that refuses a single event (tag or text
//! run) larger than a bound, so quick-xml's event buffer cannot grow without limit, and the
//! error-path helper that turns a byte offset into a line and column.
//!
//! Nothing here interprets XML; it must stay cheap on the hot path (one addition per `consume`).

use std::io::{self, BufRead, Read};
use std::path::Path;

/// The largest single event (one tag, or one run of text between tags) the reader accepts.
/// quick-xml buffers a whole event, so this bounds its buffer; failure bodies larger than this
/// are refused rather than read into memory.
pub(super) const MAX_EVENT_BYTES: u64 = 64 * 1024 * 1024;

/// Wraps a `BufRead` and fails once more than `limit` bytes are consumed since the last
/// [`GuardedInput::start_event`].
pub(super) struct GuardedInput<R> {
    inner: R,
    since_event: u64,
    limit: u64,
    tripped: bool,
}

impl<R: BufRead> GuardedInput<R> {
    pub(super) fn new(inner: R, limit: u64) -> Self {
        GuardedInput {
            inner,
            since_event: 0,
            limit,
            tripped: false,
        }
    }

    /// Marks the start of the next event.
    pub(super) fn start_event(&mut self) {
        self.since_event = 0;
    }

    /// Whether the last I/O error came from the event-size bound.
    pub(super) fn tripped(&self) -> bool {
        self.tripped
    }

    fn check(&mut self) -> io::Result<()> {
        if self.since_event > self.limit {
            self.tripped = true;
            return Err(io::Error::other("event larger than the limit"));
        }
        Ok(())
    }
}

impl<R: BufRead> Read for GuardedInput<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.check()?;
        let n = self.inner.read(buf)?;
        self.since_event += n as u64;
        Ok(n)
    }
}

impl<R: BufRead> BufRead for GuardedInput<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.check()?;
        self.inner.fill_buf()
    }

    fn consume(&mut self, amt: usize) {
        self.since_event += amt as u64;
        self.inner.consume(amt);
    }
}

/// 1-based line and column (in bytes) of `offset` in the file at `path`, by reading it again up
/// to the offset. Returns (0, 0) when the file cannot be read.
pub(super) fn line_and_column(path: &Path, offset: u64) -> (u64, u64) {
    let Ok(file) = std::fs::File::open(path) else {
        return (0, 0);
    };
    let mut source = io::BufReader::new(file).take(offset);
    let mut chunk = vec![0u8; 64 * 1024];
    let (mut line, mut line_start, mut seen) = (1u64, 0u64, 0u64);
    loop {
        let n = match source.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        for (i, byte) in chunk[..n].iter().enumerate() {
            if *byte == b'\n' {
                line += 1;
                line_start = seen + i as u64 + 1;
            }
        }
        seen += n as u64;
    }
    (line, offset.saturating_sub(line_start) + 1)
}
