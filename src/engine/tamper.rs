//! The test-tamper guard: reads a unified git diff and says where the change stops being a fix and
//! starts gaming the gates: edits to protected files (the bot's config, gate presets, workflows,
//! `.git`), deleted test files, removed or skipped tests, weakened assertions.
//!
//! Pure functions over text: no I/O, no git. Heuristics lean towards few false positives: adding
//! tests, editing a test body while keeping its assertions, renaming or moving a test are fine.

mod diff;
mod lines;

use std::collections::HashMap;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::Serialize;

use diff::{FileDiff, FileStatus, Line};
use lines::{Lang, TestDecl};

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
        let mut unique = Vec::with_capacity(findings.len());
        for finding in findings {
            if !unique.contains(&finding) {
                unique.push(finding);
            }
        }
        unique
    }
}

/// The policy's globs, compiled. A glob that does not compile is matched as a literal path.
struct Matchers {
    protected: GlobSet,
    protected_patterns: Vec<String>,
    tests: GlobSet,
}

fn glob_set(patterns: &[String]) -> GlobSet {
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

/// A run of removed and added lines between context lines.
#[derive(Default)]
struct Block<'a> {
    removed: Vec<&'a str>,
    added: Vec<&'a str>,
}

fn blocks<'a>(hunk: &[Line<'a>]) -> Vec<Block<'a>> {
    let mut out = vec![Block::default()];
    for line in hunk {
        match *line {
            Line::Context(_) => {
                if out
                    .last()
                    .is_some_and(|b| !b.removed.is_empty() || !b.added.is_empty())
                {
                    out.push(Block::default());
                }
            }
            Line::Removed(t) => out.last_mut().iter_mut().for_each(|b| b.removed.push(t)),
            Line::Added(t) => out.last_mut().iter_mut().for_each(|b| b.added.push(t)),
        }
    }
    out
}

fn real_assertions<'a>(lines: &[&'a str]) -> Vec<&'a str> {
    lines
        .iter()
        .copied()
        .filter(|l| lines::is_assertion(l) && !lines::is_trivial_assertion(l))
        .collect()
}

fn weakened_assertions(file: &FileView<'_>) -> Vec<TamperFinding> {
    if !file.is_test || file.file.status == FileStatus::Deleted {
        return Vec::new();
    }
    let all: Vec<Block<'_>> = file.file.hunks.iter().flat_map(|h| blocks(h)).collect();
    let removed_total: usize = all.iter().map(|b| real_assertions(&b.removed).len()).sum();
    let added_total: usize = all.iter().map(|b| real_assertions(&b.added).len()).sum();
    let balanced = added_total >= removed_total;
    all.iter()
        .filter(|block| !removes_a_test(block, file.lang))
        .filter_map(|block| weakening(block, balanced))
        .map(|detail| file.finding(TamperKind::AssertionWeakened, detail))
        .collect()
}

/// Added code that stops existing assertions from running or failing: an always-false guard or
/// a bare `return` with assertions after it, a swallowed `AssertionError`, a `#[should_panic]` on
/// a test that is not new.
fn disabled_assertions(file: &FileView<'_>) -> Vec<TamperFinding> {
    if !file.is_test {
        return Vec::new();
    }
    let mut details = Vec::new();
    for hunk in &file.file.hunks {
        details.extend(dead_code_before_assertions(hunk));
        for block in blocks(hunk) {
            let adds_a_test = block
                .added
                .iter()
                .any(|l| lines::test_declaration(l, file.lang).is_some());
            let swallowing = block.added.iter().find(|l| lines::swallows_failures(l));
            if let Some(line) = swallowing.filter(|_| !adds_a_test) {
                details.push(format!("makes failures pass with {}", quote(line)));
            }
        }
    }
    details
        .into_iter()
        .map(|detail| file.finding(TamperKind::AssertionWeakened, detail))
        .collect()
}

