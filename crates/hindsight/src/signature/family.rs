//! Family keys: near-identical failures (another test, another file, another repository) share a
//! family, so a fix learned for one can be shown to the model as a hint for the other.
//!
//! The family of a signature is its kind plus [`family_template`]: the (already normalized)
//! template with what tells one occurrence of a failure shape from another taken out, in order:
//! - test ids: the test a test failure names (`pytest <node id>:`, `jest <suite › test>:`,
//!   `go test <TestName>:`, the JUnit `<test id>:` prefix, `test <path> panicked at`, nextest's
//!   `timeout: test <binary> <test>`) → `<test>`; the tool word before a test id goes too, so the
//!   same failure read from a log and from JUnit can meet;
//! - file paths (anything with a `/`, or a name ending in a source extension) with their
//!   `:<line>:<col>` → `<path>`, and the function after `<path> in` (Python and Go frames);
//! - literal values: numbers → `<n>`, then quoted text (`'x'`, `"x"`, `` `x` ``) → `<lit>`.
//!
//! What stays is the failure's shape: the tool's error code, the exception type, the words of the
//! message. [`family_key`] is a 16-hex-digit hash of kind and family template, computed from the
//! signature alone (kind and template), so the store can derive it for entries written before
//! families existed. Like signature ids, these rules are part of the store's format: change them
//! only knowing that every stored family moves. Pure string functions: no I/O.

use std::sync::LazyLock;

use regex::Regex;

use super::hash::{fnv_hex, kind_name};
use super::normalize::compile;
use crate::SignatureKind;

/// Tool words that precede a test id in test-failure templates (see the module doc of
/// `signature`).
const TEST_TOOLS: &[&str] = &["pytest ", "jest ", "vitest ", "mocha ", "go test "];

/// Source and data file extensions: a word ending in one is a file name.
const EXTENSIONS: &str = "py|pyi|rs|go|js|jsx|mjs|cjs|ts|tsx|mts|cts|java|kt|rb|php|cs|c|h|cc|cpp|hpp|swift|scala|toml|ya?ml|json|txt|cfg|ini|md";

/// `test <path> panicked at` (a Rust test's panic), wherever it stands.
static RUST_TEST_PANIC: LazyLock<Regex> = LazyLock::new(|| compile(r"\btest \S+ panicked at\b"));
/// A path: a placeholder or word, then one or more `/segment`s; or a bare file name.
static PATH: LazyLock<Regex> = LazyLock::new(|| {
    compile(&format!(
        r"(?:<[\w-]+>|[\w.@~+-]+)?(?:/+[\w.@~+<>-]+)+|\b[\w.-]+\.(?:{EXTENSIONS})\b"
    ))
});
/// What follows a path: line and column, `(line,col)`, and a frame's function.
static PATH_TAIL: LazyLock<Regex> =
    LazyLock::new(|| compile(r"<path>(?::<line>|:<col>|:\d+|\(<line>,<col>\))*(?: in [\w<>.$]+)?"));
/// Numbers standing alone (not the digits of `E0308` or `python3`).
static NUMBER: LazyLock<Regex> = LazyLock::new(|| compile(r"\b\d+(?:\.\d+)?\b"));

/// The stable family key of a signature: 16 lowercase hex digits.
pub fn family_key(kind: SignatureKind, template: &str) -> String {
    let family = family_template(kind, template);
    fnv_hex(
        ["family", kind_name(kind), family.as_str()]
            .iter()
            .flat_map(|part| part.bytes().chain(std::iter::once(b'\n'))),
    )
}

/// The template of a family (see the module doc); readable, for people and tests.
pub fn family_template(kind: SignatureKind, template: &str) -> String {
    let mut text = strip_test_id(kind, template.trim());
    // A placeholder can complete a shape another rule looks for (`/` + `<lit>` is a path): the
    // rules run until nothing changes, so the result is a fixed point (a few rounds at most).
    for _ in 0..8 {
        let next = one_round(&text);
        if next == text {
            break;
        }
        text = next;
    }
    text
}

