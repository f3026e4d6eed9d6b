//! A small reader for git-format unified diffs: files, their status and paths, and hunks as
//! ordered lines with where they start on each side. The tamper guard reads changes with it; the
//! GitHub layer reads a fix's hunks (suggestions) and a pull request's hunks (where a review may
//! comment). It never touches the filesystem and never fails (malformed input yields what could
//! be read).

/// How a file changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileStatus {
    Added,
    Deleted,
    Modified,
    Renamed,
}

/// One line of a hunk, without its `+`/`-`/` ` prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line<'a> {
    Context(&'a str),
    Removed(&'a str),
    Added(&'a str),
}

/// One file's section of the diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDiff<'a> {
    pub old_path: Option<String>,
    pub new_path: Option<String>,
    pub status: FileStatus,
    pub hunks: Vec<Hunk<'a>>,
}

/// One hunk: where it starts on each side (1-based, as in its `@@ -a,b +c,d @@` header; 0 for
/// an empty side) and its lines in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk<'a> {
    pub old_start: usize,
    pub new_start: usize,
    pub lines: Vec<Line<'a>>,
}

impl Hunk<'_> {
    /// How many lines the hunk spans on the old side (context and removed lines).
    pub fn old_len(&self) -> usize {
        self.lines
            .iter()
            .filter(|line| !matches!(line, Line::Added(_)))
            .count()
    }

    /// How many lines the hunk spans on the new side (context and added lines).
    pub fn new_len(&self) -> usize {
        self.lines
            .iter()
            .filter(|line| !matches!(line, Line::Removed(_)))
            .count()
    }
}

impl FileDiff<'_> {
    /// The path a person would name: the new one, or the old one for a deletion.
    pub fn path(&self) -> &str {
        self.new_path
            .as_deref()
            .or(self.old_path.as_deref())
            .unwrap_or("")
    }

    /// Both paths (one when they are the same).
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        let old = self.old_path.as_deref();
        let new = self.new_path.as_deref().filter(|n| Some(*n) != old);
        old.into_iter().chain(new)
    }

    pub fn lines(&self) -> impl Iterator<Item = &Line<'_>> {
        self.hunks.iter().flat_map(|hunk| hunk.lines.iter())
    }
}

/// Splits a unified git diff into files.
pub fn parse(diff: &str) -> Vec<FileDiff<'_>> {
    let mut files = Vec::new();
    let mut lines = diff.lines().peekable();
    while let Some(line) = lines.next() {
        if let Some(header) = line.strip_prefix("diff --git ") {
            files.push(parse_file(header, &mut lines));
        }
    }
    files
}

type Lines<'a> = std::iter::Peekable<std::str::Lines<'a>>;

fn parse_file<'a>(header: &str, lines: &mut Lines<'a>) -> FileDiff<'a> {
    let (mut old_path, mut new_path) = header_paths(header);
    let mut status = FileStatus::Modified;
    let mut hunks = Vec::new();
    while let Some(&line) = lines.peek() {
        if line.starts_with("diff --git ") {
            break;
        }
        lines.next();
        if line.starts_with("new file mode") {
            status = FileStatus::Added;
        } else if line.starts_with("deleted file mode") {
            status = FileStatus::Deleted;
        } else if let Some(path) = line.strip_prefix("rename from ") {
            status = FileStatus::Renamed;
            old_path = Some(unquote(path));
        } else if let Some(path) = line.strip_prefix("rename to ") {
            new_path = Some(unquote(path));
        } else if let Some(path) = line.strip_prefix("--- ") {
            old_path = side_path(path, "a/").or(old_path.filter(|_| path != "/dev/null"));
        } else if let Some(path) = line.strip_prefix("+++ ") {
            new_path = side_path(path, "b/").or(new_path.filter(|_| path != "/dev/null"));
        } else if let Some(counts) = line.strip_prefix("@@ ") {
            hunks.push(parse_hunk(counts, lines));
        }
    }
    match status {
        FileStatus::Added => old_path = None,
        FileStatus::Deleted => new_path = None,
        FileStatus::Modified | FileStatus::Renamed => {}
    }
    FileDiff {
        old_path,
        new_path,
        status,
        hunks,
    }
}

