//! The code most worth showing the model at the start of an attempt, most relevant first: the
//! code under test (what the failing tests call, resolved through imports and re-exports by
//! [`meta_agent_code`], a helper's callees included), the function around every in-repo frame of a
//! failure (the callers where a fix often belongs, not only the innermost), the failing tests
//! themselves, then what the output and the task name (files, `module.name` pairs, identifiers
//! found by search). Within [`super::excerpt`]'s line and file budget.
//!
//! Reads files only beneath the worktree without following links ([`Sources`]), never a stub
//! (`.pyi`, `.d.ts`) where its source exists, skips large and binary files. No LLM calls.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

pub use super::excerpt::FileExcerpt;
use super::excerpt::{Excerpts, Span, def_spans};
use super::tools::paths::relative;
use super::tools::walk;
use meta_agent_code::{self as code, Reached, Role, Site, Sources, is_stub};
use meta_agent_policy::Policy;
use meta_agent_protocol::builder::{FailureContext, FailureDigest};
use meta_agent_protocol::task::Task;

/// Lines shown before and after a line named in a trace or found by search, in a file no
/// grammar reads.
const WINDOW_BEFORE: usize = 15;
const WINDOW_AFTER: usize = 25;
/// Lines shown around a frame outside any definition (a module's top level).
const TOP_LEVEL_AROUND: usize = 3;
/// Lines shown of a file named without a line.
const HEAD_LINES: usize = 120;
/// Identifiers of the task searched at most.
const MAX_IDENTIFIERS: usize = 6;
/// Files walked at most when matching a path's tail or searching.
const MAX_WALK: usize = 5000;
/// Bytes read at most when searching for the task's identifiers.
const MAX_SCAN_BYTES: usize = 32 << 20;

/// A path mentioned somewhere, with a line when one was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mention {
    pub path: String,
    pub line: Option<usize>,
}

static PATH_LINE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r#"File "(?P<py>[^"]+)", line (?P<pyline>\d+)|(?P<path>(?:[A-Za-z0-9_.\-]+/)*[A-Za-z0-9_\-][A-Za-z0-9_.\-]*\.(?:pyi|py|rs|js|mjs|cjs|ts|tsx|jsx|go|java|kt|rb|c|cc|cpp|h|hpp|cs|swift|php|scala|ex|exs|toml|json|ya?ml|md))(?::(?P<line>\d+))?"#,
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

/// The relevant code for this attempt, most relevant first.
pub fn find(
    root: &Path,
    task: &Task,
    context: &FailureContext,
    policy: &Policy,
) -> Vec<FileExcerpt> {
    let mut files = Sources::new(root);
    let mut shown = Excerpts::default();
    let sites = test_sites(&mut files, &context.failures, policy);
    let reached = code::under_test(&mut files, &sites);
    for found in reached.iter().filter(|r| r.role != Role::Test) {
        shown.add(
            &found.path,
            &def_spans(&found.def, None),
            &reach_reason(found),
        );
    }
    show_frames(&mut files, &mut shown, &context.failures, &reached);
    for test in reached.iter().filter(|r| r.role == Role::Test) {
        let focus = sites
            .iter()
            .find(|s| s.path == test.path)
            .and_then(|s| s.line);
        let reason = format!("the failing test {}", test.def.qualified());
        shown.add(&test.path, &def_spans(&test.def, focus), &reason);
    }
    let mut picker = Picker {
        root,
        files: &mut files,
        shown: &mut shown,
        listed: None,
    };
    picker.named(task, context);
    shown.render(&mut files)
}

