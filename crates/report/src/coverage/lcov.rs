//! lcov tracefile reader (`geninfo`, c8/istanbul, coverage.py, cargo-llvm-cov, grcov).
//!
//! Streams the file line by line with a bounded line buffer. Per-line `DA` records give the line
//! totals (the record's `LF`/`LH` are used only when it has no `DA`), `BRDA` gives the branches
//! (`BRF`/`BRH` only when there is no `BRDA`). Records repeated for one `SF` are merged: a line or
//! branch counts once and is covered when any record covered it. Function records (`FN`, `FNDA`,
//! `FNF`, `FNH`) and unknown keys are skipped. Must not keep anything per input line.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::BufRead;
use std::path::Path;

use super::tally::{Counts, FileTally, ReportTally};
use super::{CoverageFormat, CoverageReport};
use crate::ReportError;

const FORMAT: &str = "lcov";
/// Longest line accepted; paths and records are far shorter.
const MAX_LINE_BYTES: usize = 64 * 1024;

/// Reads an lcov tracefile.
pub(super) fn read(path: &Path, mut input: impl BufRead) -> Result<CoverageReport, ReportError> {
    let mut parser = Parser::default();
    let mut buf = Vec::with_capacity(256);
    let mut at = Location::default();
    loop {
        buf.clear();
        let length = read_line(&mut input, &mut buf).map_err(|e| e.into_report(path, at))?;
        if length == 0 {
            break;
        }
        at.line += 1;
        let text = line_text(&buf).map_err(|e| e.into_report(path, at))?;
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        parser.line(text).map_err(|e| e.into_report(path, at))?;
        at.offset += length as u64;
    }
    parser.finish().map_err(|e| e.into_report(path, at))
}

/// The 1-based number and byte offset of the line being read.
#[derive(Debug, Clone, Copy, Default)]
struct Location {
    line: u64,
    offset: u64,
}

/// A problem at a column (1-based) of the current line.
#[derive(Debug)]
enum LineError {
    Io(std::io::Error),
    At { column: usize, message: String },
}

impl LineError {
    fn at(column: usize, message: impl Into<String>) -> Self {
        LineError::At {
            column,
            message: message.into(),
        }
    }

    fn into_report(self, path: &Path, at: Location) -> ReportError {
        match self {
            LineError::Io(source) => ReportError::Io {
                path: path.to_owned(),
                source,
            },
            LineError::At { column, message } => ReportError::Malformed {
                path: path.to_owned(),
                format: FORMAT,
                line: at.line.max(1),
                column: column as u64,
                offset: at.offset + column.saturating_sub(1) as u64,
                message,
            },
        }
    }
}

/// Reads one line (with its newline) into `buf`, refusing lines longer than [`MAX_LINE_BYTES`].
/// Returns the number of bytes consumed, 0 at the end of the input.
fn read_line(input: &mut impl BufRead, buf: &mut Vec<u8>) -> Result<usize, LineError> {
    let mut consumed = 0;
    loop {
        let chunk = input.fill_buf().map_err(LineError::Io)?;
        if chunk.is_empty() {
            return Ok(consumed);
        }
        let (take, done) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        if buf.len() + take > MAX_LINE_BYTES + 2 {
            let message = format!("line longer than {MAX_LINE_BYTES} bytes");
            return Err(LineError::at(MAX_LINE_BYTES, message));
        }
        buf.extend_from_slice(&chunk[..take]);
        input.consume(take);
        consumed += take;
        if done {
            return Ok(consumed);
        }
    }
}

/// The line as text, without its line ending.
fn line_text(buf: &[u8]) -> Result<&str, LineError> {
    let bytes = buf.strip_suffix(b"\n").unwrap_or(buf);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    std::str::from_utf8(bytes).map_err(|e| {
        LineError::at(
            e.valid_up_to() + 1,
            "invalid UTF-8 (lcov files are UTF-8 text)",
        )
    })
}

/// The record being read: its file and the summary counts it wrote.
#[derive(Debug, Default)]
struct Record {
    path: String,
    file: FileTally,
    has_lines: bool,
    has_branches: bool,
    lines_found: Option<u64>,
    lines_hit: Option<u64>,
    branches_found: Option<u64>,
    branches_hit: Option<u64>,
}

#[derive(Debug, Default)]
struct Parser {
    tally: ReportTally,
    record: Option<Record>,
}

