//! Tests are evidence, not clay: the verdict of every test that existed before a run must come
//! from that test's own code, collected, configured and built the way the repository did it.
//!
//! A property of the change from the run's base commit to the candidate, checked after every act
//! and before every commit, not a list of forbidden names. A change is refused when it:
//! - changes or deletes existing test code (test files by each ecosystem's collection rules, the
//!   `#[cfg(test)]` modules of Rust source files): an existing line is gone or different, or
//!   something other than a new test was inserted among them (`code.rs`);
//! - changes or deletes existing test data (snapshots, `testdata/`, fixtures);
//! - adds, changes or deletes test configuration: runner configuration files, the test sections
//!   and keys of shared files (`setup.cfg`, `pyproject.toml`, `Cargo.toml`, `package.json`,
//!   Makefiles, `go.mod` replacements), `conftest.py`, build scripts, package markers beside
//!   existing tests (`shared.rs`);
//! - adds an interpreter start-up hook (`*.pth`, `sitecustomize`, `usercustomize`) or a file in
//!   a place that changes module resolution (`node_modules/`, `__mocks__/`, `vendor/`);
//! - adds a module whose import name collides with one the tests see: a module of the repository
//!   elsewhere, a standard-library or test-runner module, a module an existing test imports, or a
//!   JavaScript file beside a same-named one of another extension.
//!
//! New test files and new tests appended among existing ones are welcome; [`new_tests`] names
//! them so their verdicts are reported apart from the existing tests'. Pure: contents come in,
//! findings go out; the engine reads git and undoes what is refused.

mod code;
mod paths;
mod shared;

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::tamper::quote;
use code::{CodeChange, Lang};
use paths::{PathRole, Shared};

/// One changed path: its content at the base commit and in the candidate (`None`: absent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub path: String,
    pub base: Option<String>,
    pub now: Option<String>,
}

/// The base commit as the check needs it: every path, and the content of any of them.
pub trait BaseTree {
    /// Every file path at the base commit, `/`-separated.
    fn files(&self) -> &[String];
    /// The text of `path` at the base commit (`None`: absent or unreadable).
    fn read(&self, path: &str) -> Option<String>;
}

pub use meta_agent_protocol::refusal::EvidenceKind;
use meta_agent_protocol::refusal::{Refusal, Why};

/// One change that would alter the evidence of the existing tests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub path: String,
    pub kind: EvidenceKind,
    /// What changed, for a person (quotes at most a line).
    pub detail: String,
}

impl Finding {
    /// The refusal it is: of its path, with what changed.
    pub fn refusal(&self) -> Refusal {
        Refusal::of(
            &self.path,
            Why::AltersEvidence {
                evidence: self.kind,
                seen: self.detail.clone(),
            },
        )
    }
}

/// Every change in `changes` that alters the existing tests' evidence, in path order.
pub fn check(changes: &[Change], base: &dyn BaseTree) -> Vec<Finding> {
    let mut findings: Vec<Finding> = changes
        .iter()
        .filter(|c| c.base != c.now)
        .filter_map(|change| classify(change, base))
        .collect();
    findings.sort_by(|a, b| a.path.cmp(&b.path));
    findings.dedup_by(|a, b| a.path == b.path);
    findings
}

fn finding(path: &str, kind: EvidenceKind, detail: String) -> Option<Finding> {
    Some(Finding {
        path: path.to_owned(),
        kind,
        detail,
    })
}

fn classify(change: &Change, base: &dyn BaseTree) -> Option<Finding> {
    let path = change.path.as_str();
    match paths::role(path) {
        PathRole::Hook => finding(
            path,
            EvidenceKind::StartupHook,
            "writes a start-up hook or a module-resolution directory the tests would load".into(),
        ),
        PathRole::TestConfig => finding(
            path,
            EvidenceKind::TestConfigChanged,
            format!("{} test configuration", verb(change)),
        ),
        PathRole::SharedConfig(kind) => shared_config(change, kind),
        PathRole::TestData => change.base.as_ref().and_then(|_| {
            finding(
                path,
                EvidenceKind::TestDataChanged,
                format!("{} existing test data (snapshot, fixture)", verb(change)),
            )
        }),
        PathRole::TestCode => test_code(change, true, base),
        PathRole::Other => test_code(change, false, base),
    }
}

