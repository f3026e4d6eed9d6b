//! Family keys: one key for the signatures that are the same failure met in another test, file or
//! line (`test_mean` and `test_median` failing on the same integer division; one lint rule
//! firing in two files). Shared memory looks entries up by family when no entry has the exact
//! signature.
//!
//! The family template is the signature's template with test ids, paths and numbers replaced by
//! placeholders; the key is [`signature_id`] of kind and family template, so it is as stable as
//! signature ids are. A first cut, deliberately simple: later work on signatures may refine what
//! counts as incidental, which changes keys (stored keys are then recomputed from templates).
//! Pure; no I/O.

use std::sync::LazyLock;

use regex::Regex;

use super::hash::signature_id;
use super::normalize::compile;
use crate::hindsight::SignatureKind;

/// Runner words that open a test-id template (`pytest <node id>: ...`).
const RUNNERS: &[&str] = &["pytest", "jest", "vitest", "mocha", "test", "timeout:"];

static PATH: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"(?:[\w.-]+/)+[\w.-]+|\b[\w-]+\.(?:rs|py|js|jsx|ts|tsx|mjs|cjs|go|java|kt|rb|c|h|cc|cpp|hpp|cs|php|swift)\b",
    )
});

static NUMBER: LazyLock<Regex> = LazyLock::new(|| compile(r"\b\d+\b"));

/// The template with the test id, paths and numbers replaced by `<test>`, `<path>`, `<n>`.
pub fn family_template(kind: SignatureKind, template: &str) -> String {
    let without_test = match kind {
        SignatureKind::TestFailure | SignatureKind::TestError | SignatureKind::Timeout => {
            strip_test_id(template)
        }
        SignatureKind::Compile
        | SignatureKind::Lint
        | SignatureKind::Crash
        | SignatureKind::Other => template.to_owned(),
    };
    let without_paths = PATH.replace_all(&without_test, "<path>");
    NUMBER.replace_all(&without_paths, "<n>").into_owned()
}

/// The family key of a signature: 16 hex digits, like a signature id.
pub fn family_key(kind: SignatureKind, template: &str) -> String {
    signature_id(kind, &family_template(kind, template))
}

/// `pytest tests/x.py::test_a: AssertionError` → `pytest <test>: AssertionError`;
/// `test tests::a panicked at ...` → `test <test> panicked at ...`; a JUnit `<test id>: <type>`
/// → `<test>: <type>`.
fn strip_test_id(template: &str) -> String {
    let (runner, rest) = match template.split_once(' ') {
        Some((word, rest)) if RUNNERS.contains(&word) => (Some(word), rest),
        _ => (None, template),
    };
    let rest = rest.strip_prefix("test ").unwrap_or(rest);
    let end = [rest.find(": "), rest.find(" panicked")]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(rest.len());
    let tail = &rest[end..];
    match runner {
        Some(word) => format!("{word} <test>{tail}"),
        None => format!("<test>{tail}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_assertion_in_two_tests_is_one_family() {
        let a = "pytest tests/test_calc.py::test_mean: AssertionError: assert 2 == 2.5";
        let b = "pytest tests/test_stats.py::test_median: AssertionError: assert 2 == 2.5";
        assert_eq!(
            family_template(SignatureKind::TestFailure, a),
            "pytest <test>: AssertionError: assert <n> == <n>.<n>"
        );
        assert_eq!(
            family_key(SignatureKind::TestFailure, a),
            family_key(SignatureKind::TestFailure, b)
        );
        let other = "pytest tests/test_calc.py::test_mean: KeyError: 'x'";
        assert_ne!(
            family_key(SignatureKind::TestFailure, a),
            family_key(SignatureKind::TestFailure, other)
        );
    }

    #[test]
    fn paths_and_line_numbers_do_not_split_a_family() {
        let a = "error[E0308]: mismatched types: expected `u32`, found `i64` (in src/lib.rs)";
        let b = "error[E0308]: mismatched types: expected `u32`, found `i64` (in src/util/mod.rs)";
        assert_eq!(
            family_key(SignatureKind::Compile, a),
            family_key(SignatureKind::Compile, b)
        );
        assert_ne!(
            family_key(SignatureKind::Compile, a),
            family_key(SignatureKind::Lint, a),
            "the kind is part of the family"
        );
        assert_eq!(
            family_template(
                SignatureKind::Crash,
                "thread 'main' panicked at main.rs: index 3"
            ),
            "thread 'main' panicked at <path>: index <n>"
        );
    }

    #[test]
    fn rust_test_names_are_dropped() {
        assert_eq!(
            family_template(
                SignatureKind::TestFailure,
                "test tests::adds panicked at src/lib.rs: assertion failed"
            ),
            "test <test> panicked at <path>: assertion failed"
        );
    }
}
