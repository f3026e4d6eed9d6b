//! The files most worth showing the model at the start of an attempt, with excerpts: first those
//! named in failures' stack traces (around the line named), then files the task names, then the
//! first search hit of identifiers the task mentions.
//!
//! Reads files only through [`super::paths::resolve`] (inside the worktree, no `.git`, no symlink
//! out), skips large and binary files, and caps the number of files and lines. No LLM calls.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

use super::paths::{Access, relative, resolve};
use super::tools::walk;
use crate::protocol::builder::FailureContext;
use crate::protocol::task::Task;

/// Files shown at most.
pub const MAX_FILES: usize = 6;
/// Files larger than this are not excerpted.
const MAX_FILE_BYTES: u64 = 256 * 1024;
/// Lines shown before and after a line named in a trace or found by search.
const WINDOW_BEFORE: usize = 15;
const WINDOW_AFTER: usize = 25;
/// Lines shown of a file named without a line.
const HEAD_LINES: usize = 120;
/// Identifiers of the task searched at most.
const MAX_IDENTIFIERS: usize = 6;
/// Files walked at most when matching a path's tail or searching.
const MAX_WALK: usize = 5000;
/// Bytes read at most when searching for the task's identifiers.
const MAX_SCAN_BYTES: usize = 32 << 20;

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

/// A path mentioned somewhere, with a line when one was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mention {
    pub path: String,
    pub line: Option<usize>,
}

static PATH_LINE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r#"File "(?P<py>[^"]+)", line (?P<pyline>\d+)|(?P<path>(?:[A-Za-z0-9_.\-]+/)*[A-Za-z0-9_\-][A-Za-z0-9_.\-]*\.(?:py|rs|js|mjs|cjs|ts|tsx|jsx|go|java|kt|rb|c|cc|cpp|h|hpp|cs|swift|php|scala|ex|exs|toml|json|ya?ml|md))(?::(?P<line>\d+))?"#,
    )
    .ok()
});

static IDENTIFIER: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"`(?P<tick>[A-Za-z_][A-Za-z0-9_:.]*)`|\b(?P<word>[A-Za-z_][A-Za-z0-9_]*)\(").ok()
});

static QUALIFIED: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"\b([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)\b").ok());

/// `module.name` pairs in failure text (`calc.mean`), each once, in order.
pub fn qualified_names(text: &str) -> Vec<(String, String)> {
    let Some(regex) = QUALIFIED.as_ref() else {
        return Vec::new();
    };
    let mut seen = BTreeSet::new();
    regex
        .captures_iter(text)
        .map(|caps| (caps[1].to_owned(), caps[2].to_owned()))
        .filter(|pair| seen.insert(pair.clone()))
        .take(20)
        .collect()
}

/// Paths with lines mentioned in `text` (stack traces, `path:line`, `File "…", line N`).
pub fn mentions(text: &str) -> Vec<Mention> {
    let Some(regex) = PATH_LINE.as_ref() else {
        return Vec::new();
    };
    regex
        .captures_iter(text)
        .filter_map(|caps| {
            let (path, line) = match (caps.name("py"), caps.name("path")) {
                (Some(py), _) => (py.as_str(), caps.name("pyline")),
                (None, Some(path)) => (path.as_str(), caps.name("line")),
                (None, None) => return None,
            };
            Some(Mention {
                path: path.to_owned(),
                line: line.and_then(|l| l.as_str().parse().ok()),
            })
        })
        .collect()
}

/// Identifiers the task names: `backticked` words and calls such as `mean(`.
pub fn identifiers(text: &str) -> Vec<String> {
    let Some(regex) = IDENTIFIER.as_ref() else {
        return Vec::new();
    };
    let mut seen = BTreeSet::new();
    regex
        .captures_iter(text)
        .filter_map(|caps| caps.name("tick").or(caps.name("word")))
        .map(|m| {
            m.as_str()
                .rsplit([':', '.'])
                .next()
                .unwrap_or_default()
                .to_owned()
        })
        .filter(|word| word.len() >= 3 && seen.insert(word.clone()))
        .take(MAX_IDENTIFIERS)
        .collect()
}