fn verb(change: &Change) -> &'static str {
    match (&change.base, &change.now) {
        (None, _) => "adds",
        (Some(_), None) => "deletes",
        (Some(_), Some(_)) => "changes",
    }
}

fn shared_config(change: &Change, kind: Shared) -> Option<Finding> {
    let before = change.base.as_deref().map(|t| shared::test_part(t, kind));
    let after = change.now.as_deref().map(|t| shared::test_part(t, kind));
    let before = before.unwrap_or_default();
    let after = after.unwrap_or_default();
    (before != after).then(|| Finding {
        path: change.path.clone(),
        kind: EvidenceKind::TestConfigChanged,
        detail: format!("changes {}", shared::describe(kind)),
    })
}

/// A test file (`whole`) or a source file that may hold test modules.
fn test_code(change: &Change, whole: bool, base: &dyn BaseTree) -> Option<Finding> {
    let path = change.path.as_str();
    match (&change.base, &change.now) {
        (Some(_), None) if whole => finding(
            path,
            EvidenceKind::TestDeleted,
            "deletes an existing test file".into(),
        ),
        (Some(old), None) => {
            let lang = Lang::of(path)?;
            let modules = !code::test_ranges(old, false, lang).is_empty();
            modules.then(|| Finding {
                path: path.to_owned(),
                kind: EvidenceKind::TestDeleted,
                detail: "deletes a file that holds existing tests".into(),
            })
        }
        (None, Some(_)) => new_file(path, base),
        (Some(old), Some(new)) => {
            let lang = Lang::of(path)?;
            let ranges = code::test_ranges(old, whole, lang);
            let what = code::first_change(old, new, &ranges, lang)?;
            let detail = match what {
                CodeChange::Changed {
                    line,
                    old,
                    new: Some(new),
                } => format!(
                    "changes existing test code: {} became {}",
                    quote_at(&old, line),
                    quote(&new)
                ),
                CodeChange::Changed {
                    line,
                    old,
                    new: None,
                } => {
                    format!("removes existing test code: {}", quote_at(&old, line))
                }
                CodeChange::Inserted { line } => format!(
                    "inserts into existing tests something that is not a new test: {}",
                    quote(&line)
                ),
            };
            finding(path, EvidenceKind::TestChanged, detail)
        }
        (None, None) => None,
    }
}

/// A new file: a package marker beside existing tests, or a module whose name collides.
fn new_file(path: &str, base: &dyn BaseTree) -> Option<Finding> {
    if path.rsplit('/').next() == Some("__init__.py") && holds_tests(paths::parent(path), base) {
        return finding(
            path,
            EvidenceKind::TestConfigChanged,
            "adds a package marker beside existing tests (changes how pytest imports them)".into(),
        );
    }
    if let Some(module) = paths::python_module(path) {
        return python_shadow(path, module, base);
    }
    let key = paths::js_resolution_key(path)?;
    let other = base
        .files()
        .iter()
        .find(|f| f.as_str() != path && paths::js_resolution_key(f) == Some(key))?;
    finding(
        path,
        EvidenceKind::ShadowingModule,
        format!("adds a module beside {other}: imports of it may load the new file instead"),
    )
}

fn holds_tests(dir: &str, base: &dyn BaseTree) -> bool {
    base.files().iter().any(|f| {
        paths::parent(f) == dir && paths::role(f) == PathRole::TestCode && f.ends_with(".py")
    })
}

fn python_shadow(path: &str, module: &str, base: &dyn BaseTree) -> Option<Finding> {
    if paths::PYTHON_STDLIB.contains(&module) {
        return finding(
            path,
            EvidenceKind::ShadowingModule,
            format!("adds a module named `{module}`, shadowing the standard or test-runner module"),
        );
    }
    let dir = paths::parent(path);
    let on_import_path = matches!(dir, "" | "src") || holds_tests(dir, base);
    let same = base
        .files()
        .iter()
        .find(|f| on_import_path && f.as_str() != path && paths::python_module(f) == Some(module));
    if let Some(other) = same {
        return finding(
            path,
            EvidenceKind::ShadowingModule,
            format!("adds a module named `{module}`, shadowing {other}"),
        );
    }
    let imported = base
        .files()
        .iter()
        .filter(|f| f.ends_with(".py") && paths::role(f) == PathRole::TestCode)
        .find(|f| base.read(f).is_some_and(|text| imports(&text, module)))?;
    finding(
        path,
        EvidenceKind::ShadowingModule,
        format!("adds a module named `{module}`, which {imported} imports"),
    )
}

