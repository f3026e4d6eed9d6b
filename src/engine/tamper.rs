//! The test-tamper guard: reads a unified git diff and says where the change stops being a fix and
//! starts gaming the gates: edits to protected files (the bot's config, gate presets, workflows,
//! `.git`), deleted test files, removed or skipped tests, weakened assertions.
//!
//! Pure functions over text: no I/O, no git. Heuristics lean towards few false positives: adding
//! tests, editing a test body while keeping its assertions, renaming or moving a test are fine.
//! Parts: `diff` reads the unified diff, `lines` classifies single lines, `assertions` and
//! `removal` find weakened assertions and lost tests; this file holds the policy, protected
//! paths and skip markers.

mod assertions;
mod diff;
mod lines;
mod removal;

use std::collections::HashMap;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::Serialize;

use assertions::{disabled_assertions, weakened_assertions};
use diff::{FileDiff, Line};
use lines::Lang;
use removal::removed_tests;

/// Paths no change may touch, whatever the configuration adds.
pub const DEFAULT_PROTECTED: [&str; 7] = [
    ".meta-agent.yml",
    ".meta-agent.yaml",
    ".github/workflows/**",
    ".github/actions/**",
    ".git/**",
    "**/.git/**",
    ".gitmodules",
];

/// Where tests live, by convention, in the ecosystems the presets know.
pub const DEFAULT_TEST_GLOBS: [&str; 11] = [
    "**/tests/**",
    "**/test/**",
    "**/__tests__/**",
    "**/*_test.go",
    "**/test_*.py",
    "**/*_test.py",
    "**/conftest.py",
    "**/*.test.{js,ts,jsx,tsx,mjs,cjs}",
    "**/*.spec.{js,ts,jsx,tsx,mjs,cjs}",
    "**/*_spec.rb",
    "**/testdata/**",
];

/// What the guard protects and where it looks for tests (globs relative to the repository root,
/// `*` never crossing `/`). Rust files holding `#[test]` are recognised by content as well.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TamperPolicy {
    pub protected: Vec<String>,
    pub test_globs: Vec<String>,
}

impl Default for TamperPolicy {
    fn default() -> Self {
        Self {
            protected: DEFAULT_PROTECTED.iter().map(|s| s.to_string()).collect(),
            test_globs: DEFAULT_TEST_GLOBS.iter().map(|s| s.to_string()).collect(),
        }
    }
}

/// The kind of tampering found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TamperKind {
    ProtectedFileChanged,
    TestFileDeleted,
    TestRemoved,
    TestSkipped,
    AssertionWeakened,
}

impl TamperKind {
    /// The snake_case name (as serialised).
    pub fn as_str(self) -> &'static str {
        match self {
            TamperKind::ProtectedFileChanged => "protected_file_changed",
            TamperKind::TestFileDeleted => "test_file_deleted",
            TamperKind::TestRemoved => "test_removed",
            TamperKind::TestSkipped => "test_skipped",
            TamperKind::AssertionWeakened => "assertion_weakened",
        }
    }
}

/// One reason to refuse a change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TamperFinding {
    pub path: String,
    pub kind: TamperKind,
    /// What was seen, for a person (quotes at most a line of the diff).
    pub detail: String,
}

/// Every tampering finding in `diff` (a unified git diff), in file order, without duplicates.
/// Compiles the policy's globs on each call; use [`TamperGuard`] to inspect many diffs.
pub fn inspect(diff: &str, policy: &TamperPolicy) -> Vec<TamperFinding> {
    TamperGuard::new(policy).inspect(diff)
}

/// A [`TamperPolicy`] with its globs compiled, for inspecting many diffs.
pub struct TamperGuard {
    matchers: Matchers,
}

impl TamperGuard {
    pub fn new(policy: &TamperPolicy) -> Self {
        Self {
            matchers: Matchers::new(policy),
        }
    }

    /// See [`inspect`].
    pub fn inspect(&self, diff: &str) -> Vec<TamperFinding> {
        let matchers = &self.matchers;
        let files: Vec<FileView<'_>> = diff::parse(diff)
            .into_iter()
            .map(|file| FileView::new(file, matchers))
            .collect();
        let mut findings = Vec::new();
        for file in &files {
            findings.extend(protected_changes(file, matchers));
            findings.extend(skip_markers(file));
            findings.extend(weakened_assertions(file));
            findings.extend(disabled_assertions(file));
        }
        findings.extend(removed_tests(&files, matchers));
        first_of_each(findings)
    }
}

