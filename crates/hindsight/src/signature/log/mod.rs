//! Plain-log extraction: finds failures in tool output (gate stdout/stderr) by their shape.
//!
//! One Aho-Corasick pass over the whole text finds the few lines that carry a cheap anchor
//! ("error", "panicked at", "--- FAIL", "Traceback", "●", ...); ordinary lines cost only that
//! scan. Each anchored line is offered to the recognizers of each ecosystem ([`rust`], [`python`],
//! [`js`], [`go`]), which read the lines around it and return a [`Candidate`] and where its block
//! ends, so a block is never read twice. Each recognizer starts with a literal test of the line
//! (`starts_with`, `contains`) before any regex, because most anchored lines are ordinary ones
//! (`test error_handling ... ok`). This module does no I/O and never normalizes: the caller
//! turns candidates into signatures.

mod go;
mod js;
mod python;
mod rust;

pub(crate) use python::pytest_frames;

use std::cell::OnceCell;
use std::sync::LazyLock;

use aho_corasick::AhoCorasick;

use super::Candidate;
use crate::SignatureKind;

/// The anchors: a line containing none of these holds no failure any recognizer knows.
const ANCHORS: &[&str] = &[
    "error",
    "panicked at",
    "panic: ",
    "--- FAIL",
    "FAIL  ",
    "TIMEOUT",
    "Traceback (most recent",
    "+ Timeout +",
    "____ ",
    "FAILED ",
    "ERROR ",
    "●",
    " failing",
    "Diff in ",
    "would reformat",
    "Would reformat",
    "would be reformatted",
    "[warn] ",
    "Found ",
];

static ANCHOR_SCAN: LazyLock<Option<AhoCorasick>> =
    LazyLock::new(|| AhoCorasick::new(ANCHORS).ok());

/// The text being scanned, with line navigation by byte offset, and facts about the whole text
/// that recognizers need, computed once on first use (so no recognizer rescans the whole log per
/// failure).
pub(crate) struct Log<'a> {
    pub text: &'a str,
    pytest_summary: OnceCell<Vec<String>>,
    pytest_sections: OnceCell<Option<usize>>,
}

/// One line: its start offset, its text (without the newline), and where the next line starts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Line<'a> {
    pub start: usize,
    pub text: &'a str,
    pub next: usize,
}

impl<'a> Log<'a> {
    pub fn new(text: &'a str) -> Log<'a> {
        Log {
            text,
            pytest_summary: OnceCell::new(),
            pytest_sections: OnceCell::new(),
        }
    }

    /// The node ids of pytest's short summary (`FAILED id` / `ERROR id` lines), in order.
    pub fn pytest_summary(&self) -> &[String] {
        self.pytest_summary
            .get_or_init(|| python::summary_ids(self))
    }

    /// Where the first `= FAILURES =` or `= ERRORS =` section header starts, if any.
    pub fn first_pytest_section(&self) -> Option<usize> {
        *self.pytest_sections.get_or_init(|| {
            let failures = memchr::memmem::find(self.text.as_bytes(), b"= FAILURES =");
            let errors = memchr::memmem::find(self.text.as_bytes(), b"= ERRORS =");
            failures.into_iter().chain(errors).min()
        })
    }

    /// The line that starts at `start`, or `None` at the end of the text.
    pub fn line(&self, start: usize) -> Option<Line<'a>> {
        if start >= self.text.len() {
            return None;
        }
        let rest = &self.text[start..];
        let end = memchr::memchr(b'\n', rest.as_bytes()).map_or(rest.len(), |i| i);
        let next = (start + end + 1).min(self.text.len());
        let text = rest[..end].strip_suffix('\r').unwrap_or(&rest[..end]);
        Some(Line { start, text, next })
    }

    /// The lines from `start` on.
    pub fn lines_from(&self, start: usize) -> impl Iterator<Item = Line<'a>> + '_ {
        std::iter::successors(self.line(start), move |line| self.line(line.next))
    }

    /// The line before the one starting at `start`.
    pub fn previous(&self, start: usize) -> Option<Line<'a>> {
        if start == 0 {
            return None;
        }
        let before = &self.text.as_bytes()[..start - 1];
        let prev_start = memchr::memrchr(b'\n', before).map_or(0, |i| i + 1);
        self.line(prev_start)
    }

    /// The start of the line holding byte `offset`.
    fn line_start(&self, offset: usize) -> usize {
        memchr::memrchr(b'\n', &self.text.as_bytes()[..offset]).map_or(0, |i| i + 1)
    }
}

/// What a recognizer found: the candidates and the offset where their block ends.
pub(crate) struct Found {
    pub candidates: Vec<Candidate>,
    pub end: usize,
}

impl Found {
    /// One candidate whose block ends at `end`.
    pub fn one(candidate: Candidate, end: usize) -> Found {
        Found {
            candidates: vec![candidate],
            end,
        }
    }
}

/// A recognizer: looks at an anchored line and maybe returns a failure.
type Recognizer = fn(&Log<'_>, Line<'_>) -> Option<Found>;