/// Whether Python `text` imports `module` (top-level name).
fn imports(text: &str, module: &str) -> bool {
    text.lines().any(|line| {
        let t = line.trim_start();
        let names = t.strip_prefix("import ").or_else(|| {
            t.strip_prefix("from ")
                .map(|r| r.split(" import ").next().unwrap_or(""))
        });
        names.is_some_and(|list| {
            list.split(',').any(|item| {
                let item = item.trim();
                item.split(['.', ' ']).next() == Some(module)
            })
        })
    })
}

/// An existing line, quoted; a blank one is named with its line number (1-based) instead, so a
/// refusal always says what it refused.
fn quote_at(text: &str, line: usize) -> String {
    match text.trim().is_empty() {
        true => format!("{} (line {line})", quote(text)),
        false => quote(text),
    }
}

/// The changed paths of the test tree: what a run of the existing tests takes from the base
/// commit instead of the change (SECURITY.md, "Honest edges", property 7). Every changed test file
/// (new ones too: a test added before the existing ones in discovery order could rebind the code
/// under test), test data, test configuration and start-up hook; a shared file whose test part
/// changed; a new package marker; and any new file, whatever its name, that declares a test. What
/// is left of the change is its product code. Path order.
pub fn test_tree_paths(changes: &[Change]) -> Vec<String> {
    let mut paths: Vec<String> = changes
        .iter()
        .filter(|c| c.base != c.now && in_test_tree(c))
        .map(|c| c.path.clone())
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

fn in_test_tree(change: &Change) -> bool {
    match paths::role(&change.path) {
        PathRole::TestCode | PathRole::TestData | PathRole::TestConfig | PathRole::Hook => true,
        PathRole::SharedConfig(kind) => {
            let part = |text: &Option<String>| {
                text.as_deref()
                    .map(|t| shared::test_part(t, kind))
                    .unwrap_or_default()
            };
            part(&change.base) != part(&change.now)
        }
        PathRole::Other => match (&change.base, &change.now) {
            (None, Some(now)) => {
                change.path.rsplit('/').next() == Some("__init__.py")
                    || Lang::of(&change.path).is_some_and(|lang| {
                        collects_by_content(lang) && !declared(now, lang).is_empty()
                    })
            }
            (Some(_), Some(_)) | (Some(_), None) | (None, None) => false,
        },
    }
}

/// Whether a runner of `lang` may collect tests from a file whatever its name (pytest's and
/// Jest's collection patterns are configurable). Rust and Go collect by attribute and file name
/// (their new test files are test code by name); a new Rust module carries its own test module,
/// which cannot be left out without the module.
fn collects_by_content(lang: Lang) -> bool {
    match lang {
        Lang::Python | Lang::JavaScript | Lang::TypeScript | Lang::Tsx | Lang::Ruby => true,
        Lang::Rust | Lang::Go => false,
    }
}

/// The tests `changes` add: `path::name` for every test declared in the candidate and not at the
/// base commit (new files and new tests in existing files alike).
pub fn new_tests(changes: &[Change]) -> Vec<String> {
    let mut names = Vec::new();
    for change in changes {
        let Some(now) = &change.now else { continue };
        let Some(lang) = Lang::of(&change.path) else {
            continue;
        };
        let whole = paths::role(&change.path) == PathRole::TestCode;
        if !whole && lang != Lang::Rust {
            continue;
        }
        let before: HashSet<String> = change
            .base
            .as_deref()
            .map(|t| declared(t, lang).into_iter().collect())
            .unwrap_or_default();
        for name in declared(now, lang) {
            if !before.contains(&name) {
                names.push(format!("{}::{name}", change.path));
            }
        }
    }
    names
}

/// The tests `text` declares (Rust: functions under a test attribute).
fn declared(text: &str, lang: Lang) -> Vec<String> {
    let mut names = Vec::new();
    let mut attribute = false;
    for line in text.lines() {
        let t = line.trim_start();
        if lang == Lang::Rust && t.starts_with("#[") {
            attribute |= t.contains("test");
            continue;
        }
        if let Some(name) = code::test_name(line, lang)
            && (lang != Lang::Rust || attribute)
            && !name.is_empty()
        {
            names.push(name);
        }
        if !t.is_empty() {
            attribute = false;
        }
    }
    names
}

#[cfg(test)]
mod tests;