/// `a/x b/x` → the two paths (exact when both halves are equal; otherwise split at ` b/`).
fn header_paths(header: &str) -> (Option<String>, Option<String>) {
    if header.starts_with('"') {
        let mut parts = header.splitn(2, "\" ");
        let old = parts.next().map(|p| format!("{p}\""));
        let new = parts.next();
        return (
            old.and_then(|p| side_path(&p, "a/")),
            new.and_then(|p| side_path(p, "b/")),
        );
    }
    let half = header.len() / 2;
    let old = header.get(..half).and_then(|h| h.strip_prefix("a/"));
    let new = header.get(half + 1..).and_then(|h| h.strip_prefix("b/"));
    let split = if old.is_some() && old == new {
        Some(half)
    } else {
        header.find(" b/")
    };
    match split {
        Some(at) => (
            side_path(&header[..at], "a/"),
            side_path(&header[at + 1..], "b/"),
        ),
        None => (None, None),
    }
}

/// `a/path` (or a quoted form) → `path`; `/dev/null` → `None`.
fn side_path(raw: &str, prefix: &str) -> Option<String> {
    let raw = raw.trim_end_matches('\t');
    if raw == "/dev/null" {
        return None;
    }
    let path = unquote(raw);
    Some(
        path.strip_prefix(prefix)
            .map(str::to_string)
            .unwrap_or(path),
    )
}

