//! The excerpts an opening shows: spans of files (a function, the lines around a frame), each
//! with why it was chosen, taken in the order they are offered (the most relevant first) while
//! they fit [`MAX_SHOWN_LINES`] and [`MAX_FILES`]. Spans of one file are merged and shown
//! together, their lines numbered as the `read_file` tool numbers them, gaps marked `⋮`, so an
//! edit can quote the lines exactly.
//!
//! Reads the files it renders through [`Sources`] (beneath the root, no link followed); decides
//! nothing about relevance.

use meta_agent_code::{Def, Sources};

/// An excerpt of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileExcerpt {
    /// Relative to the repository root.
    pub path: String,
    /// Why it was chosen (`stack trace, line 12`, `named in the task`, `defines mean`).
    pub reason: String,
    /// Numbered lines.
    pub text: String,
}

/// Lines shown at most, all files together.
pub const MAX_SHOWN_LINES: usize = 200;
/// Files shown at most.
pub const MAX_FILES: usize = 8;
/// A definition longer than this is shown as its head and the lines around what matters.
pub const MAX_SPAN_LINES: usize = 60;
/// Lines of a long definition's head kept with a window around its focus.
const HEAD_LINES: usize = 3;
/// Lines around a focus line in a long definition.
const FOCUS_BEFORE: usize = 12;
const FOCUS_AFTER: usize = 12;

/// Lines `start..=end`, 1-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Span {
        Span {
            start: start.max(1),
            end: end.max(start.max(1)),
        }
    }

    /// `before` lines before `line` and `after` after it.
    pub fn around(line: usize, before: usize, after: usize) -> Span {
        Span::new(line.saturating_sub(before), line + after)
    }

    fn len(self) -> usize {
        self.end + 1 - self.start
    }

    fn covers(self, other: Span) -> bool {
        self.start <= other.start && other.end <= self.end
    }
}

/// The spans that show `def`: all of it; when long, without its documentation past the first
/// line; when still long, its head and the lines around `focus` (else as many of its first
/// lines as fit [`MAX_SPAN_LINES`]).
pub fn def_spans(def: &Def, focus: Option<usize>) -> Vec<Span> {
    let whole = Span::new(def.start, def.end);
    if whole.len() <= MAX_SPAN_LINES {
        return vec![whole];
    }
    let (head, body) = match def.doc.filter(|(start, end)| end > start) {
        Some((doc_start, doc_end)) => (
            Span::new(def.start, doc_start.max(def.start)),
            Span::new(doc_end + 1, def.end),
        ),
        None => (
            Span::new(def.start, def.start + HEAD_LINES - 1),
            Span::new(def.start + HEAD_LINES, def.end),
        ),
    };
    if head.len() + body.len() <= MAX_SPAN_LINES {
        return vec![head, body];
    }
    match focus.filter(|line| def.contains(*line) && *line >= body.start) {
        Some(line) => {
            let window = Span::around(line, FOCUS_BEFORE, FOCUS_AFTER);
            vec![
                head,
                Span::new(window.start.max(body.start), window.end.min(def.end)),
            ]
        }
        None => {
            let room = MAX_SPAN_LINES.saturating_sub(head.len()).max(1);
            vec![head, Span::new(body.start, body.start + room - 1)]
        }
    }
}

/// One span offered, with its reason.
#[derive(Debug, Clone)]
struct Part {
    path: String,
    span: Span,
    reason: String,
}

/// The spans chosen so far, in the order they were offered.
#[derive(Debug, Default)]
pub struct Excerpts {
    parts: Vec<Part>,
    lines: usize,
}

impl Excerpts {
    /// Takes `spans` of `path` for `reason` if they add something and fit; returns whether
    /// they were taken.
    pub fn add(&mut self, path: &str, spans: &[Span], reason: &str) -> bool {
        let new: Vec<Span> = spans
            .iter()
            .copied()
            .filter(|span| !self.covered(path, *span))
            .collect();
        if new.is_empty() {
            return false;
        }
        let known_file = self.parts.iter().any(|p| p.path == path);
        let files = self.files().len();
        let cost: usize = new.iter().map(|s| s.len()).sum();
        if (!known_file && files >= MAX_FILES) || self.lines + cost > MAX_SHOWN_LINES {
            return false;
        }
        self.lines += cost;
        self.parts.extend(new.into_iter().map(|span| Part {
            path: path.to_owned(),
            span,
            reason: reason.to_owned(),
        }));
        true
    }

    /// Whether `line` of `path` is already shown.
    pub fn shows(&self, path: &str, line: usize) -> bool {
        self.covered(path, Span::new(line, line))
    }

    /// Whether anything of `path` is shown.
    pub fn has_file(&self, path: &str) -> bool {
        self.parts.iter().any(|p| p.path == path)
    }

    pub fn is_full(&self) -> bool {
        self.lines >= MAX_SHOWN_LINES || self.files().len() >= MAX_FILES
    }