/// `items` without repeats, in their first order (the patch gate uses it too).
pub(super) fn first_of_each<T: PartialEq>(items: Vec<T>) -> Vec<T> {
    let mut unique = Vec::with_capacity(items.len());
    for item in items {
        if !unique.contains(&item) {
            unique.push(item);
        }
    }
    unique
}

/// The policy's globs, compiled. A glob that does not compile is matched as a literal path.
struct Matchers {
    protected: GlobSet,
    protected_patterns: Vec<String>,
    tests: GlobSet,
}

/// The globs compiled (the patch gate uses it too).
pub(super) fn glob_set(patterns: &[String]) -> GlobSet {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        let glob = GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .or_else(|_| GlobBuilder::new(&globset::escape(pattern)).build());
        if let Ok(glob) = glob {
            builder.add(glob);
        }
    }
    builder.build().unwrap_or_else(|_| GlobSet::empty())
}

impl Matchers {
    fn new(policy: &TamperPolicy) -> Self {
        Self {
            protected: glob_set(&policy.protected),
            protected_patterns: policy.protected.clone(),
            tests: glob_set(&policy.test_globs),
        }
    }

    fn protected_by(&self, path: &str) -> Option<&str> {
        let index = *self.protected.matches(path).first()?;
        self.protected_patterns.get(index).map(String::as_str)
    }

    fn is_test_path(&self, path: &str) -> bool {
        self.tests.is_match(path)
    }
}

/// A file's diff with what the guard needs to know about it.
struct FileView<'d> {
    file: FileDiff<'d>,
    lang: Lang,
    /// A test file by path or by content.
    is_test: bool,
    /// The diff shows test declarations (or a `#[cfg(test)]` module) in this file.
    tests_by_content: bool,
}

impl<'d> FileView<'d> {
    fn new(file: FileDiff<'d>, matchers: &Matchers) -> Self {
        let lang = Lang::of(file.path());
        let by_path = file.paths().any(|p| matchers.is_test_path(p));
        let by_content = file.lines().any(|line| {
            let text = line_text(line);
            text.contains("#[cfg(test)]") || lines::test_declaration(text, lang).is_some()
        });
        Self {
            is_test: by_path || by_content,
            tests_by_content: by_content,
            file,
            lang,
        }
    }

    fn path(&self) -> String {
        self.file.path().to_string()
    }

    fn finding(&self, kind: TamperKind, detail: String) -> TamperFinding {
        TamperFinding {
            path: self.path(),
            kind,
            detail,
        }
    }
}

fn line_text<'a>(line: &Line<'a>) -> &'a str {
    match *line {
        Line::Context(t) | Line::Removed(t) | Line::Added(t) => t,
    }
}

/// At most one line of code, trimmed, for a finding's detail.
fn quote(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(100) {
        Some((at, _)) => format!("`{}…`", &text[..at]),
        None => format!("`{text}`"),
    }
}

fn protected_changes(file: &FileView<'_>, matchers: &Matchers) -> Vec<TamperFinding> {
    file.file
        .paths()
        .filter_map(|path| {
            let glob = matchers.protected_by(path)?;
            Some(TamperFinding {
                path: path.to_string(),
                kind: TamperKind::ProtectedFileChanged,
                detail: format!("changes protected path {path} (matches {glob})"),
            })
        })
        .collect()
}

/// Skip markers added and not merely moved (a removed identical line cancels an added one).
fn skip_markers(file: &FileView<'_>) -> Vec<TamperFinding> {
    let mut removed: HashMap<&str, usize> = HashMap::new();
    for line in file.file.lines() {
        if let Line::Removed(text) = line
            && lines::is_skip_marker(text, file.lang, file.is_test)
        {
            *removed.entry(text.trim()).or_default() += 1;
        }
    }
    let mut findings = Vec::new();
    for line in file.file.lines() {
        let Line::Added(text) = line else { continue };
        if !lines::is_skip_marker(text, file.lang, file.is_test) {
            continue;
        }
        match removed.get_mut(text.trim()) {
            Some(count) if *count > 0 => *count -= 1,
            _ => findings.push(file.finding(
                TamperKind::TestSkipped,
                format!("adds skip marker {}", quote(text)),
            )),
        }
    }
    findings
}

#[cfg(test)]
mod tests;
