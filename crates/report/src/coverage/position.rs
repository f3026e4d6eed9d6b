//! Turns a byte offset in a report into a 1-based line and column (and back) by re-reading the
//! file, so readers need not track lines while they stream. Used only to build error messages;
//! reads at most up to the position asked for.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

/// A place in a file: 1-based line and column (in bytes), and the 0-based byte offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Position {
    pub line: u64,
    pub column: u64,
    pub offset: u64,
}

/// The line and column of byte `offset` in the file at `path` (line 1, column 1 for offset 0).
/// If the file cannot be re-read, the line and column are 0 (unknown) and the offset is kept.
pub(crate) fn from_offset(path: &Path, offset: u64) -> Position {
    let unknown = Position {
        line: 0,
        column: 0,
        offset,
    };
    let Ok(file) = File::open(path) else {
        return unknown;
    };
    let mut reader = BufReader::new(file);
    let mut counter = Counter::default();
    while counter.offset < offset {
        let Ok(chunk) = reader.fill_buf() else {
            return unknown;
        };
        if chunk.is_empty() {
            break;
        }
        let wanted = usize::try_from(offset - counter.offset).unwrap_or(usize::MAX);
        let take = chunk.len().min(wanted);
        counter.advance(&chunk[..take]);
        reader.consume(take);
    }
    counter.position()
}

/// The byte offset of 1-based `line` and `column` (0 when unknown).
pub(crate) fn offset_of(path: &Path, line: u64, column: u64) -> u64 {
    let Ok(file) = File::open(path) else {
        return 0;
    };
    let mut reader = BufReader::new(file);
    let mut offset = 0u64;
    let mut current = 1u64;
    let mut buf = Vec::new();
    while current < line {
        buf.clear();
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => return offset,
            Ok(n) => offset += n as u64,
        }
        current += 1;
    }
    offset + column.saturating_sub(1)
}

#[derive(Default)]
struct Counter {
    offset: u64,
    newlines: u64,
    line_start: u64,
}

impl Counter {
    fn advance(&mut self, bytes: &[u8]) {
        for (i, byte) in bytes.iter().enumerate() {
            if *byte == b'\n' {
                self.newlines += 1;
                self.line_start = self.offset + i as u64 + 1;
            }
        }
        self.offset += bytes.len() as u64;
    }

    fn position(&self) -> Position {
        Position {
            line: self.newlines + 1,
            column: self.offset - self.line_start + 1,
            offset: self.offset,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn offsets_map_to_lines_and_back() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(b"ab\ncde\nf").unwrap();
        let pos = from_offset(file.path(), 4);
        assert_eq!((pos.line, pos.column, pos.offset), (2, 2, 4));
        assert_eq!(from_offset(file.path(), 0).line, 1);
        assert_eq!(offset_of(file.path(), 2, 2), 4);
        assert_eq!(offset_of(file.path(), 3, 1), 7);
    }
}