/// Where each failing test is: the first of its location and frames in a test file, else its
/// location (Rust's unit tests live beside the code), else the file its id names (vitest's
/// `test/add.test.ts::adds`, pytest's `tests.test_calc::test_mean`), with the test's name.
pub fn test_sites(files: &mut Sources, failures: &[FailureDigest], policy: &Policy) -> Vec<Site> {
    failures
        .iter()
        .filter(|f| f.same_as.is_none())
        .filter_map(|failure| {
            let test = failure.test.as_ref()?;
            let places: Vec<(String, Option<usize>)> = failure
                .location
                .iter()
                .chain(&failure.frames)
                .map(|place| split_line(place))
                .collect();
            let (path, line) = places
                .iter()
                .find(|(path, _)| policy.is_test_path(path))
                .or(places.first())
                .cloned()
                .or_else(|| {
                    let file = test.module_files().into_iter().find(|p| files.is_file(p))?;
                    Some((file, None))
                })?;
            Some(Site {
                path,
                line,
                name: Some(test.clone()),
            })
        })
        .collect()
}

/// `path:line` (a trailing `:col` ignored) as its parts.
fn split_line(place: &str) -> (String, Option<usize>) {
    let mut parts = place.split(':');
    let path = parts.next().unwrap_or_default().to_owned();
    let line = parts.next().and_then(|l| l.parse().ok());
    (path, line)
}

fn reach_reason(found: &Reached) -> String {
    let via = found.via.as_deref().unwrap_or("the test");
    match found.role {
        Role::Fixture => format!("fixture {} of {via}", found.def.name),
        Role::UnderTest | Role::Test => format!("{}, called by {via}", found.def.qualified()),
    }
}

/// The function around each in-repo frame of each failure (innermost first), or the lines
/// around it in a file no grammar reads; a frame inside a failing test is the test's.
fn show_frames(
    files: &mut Sources,
    shown: &mut Excerpts,
    failures: &[FailureDigest],
    reached: &[Reached],
) {
    for failure in failures.iter().filter(|f| f.same_as.is_none()) {
        for place in failure.location.iter().chain(&failure.frames) {
            let (path, Some(line)) = split_line(place) else {
                continue;
            };
            let in_test = reached
                .iter()
                .any(|r| r.role == Role::Test && r.path == path && r.def.contains(line));
            if in_test || shown.shows(&path, line) || is_stub(&path) {
                continue;
            }
            match code::enclosing(files, &path, line) {
                Some(def) => {
                    let reason = format!("{}, frame at line {line}", def.qualified());
                    shown.add(&path, &def_spans(&def, Some(line)), &reason);
                }
                None if files.is_file(&path) => {
                    // Module-level code of a file read as code: the statement and its neighbours.
                    let span = match code::code_lang(&path) {
                        Some(_) => Span::around(line, TOP_LEVEL_AROUND, TOP_LEVEL_AROUND),
                        None => Span::around(line, WINDOW_BEFORE, WINDOW_AFTER),
                    };
                    shown.add(&path, &[span], &format!("frame at line {line}"));
                }
                None => {}
            }
        }
    }
}

/// Adds what the failures' text and the task name: paths, `module.name` pairs, identifiers.
struct Picker<'a> {
    root: &'a Path,
    files: &'a mut Sources,
    shown: &'a mut Excerpts,
    listed: Option<Vec<String>>,
}

