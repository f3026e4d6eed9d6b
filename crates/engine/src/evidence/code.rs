//! Existing test code, line by line: a base file's test lines (the whole file for a test file, the
//! `#[cfg(test)]` modules of a Rust source file) must all be there, unchanged, in the candidate.
//! What may be inserted among them is a new test: a block that starts with decorators or a test
//! declaration, lands between existing items (never inside one, never between an item and its
//! decorators) and brings no hook that would reach the existing tests (fixtures, setup, skips).
//! An import line may be added when it binds no name the file already uses. Pure.

use similar::{DiffOp, TextDiff};

pub(super) use meta_agent_protocol::lang::Lang;

/// Why a change to existing test code is refused: the first offending line, quoted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum CodeChange {
    /// An existing line (`line`, 1-based in the base file) was changed or removed.
    Changed {
        line: usize,
        old: String,
        new: Option<String>,
    },
    /// Lines were inserted among existing tests that are not a new test.
    Inserted { line: String },
}

/// The ranges (0-based, end exclusive) of `text`'s lines that are test code: every line for a
/// test file, the `#[cfg(test)]` modules for a Rust source file.
pub(super) fn test_ranges(text: &str, whole_file: bool, lang: Lang) -> Vec<(usize, usize)> {
    let count = text.lines().count();
    if whole_file {
        return vec![(0, count)];
    }
    if lang != Lang::Rust {
        return Vec::new();
    }
    cfg_test_modules(text)
}