const RECOGNIZERS: &[Recognizer] = &[
    rust::recognize,
    python::recognize,
    js::recognize,
    go::recognize,
];

/// Every failure in `text`, in order of appearance.
pub(crate) fn scan(text: &str) -> Vec<Candidate> {
    let log = Log::new(text);
    let mut found = Vec::new();
    let mut resume = 0;
    for start in anchored_lines(&log) {
        if start < resume {
            continue;
        }
        let Some(line) = log.line(start) else { break };
        if let Some(hit) = RECOGNIZERS
            .iter()
            .find_map(|recognize| recognize(&log, line))
        {
            resume = hit.end.max(line.next);
            found.extend(hit.candidates);
        }
    }
    found
}

/// Start offsets of the lines holding an anchor, each once, in order.
fn anchored_lines(log: &Log<'_>) -> Vec<usize> {
    let Some(scan) = ANCHOR_SCAN.as_ref() else {
        return Vec::new();
    };
    let mut starts = Vec::new();
    let mut line_end = 0;
    for hit in scan.find_iter(log.text) {
        if hit.start() < line_end {
            continue;
        }
        let start = log.line_start(hit.start());
        line_end = memchr::memchr(b'\n', &log.text.as_bytes()[hit.start()..])
            .map_or(log.text.len(), |i| hit.start() + i);
        starts.push(start);
    }
    starts
}

/// Joins trimmed, non-empty lines with a space.
pub(crate) fn join_lines<'a>(lines: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = String::new();
    for line in lines.into_iter().map(str::trim).filter(|l| !l.is_empty()) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(line);
    }
    out
}

/// A lint finding: `TOOL RULE: message`, located at `file:line`.
pub(crate) fn lint(tool: &str, rule: &str, message: &str, file: &str, line: &str) -> Candidate {
    Candidate {
        kind: SignatureKind::Lint,
        template: format!("{tool} {rule}: {message}"),
        location: Some(format!("{file}:{line}")),
        test: None,
        frames: Vec::new(),
        excerpt: message.to_owned(),
    }
}

/// Leading spaces and tabs of a line (a tab counts as 4).
pub(crate) fn indent(line: &str) -> usize {
    line.chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .map(|c| if c == '\t' { 4 } else { 1 })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The raw templates `scan` finds in `text`.
    fn templates(text: &str) -> Vec<(SignatureKind, String)> {
        scan(text)
            .into_iter()
            .map(|c| (c.kind, c.template))
            .collect()
    }

    #[test]
    fn older_formatter_shapes() {
        let fmt = templates("Diff in /ci/x/src/lib.rs at line 3:\n-a\n+b\n");
        assert_eq!(
            fmt,
            [(
                SignatureKind::Lint,
                "rustfmt: formatting differs in <path>".to_owned()
            )]
        );
        let ruff = templates("Would reformat: src/app.py\n1 file would be reformatted\n");
        assert_eq!(ruff[0].1, "ruff format: would reformat <path>");
        let black = templates("would reformat /tmp/x/app.py\n\nOh no!\n");
        assert_eq!(black[0].1, "black: would reformat <path>");
    }

    #[test]
    fn pytest_summary_alone_drops_the_truncated_word() {
        let text = "FAILED tests/test_a.py::test_b - KeyError: 'user missing (request dd09...\n\
                    ERROR tests/test_c.py - ModuleNotFoundError: No module named 'x'\n";
        let found = templates(text);
        assert_eq!(
            found[0],
            (
                SignatureKind::TestFailure,
                "pytest tests/test_a.py::test_b: KeyError: 'user missing (request".to_owned()
            )
        );
        assert_eq!(found[1].0, SignatureKind::TestError);
        let timeout = templates("FAILED tests/t.py::test_slow - Failed: Timeout >10.0s\n");
        assert_eq!(timeout[0].0, SignatureKind::Timeout);
    }

    #[test]
    fn jest_suite_errors_and_go_test_timeouts() {
        let jest =
            templates("  ● Test suite failed to run\n\n    SyntaxError: Unexpected token (3:4)\n");
        assert_eq!(jest[0].0, SignatureKind::TestError);
        let go = "panic: test timed out after 10m0s\nrunning tests:\n\tTestSlow (10m0s)\n\ngoroutine 7 [running]:\n";
        assert_eq!(scan(go)[0].kind, SignatureKind::Timeout);
    }

    #[test]
    fn ordinary_lines_give_nothing() {
        let text =
            "test error_handling::ok_case ... ok\nFound 0 errors.\n--- PASS: TestX (0.00s)\n";
        assert!(scan(text).is_empty());
    }

    #[test]
    fn navigation_finds_lines_both_ways() {
        let log = Log::new("a\r\nbb\nccc");
        let second = log.line(3).map(|l| l.text);
        assert_eq!(second, Some("bb"));
        assert_eq!(log.previous(6).map(|l| l.text), Some("bb"));
        assert_eq!(log.lines_from(0).count(), 3);
        assert!(anchored_lines(&Log::new("ok\nok\n")).is_empty());
    }
}
