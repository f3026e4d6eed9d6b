//! The tamper guard on real diffs: each case under `fixtures/tamper/` is committed from its
//! `before/` tree in a temporary repository, replaced by its `after/` tree, and the diff produced by
//! the real `git` CLI and by our git2 layer must both yield exactly the expected finding kinds.
//! A refused change is then undone with `restore_worktree`.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use meta_agent::engine::tamper::{TamperKind, inspect};
use meta_agent::git::{Git2Repository, Repository};
use meta_agent::policy::{Policy, PolicyInput};
use tempfile::TempDir;
use walkdir::WalkDir;

use crate::common;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com"])
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in WalkDir::new(from).min_depth(1) {
        let entry = entry.expect("walk");
        let target = to.join(entry.path().strip_prefix(from).expect("prefix"));
        if entry.file_type().is_dir() {
            fs::create_dir_all(&target).expect("mkdir");
        } else {
            fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// Removes everything but `.git` from `dir`.
fn clear_worktree(dir: &Path) {
    for entry in fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("entry").path();
        if path.file_name().is_some_and(|n| n == ".git") {
            continue;
        }
        if path.is_dir() {
            fs::remove_dir_all(&path).expect("rm -r");
        } else {
            fs::remove_file(&path).expect("rm");
        }
    }
}

fn cases() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(common::fixtures().join("tamper"))
        .expect("fixtures/tamper")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

fn expected_kinds(case: &Path) -> Vec<String> {
    let text = fs::read_to_string(case.join("expected.json")).expect("expected.json");
    let value: serde_json::Value = serde_json::from_str(&text).expect("json");
    let kinds = value["kinds"].as_array().expect("kinds array");
    kinds
        .iter()
        .map(|k| k.as_str().expect("kind string").to_string())
        .collect()
}

fn kinds_of(diff: &str) -> Vec<String> {
    let mut kinds: Vec<String> = inspect(diff, &Policy::default())
        .into_iter()
        .map(|f| f.kind.as_str().to_string())
        .collect();
    kinds.sort();
    kinds
}

/// A repository holding the case's `before/` as HEAD and its `after/` in the worktree.
fn staged_case(case: &Path) -> TempDir {
    let dir = TempDir::new().expect("tempdir");
    git(dir.path(), &["init", "-q", "-b", "main"]);
    copy_tree(&case.join("before"), dir.path());
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "before"]);
    clear_worktree(dir.path());
    copy_tree(&case.join("after"), dir.path());
    dir
}

#[test]
fn every_case_yields_its_expected_findings_from_real_git_diffs() {
    let cases = cases();
    assert!(cases.len() >= 15, "found {} cases", cases.len());
    for case in cases {
        let name = case
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let expected = expected_kinds(&case);
        let dir = staged_case(&case);
        let ours = Git2Repository::open(dir.path())
            .expect("open")
            .diff()
            .expect("git2 diff");
        assert_eq!(kinds_of(&ours), expected, "{name} (git2 diff):\n{ours}");
        git(dir.path(), &["add", "-A"]);
        let theirs = git(dir.path(), &["diff", "--cached", "-M", "HEAD"]);
        assert_eq!(kinds_of(&theirs), expected, "{name} (git diff):\n{theirs}");
    }
}

#[test]
fn the_cases_cover_every_kind_and_honest_changes() {
    let mut seen = BTreeSet::new();
    let mut honest = 0;
    for case in cases() {
        let kinds = expected_kinds(&case);
        honest += usize::from(kinds.is_empty());
        seen.extend(kinds);
    }
    let all = [
        TamperKind::ProtectedFileChanged,
        TamperKind::TestFileDeleted,
        TamperKind::TestRemoved,
        TamperKind::TestSkipped,
        TamperKind::AssertionWeakened,
    ];
    for kind in all {
        assert!(seen.contains(kind.as_str()), "no case for {kind:?}");
    }
    assert!(honest >= 3, "only {honest} honest cases");
}

#[test]
fn a_refused_change_is_undone_by_restore_worktree() {
    let case = common::fixtures().join("tamper/python-skip-added");
    let dir = staged_case(&case);
    let repo = Git2Repository::open(dir.path()).expect("open");
    let head = repo.head().expect("head").commit;
    assert!(!inspect(&repo.diff().expect("diff"), &Policy::default()).is_empty());
    repo.restore_worktree(&head).expect("restore");
    assert_eq!(repo.diff().expect("diff"), "");
    let restored = fs::read_to_string(dir.path().join("tests/test_stats.py")).expect("read");
    let before = fs::read_to_string(case.join("before/tests/test_stats.py")).expect("read before");
    assert_eq!(restored, before);
}

#[test]
fn configured_protected_paths_extend_the_defaults() {
    let case = common::fixtures().join("tamper/rust-fix-is-fine");
    let dir = staged_case(&case);
    let diff = Git2Repository::open(dir.path())
        .expect("open")
        .diff()
        .expect("diff");
    let policy = Policy::new(PolicyInput {
        protected: vec!["src/**".into()],
        ..PolicyInput::default()
    });
    let findings = inspect(&diff, &policy);
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(findings[0].kind, TamperKind::ProtectedFileChanged);
    assert_eq!(findings[0].path, "src/lib.rs");
}

mod properties {
    use meta_agent::engine::tamper::TamperGuard;
    use meta_agent::policy::Policy;
    use proptest::prelude::*;
    use std::sync::LazyLock;

    static POLICY: LazyLock<Policy> = LazyLock::new(Policy::default);
    static GUARD: LazyLock<TamperGuard<'static>> = LazyLock::new(|| TamperGuard::new(&POLICY));

    /// Lines that look like pieces of a git diff, to reach deep into the reader.
    fn diffish_line() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("diff --git a/tests/a.rs b/tests/a.rs".to_string()),
            Just("diff --git a/é b/é".to_string()),
            Just("deleted file mode 100644".to_string()),
            Just("rename from tests/x.py".to_string()),
            Just("--- a/tests/a.rs".to_string()),
            Just("+++ /dev/null".to_string()),
            Just("@@ -1,3 +1,2 @@".to_string()),
            Just("@@ -0,0 +1 @@".to_string()),
            Just("-#[test]".to_string()),
            Just("+#[ignore]".to_string()),
            Just("-    assert_eq!(a, b);".to_string()),
            Just("+    assert!(true);".to_string()),
            "[-+ ][ -~]{0,40}",
            "\\PC{0,30}",
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn inspect_never_panics(lines in prop::collection::vec(diffish_line(), 0..40)) {
            let diff = lines.join("\n");
            let findings = GUARD.inspect(&diff);
            prop_assert!(findings.len() <= lines.len() * 2 + 1);
        }

        #[test]
        fn adding_a_new_test_file_is_never_tampering(
            names in prop::collection::vec("[a-z]{1,12}", 1..6),
            values in prop::collection::vec(0i64..1000, 1..6),
        ) {
            let mut body = vec!["import pytest".to_string()];
            for (name, value) in names.iter().zip(values.iter()) {
                body.push(format!("def test_{name}():"));
                body.push(format!("    assert compute({value}) == {value}"));
            }
            let mut diff = format!(
                "diff --git a/tests/test_new.py b/tests/test_new.py\nnew file mode 100644\n--- /dev/null\n+++ b/tests/test_new.py\n@@ -0,0 +1,{} @@\n",
                body.len()
            );
            for line in &body {
                diff.push_str(&format!("+{line}\n"));
            }
            prop_assert_eq!(GUARD.inspect(&diff), vec![]);
        }
    }
}