impl Parser {
    fn line(&mut self, text: &str) -> Result<(), LineError> {
        if let Some(value) = text.strip_prefix("DA:") {
            return self.field("DA", value, 4); // The bulk of every file: skip the general path.
        }
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Ok(());
        }
        if trimmed == "end_of_record" {
            return self.end_record(1);
        }
        let Some((key, value)) = text.split_once(':') else {
            let message = format!("not an lcov line: {}", shown(text));
            return Err(LineError::at(1, message));
        };
        let column = key.len() + 2;
        self.field(key.trim(), value.trim(), column)
    }

    fn field(&mut self, key: &str, value: &str, column: usize) -> Result<(), LineError> {
        match key {
            "SF" => {
                self.start_record(value);
                return Ok(());
            }
            "DA" | "LF" | "LH" | "BRDA" | "BRF" | "BRH" => {}
            _ => return Ok(()), // TN, VER, FN, FNDA, FNF, FNH, FNL, FNA and future keys.
        }
        let Some(record) = self.record.as_mut() else {
            let message = format!("{key} outside a record (no SF line before it)");
            return Err(LineError::at(1, message));
        };
        match key {
            "DA" => return record.line_data(value, column, &mut self.tally.budget),
            "BRDA" => return record.branch_data(value, column),
            _ => {}
        }
        let count = Some(number(value, column)?);
        match key {
            "LF" => record.lines_found = count,
            "LH" => record.lines_hit = count,
            "BRF" => record.branches_found = count,
            _ => record.branches_hit = count,
        }
        Ok(())
    }

    /// Starts the record of `path`. A record left open by a missing `end_of_record` is closed.
    fn start_record(&mut self, path: &str) {
        self.close_record();
        let file = self.tally.take(path);
        self.record = Some(Record {
            path: path.to_owned(),
            file,
            ..Record::default()
        });
    }

    fn end_record(&mut self, column: usize) -> Result<(), LineError> {
        if self.record.is_none() {
            return Err(LineError::at(
                column,
                "end_of_record without a record (no SF)",
            ));
        }
        self.close_record();
        Ok(())
    }

    fn close_record(&mut self) {
        if let Some(record) = self.record.take() {
            let (path, file) = record.into_file();
            self.tally.put(path, file);
        }
    }

    fn finish(mut self) -> Result<CoverageReport, LineError> {
        if let Some(record) = &self.record {
            let message = format!(
                "truncated: the record for {} has no end_of_record",
                shown(&record.path)
            );
            return Err(LineError::at(1, message));
        }
        self.close_record();
        Ok(self.tally.into_report(CoverageFormat::Lcov))
    }
}

impl Record {
    /// `DA:<line>,<hits>[,<checksum>]`
    fn line_data(
        &mut self,
        value: &str,
        column: usize,
        budget: &mut super::tally::LineBudget,
    ) -> Result<(), LineError> {
        let (line, rest) = value.split_once(',').ok_or_else(|| {
            LineError::at(column, format!("DA needs <line>,<hits>: {}", shown(value)))
        })?;
        let hits = rest.split_once(',').map_or(rest, |(hits, _checksum)| hits);
        let line_number = line_number(line, column)?;
        let hit = hit_count(hits, column + line.len() + 1)? > 0;
        self.has_lines = true;
        self.file
            .record_line(line_number, hit, budget)
            .map_err(|e| LineError::at(column, e.to_string()))
    }

    /// `BRDA:<line>,<block>,<branch>,<taken>` where `taken` is a count or `-` (never reached).
    /// The branch may be an expression containing commas (lcov 2), so the fields are split from
    /// both ends.
    fn branch_data(&mut self, value: &str, column: usize) -> Result<(), LineError> {
        let malformed = || LineError::at(column, format!("BRDA needs 4 fields: {}", shown(value)));
        let (line, rest) = value.split_once(',').ok_or_else(malformed)?;
        let (id, taken) = rest.rsplit_once(',').ok_or_else(malformed)?;
        if !id.contains(',') {
            return Err(malformed());
        }
        let line_number = line_number(line, column)?;
        let taken_column = column + value.len() - taken.len();
        let covered = match taken.trim() {
            "-" => false,
            count => hit_count(count, taken_column)? > 0,
        };
        self.has_branches = true;
        let counts = Counts {
            covered: u64::from(covered),
            total: 1,
        };
        self.file
            .record_branch((line_number, branch_id(id)), counts);
        Ok(())
    }

    /// The file's tally with this record's summaries added where it had no detail.
    fn into_file(mut self) -> (String, FileTally) {
        if !self.has_lines {
            add_summary(
                &mut self.file.summary_lines,
                self.lines_hit,
                self.lines_found,
            );
        }
        if !self.has_branches {
            add_summary(
                &mut self.file.summary_branches,
                self.branches_hit,
                self.branches_found,
            );
        }
        (self.path, self.file)
    }
}