/// Every rule after the test id, once.
fn one_round(text: &str) -> String {
    let text = RUST_TEST_PANIC.replace_all(text, "test <test> panicked at");
    let text = PATH.replace_all(&text, "<path>");
    let text = PATH_TAIL.replace_all(&text, "<path>");
    let text = NUMBER.replace_all(&text, "<n>");
    let text = quoted_literals(&text);
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Replaces the test id of a test failure's template with `<test>`.
fn strip_test_id(kind: SignatureKind, template: &str) -> String {
    let names_a_test = match kind {
        SignatureKind::TestFailure | SignatureKind::TestError | SignatureKind::Timeout => true,
        SignatureKind::Compile
        | SignatureKind::Lint
        | SignatureKind::Crash
        | SignatureKind::Other => false,
    };
    if !names_a_test {
        return template.to_owned();
    }
    if template.starts_with("timeout: test ") {
        return "timeout: test <test>".to_owned();
    }
    if template.starts_with("test ") || template.starts_with("pytest-timeout:") {
        // A Rust panic (handled with the other paths) or a thread dump: no leading test id.
        return template.to_owned();
    }
    let rest = TEST_TOOLS
        .iter()
        .find_map(|tool| template.strip_prefix(tool))
        .unwrap_or(template);
    match rest.split_once(": ") {
        Some((_, detail)) => format!("<test>: {detail}"),
        None => "<test>".to_owned(),
    }
}

/// Text between matching quotes (`'`, `"`, `` ` ``) → `<lit>`. A quote counts only where it
/// opens after a non-word character and closes before one, so apostrophes inside words
/// (`can't`) are left alone; an unclosed quote is kept.
fn quoted_literals(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while at < chars.len() {
        let c = chars[at];
        let opens = matches!(c, '\'' | '"' | '`') && (at == 0 || !is_word(chars[at - 1]));
        if opens && let Some(close) = closing(&chars, at) {
            out.push_str("<lit>");
            at = close + 1;
            continue;
        }
        out.push(c);
        at += 1;
    }
    out
}

/// The index of the quote that closes the one at `open`, if any.
fn closing(chars: &[char], open: usize) -> Option<usize> {
    let quote = chars[open];
    (open + 1..chars.len())
        .find(|&i| chars[i] == quote && chars.get(i + 1).is_none_or(|next| !is_word(*next)))
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn family(kind: SignatureKind, template: &str) -> String {
        family_template(kind, template)
    }

    #[test]
    fn test_ids_paths_and_literals_go() {
        assert_eq!(
            family(
                SignatureKind::TestFailure,
                "pytest tests/test_calc.py::test_parse: ValueError: invalid literal for int() with base 10: 'seven'"
            ),
            "<test>: ValueError: invalid literal for int() with base <n>: <lit>"
        );
        assert_eq!(
            family(
                SignatureKind::TestFailure,
                "tests.test_calc::test_parse: ValueError: invalid literal for int() with base 10: 'seven'"
            ),
            "<test>: ValueError: invalid literal for int() with base <n>: <lit>",
            "JUnit and log forms of one pytest failure meet"
        );
        assert_eq!(
            family(
                SignatureKind::Compile,
                "error[E0308]: mismatched types: expected `u32`, found `&str` (in src/lib.rs)"
            ),
            "error[E0308]: mismatched types: expected <lit>, found <lit> (in <path>)"
        );
        assert_eq!(
            family(
                SignatureKind::TestFailure,
                "test tests::adds_small panicked at src/lib.rs: assertion `left == right` failed left: 3 right: 2"
            ),
            "test <test> panicked at <path>: assertion <lit> failed left: <n> right: <n>"
        );
        assert_eq!(
            family(
                SignatureKind::Crash,
                "python ValueError: invalid literal for int() with base 10: 'seven' at calc.py in parse"
            ),
            "python ValueError: invalid literal for int() with base <n>: <lit> at <path>"
        );
        assert_eq!(
            family(SignatureKind::Timeout, "timeout: test hs tests::too_slow"),
            "timeout: test <test>"
        );
        assert_eq!(
            family(SignatureKind::Lint, "ruff F401: `os` imported but unused"),
            "ruff F401: <lit> imported but unused"
        );
    }

    #[test]
    fn apostrophes_inside_words_are_not_quotes() {
        assert_eq!(
            quoted_literals("can't find 'x' in Bob's \"list\""),
            "can't find <lit> in Bob's <lit>"
        );
        assert_eq!(quoted_literals("unclosed 'quote"), "unclosed 'quote");
    }

    #[test]
    fn keys_are_hex_and_differ_by_kind() {
        let a = family_key(SignatureKind::TestFailure, "pytest t.py::a: KeyError: 'x'");
        assert_eq!(a.len(), 16);
        assert!(a.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(
            a,
            family_key(SignatureKind::TestError, "pytest t.py::a: KeyError: 'x'")
        );
        assert_ne!(
            a,
            family_key(
                SignatureKind::TestFailure,
                "pytest t.py::a: ValueError: 'x'"
            )
        );
    }

    /// A test failure template from its parts.
    fn pytest(node: &str, exception: &str, value: &str, line: u32) -> String {
        format!("pytest {node}: {exception}: bad value {value} in src/m.py:{line}")
    }

    proptest! {
        #[test]
        fn near_misses_share_a_family(
            file_a in "[a-z_]{1,8}", file_b in "[a-z_]{1,8}",
            test_a in "test_[a-z_0-9]{1,10}", test_b in "test_[a-z_0-9]{1,10}",
            value_a in "[a-zA-Z0-9 ]{0,12}", value_b in "[a-zA-Z0-9 ]{0,12}",
            line_a in 1u32..5000, line_b in 1u32..5000,
        ) {
            // Each template built from its own parts (a number swapped for the value afterwards
            // once also replaced digits of the line: `:2140` became `:2''0`).
            let a = pytest(&format!("tests/{file_a}.py::{test_a}"), "KeyError", &format!("'{value_a}'"), line_a);
            let b = pytest(&format!("pkg/{file_b}_test.py::{test_b}"), "KeyError", &format!("'{value_b}'"), line_b);
            prop_assert_eq!(
                family_key(SignatureKind::TestFailure, &a),
                family_key(SignatureKind::TestFailure, &b),
                "{} vs {}", a, b
            );
        }

        #[test]
        fn different_exceptions_never_share_a_family(
            node in "tests/[a-z]{1,6}\\.py::test_[a-z]{1,6}",
            first in prop::sample::select(vec!["KeyError", "ValueError", "TypeError", "AttributeError", "ZeroDivisionError"]),
            second in prop::sample::select(vec!["KeyError", "ValueError", "TypeError", "AttributeError", "ZeroDivisionError"]),
        ) {
            prop_assume!(first != second);
            prop_assert_ne!(
                family_key(SignatureKind::TestFailure, &pytest(&node, first, "'v'", 3)),
                family_key(SignatureKind::TestFailure, &pytest(&node, second, "'v'", 3))
            );
        }

        #[test]
        fn family_template_is_idempotent(text in "[ -~]{0,120}") {
            for kind in [SignatureKind::TestFailure, SignatureKind::Compile] {
                let once = family_template(kind, &text);
                let twice = family_template(SignatureKind::Compile, &once);
                prop_assert_eq!(&once, &twice);
            }
        }
    }
}