    fn covered(&self, path: &str, span: Span) -> bool {
        self.parts
            .iter()
            .any(|p| p.path == path && p.span.covers(span))
    }

    fn files(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for part in &self.parts {
            if !out.contains(&part.path.as_str()) {
                out.push(&part.path);
            }
        }
        out
    }

    /// One excerpt per file, in the order files were first offered.
    pub fn render(&self, files: &mut Sources) -> Vec<FileExcerpt> {
        self.files()
            .into_iter()
            .filter_map(|path| {
                let text = files.read(path).ok()?;
                let parts: Vec<&Part> = self.parts.iter().filter(|p| p.path == path).collect();
                Some(render_file(path, &text, &parts))
            })
            .collect()
    }
}

fn render_file(path: &str, text: &str, parts: &[&Part]) -> FileExcerpt {
    let lines: Vec<&str> = text.lines().collect();
    let mut spans: Vec<Span> = parts.iter().map(|p| p.span).collect();
    spans.sort_by_key(|s| s.start);
    let mut merged: Vec<Span> = Vec::new();
    for span in spans {
        match merged.last_mut() {
            Some(last) if span.start <= last.end + 3 => last.end = last.end.max(span.end),
            _ => merged.push(span),
        }
    }
    let mut shown = String::new();
    let mut last_end = 0;
    for span in merged {
        let end = span.end.min(lines.len());
        if span.start > end {
            continue;
        }
        if last_end > 0 {
            shown.push_str("    ⋮\n");
        }
        for number in span.start..=end {
            shown.push_str(&format!("{number:>5}\t{}\n", lines[number - 1]));
        }
        last_end = end;
    }
    let whole = shown.lines().count() == lines.len();
    if !whole {
        shown.push_str(&format!("({} lines in all)\n", lines.len()));
    }
    let mut reasons: Vec<&str> = Vec::new();
    for part in parts {
        if !reasons.contains(&part.reason.as_str()) {
            reasons.push(&part.reason);
        }
    }
    FileExcerpt {
        path: path.to_owned(),
        reason: reasons.join("; "),
        text: shown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use meta_agent_code::DefKind;

    fn def(start: usize, end: usize) -> Def {
        Def {
            name: "f".into(),
            kind: DefKind::Function,
            owner: None,
            scope: Vec::new(),
            start,
            end,
            bytes: 0..0,
            bases: Vec::new(),
            doc: None,
        }
    }

    #[test]
    fn a_long_definition_shows_its_head_and_the_lines_around_its_focus() {
        assert_eq!(def_spans(&def(3, 10), Some(5)), [Span::new(3, 10)]);
        assert_eq!(
            def_spans(&def(10, 200), Some(150)),
            [Span::new(10, 12), Span::new(138, 162)]
        );
        assert_eq!(
            def_spans(&def(10, 200), None),
            [Span::new(10, 12), Span::new(13, 69)]
        );
    }

    #[test]
    fn a_long_docstring_is_shortened_to_its_first_line() {
        let documented = Def {
            doc: Some((35, 77)),
            ..def(34, 105)
        };
        assert_eq!(
            def_spans(&documented, None),
            [Span::new(34, 35), Span::new(78, 105)]
        );
    }

    #[test]
    fn spans_of_a_file_merge_and_gaps_are_marked() {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (1..=30).map(|n| format!("line {n}\n")).collect();
        std::fs::write(dir.path().join("a.py"), text).unwrap();
        let mut shown = Excerpts::default();
        assert!(shown.add("a.py", &[Span::new(20, 22)], "frame, line 21"));
        assert!(shown.add("a.py", &[Span::new(2, 3), Span::new(4, 5)], "defines f"));
        assert!(
            !shown.add("a.py", &[Span::new(21, 21)], "again"),
            "already shown"
        );
        assert!(shown.shows("a.py", 4) && !shown.shows("a.py", 10));
        let rendered = shown.render(&mut Sources::new(dir.path()));
        assert_eq!(rendered.len(), 1);
        assert_eq!(rendered[0].reason, "frame, line 21; defines f");
        assert_eq!(
            rendered[0].text,
            "    2\tline 2\n    3\tline 3\n    4\tline 4\n    5\tline 5\n    ⋮\n   20\tline 20\n   21\tline 21\n   22\tline 22\n(30 lines in all)\n"
        );
    }

    #[test]
    fn the_budget_keeps_what_came_first() {
        let mut shown = Excerpts::default();
        assert!(shown.add("a.py", &[Span::new(1, MAX_SHOWN_LINES - 5)], "first"));
        assert!(!shown.add("b.py", &[Span::new(1, 10)], "too much"));
        assert!(shown.add("b.py", &[Span::new(1, 5)], "fits"));
        for n in 0..MAX_FILES {
            shown.add(&format!("f{n}.py"), &[], "nothing");
        }
        assert!(shown.is_full());
    }
}