/// The `#[cfg(test)] mod … { … }` blocks of a Rust file, from the attribute to the closing brace
/// (braces counted outside strings and comments only roughly: enough for test modules).
fn cfg_test_modules(text: &str) -> Vec<(usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut ranges = Vec::new();
    let mut index = 0;
    while index < lines.len() {
        if !lines[index].trim_start().starts_with("#[cfg(test)]") {
            index += 1;
            continue;
        }
        let start = index;
        let mut depth: i64 = 0;
        let mut opened = false;
        let mut end = lines.len();
        for (at, line) in lines.iter().enumerate().skip(start) {
            let code = line.split("//").next().unwrap_or(line);
            if at > start && !opened && code.trim_end().ends_with(';') {
                end = at + 1; // `#[cfg(test)] mod tests;`: the module is its own file
                break;
            }
            for c in code.chars() {
                match c {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            if opened && depth <= 0 {
                end = at + 1;
                break;
            }
        }
        ranges.push((start, end));
        index = end.max(start + 1);
    }
    ranges
}

fn within(ranges: &[(usize, usize)], line: usize) -> bool {
    ranges.iter().any(|&(a, b)| line >= a && line < b)
}

/// For an insertion before base line `at`: whether it lands in a test range (an insertion right
/// after a range's last line, still inside its closing brace, is inside too).
fn insertion_within(ranges: &[(usize, usize)], at: usize) -> bool {
    ranges.iter().any(|&(a, b)| at > a && at < b)
}

/// The first change of `base`'s test lines in `now`, if any.
pub(super) fn first_change(
    base: &str,
    now: &str,
    ranges: &[(usize, usize)],
    lang: Lang,
) -> Option<CodeChange> {
    if ranges.is_empty() {
        return None;
    }
    let old: Vec<&str> = base.lines().collect();
    let new: Vec<&str> = now.lines().collect();
    let whole_file = ranges == [(0, old.len())];
    let diff = TextDiff::configure()
        .algorithm(similar::Algorithm::Patience)
        .diff_slices(&old, &new);
    for op in diff.ops() {
        match *op {
            DiffOp::Equal { .. } => {}
            DiffOp::Delete {
                old_index, old_len, ..
            } => {
                if let Some(line) = (old_index..old_index + old_len).find(|&l| within(ranges, l)) {
                    return Some(CodeChange::Changed {
                        line: line + 1,
                        old: old[line].to_owned(),
                        new: None,
                    });
                }
            }
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => {
                let olds = &old[old_index..old_index + old_len];
                let news = &new[new_index..new_index + new_len];
                if widened_imports(olds, news, &old, lang) {
                    continue;
                }
                if let Some(line) = (old_index..old_index + old_len).find(|&l| within(ranges, l)) {
                    let offset = line - old_index;
                    return Some(CodeChange::Changed {
                        line: line + 1,
                        old: old[line].to_owned(),
                        new: new.get(new_index + offset).map(|s| (*s).to_owned()),
                    });
                }
            }
            DiffOp::Insert {
                old_index,
                new_index,
                new_len,
            } => {
                let inside = whole_file || insertion_within(ranges, old_index);
                if !inside {
                    continue;
                }
                let block = &new[new_index..new_index + new_len];
                if let Some(line) = refused_insertion(block, &old, old_index, lang) {
                    return Some(CodeChange::Inserted { line });
                }
            }
        }
    }
    None
}

/// Why an inserted block is not a new test (the offending line), or `None` when it is one.
fn refused_insertion(block: &[&str], old: &[&str], at: usize, lang: Lang) -> Option<String> {
    let lines: Vec<&str> = block
        .iter()
        .copied()
        .filter(|l| !l.trim().is_empty())
        .collect();
    let Some(first) = lines.first() else {
        return None; // blank lines only
    };
    if let Some(marker) = lines.iter().find(|l| reaches_other_tests(l, lang)) {
        return Some((*marker).to_owned());
    }
    if lines.iter().all(|l| is_import(l, lang)) {
        return rebinding_import(&lines, old, lang);
    }
    let declared = lines.iter().any(|l| declares_test(l, lang));
    let starts_well = is_decorator(first, lang) || declares_test(first, lang);
    if !declared || !starts_well {
        return Some((*first).to_owned());
    }
    if let Some(last) = lines.last().filter(|l| is_decorator(l, lang)) {
        return Some((*last).to_owned());
    }
    let previous = old[..at].iter().rev().find(|l| !l.trim().is_empty());
    if let Some(prev) = previous.filter(|l| is_decorator(l, lang)) {
        return Some((*prev).to_owned());
    }
    let next = old[at..].iter().find(|l| !l.trim().is_empty());
    match next {
        Some(next) if !is_item_boundary(next, lang) => Some((*first).to_owned()),
        Some(_) | None => None,
    }
}

/// The next existing line after an insertion may be: a top-level line, a declaration or a
/// decorator, or a closing bracket (the end of the enclosing module, class, describe block).
fn is_item_boundary(line: &str, lang: Lang) -> bool {
    let t = line.trim_start();
    line.len() == t.len()
        || declares_test(line, lang)
        || is_decorator(line, lang)
        || t.starts_with('}')
        || t.starts_with(')')
        || t.starts_with("end")
        || t.starts_with("def ")
        || t.starts_with("class ")
        || t.starts_with("fn ")
        || t.starts_with("describe(")
}

fn is_decorator(line: &str, lang: Lang) -> bool {
    let t = line.trim_start();
    match lang {
        Lang::Python => t.starts_with('@'),
        Lang::Rust => t.starts_with("#["),
        Lang::Go | Lang::JavaScript | Lang::TypeScript | Lang::Tsx | Lang::Ruby => false,
    }
}

/// Whether the line declares a test (or, in Rust, a function: `#[test]` sits on the line before).
pub(super) fn declares_test(line: &str, lang: Lang) -> bool {
    test_name(line, lang).is_some()
}

/// The name a line declares a test under, if it declares one.
pub(super) fn test_name(line: &str, lang: Lang) -> Option<String> {
    let t = line.trim_start();
    let ident = |rest: &str| -> Option<String> {
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        (end > 0).then(|| rest[..end].to_owned())
    };
    match lang {
        Lang::Python => {
            let rest = t.strip_prefix("async ").unwrap_or(t).strip_prefix("def ")?;
            ident(rest).filter(|n| n.starts_with("test"))
        }
        Lang::Rust => {
            let mut rest = t;
            for prefix in ["pub(crate) ", "pub ", "async ", "unsafe "] {
                rest = rest.strip_prefix(prefix).unwrap_or(rest);
            }
            ident(rest.strip_prefix("fn ")?)
        }
        Lang::Go => ident(t.strip_prefix("func ")?).filter(|n| n.starts_with("Test")),
        Lang::Ruby => ["it ", "it(", "describe ", "context "]
            .iter()
            .any(|p| t.starts_with(p))
            .then(|| quoted(t).unwrap_or_default()),
        Lang::JavaScript | Lang::TypeScript | Lang::Tsx => {
            ["it(", "test(", "it.each", "test.each", "describe("]
                .iter()
                .any(|p| t.starts_with(p))
                .then(|| quoted(t).unwrap_or_default())
        }
    }
}

/// The first quoted string on the line.
fn quoted(line: &str) -> Option<String> {
    let start = line.find(['"', '\'', '`'])?;
    let quote = line[start..].chars().next()?;
    let rest = &line[start + 1..];
    let end = rest.find(quote)?;
    Some(rest[..end].to_owned())
}

/// Lines that change what other tests see: fixtures, setup and teardown hooks, skips, focus.
fn reaches_other_tests(line: &str, lang: Lang) -> bool {
    let t = line.trim();
    let common = ["skip", "xfail", "autouse", ".only(", "todo("];
    if common.iter().any(|m| t.contains(m)) {
        return true;
    }
    let hooks: &[&str] = match lang {
        Lang::Python => &[
            "pytest.fixture",
            "def setup",
            "def teardown",
            "def setUp",
            "def tearDown",
            "pytest_",
            "monkeypatch",
            "sys.modules",
            "builtins",
        ],
        Lang::Rust => &["#[ignore", "#[should_panic", "#[ctor"],
        Lang::Go => &["func TestMain", "func init(", "t.Skip"],
        Lang::JavaScript | Lang::TypeScript | Lang::Tsx => &[
            "beforeEach",
            "beforeAll",
            "afterEach",
            "afterAll",
            "jest.mock",
            "vi.mock",
        ],
        Lang::Ruby => &["before", "after", "around", "pending"],
    };
    hooks.iter().any(|m| t.contains(m))
}

fn is_import(line: &str, lang: Lang) -> bool {
    let t = line.trim_start();
    match lang {
        Lang::Python => t.starts_with("import ") || t.starts_with("from "),
        Lang::Rust => t.starts_with("use ") && line.len() != t.len(),
        Lang::Go | Lang::JavaScript | Lang::TypeScript | Lang::Tsx | Lang::Ruby => false,
    }
}

/// An added import that binds a name the file already uses (it would rebind what the existing
/// tests call), or `None`.
fn rebinding_import(lines: &[&str], old: &[&str], lang: Lang) -> Option<String> {
    let words = file_words(old);
    lines
        .iter()
        .find(|line| {
            bound_names(line, lang)
                .iter()
                .any(|name| name == "*" || words.contains(name.as_str()))
        })
        .map(|l| (*l).to_owned())
}

/// Whether `olds` became `news` only by import lines that now bind more names, none of them a
/// name the file already uses (`from calc import mean` → `from calc import mean, median`).
fn widened_imports(olds: &[&str], news: &[&str], file: &[&str], lang: Lang) -> bool {
    olds.len() == news.len()
        && olds.iter().zip(news).all(|(o, n)| {
            if o == n {
                return true;
            }
            let (before, after) = (bound_names(o, lang), bound_names(n, lang));
            let same_source = import_source(o) == import_source(n);
            let added: Vec<&str> = after
                .iter()
                .filter(|name| !before.contains(name))
                .map(String::as_str)
                .collect();
            is_import(o, lang)
                && is_import(n, lang)
                && same_source
                && before.iter().all(|name| after.contains(name))
                && !added
                    .iter()
                    .any(|name| *name == "*" || file_words(file).contains(name))
        })
}

/// `from calc import …` → `calc`; a plain `import` line is its own source.
fn import_source(line: &str) -> &str {
    let t = line.trim();
    t.split_once(" import ").map_or(t, |(source, _)| source)
}

/// Every identifier-like word of `lines`.
fn file_words<'a>(lines: &[&'a str]) -> std::collections::HashSet<&'a str> {
    lines
        .iter()
        .flat_map(|l| l.split(|c: char| !(c.is_alphanumeric() || c == '_')))
        .filter(|w| !w.is_empty())
        .collect()
}

/// The names an import line binds (`*` for a glob).
fn bound_names(line: &str, lang: Lang) -> Vec<String> {
    let t = line.trim().trim_end_matches(';');
    let list = match lang {
        Lang::Python => match t.strip_prefix("from ") {
            Some(rest) => rest.split_once(" import ").map_or("", |(_, names)| names),
            None => t.strip_prefix("import ").unwrap_or(""),
        },
        Lang::Rust => t
            .strip_prefix("use ")
            .map(|rest| rest.rsplit("::").next().unwrap_or(rest))
            .unwrap_or(""),
        Lang::Go | Lang::JavaScript | Lang::TypeScript | Lang::Tsx | Lang::Ruby => "",
    };
    list.trim_matches(|c| c == '(' || c == ')' || c == '{' || c == '}')
        .split(',')
        .filter_map(|item| {
            let item = item.trim();
            let name = item.rsplit(" as ").next().unwrap_or(item).trim();
            let name = name.rsplit('.').next().unwrap_or(name);
            (!name.is_empty()).then(|| name.to_owned())
        })
        .collect()
}
