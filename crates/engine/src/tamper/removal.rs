//! Tests that disappear: removed test functions that are neither moved (same name elsewhere in
//! the diff) nor renamed (another new test in the same file), deleted test files, and test files
//! moved out of the test paths. Works across all files of a diff; no I/O.

use super::lines::{self, Lang, TestDecl};
use super::{FileView, Matchers, TamperFinding, TamperKind, line_text};
use meta_agent_git::unified::{FileStatus, Line};

/// A test declared in the diff: which file, and its name ("" when it could not be read).
struct TestRef {
    file: usize,
    name: String,
}

/// The tests a side of a hunk declares: `Removed` lines for the old side, `Added` for the new.
fn declared_tests(hunk: &[Line<'_>], lang: Option<Lang>, removed_side: bool) -> Vec<String> {
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
            for name in declared_tests(&hunk.lines, file.lang, removed_side) {
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
pub(super) fn removed_tests(files: &[FileView<'_>], matchers: &Matchers<'_>) -> Vec<TamperFinding> {
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
    matchers: &Matchers<'_>,
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
fn moved_out_of_tests(file: &FileView<'_>, matchers: &Matchers<'_>) -> Option<String> {
    if file.file.status != FileStatus::Renamed {
        return None;
    }
    let old = file.file.old_path.as_deref()?;
    let new = file.file.new_path.as_deref()?;
    let lost = matchers.is_test_path(old) && !matchers.is_test_path(new) && !file.tests_by_content;
    lost.then(|| format!("moves the test file {old} out of the test paths to {new}"))
}