/// The relevant files for this attempt, most relevant first, at most [`MAX_FILES`].
pub fn find(root: &Path, task: &Task, context: &FailureContext) -> Vec<FileExcerpt> {
    let mut picker = Picker::new(root);
    let traces = context.failures.join("\n") + "\n" + &context.output;
    let (with_line, without_line): (Vec<Mention>, Vec<Mention>) = mentions(&traces)
        .into_iter()
        .partition(|m| m.line.is_some());
    for mention in with_line {
        let line = mention.line.unwrap_or_default();
        picker.add(&mention, format!("stack trace, line {line}"));
    }
    for (module, name) in qualified_names(&traces) {
        if let Some(mention) = picker.definition_in_module(&module, &name) {
            picker.add(&mention, format!("defines {name}"));
        }
    }
    for mention in without_line {
        picker.add(&mention, "named in a failure".to_owned());
    }
    let task_text = format!(
        "{}\n{}\n{}",
        task.title,
        task.requirements,
        task.acceptance.join("\n")
    );
    for mention in mentions(&task_text) {
        picker.add(&mention, "named in the task".to_owned());
    }
    for (identifier, mention) in picker.search(&identifiers(&task_text)) {
        picker.add(&mention, format!("mentions {identifier}"));
    }
    picker.chosen
}

/// Collects excerpts, each file once.
struct Picker<'a> {
    root: &'a Path,
    chosen: Vec<FileExcerpt>,
    files: Option<Vec<String>>,
}

impl<'a> Picker<'a> {
    fn new(root: &'a Path) -> Self {
        Picker {
            root,
            chosen: Vec::new(),
            files: None,
        }
    }

    fn add(&mut self, mention: &Mention, reason: String) {
        if self.chosen.len() >= MAX_FILES {
            return;
        }
        let Some(path) = self.locate(&mention.path) else {
            return;
        };
        if self.chosen.iter().any(|file| file.path == path) {
            return;
        }
        if let Some(text) = self.excerpt(&path, mention.line) {
            self.chosen.push(FileExcerpt { path, reason, text });
        }
    }

    /// The repository path `mentioned` stands for: itself, an absolute path under the root, or
    /// the one repository file whose path ends with it.
    fn locate(&mut self, mentioned: &str) -> Option<String> {
        let root_text = self.root.to_string_lossy().into_owned();
        let candidate = mentioned
            .strip_prefix(&root_text)
            .map_or(mentioned, |rest| rest.trim_start_matches('/'))
            .trim_start_matches("./");
        if !candidate.starts_with('/') && self.readable(candidate) {
            return Some(candidate.to_owned());
        }
        let tail = format!("/{}", candidate.trim_start_matches('/'));
        let mut matches = self
            .files()
            .iter()
            .filter(|file| format!("/{file}").ends_with(&tail));
        let found = matches.next().cloned();
        match matches.next() {
            Some(_) => None,
            None => found,
        }
    }

    fn readable(&self, path: &str) -> bool {
        resolve(self.root, path, Access::Read).is_ok_and(|full| {
            std::fs::symlink_metadata(full)
                .is_ok_and(|meta| meta.is_file() && meta.len() <= MAX_FILE_BYTES)
        })
    }

    fn files(&mut self) -> &[String] {
        let root = self.root;
        self.files.get_or_insert_with(|| {
            walk(root)
                .take(MAX_WALK)
                .map(|path| relative(root, &path))
                .collect()
        })
    }

    /// Where `module` (a source file of that stem) defines `name`.
    fn definition_in_module(&mut self, module: &str, name: &str) -> Option<Mention> {
        const EXTENSIONS: [&str; 5] = ["py", "js", "ts", "rb", "go"];
        let path = EXTENSIONS
            .iter()
            .find_map(|ext| self.locate(&format!("{module}.{ext}")))?;
        let text = std::fs::read_to_string(resolve(self.root, &path, Access::Read).ok()?).ok()?;
        let line = text.lines().position(|line| is_definition(line, name))? + 1;
        Some(Mention {
            path,
            line: Some(line),
        })
    }

