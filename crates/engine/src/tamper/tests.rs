//! Unit tests for the tamper guard: one or more diffs per kind, and the edits that must pass.

use super::*;
use meta_agent_policy::PolicyInput;

/// A modification diff of `path` with one hunk made of `lines` (prefixed ' ', '-', '+').
fn modify(path: &str, lines: &[&str]) -> String {
    let old = lines.iter().filter(|l| !l.starts_with('+')).count();
    let new = lines.iter().filter(|l| !l.starts_with('-')).count();
    let mut out = format!(
        "diff --git a/{path} b/{path}\nindex 1111111..2222222 100644\n--- a/{path}\n+++ b/{path}\n@@ -1,{old} +1,{new} @@\n"
    );
    for line in lines {
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn delete(path: &str, lines: &[&str]) -> String {
    let mut out = format!(
        "diff --git a/{path} b/{path}\ndeleted file mode 100644\nindex 1111111..0000000\n--- a/{path}\n+++ /dev/null\n@@ -1,{} +0,0 @@\n",
        lines.len()
    );
    for line in lines {
        out.push_str(&format!("-{line}\n"));
    }
    out
}

fn add(path: &str, lines: &[&str]) -> String {
    let mut out = format!(
        "diff --git a/{path} b/{path}\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{} @@\n",
        lines.len()
    );
    for line in lines {
        out.push_str(&format!("+{line}\n"));
    }
    out
}

fn kinds(diff: &str) -> Vec<TamperKind> {
    inspect(diff, &Policy::default())
        .into_iter()
        .map(|f| f.kind)
        .collect()
}

#[test]
fn protected_paths() {
    let diff = modify(
        ".github/workflows/ci.yml",
        &["-on: push", "+on: pull_request"],
    );
    let findings = inspect(&diff, &Policy::default());
    assert_eq!(findings.len(), 1);
    assert_eq!(findings[0].kind, TamperKind::ProtectedFileChanged);
    assert!(
        findings[0].detail.contains(".github/workflows/**"),
        "{}",
        findings[0].detail
    );
    assert_eq!(
        kinds(&modify(".meta-agent.yml", &["-a: 1", "+a: 2"])),
        vec![TamperKind::ProtectedFileChanged]
    );
    assert_eq!(
        kinds(&add(".git/hooks/pre-commit", &["echo hi"])),
        vec![TamperKind::ProtectedFileChanged]
    );
    assert_eq!(
        kinds(&modify("docs/.meta-agent.yml", &["-a", "+b"])),
        vec![]
    );
}

#[test]
fn configured_protected_paths_and_renames_into_them() {
    let policy = Policy::new(PolicyInput {
        protected: vec!["gates/*.yml".into()],
        ..PolicyInput::default()
    });
    let diff = modify("gates/rust.yml", &["-cmd: cargo test", "+cmd: true"]);
    assert_eq!(
        inspect(&diff, &policy)[0].kind,
        TamperKind::ProtectedFileChanged
    );
    let rename = "diff --git a/ci.yml b/.github/workflows/ci.yml\nsimilarity index 100%\nrename from ci.yml\nrename to .github/workflows/ci.yml\n";
    assert_eq!(kinds(rename), vec![TamperKind::ProtectedFileChanged]);
}

#[test]
fn deleting_a_test_file() {
    let diff = delete(
        "tests/math.rs",
        &[
            "#[test]",
            "fn mean_of_empty() {",
            "    assert_eq!(mean(&[]), None);",
            "}",
        ],
    );
    let findings = inspect(&diff, &Policy::default());
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(findings[0].kind, TamperKind::TestFileDeleted);
    assert!(findings[0].detail.contains("mean_of_empty"));
    assert_eq!(
        kinds(&delete("tests/fixtures/data.txt", &["x"])),
        vec![TamperKind::TestFileDeleted]
    );
    assert_eq!(kinds(&delete("src/unused.rs", &["fn x() {}"])), vec![]);
}

#[test]
fn moving_tests_to_another_file_is_fine() {
    let body = ["def test_mean():", "    assert mean([1]) == 1"];
    let diff = delete("tests/test_old.py", &body) + &add("tests/test_new.py", &body);
    assert_eq!(kinds(&diff), vec![]);
}

#[test]
fn renaming_a_test_file_out_of_the_test_paths() {
    let diff = "diff --git a/tests/test_x.py b/disabled/x.py.bak\nsimilarity index 100%\nrename from tests/test_x.py\nrename to disabled/x.py.bak\n";
    assert_eq!(kinds(diff), vec![TamperKind::TestFileDeleted]);
    let within = "diff --git a/tests/test_x.py b/tests/test_y.py\nsimilarity index 100%\nrename from tests/test_x.py\nrename to tests/test_y.py\n";
    assert_eq!(kinds(within), vec![]);
}

#[test]
fn removing_tests_in_each_language() {
    let rust = modify(
        "src/lib.rs",
        &[
            " #[cfg(test)]",
            " mod tests {",
            "-    #[test]",
            "-    fn it_works() {",
            "-        assert!(works());",
            "-    }",
            " }",
        ],
    );
    let python = modify(
        "tests/test_m.py",
        &[
            " import m",
            "-def test_mean():",
            "-    assert m.mean([2]) == 2",
        ],
    );
    let go = modify(
        "m_test.go",
        &[
            " package m",
            "-func TestMean(t *testing.T) {",
            "-\tif Mean(nil) != 0 { t.Fatal(\"x\") }",
            "-}",
        ],
    );
    let js = modify(
        "src/m.test.ts",
        &[
            " import { mean } from './m';",
            "-it('computes the mean', () => {",
            "-  expect(mean([2])).toBe(2);",
            "-});",
        ],
    );
    for diff in [rust, python, go, js] {
        let findings = inspect(&diff, &Policy::default());
        assert_eq!(
            findings.iter().map(|f| f.kind).collect::<Vec<_>>(),
            vec![TamperKind::TestRemoved],
            "{diff}\n{findings:?}"
        );
    }
}

#[test]
fn unregistering_a_rust_test_is_removing_it() {
    let diff = modify(
        "src/lib.rs",
        &[
            " mod tests {",
            "-    #[test]",
            "     fn it_works() {",
            "         assert!(works());",
        ],
    );
    let findings = inspect(&diff, &Policy::default());
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(findings[0].kind, TamperKind::TestRemoved);
    assert!(findings[0].detail.contains("it_works"));
}

#[test]
fn renaming_a_test_is_fine() {
    let rust = modify(
        "tests/a.rs",
        &[
            " #[test]",
            "-fn old_name() {",
            "+fn new_name() {",
            "     assert_eq!(f(), 1);",
        ],
    );
    let python = modify(
        "tests/test_a.py",
        &[
            "-def test_old():",
            "+def test_new():",
            "     assert f() == 1",
        ],
    );
    let rust_whole = modify(
        "tests/b.rs",
        &[
            "-#[test]",
            "-fn old() {",
            "+#[test]",
            "+fn new() {",
            "     assert_eq!(f(), 1);",
        ],
    );
    for diff in [rust, python, rust_whole] {
        assert_eq!(kinds(&diff), vec![], "{diff}");
    }
}

#[test]
fn adding_tests_is_fine() {
    let diff = modify(
        "tests/a.rs",
        &[
            " use a::f;",
            "+#[test]",
            "+fn more() {",
            "+    assert_eq!(f(2), 4);",
            "+}",
        ],
    );
    assert_eq!(kinds(&diff), vec![]);
    let new_file = add(
        "tests/test_new.py",
        &["import pytest", "def test_x():", "    assert f() == 1"],
    );
    assert_eq!(kinds(&new_file), vec![]);
}

#[test]
fn skip_markers_in_each_language() {
    let cases = [
        modify("src/lib.rs", &[" #[test]", "+#[ignore]", " fn flaky() {"]),
        modify(
            "tests/test_a.py",
            &["+@pytest.mark.skip(reason='later')", " def test_a():"],
        ),
        modify(
            "tests/test_a.py",
            &[
                " def test_a():",
                "+    pytest.skip('nope')",
                "     assert f() == 1",
            ],
        ),
        modify(
            "tests/test_b.py",
            &["+@unittest.skip('x')", " class T(unittest.TestCase):"],
        ),
        modify(
            "m_test.go",
            &[
                " func TestA(t *testing.T) {",
                "+\tt.Skip(\"later\")",
                " \tif A() != 1 {",
            ],
        ),
        modify(
            "a.test.js",
            &["-it('adds', () => {", "+it.skip('adds', () => {"],
        ),
        modify(
            "a.spec.ts",
            &["-describe('suite', () => {", "+xdescribe('suite', () => {"],
        ),
        modify(
            "a.test.js",
            &["-it('adds', () => {", "+xit('adds', () => {"],
        ),
    ];
    for diff in cases {
        assert_eq!(kinds(&diff), vec![TamperKind::TestSkipped], "{diff}");
    }
}

#[test]
fn moving_a_skip_marker_is_not_a_new_skip() {
    let diff = modify(
        "tests/a.rs",
        &[
            "-#[ignore = \"slow\"]",
            " #[test]",
            "+#[ignore = \"slow\"]",
            " fn slow() {}",
        ],
    );
    assert_eq!(kinds(&diff), vec![]);
    let non_test_js = modify(
        "src/db.js",
        &["-  return q.limit(10);", "+  return q.skip(5).limit(10);"],
    );
    assert_eq!(kinds(&non_test_js), vec![]);
}

#[test]
fn assertion_removed_without_replacement() {
    let diff = modify(
        "tests/a.rs",
        &[
            " fn mean_of_empty() {",
            "     let m = mean(&[]);",
            "-    assert_eq!(m, None);",
            " }",
        ],
    );
    let findings = inspect(&diff, &Policy::default());
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(findings[0].kind, TamperKind::AssertionWeakened);
    assert!(
        findings[0].detail.contains("assert_eq!(m, None);"),
        "{}",
        findings[0].detail
    );
    let go = modify(
        "m_test.go",
        &[
            " \tgot := Mean(nil)",
            "-\tif got != 0 {",
            "-\t\tt.Errorf(\"got %v\", got)",
            "-\t}",
            "+\t_ = got",
            " }",
        ],
    );
    assert_eq!(kinds(&go), vec![TamperKind::AssertionWeakened]);
}

#[test]
fn assertion_turned_into_a_comment() {
    let rust = modify(
        "tests/a.rs",
        &[
            "-    assert_eq!(mean(&[]), None);",
            "+    // assert_eq!(mean(&[]), None);",
        ],
    );
    let python = modify(
        "tests/test_a.py",
        &[
            "-    assert mean([]) is None",
            "+    # assert mean([]) is None",
        ],
    );
    let js = modify(
        "a.test.js",
        &[
            "-  expect(mean([])).toBeNull();",
            "+  // expect(mean([])).toBeNull();",
        ],
    );
    for diff in [rust, python, js] {
        let findings = inspect(&diff, &Policy::default());
        assert_eq!(findings.len(), 1, "{diff}");
        assert!(
            findings[0].detail.starts_with("comments out"),
            "{}",
            findings[0].detail
        );
    }
}

#[test]
fn assertion_made_trivial_or_comparison_dropped() {
    let cases = [
        modify(
            "tests/test_a.py",
            &["-    assert mean([2, 4]) == 3", "+    assert True"],
        ),
        modify(
            "tests/test_a.py",
            &["-    assert mean([2, 4]) == 3", "+    assert mean([2, 4])"],
        ),
        modify(
            "tests/a.rs",
            &[
                "-    assert_eq!(mean(&[2.0]), Some(2.0));",
                "+    assert!(true);",
            ],
        ),
        modify(
            "tests/a.rs",
            &[
                "-    assert_eq!(mean(&[2.0]), Some(2.0));",
                "+    assert!(mean(&[2.0]).is_some());",
            ],
        ),
        modify(
            "a.test.js",
            &[
                "-  expect(mean([2])).toBe(2);",
                "+  expect(true).toBe(true);",
            ],
        ),
        modify(
            "tests/a.rs",
            &["-    assert_eq!(got, 3);", "+    assert_eq!(got, got);"],
        ),
    ];
    for diff in cases {
        assert_eq!(kinds(&diff), vec![TamperKind::AssertionWeakened], "{diff}");
    }
}

#[test]
fn editing_a_test_body_while_keeping_assertions_is_fine() {
    let cases = [
        modify(
            "tests/a.rs",
            &[
                "-    let m = mean(&[1.0, 3.0]);",
                "+    let m = mean(&[1.0, 3.0, 5.0]);",
                "-    assert_eq!(m, Some(2.0));",
                "+    assert_eq!(m, Some(3.0));",
            ],
        ),
        modify(
            "tests/test_a.py",
            &[
                "-    assert mean([2]) == 2",
                "+    assert mean([2]) == pytest.approx(2)",
            ],
        ),
        modify(
            "a.test.js",
            &[
                "-  expect(mean([2])).toBe(2);",
                "+  expect(mean([2])).toEqual(2);",
            ],
        ),
        // Restructured: an assertion moves to another block of the same file.
        modify(
            "tests/b.rs",
            &[
                "-    assert_eq!(a, 1);",
                "     let b = 2;",
                "+    assert_eq!(a, 1);",
            ],
        ),
        // Non-test code may change its own asserts.
        modify(
            "src/lib.rs",
            &["-    debug_assert!(x > 0);", "+    let y = x;"],
        ),
    ];
    for diff in cases {
        assert_eq!(kinds(&diff), vec![], "{diff}");
    }
}

#[test]
fn findings_are_not_duplicated_and_keep_file_order() {
    let diff = modify(".meta-agent.yml", &["-a", "+b"])
        + &modify(
            "tests/a.rs",
            &["-    assert_eq!(x, 1);", "+    assert!(true);"],
        );
    assert_eq!(
        kinds(&diff),
        vec![
            TamperKind::ProtectedFileChanged,
            TamperKind::AssertionWeakened
        ]
    );
}

#[test]
fn empty_and_garbage_diffs_find_nothing() {
    assert_eq!(kinds(""), vec![]);
    assert_eq!(kinds("not a diff\n@@ nonsense\n"), vec![]);
}

#[test]
fn kind_names_match_serde() {
    for kind in [
        TamperKind::ProtectedFileChanged,
        TamperKind::TestFileDeleted,
        TamperKind::TestRemoved,
        TamperKind::TestSkipped,
        TamperKind::AssertionWeakened,
    ] {
        assert_eq!(
            serde_json::to_value(kind).ok(),
            Some(serde_json::Value::String(kind.as_str().into()))
        );
    }
}

#[test]
fn assertions_disabled_without_being_removed() {
    let cases = [
        modify(
            "tests/test_a.py",
            &[
                " def test_a():",
                "+    if False:",
                "-    assert f() == 1",
                "+        assert f() == 1",
            ],
        ),
        modify(
            "tests/test_a.py",
            &[" def test_a():", "+    return", "     assert f() == 1"],
        ),
        modify(
            "tests/a.rs",
            &[
                " fn a() {",
                "+    return;",
                "     assert_eq!(f(), 1);",
                " }",
            ],
        ),
        modify(
            "tests/test_a.py",
            &[
                "     try:",
                "         assert f() == 1",
                "+    except AssertionError:",
                "+        pass",
            ],
        ),
        modify("tests/a.rs", &[" #[test]", "+#[should_panic]", " fn a() {"]),
        modify(
            "tests/test_a.py",
            &["-    assert f() == 1", "+    assert f() == f()"],
        ),
    ];
    for diff in cases {
        assert_eq!(kinds(&diff), vec![TamperKind::AssertionWeakened], "{diff}");
    }
}

#[test]
fn a_new_should_panic_test_and_early_returns_without_assertions_are_fine() {
    let new_test = modify(
        "tests/a.rs",
        &[
            " use a::f;",
            "+#[test]",
            "+#[should_panic(expected = \"empty\")]",
            "+fn panics_on_empty() {",
            "+    f(&[]);",
            "+}",
        ],
    );
    let helper_return = modify(
        "tests/helpers.py",
        &[
            " def load(path):",
            "+    if not path:",
            "+        return",
            "     return open(path).read()",
        ],
    );
    for diff in [new_test, helper_return] {
        assert_eq!(kinds(&diff), vec![], "{diff}");
    }
}

#[test]
fn hiding_tests_from_the_runner_is_skipping() {
    let pytest = modify(
        "conftest.py",
        &[
            " import pytest",
            "+collect_ignore = [\"tests/test_slow.py\"]",
        ],
    );
    let jest = modify(
        "jest.config.js",
        &[
            " module.exports = {",
            "+  testPathIgnorePatterns: ['/math/'],",
            " };",
        ],
    );
    for diff in [pytest, jest] {
        assert_eq!(kinds(&diff), vec![TamperKind::TestSkipped], "{diff}");
    }
}