fn dead_code_before_assertions(hunk: &[Line<'_>]) -> Option<String> {
    let new_side: Vec<&Line<'_>> = hunk
        .iter()
        .filter(|l| !matches!(l, Line::Removed(_)))
        .collect();
    new_side.iter().enumerate().find_map(|(i, line)| {
        let Line::Added(text) = line else { return None };
        let guards = lines::is_dead_code_start(text)
            && new_side[i + 1..]
                .iter()
                .any(|l| lines::is_assertion(line_text(l)));
        guards.then(|| format!("adds {} before assertions, so they never run", quote(text)))
    })
}

fn removes_a_test(block: &Block<'_>, lang: Lang) -> bool {
    block
        .removed
        .iter()
        .any(|l| lines::test_declaration(l, lang).is_some())
}

/// Why this block weakens an assertion, if it does. `balanced`: the file as a whole adds as many
/// real assertions as it removes (so a removal here is a move or a restructuring).
fn weakening(block: &Block<'_>, balanced: bool) -> Option<String> {
    let removed = real_assertions(&block.removed);
    let first = *removed.first()?;
    let added_asserts: Vec<&str> = block
        .added
        .iter()
        .copied()
        .filter(|l| lines::is_assertion(l))
        .collect();
    if let Some(trivial) = added_asserts
        .iter()
        .find(|l| lines::is_trivial_assertion(l))
    {
        return Some(format!(
            "replaces {} with the always-true {}",
            quote(first),
            quote(trivial)
        ));
    }
    if added_asserts.is_empty() {
        return weakened_without_replacement(block, first, balanced);
    }
    let compared = removed.iter().find(|l| lines::has_comparison(l))?;
    let still_compares = added_asserts.iter().any(|l| lines::has_comparison(l));
    (!still_compares).then(|| {
        format!(
            "drops the comparison: {} became {}",
            quote(compared),
            quote(added_asserts[0])
        )
    })
}

fn weakened_without_replacement(block: &Block<'_>, first: &str, balanced: bool) -> Option<String> {
    let needle = first.trim();
    let commented = block
        .added
        .iter()
        .find(|l| lines::is_comment(l) && l.contains(needle));
    match commented {
        Some(comment) => Some(format!(
            "comments out {} as {}",
            quote(first),
            quote(comment)
        )),
        None if balanced => None,
        None => Some(format!(
            "removes {} with no assertion in its place",
            quote(first)
        )),
    }
}

/// A test declared in the diff: which file, and its name ("" when it could not be read).
struct TestRef {
    file: usize,
    name: String,
}

/// The tests a side of a hunk declares: `Removed` lines for the old side, `Added` for the new.
fn declared_tests(hunk: &[Line<'_>], lang: Lang, removed_side: bool) -> Vec<String> {
    let side: Vec<(bool, &str)> = hunk
        .iter()
        .filter_map(|line| match *line {
            Line::Context(t) => Some((false, t)),
            Line::Removed(t) => removed_side.then_some((true, t)),
            Line::Added(t) => (!removed_side).then_some((true, t)),
        })
        .collect();
    let mut names = Vec::new();
    for (i, &(changed, text)) in side.iter().enumerate() {
        match lines::test_declaration(text, lang) {
            Some(TestDecl::Named(name)) if changed => names.push(name),
            Some(TestDecl::RustAttribute) if changed => {
                let name = side[i + 1..]
                    .iter()
                    .take(6)
                    .find_map(|(_, t)| lines::rust_fn_name(t));
                names.push(name.unwrap_or_default());
            }
            _ => {}
        }
    }
    names
}

fn collect_tests(files: &[FileView<'_>], removed_side: bool) -> Vec<TestRef> {
    let mut out = Vec::new();
    for (index, file) in files.iter().enumerate() {
        for hunk in &file.file.hunks {
            for name in declared_tests(hunk, file.lang, removed_side) {
                out.push(TestRef { file: index, name });
            }
        }
    }
    out
}

/// Removed tests that reappear neither by name anywhere in the diff (a move) nor as another new
/// test in the same file (a rename).
fn lost_tests(files: &[FileView<'_>]) -> Vec<TestRef> {
    let mut added = collect_tests(files, false);
    let mut lost = collect_tests(files, true);
    lost.retain(|t| !take(&mut added, |a| !t.name.is_empty() && a.name == t.name));
    lost.retain(|t| !take(&mut added, |a| a.file == t.file));
    lost
}

/// Removes the first element matching `pred` from `pool`; whether there was one.
fn take(pool: &mut Vec<TestRef>, pred: impl Fn(&TestRef) -> bool) -> bool {
    match pool.iter().position(pred) {
        Some(at) => {
            pool.remove(at);
            true
        }
        None => false,
    }
}

/// Lost tests, reported per test, and deleted test files, reported once per file.
fn removed_tests(files: &[FileView<'_>], matchers: &Matchers) -> Vec<TamperFinding> {
    let lost = lost_tests(files);
    let mut findings = deleted_test_files(files, &lost, matchers);
    for test in &lost {
        let file = &files[test.file];
        if file.file.status == FileStatus::Deleted {
            continue;
        }
        let name = match test.name.as_str() {
            "" => "a test",
            name => name,
        };
        findings.push(file.finding(TamperKind::TestRemoved, format!("removes test {name}")));
    }
    findings
}

fn deleted_test_files(
    files: &[FileView<'_>],
    lost: &[TestRef],
    matchers: &Matchers,
) -> Vec<TamperFinding> {
    let mut findings = Vec::new();
    for (index, file) in files.iter().enumerate() {
        let lost_here: Vec<&str> = lost
            .iter()
            .filter(|t| t.file == index)
            .map(|t| t.name.as_str())
            .collect();
        let declared_any = file
            .file
            .lines()
            .any(|l| lines::test_declaration(line_text(l), file.lang).is_some());
        let deleted = file.file.status == FileStatus::Deleted && file.is_test;
        if deleted && (!lost_here.is_empty() || !declared_any) {
            findings.push(file.finding(TamperKind::TestFileDeleted, deleted_detail(&lost_here)));
        }
        if let Some(detail) = moved_out_of_tests(file, matchers) {
            findings.push(file.finding(TamperKind::TestFileDeleted, detail));
        }
    }
    findings
}

fn deleted_detail(lost: &[&str]) -> String {
    let named: Vec<&str> = lost.iter().copied().filter(|n| !n.is_empty()).collect();
    if named.is_empty() {
        "deletes a test file".into()
    } else {
        format!("deletes a test file with {}", named.join(", "))
    }
}

/// A test file renamed to a path where the test runner no longer finds it.
fn moved_out_of_tests(file: &FileView<'_>, matchers: &Matchers) -> Option<String> {
    if file.file.status != FileStatus::Renamed {
        return None;
    }
    let old = file.file.old_path.as_deref()?;
    let new = file.file.new_path.as_deref()?;
    let lost = matchers.is_test_path(old) && !matchers.is_test_path(new) && !file.tests_by_content;
    lost.then(|| format!("moves the test file {old} out of the test paths to {new}"))
}

#[cfg(test)]
mod tests;