    /// For each identifier, the line of a repository file that defines it, else the first that
    /// uses it as a word; one pass over the files, at most [`MAX_SCAN_BYTES`] read.
    fn search(&mut self, identifiers: &[String]) -> Vec<(String, Mention)> {
        if identifiers.is_empty() {
            return Vec::new();
        }
        let words: Vec<String> = identifiers.iter().map(|id| regex::escape(id)).collect();
        let Ok(any) = Regex::new(&format!(r"\b(?:{})\b", words.join("|"))) else {
            return Vec::new();
        };
        let mut found: Vec<Found> = identifiers.iter().map(|_| Found::default()).collect();
        let files = self.files().to_vec();
        let mut scanned = 0usize;
        for path in files.iter().filter(|path| self.readable(path)) {
            let Ok(text) = std::fs::read_to_string(self.root.join(path)) else {
                continue;
            };
            scanned += text.len();
            scan(&text, path, identifiers, &any, &mut found);
            if scanned > MAX_SCAN_BYTES || found.iter().all(|f| f.definition.is_some()) {
                break;
            }
        }
        identifiers
            .iter()
            .zip(found)
            .filter_map(|(id, f)| f.definition.or(f.first_use).map(|m| (id.clone(), m)))
            .collect()
    }

    fn excerpt(&self, path: &str, line: Option<usize>) -> Option<String> {
        if !self.readable(path) {
            return None;
        }
        let text = std::fs::read_to_string(resolve(self.root, path, Access::Read).ok()?).ok()?;
        let lines: Vec<&str> = text.lines().collect();
        let (start, end) = match line {
            Some(line) => (
                line.saturating_sub(WINDOW_BEFORE).max(1),
                (line + WINDOW_AFTER).min(lines.len()),
            ),
            None => (1, HEAD_LINES.min(lines.len())),
        };
        let mut shown: String = (start..=end)
            .filter_map(|number| lines.get(number - 1).map(|l| format!("{number:>5}\t{l}\n")))
            .collect();
        if end < lines.len() || start > 1 {
            shown.push_str(&format!("({} lines in all)\n", lines.len()));
        }
        Some(shown)
    }
}

/// What the search found for one identifier.
#[derive(Default)]
struct Found {
    definition: Option<Mention>,
    first_use: Option<Mention>,
}

/// Records, in `found`, the lines of `text` that use or define each identifier.
fn scan(text: &str, path: &str, identifiers: &[String], any: &Regex, found: &mut [Found]) {
    for (index, line) in text.lines().enumerate().filter(|(_, l)| any.is_match(l)) {
        for (identifier, slot) in identifiers.iter().zip(found.iter_mut()) {
            if slot.definition.is_some() || !contains_word(line, identifier) {
                continue;
            }
            let mention = Mention {
                path: path.to_owned(),
                line: Some(index + 1),
            };
            if is_definition(line, identifier) {
                slot.definition = Some(mention);
            } else {
                slot.first_use.get_or_insert(mention);
            }
        }
    }
}

/// `word` in `line` with no identifier character on either side.
fn contains_word(line: &str, word: &str) -> bool {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    line.match_indices(word).any(|(at, _)| {
        let before = line[..at].chars().next_back().is_none_or(|c| !is_ident(c));
        let after = line[at + word.len()..]
            .chars()
            .next()
            .is_none_or(|c| !is_ident(c));
        before && after
    })
}

