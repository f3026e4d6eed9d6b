//! `eval mine`'s decisions, pure: which changed files are tests, which commits are candidates,
//! and why a commit is skipped. The session walks the history and runs the gates.

use serde::Serialize;

/// Why a commit did not become a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "reason")]
pub enum Skip {
    /// A merge or a root commit.
    NotASingleParent,
    NoTestsChanged,
    NoCodeChanged,
    /// The parent's own gates fail: nothing to start from.
    BuildBrokenBefore,
    /// The commit's tests already pass on the parent: nothing to fix.
    TestsPassBefore,
    /// The commit's tests fail on the commit itself.
    TestsFailAfter,
}

impl Skip {
    /// Why, in words.
    pub fn why(&self) -> &'static str {
        match self {
            Skip::NotASingleParent => "a merge or root commit",
            Skip::NoTestsChanged => "no tests changed",
            Skip::NoCodeChanged => "only tests changed",
            Skip::BuildBrokenBefore => "the gates already fail on the parent (build broken before)",
            Skip::TestsPassBefore => "the new tests already pass on the parent",
            Skip::TestsFailAfter => "the new tests fail on the commit itself",
        }
    }
}

/// Whether a repository path is a test file (by the usual conventions of Python, Rust,
/// JavaScript/TypeScript and Go).
pub fn is_test_path(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let in_test_dir = path
        .split('/')
        .rev()
        .skip(1)
        .any(|part| matches!(part, "tests" | "test" | "__tests__" | "spec"));
    in_test_dir
        || (name.starts_with("test_") && name.ends_with(".py"))
        || name.ends_with("_test.py")
        || name.ends_with("_test.go")
        || name.ends_with("_test.rs")
        || [".test.", ".spec."]
            .iter()
            .any(|infix| name.contains(infix))
}

/// Whether a path is documentation or metadata rather than code.
fn is_code_path(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let lower = name.to_ascii_lowercase();
    !(lower.ends_with(".md")
        || lower.ends_with(".txt")
        || lower.ends_with(".rst")
        || lower.starts_with("license")
        || lower.starts_with('.'))
}

/// The first check of a commit by its changed paths: test files and code files must both
/// change. Returns the test files.
pub fn split_changes(paths: &[String]) -> Result<Vec<String>, Skip> {
    let tests: Vec<String> = paths.iter().filter(|p| is_test_path(p)).cloned().collect();
    if tests.is_empty() {
        return Err(Skip::NoTestsChanged);
    }
    if !paths.iter().any(|p| !is_test_path(p) && is_code_path(p)) {
        return Err(Skip::NoCodeChanged);
    }
    Ok(tests)
}

/// A task id from a commit: `commit-<short id>`.
pub fn task_id(commit: &str) -> String {
    format!("commit-{}", &commit[..commit.len().min(10)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_files_are_recognised_by_convention() {
        for path in [
            "tests/test_calc.py",
            "pkg/calc_test.py",
            "src/a_test.go",
            "web/button.test.tsx",
            "crate/tests/it.rs",
            "js/__tests__/x.js",
        ] {
            assert!(is_test_path(path), "{path}");
        }
        for path in ["calc.py", "src/lib.rs", "testing.md", "contest.py"] {
            assert!(!is_test_path(path), "{path}");
        }
    }

    #[test]
    fn a_commit_needs_tests_and_code() {
        let paths = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            split_changes(&paths(&["calc.py"])),
            Err(Skip::NoTestsChanged)
        );
        assert_eq!(
            split_changes(&paths(&["tests/test_a.py", "README.md"])),
            Err(Skip::NoCodeChanged)
        );
        assert_eq!(
            split_changes(&paths(&["calc.py", "tests/test_a.py"])),
            Ok(vec!["tests/test_a.py".to_owned()])
        );
    }
}