/// Undoes git's C-style quoting of unusual paths (`"t\303\251st"` → `tést`).
fn unquote(raw: &str) -> String {
    let Some(inner) = raw.strip_prefix('"').and_then(|r| r.strip_suffix('"')) else {
        return raw.to_string();
    };
    let mut bytes = Vec::with_capacity(inner.len());
    let mut chars = inner.bytes().peekable();
    while let Some(b) = chars.next() {
        if b != b'\\' {
            bytes.push(b);
            continue;
        }
        match chars.next() {
            Some(d @ b'0'..=b'7') => {
                let mut value = u32::from(d - b'0');
                for _ in 0..2 {
                    if let Some(&n @ b'0'..=b'7') = chars.peek() {
                        value = value * 8 + u32::from(n - b'0');
                        chars.next();
                    }
                }
                bytes.push(u8::try_from(value).unwrap_or(b'?'));
            }
            Some(b'n') => bytes.push(b'\n'),
            Some(b't') => bytes.push(b'\t'),
            Some(other) => bytes.push(other),
            None => {}
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The hunks of a text that holds only hunks (`@@ -a,b +c,d @@` headers and their lines), as
/// GitHub's `patch` field of a pull request's file has them.
pub fn parse_hunks(text: &str) -> Vec<Hunk<'_>> {
    let mut hunks = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if let Some(counts) = line.strip_prefix("@@ ") {
            hunks.push(parse_hunk(counts, &mut lines));
        }
    }
    hunks
}

/// `diff` without the sections of the files `drop` names (by either path): the bot's own
/// records left out of a patch offered to people.
pub fn without_files(diff: &str, drop: impl Fn(&str) -> bool) -> String {
    let mut out = String::with_capacity(diff.len());
    let mut keep = true;
    for line in diff.split_inclusive('\n') {
        if let Some(header) = line.strip_prefix("diff --git ") {
            let (old, new) = header_paths(header.trim_end_matches('\n'));
            keep = !old.iter().chain(new.iter()).any(|path| drop(path));
        }
        if keep {
            out.push_str(line);
        }
    }
    out
}

/// One side of a hunk header (`-a,b` or `+c,d`): where it starts and how many lines it has.
fn side_range(field: Option<&str>, sign: char) -> (usize, usize) {
    let Some(field) = field.and_then(|f| f.strip_prefix(sign)) else {
        return (0, 0);
    };
    let (start, count) = field.split_once(',').unwrap_or((field, "1"));
    (start.parse().unwrap_or(0), count.parse().unwrap_or(0))
}

fn parse_hunk<'a>(counts: &str, lines: &mut Lines<'a>) -> Hunk<'a> {
    let mut fields = counts.split_whitespace();
    let (old_start, mut old) = side_range(fields.next(), '-');
    let (new_start, mut new) = side_range(fields.next(), '+');
    let mut out = Vec::new();
    while old > 0 || new > 0 {
        let Some(&line) = lines.peek() else { break };
        let parsed = match line.as_bytes().first() {
            Some(b' ') if old > 0 && new > 0 => {
                old -= 1;
                new -= 1;
                Line::Context(&line[1..])
            }
            Some(b'-') if old > 0 => {
                old -= 1;
                Line::Removed(&line[1..])
            }
            Some(b'+') if new > 0 => {
                new -= 1;
                Line::Added(&line[1..])
            }
            Some(b'\\') => {
                lines.next();
                continue;
            }
            None if old > 0 && new > 0 => {
                old -= 1;
                new -= 1;
                Line::Context("")
            }
            _ => break,
        };
        lines.next();
        out.push(parsed);
    }
    Hunk {
        old_start,
        new_start,
        lines: out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_statuses_paths_and_lines() {
        let diff = "diff --git a/src/a.rs b/src/a.rs\nindex 1..2 100644\n--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1,2 +1,2 @@\n keep\n-old\n+new\n\\ No newline at end of file\ndiff --git a/gone.py b/gone.py\ndeleted file mode 100644\n--- a/gone.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\ndiff --git a/t/x.go b/t/y.go\nsimilarity index 100%\nrename from t/x.go\nrename to t/y.go\n";
        let files = parse(diff);
        assert_eq!(files.len(), 3);
        assert_eq!(files[0].status, FileStatus::Modified);
        assert_eq!(
            files[0].hunks[0].lines,
            vec![
                Line::Context("keep"),
                Line::Removed("old"),
                Line::Added("new")
            ]
        );
        assert_eq!(files[1].status, FileStatus::Deleted);
        assert_eq!(files[1].path(), "gone.py");
        assert_eq!(files[1].new_path, None);
        assert_eq!(files[2].status, FileStatus::Renamed);
        assert_eq!(files[2].old_path.as_deref(), Some("t/x.go"));
        assert_eq!(files[2].new_path.as_deref(), Some("t/y.go"));
    }

    #[test]
    fn a_removed_line_that_looks_like_a_header_stays_in_its_hunk() {
        let diff = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,2 +1 @@\n--- not a header\n keep\n";
        let files = parse(diff);
        assert_eq!(
            files[0].hunks[0].lines,
            vec![Line::Removed("-- not a header"), Line::Context("keep")]
        );
    }

    #[test]
    fn quoted_paths_are_unquoted() {
        let diff = "diff --git \"a/t\\303\\251st.py\" \"b/t\\303\\251st.py\"\nnew file mode 100644\n--- /dev/null\n+++ \"b/t\\303\\251st.py\"\n@@ -0,0 +1 @@\n+x\n";
        let files = parse(diff);
        assert_eq!(files[0].path(), "tést.py");
        assert_eq!(files[0].status, FileStatus::Added);
    }

    #[test]
    fn binary_files_keep_their_header_paths() {
        let diff = "diff --git a/tests/data.bin b/tests/data.bin\ndeleted file mode 100644\nindex 1..0\nBinary files a/tests/data.bin and /dev/null differ\n";
        let files = parse(diff);
        assert_eq!(files[0].path(), "tests/data.bin");
        assert_eq!(files[0].status, FileStatus::Deleted);
    }

    #[test]
    fn hunks_know_where_they_start_and_how_long_each_side_is() {
        let diff = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -3,3 +3,4 @@ fn f\n keep\n-old\n+new\n+more\n tail\n@@ -10 +11 @@\n-a\n+b\n";
        let hunks = &parse(diff)[0].hunks;
        assert_eq!((hunks[0].old_start, hunks[0].new_start), (3, 3));
        assert_eq!((hunks[0].old_len(), hunks[0].new_len()), (3, 4));
        assert_eq!((hunks[1].old_start, hunks[1].new_start), (10, 11));
        assert_eq!((hunks[1].old_len(), hunks[1].new_len()), (1, 1));
        let only = parse_hunks("@@ -0,0 +1,2 @@\n+a\n+b\n");
        assert_eq!((only[0].old_start, only[0].new_start), (0, 1));
        assert_eq!(only[0].lines, vec![Line::Added("a"), Line::Added("b")]);
    }

    #[test]
    fn files_can_be_left_out_of_a_diff_by_path() {
        let diff = "diff --git a/src/a.py b/src/a.py\n--- a/src/a.py\n+++ b/src/a.py\n@@ -1 +1 @@\n-x\n+y\ndiff --git a/.meta-agent/hindsight/r.json b/.meta-agent/hindsight/r.json\nnew file mode 100644\n--- /dev/null\n+++ b/.meta-agent/hindsight/r.json\n@@ -0,0 +1 @@\n+{}\n";
        let kept = without_files(diff, |path| path.starts_with(".meta-agent/"));
        assert_eq!(
            kept,
            "diff --git a/src/a.py b/src/a.py\n--- a/src/a.py\n+++ b/src/a.py\n@@ -1 +1 @@\n-x\n+y\n"
        );
        assert_eq!(without_files(diff, |_| false), diff);
    }

    mod properties {
        use super::super::*;
        use proptest::prelude::*;

        /// A hunk's lines as (kind, text): 0 context, 1 removed, 2 added.
        fn hunk_lines() -> impl Strategy<Value = Vec<(u8, String)>> {
            prop::collection::vec((0u8..3, "[ -~]{0,12}"), 1..20)
        }

        fn render(old_start: usize, new_start: usize, lines: &[(u8, String)]) -> String {
            let old = lines.iter().filter(|(kind, _)| *kind != 2).count();
            let new = lines.iter().filter(|(kind, _)| *kind != 1).count();
            let mut text = format!("@@ -{old_start},{old} +{new_start},{new} @@ context\n");
            for (kind, line) in lines {
                let sign = [' ', '-', '+'][usize::from(*kind)];
                text.push_str(&format!("{sign}{line}\n"));
            }
            text
        }

        proptest! {
            #[test]
            fn a_rendered_hunk_reads_back_as_written(
                old_start in 1usize..500,
                new_start in 1usize..500,
                first in hunk_lines(),
                second in hunk_lines(),
            ) {
                let text = format!(
                    "{}{}",
                    render(old_start, new_start, &first),
                    render(old_start + 1000, new_start + 1000, &second)
                );
                let hunks = parse_hunks(&text);
                prop_assert_eq!(hunks.len(), 2);
                for (hunk, (lines, old, new)) in hunks.iter().zip([
                    (&first, old_start, new_start),
                    (&second, old_start + 1000, new_start + 1000),
                ]) {
                    prop_assert_eq!((hunk.old_start, hunk.new_start), (old, new));
                    let read: Vec<(u8, String)> = hunk
                        .lines
                        .iter()
                        .map(|line| match line {
                            Line::Context(t) => (0, (*t).to_owned()),
                            Line::Removed(t) => (1, (*t).to_owned()),
                            Line::Added(t) => (2, (*t).to_owned()),
                        })
                        .collect();
                    prop_assert_eq!(&read, lines);
                }
            }

            #[test]
            fn any_text_reads_without_panicking(text in "[ -~\n@+-]{0,400}") {
                let _ = parse_hunks(&text);
                let _ = parse(&text);
            }
        }
    }
}