/// A line that looks like it defines `identifier` (`def`, `fn`, `class`, `function`, …).
fn is_definition(line: &str, identifier: &str) -> bool {
    const KEYWORDS: [&str; 9] = [
        "def ",
        "fn ",
        "class ",
        "function ",
        "struct ",
        "enum ",
        "trait ",
        "func ",
        "interface ",
    ];
    KEYWORDS.iter().any(|keyword| {
        let head = format!("{keyword}{identifier}");
        line.match_indices(&head).any(|(at, _)| {
            let after = line[at + head.len()..].chars().next();
            after.is_none_or(|c| !(c.is_alphanumeric() || c == '_'))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stack_trace_paths_and_lines_are_found() {
        let text = "Traceback:\n  File \"/ci/work/calc.py\", line 12, in mean\n\
                    tests/test_calc.py:7: AssertionError\n  at src/lib.rs:40:5";
        let found = mentions(text);
        assert_eq!(
            found,
            vec![
                Mention {
                    path: "/ci/work/calc.py".into(),
                    line: Some(12)
                },
                Mention {
                    path: "tests/test_calc.py".into(),
                    line: Some(7)
                },
                Mention {
                    path: "src/lib.rs".into(),
                    line: Some(40)
                },
            ]
        );
    }

    #[test]
    fn identifiers_come_from_backticks_and_calls() {
        let found =
            identifiers("Make `mean` handle floats; median(values) too; see `calc.std_dev`.");
        assert_eq!(found, ["mean", "median", "std_dev"]);
    }

    #[test]
    fn traces_then_named_files_then_search_hits() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("pkg")).unwrap();
        let calc: String = (1..=60).map(|n| format!("x{n} = {n}\n")).collect();
        std::fs::write(root.join("pkg/calc.py"), calc).unwrap();
        std::fs::write(root.join("README.md"), "# readme\n").unwrap();
        std::fs::write(
            root.join("a_first.py"),
            "def median_of(v):\n    median = 1\n",
        )
        .unwrap();
        std::fs::write(
            root.join("stats.py"),
            "import x\n\ndef median(v):\n    pass\n",
        )
        .unwrap();
        let task = Task::from_text("Update README.md and make `median` work").unwrap();
        let context = FailureContext {
            failures: vec![format!(
                "[test] boom — File \"{}/pkg/calc.py\", line 30",
                root.display()
            )],
            ..FailureContext::default()
        };
        let found = find(root, &task, &context);
        let paths: Vec<&str> = found.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["pkg/calc.py", "README.md", "stats.py"]);
        assert_eq!(found[0].reason, "stack trace, line 30");
        assert!(found[0].text.contains("   30\tx30 = 30\n"));
        assert!(found[0].text.starts_with("   15\t") && !found[0].text.contains("x56 ="));
        assert_eq!(found[2].reason, "mentions median");
        assert!(found[2].text.contains("def median"));
    }

    #[test]
    fn a_qualified_name_in_a_failure_points_at_its_definition() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("tests")).unwrap();
        std::fs::write(
            dir.path().join("calc.py"),
            "x = 1\n\ndef mean(v):\n    return 0\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("tests/test_calc.py"),
            "def test_mean():\n    pass\n",
        )
        .unwrap();
        let task = Task::from_text("Fix it").unwrap();
        let context = FailureContext {
            failures: vec![
                "pytest tests/test_calc.py::test_mean: assert 2 == 2.5 where f = calc.mean".into(),
            ],
            ..FailureContext::default()
        };
        let found = find(dir.path(), &task, &context);
        let picked: Vec<(&str, &str)> = found
            .iter()
            .map(|f| (f.path.as_str(), f.reason.as_str()))
            .collect();
        assert_eq!(
            picked,
            [
                ("calc.py", "defines mean"),
                ("tests/test_calc.py", "named in a failure")
            ]
        );
    }

    #[test]
    fn nothing_outside_the_tree_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let task = Task::from_text("see /etc/passwd.md and ../secret.py").unwrap();
        let context = FailureContext {
            failures: vec!["File \"/etc/hosts.py\", line 1".into()],
            ..FailureContext::default()
        };
        assert!(find(dir.path(), &task, &context).is_empty());
    }
}