fn add_summary(counts: &mut Counts, hit: Option<u64>, found: Option<u64>) {
    let found = found.unwrap_or(0);
    counts.total += found;
    counts.covered += hit.unwrap_or(0).min(found);
}

/// A stable id for a branch within its line, from its block and branch fields.
fn branch_id(id: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    id.trim().hash(&mut hasher);
    hasher.finish()
}

fn line_number(text: &str, column: usize) -> Result<u32, LineError> {
    if let Some(line) = digits(text).and_then(|n| u32::try_from(n).ok()) {
        return Ok(line);
    }
    text.trim().parse().map_err(|_| {
        LineError::at(
            column,
            format!("line number is not a number: {}", shown(text)),
        )
    })
}

/// A hit count. gcov can write negative counts on overflow; they are read as 0 (not hit).
/// Some tools write counts as floats (`1.0`, `3e+06`); those are accepted.
fn hit_count(text: &str, column: usize) -> Result<u64, LineError> {
    if let Some(count) = digits(text) {
        return Ok(count);
    }
    let text = text.trim();
    if let Ok(count) = text.parse::<i128>() {
        return Ok(u64::try_from(count.max(0)).unwrap_or(u64::MAX));
    }
    match text.parse::<f64>() {
        Ok(count) if count.is_finite() => Ok(if count >= 1.0 { count as u64 } else { 0 }),
        _ => Err(LineError::at(
            column,
            format!("hit count is not a number: {}", shown(text)),
        )),
    }
}

/// A plain decimal number of at most 19 digits (the common case, parsed without checks for
/// signs, spaces or floats).
fn digits(text: &str) -> Option<u64> {
    if text.is_empty() || text.len() > 19 {
        return None;
    }
    text.bytes().try_fold(0u64, |n, b| {
        b.is_ascii_digit().then(|| n * 10 + u64::from(b - b'0'))
    })
}

fn number(text: &str, column: usize) -> Result<u64, LineError> {
    text.parse()
        .map_err(|_| LineError::at(column, format!("count is not a number: {}", shown(text))))
}

/// Text quoted for an error message, cut to a readable length.
fn shown(text: &str) -> String {
    let mut end = text.len().min(80);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{:?}", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<CoverageReport, ReportError> {
        read(Path::new("t.info"), text.as_bytes())
    }

    #[test]
    fn lines_and_branches_from_detail_records() {
        let report = parse(
            "TN:\nSF:a.js\nFN:1,f\nFNDA:1,f\nDA:1,1\nDA:2,0\nDA:3,5\nLF:3\nLH:2\n\
             BRDA:2,0,0,1\nBRDA:2,0,1,-\nBRF:2\nBRH:1\nend_of_record\n",
        )
        .unwrap();
        assert_eq!((report.lines_covered, report.lines_total), (2, 3));
        assert_eq!(
            (report.branches_covered, report.branches_total),
            (Some(1), Some(2))
        );
        assert_eq!(report.branch_percent, Some(50.0));
    }

    #[test]
    fn repeated_records_merge() {
        let report = parse(
            "SF:a.rs\nDA:1,0\nDA:2,1\nend_of_record\nSF:a.rs\nDA:1,3\nDA:2,0\nDA:9,0\nend_of_record\n",
        )
        .unwrap();
        assert_eq!(report.files.len(), 1);
        assert_eq!((report.lines_covered, report.lines_total), (2, 3));
    }

    #[test]
    fn summaries_count_only_without_detail() {
        let report = parse("SF:a\nLF:10\nLH:4\nBRF:0\nBRH:0\nend_of_record\n").unwrap();
        assert_eq!((report.lines_covered, report.lines_total), (4, 10));
        assert_eq!(report.branch_percent, None);
    }

    #[test]
    fn malformed_number_names_line_and_column() {
        let err = parse("SF:a\nDA:x,y\nend_of_record\n").unwrap_err();
        match err {
            ReportError::Malformed { line, column, .. } => assert_eq!((line, column), (2, 4)),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn truncated_record_is_an_error() {
        let err = parse("SF:a\nDA:1,1\n").unwrap_err().to_string();
        assert!(err.contains("no end_of_record"), "{err}");
    }

    #[test]
    fn lcov2_branch_expressions_with_commas() {
        let report = parse("SF:a\nBRDA:3,e0,(a, b),2\nend_of_record\n").unwrap();
        assert_eq!(report.branches_covered, Some(1));
    }

    #[test]
    fn crlf_and_float_counts() {
        let report = parse("SF:a\r\nDA:1,1.0\r\nDA:2,0\r\nend_of_record\r\n").unwrap();
        assert_eq!((report.lines_covered, report.lines_total), (1, 2));
    }
}
