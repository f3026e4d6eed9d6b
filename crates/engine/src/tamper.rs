//! The test-tamper guard: reads a unified git diff and says where the change stops being a fix and
//! starts gaming the gates: edits to protected files (the bot's config, gate presets, workflows,
//! `.git`), deleted test files, removed or skipped tests, weakened assertions.
//!
//! Pure functions over text: no I/O, no git. Heuristics lean towards few false positives: adding
//! tests, editing a test body while keeping its assertions, renaming or moving a test are fine.
//! Parts: [`meta_agent_git::unified`] reads the unified diff, `lines` classifies single lines, `assertions` and
//! `removal` find weakened assertions and lost tests; this file holds the policy, protected
//! paths and skip markers.

mod assertions;
mod lines;
mod removal;

use std::collections::HashMap;

use serde::Serialize;

use assertions::{disabled_assertions, weakened_assertions};
use lines::Lang;
use meta_agent_git::unified::{self as diff, FileDiff, Line};
use removal::removed_tests;

use meta_agent_policy::Policy;

pub use meta_agent_protocol::refusal::TamperKind;
use meta_agent_protocol::refusal::{Refusal, Why};

/// One reason to refuse a change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TamperFinding {
    pub path: String,
    pub kind: TamperKind,
    /// What was seen, for a person (quotes at most a line of the diff).
    pub detail: String,
}

impl TamperFinding {
    /// The refusal it is: of its path, with what the guard saw.
    pub fn refusal(self) -> Refusal {
        Refusal {
            path: Some(self.path),
            why: Why::Tampered {
                tamper: self.kind,
                seen: self.detail,
            },
        }
    }
}

/// Every tampering finding in `diff` (a unified git diff), in file order, without duplicates.
pub fn inspect(diff: &str, policy: &Policy) -> Vec<TamperFinding> {
    TamperGuard::new(policy).inspect(diff)
}

/// The guard of one policy, for inspecting many diffs.
pub struct TamperGuard<'p> {
    matchers: Matchers<'p>,
}

impl<'p> TamperGuard<'p> {
    pub fn new(policy: &'p Policy) -> Self {
        Self {
            matchers: Matchers { policy },
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

/// What the guard asks of the policy: which paths an act may not change, which hold tests.
struct Matchers<'p> {
    policy: &'p Policy,
}

impl Matchers<'_> {
    fn protected_by(&self, path: &str) -> Option<&str> {
        self.policy.act_may_not_change(path)
    }

    fn is_test_path(&self, path: &str) -> bool {
        self.policy.is_test_path(path)
    }
}

/// A file's diff with what the guard needs to know about it.
struct FileView<'d> {
    file: FileDiff<'d>,
    lang: Option<Lang>,
    /// A test file by path or by content.
    is_test: bool,
    /// The diff shows test declarations (or a `#[cfg(test)]` module) in this file.
    tests_by_content: bool,
}

impl<'d> FileView<'d> {
    fn new(file: FileDiff<'d>, matchers: &Matchers<'_>) -> Self {
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

/// At most one line of code, trimmed, in backticks, for a refusal's detail (the tamper guard's
/// and the evidence check's alike); a blank line is named as such, never quoted as nothing.
pub(super) fn quote(text: &str) -> String {
    let text = text.trim().replace('`', "'");
    if text.is_empty() {
        return "a blank line".to_owned();
    }
    match text.char_indices().nth(100) {
        Some((at, _)) => format!("`{}…`", &text[..at]),
        None => format!("`{text}`"),
    }
}

fn protected_changes(file: &FileView<'_>, matchers: &Matchers<'_>) -> Vec<TamperFinding> {
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