impl Picker<'_> {
    fn named(&mut self, task: &Task, context: &FailureContext) {
        let failures: String = context
            .failures
            .iter()
            .map(|f| format!("{}\n{}\n", f.headline, f.detail))
            .collect();
        let traces = failures + &context.output;
        let (with_line, without_line): (Vec<Mention>, Vec<Mention>) = mentions(&traces)
            .into_iter()
            .partition(|m| m.line.is_some());
        for mention in with_line {
            let line = mention.line.unwrap_or_default();
            self.add(&mention, &format!("stack trace, line {line}"));
        }
        for (module, name) in qualified_names(&traces) {
            if let Some(mention) = self.definition_in_module(&module, &name) {
                self.add(&mention, &format!("defines {name}"));
            }
        }
        for mention in without_line {
            self.add(&mention, "named in a failure");
        }
        let task_text = task.brief();
        for mention in mentions(&task_text) {
            self.add(&mention, "named in the task");
        }
        for (identifier, mention) in self.search(&identifiers(&task_text)) {
            self.add(&mention, &format!("mentions {identifier}"));
        }
    }

    /// Shows the function at the mention's line (or the lines around it, or the file's head).
    fn add(&mut self, mention: &Mention, reason: &str) {
        if self.shown.is_full() {
            return;
        }
        let Some(located) = self.locate(&mention.path) else {
            return;
        };
        let path = self.source_of(located.clone());
        // A stub's lines say nothing about its source's: the source is shown from its head.
        let line = mention.line.filter(|_| path == located);
        let spans = match line {
            Some(line) => match code::enclosing(self.files, &path, line) {
                Some(def) => def_spans(&def, Some(line)),
                None => vec![Span::around(line, WINDOW_BEFORE, WINDOW_AFTER)],
            },
            None if self.shown.has_file(&path) => return,
            None => vec![Span::new(1, HEAD_LINES)],
        };
        self.shown.add(&path, &spans, reason);
    }

    /// The repository path `mentioned` stands for: itself, an absolute path under the root, or
    /// the one repository file whose path ends with it.
    fn locate(&mut self, mentioned: &str) -> Option<String> {
        let root_text = self.root.to_string_lossy().into_owned();
        let candidate = mentioned
            .strip_prefix(&root_text)
            .map_or(mentioned, |rest| rest.trim_start_matches('/'))
            .trim_start_matches("./");
        if !candidate.starts_with('/') && self.files.is_file(candidate) {
            Some(candidate.to_owned())
        } else {
            let tail = format!("/{}", candidate.trim_start_matches('/'));
            let mut matches = self
                .listed()
                .iter()
                .filter(|file| format!("/{file}").ends_with(&tail));
            let found = matches.next().cloned();
            match matches.next() {
                Some(_) => None,
                None => found,
            }
        }
    }

    /// The source a stub describes, when the repository has it.
    fn source_of(&mut self, path: String) -> String {
        if !is_stub(&path) {
            return path;
        }
        let stem = path
            .strip_suffix(".pyi")
            .map(|s| format!("{s}.py"))
            .or_else(|| {
                [".d.ts", ".d.mts", ".d.cts"].iter().find_map(|ext| {
                    let stem = path.strip_suffix(ext)?;
                    ["ts", "tsx", "js", "mjs", "cjs"]
                        .iter()
                        .map(|e| format!("{stem}.{e}"))
                        .find(|p| self.files.is_file(p))
                })
            });
        match stem {
            Some(source) if self.files.is_file(&source) => source,
            _ => path,
        }
    }

    fn listed(&mut self) -> &[String] {
        let root = self.root;
        self.listed.get_or_insert_with(|| {
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
            .find_map(|ext| self.locate(&format!("{module}.{ext}")))
            .map(|path| self.source_of(path))?;
        let text = self.files.read(&path).ok()?;
        let line = text.lines().position(|line| is_definition(line, name))? + 1;
        Some(Mention {
            path,
            line: Some(line),
        })
    }

    /// For each identifier, the line of a repository file that defines it (a stub only when no
    /// source does), else the first that uses it as a word; one pass over the files, at most
    /// [`MAX_SCAN_BYTES`] read.
    fn search(&mut self, identifiers: &[String]) -> Vec<(String, Mention)> {
        if identifiers.is_empty() {
            return Vec::new();
        }
        let words: Vec<String> = identifiers.iter().map(|id| regex::escape(id)).collect();
        let Ok(any) = Regex::new(&format!(r"\b(?:{})\b", words.join("|"))) else {
            return Vec::new();
        };
        let mut found: Vec<Found> = identifiers.iter().map(|_| Found::default()).collect();
        let listed = self.listed().to_vec();
        let mut scanned = 0usize;
        for path in &listed {
            let Ok(text) = self.files.read(path) else {
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
            .filter_map(|(id, f)| {
                f.definition
                    .or(f.stub)
                    .or(f.first_use)
                    .map(|m| (id.clone(), m))
            })
            .collect()
    }
}

/// What the search found for one identifier.
#[derive(Default)]
struct Found {
    definition: Option<Mention>,
    /// A definition in a stub (`.pyi`, `.d.ts`): used only when no source defines it.
    stub: Option<Mention>,
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
            if is_definition(line, identifier) && is_stub(path) {
                slot.stub.get_or_insert(mention);
            } else if is_definition(line, identifier) {
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

    fn repository(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let full = dir.path().join(path);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(full, text).unwrap();
        }
        dir
    }

    fn picked(found: &[FileExcerpt]) -> Vec<(&str, &str)> {
        found
            .iter()
            .map(|f| (f.path.as_str(), f.reason.as_str()))
            .collect()
    }

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
    fn the_code_under_test_comes_first_then_frames_then_the_test() {
        let dir = repository(&[
            ("winstats/__init__.py", "from .window import windows\n"),
            (
                "winstats/window.py",
                "import os\n\n\ndef windows(values, size):\n    return [values[i : i + size] for i in range(len(values) - size)]\n\n\ndef unused():\n    pass\n",
            ),
            (
                "tests/test_window.py",
                "from winstats import windows\n\n\ndef test_windows():\n    assert windows([1, 2, 3, 4], 2) == [[1, 2], [2, 3], [3, 4]]\n",
            ),
        ]);
        let task = Task::from_text("Fix windows").unwrap();
        let context = FailureContext {
            failures: vec![FailureDigest::test(
                "tests.test_window::test_windows",
                Some("tests/test_window.py:5"),
                "assert [[1, 2], [2, 3]] == [[1, 2], [2, 3], [3, 4]]",
            )],
            ..FailureContext::default()
        };
        let found = find(dir.path(), &task, &context, &Policy::default());
        assert_eq!(
            picked(&found),
            [
                ("winstats/window.py", "windows, called by test_windows"),
                ("tests/test_window.py", "the failing test test_windows"),
            ]
        );
        assert_eq!(
            found[0].text,
            "    4\tdef windows(values, size):\n    5\t    return [values[i : i + size] for i in range(len(values) - size)]\n(9 lines in all)\n"
        );
    }

    #[test]
    fn a_test_known_only_by_its_id_is_found_in_the_file_the_id_names() {
        let dir = repository(&[
            ("src/index.ts", "export { add } from './add';\n"),
            (
                "src/add.ts",
                "export function add(a: number, b: number): number {\n  return a - b;\n}\n",
            ),
            (
                "test/add.test.ts",
                "import { expect, it } from 'vitest';\nimport { add } from '../src';\n\nit('adds', () => {\n  expect(add(1, 2)).toBe(3);\n});\n",
            ),
        ]);
        let task = Task::from_text("Fix add").unwrap();
        let context = FailureContext {
            failures: vec![FailureDigest::test(
                "test/add.test.ts::adds",
                None,
                "AssertionError: expected -1 to be 3 // Object.is equality",
            )],
            ..FailureContext::default()
        };
        let found = find(dir.path(), &task, &context, &Policy::default());
        assert_eq!(
            picked(&found),
            [
                ("src/add.ts", "add, called by adds"),
                ("test/add.test.ts", "the failing test adds"),
            ]
        );
    }

    #[test]
    fn every_frame_of_a_traceback_is_shown_not_only_the_innermost() {
        let far: String = (0..60).map(|n| format!("X{n} = {n}\n")).collect();
        let lib = format!(
            "def outer(rows):\n    return [inner(r, 3) for r in rows]\n\n\n{far}\ndef inner(row, width):\n    return row.ljust(width)[width]\n"
        );
        let dir = repository(&[("lib.py", &lib)]);
        let task = Task::from_text("Fix it").unwrap();
        let mut failure = FailureDigest::test(
            "tests.test_lib::test_rows",
            Some("lib.py:67"),
            "IndexError: string index out of range",
        );
        failure.frames = vec!["lib.py:2".into(), "tests/test_lib.py:9".into()];
        let context = FailureContext {
            failures: vec![failure],
            ..FailureContext::default()
        };
        let found = find(dir.path(), &task, &context, &Policy::default());
        assert_eq!(
            picked(&found),
            [("lib.py", "inner, frame at line 67; outer, frame at line 2")]
        );
        let text = &found[0].text;
        assert!(
            text.contains("    1\tdef outer(rows):")
                && text.contains("   67\t    return row.ljust(width)[width]"),
            "{text}"
        );
        assert!(
            text.contains("    ⋮\n") && !text.contains("X30 = 30"),
            "{text}"
        );
    }

    #[test]
    fn traces_then_named_files_then_search_hits() {
        let dir = repository(&[
            (
                "pkg/calc.py",
                &(1..=60)
                    .map(|n| format!("x{n} = {n}\n"))
                    .collect::<String>(),
            ),
            ("README.md", "# readme\n"),
            ("a_first.py", "def median_of(v):\n    median = 1\n"),
            ("stats.py", "import x\n\ndef median(v):\n    pass\n"),
        ]);
        let root = dir.path();
        let task = Task::from_text("Update README.md and make `median` work").unwrap();
        let mut failure = FailureDigest::test("boom", None, "");
        failure.detail = format!("File \"{}/pkg/calc.py\", line 30", root.display());
        let context = FailureContext {
            failures: vec![failure],
            ..FailureContext::default()
        };
        let found = find(root, &task, &context, &Policy::default());
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
        let dir = repository(&[
            ("calc.py", "x = 1\n\ndef mean(v):\n    return 0\n"),
            ("tests/test_calc.py", "def test_mean():\n    pass\n"),
        ]);
        let task = Task::from_text("Fix it").unwrap();
        let context = FailureContext {
            failures: vec![FailureDigest::test(
                "tests/test_calc.py::test_mean",
                None,
                "assert 2 == 2.5 where f = calc.mean",
            )],
            ..FailureContext::default()
        };
        let found = find(dir.path(), &task, &context, &Policy::default());
        assert_eq!(
            picked(&found),
            [
                ("tests/test_calc.py", "the failing test test_mean"),
                ("calc.py", "defines mean"),
            ]
        );
    }

    #[test]
    fn a_stub_never_stands_in_for_its_source() {
        let dir = repository(&[
            (
                "a_stubs/calc.pyi",
                "def mean(values: list[float]) -> float: ...\n",
            ),
            (
                "src/calc.py",
                "def mean(values):\n    return sum(values) // len(values)\n",
            ),
            (
                "src/calc.pyi",
                "def mean(values: list[float]) -> float: ...\n",
            ),
        ]);
        let task = Task::from_text("Make `mean` exact").unwrap();
        let found = find(
            dir.path(),
            &task,
            &FailureContext::default(),
            &Policy::default(),
        );
        assert_eq!(picked(&found), [("src/calc.py", "mentions mean")]);
        let mut failure = FailureDigest::test("t", None, "");
        failure.detail = "src/calc.pyi:1: error".into();
        let context = FailureContext {
            failures: vec![failure],
            ..FailureContext::default()
        };
        let task = Task::from_text("Fix it").unwrap();
        let found = find(dir.path(), &task, &context, &Policy::default());
        assert_eq!(picked(&found), [("src/calc.py", "stack trace, line 1")]);
        assert!(found[0].text.starts_with("    1\tdef mean(values):\n"));
    }

    #[test]
    fn nothing_outside_the_tree_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let task = Task::from_text("see /etc/passwd.md and ../secret.py").unwrap();
        let mut failure = FailureDigest::test("t", Some("/etc/hosts.py:1"), "");
        failure.detail = "File \"/etc/hosts.py\", line 1".into();
        let context = FailureContext {
            failures: vec![failure],
            ..FailureContext::default()
        };
        assert!(find(dir.path(), &task, &context, &Policy::default()).is_empty());
    }
}
