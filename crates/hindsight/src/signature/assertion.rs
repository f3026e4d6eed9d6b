//! The assertion of a failing test and its diff, as compact as the runner allows: what a model
//! needs to see of a test failure, without the stack, the captured output or the runner's
//! advice. Shapes, tried in this order on each text of the failure (JUnit body, captured
//! stderr and stdout, message):
//! - a Rust panic's message after `panicked at <file:line:col>:` (`assertion `left == right`
//!   failed` with its `left:` / `right:` lines), or in the old `panicked at '…', file` form;
//! - pytest's `E   ` lines (its `assert` rewrite: the comparison, `where` lines, the short
//!   explanation, the diff);
//! - Go's `file_test.go:N: message` lines of `t.Errorf` (`got … want …`);
//! - jest's `expect(received)…` with its `Expected` / `Received` lines, and vitest's or node's
//!   `AssertionError: …` with its `- Expected` / `+ Received` diff, up to the first stack line;
//! - a Python exception line (`AssertionError: Lists differ: …`) and what follows it;
//! - pytest's JUnit message (`assert 2 == 2.5` …).
//!
//! Then compacted: blank lines, pytest's "use -v" advice and object addresses go; pytest's full
//! diff goes when a short explanation came before it; at most [`MAX_LINES`] lines of at most
//! [`MAX_LINE_CHARS`] characters. Pure text work: never panics, whatever the input.

use std::sync::LazyLock;

use regex::Regex;

use super::normalize::compile;

/// Lines kept at most.
pub const MAX_LINES: usize = 12;
/// Characters of one line kept at most.
pub const MAX_LINE_CHARS: usize = 200;

/// `file_test.go:12: ` at the start of a Go test's message line.
static GO_LINE: LazyLock<Regex> = LazyLock::new(|| compile(r"^\s*[\w./-]+_test\.go:\d+: \S"));
/// A JavaScript stack line: `    at f (file:1:2)` or vitest's ` ❯ file:1:2`.
static JS_STACK: LazyLock<Regex> = LazyLock::new(|| compile(r"^\s*(?:at\s|❯\s)"));
/// A Python exception line: `AssertionError: …`, `ValueError`, `pkg.Error: …`.
static PY_EXCEPTION: LazyLock<Regex> = LazyLock::new(|| {
    compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Failure)(?::\s|$)")
});
/// A colour escape, raw or as a JUnit writer spells the control character (`#x1B[91m`).
static COLOUR: LazyLock<Regex> = LazyLock::new(|| compile(r"(?:\x1b|#x1[Bb])\[[0-9;]*[A-Za-z]"));
/// An object address in a repr: ` at 0x7f3a…>`.
static ADDRESS: LazyLock<Regex> = LazyLock::new(|| compile(r" at 0x[0-9a-fA-F]+>"));

/// One shape: the lines of an assertion found in a text.
type Shape = fn(&str) -> Option<Vec<String>>;

/// The assertion and its diff from the texts of one failure, the first shape found.
pub fn assertion(texts: &[&str]) -> Option<String> {
    let shapes: [Shape; 6] = [
        rust_panic,
        pytest_lines,
        go_errorf,
        javascript,
        python_exception,
        pytest_message,
    ];
    let lines = shapes
        .iter()
        .find_map(|shape| texts.iter().find_map(|text| shape(text)))?;
    let compact = compact(lines);
    (!compact.is_empty()).then(|| compact.join("\n"))
}

/// `thread 't' panicked at src/lib.rs:16:9:` then the message, up to the backtrace or a note.
fn rust_panic(text: &str) -> Option<Vec<String>> {
    let at = text.find("panicked at ")?;
    let rest = &text[at + "panicked at ".len()..];
    if let Some(quoted) = rest.strip_prefix('\'') {
        let end = quoted.rfind("', ")?;
        return Some(quoted[..end].lines().map(str::to_owned).collect());
    }
    let (_, message) = rest.split_once('\n')?;
    let lines: Vec<String> = message
        .lines()
        .take_while(|line| {
            !line.trim().is_empty()
                && !line.starts_with("stack backtrace:")
                && !line.starts_with("note: ")
        })
        .map(str::to_owned)
        .collect();
    (!lines.is_empty()).then_some(lines)
}

/// pytest's `E   ` lines: the first block of them, its indentation kept relative.
fn pytest_lines(text: &str) -> Option<Vec<String>> {
    let lines: Vec<&str> = text
        .lines()
        .skip_while(|line| !is_e_line(line))
        .take_while(|line| is_e_line(line))
        .map(|line| line.get(1..).unwrap_or_default())
        .collect();
    if lines.is_empty() {
        return None;
    }
    let indent = lines
        .iter()
        .filter(|line| !line.trim().is_empty())
        .map(|line| line.len() - line.trim_start().len())
        .min()
        .unwrap_or(0);
    Some(
        lines
            .iter()
            .map(|line| line.get(indent..).unwrap_or(line.trim_start()).to_owned())
            .collect(),
    )
}

fn is_e_line(line: &str) -> bool {
    line == "E" || line.starts_with("E ")
}

/// Go's `t.Errorf` lines (`calc_test.go:10: Add(1, 1): got 3 want 2`) and their continuations.
fn go_errorf(text: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if GO_LINE.is_match(line) {
            inside = true;
            out.push(line.trim().to_owned());
        } else if inside && line.starts_with("        ") && !line.trim_start().starts_with("--- ") {
            out.push(line.trim().to_owned());
        } else {
            inside = false;
        }
    }
    (!out.is_empty()).then_some(out)
}

/// jest's `expect(received)…` or an `AssertionError`, up to the first stack line.
fn javascript(text: &str) -> Option<Vec<String>> {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.iter().position(|line| {
        line.contains("expect(received)")
            || line.trim_start().starts_with("AssertionError")
            || line.trim_start().starts_with("Error: expect(")
    })?;
    let body: Vec<String> = lines[start..]
        .iter()
        .take_while(|line| !JS_STACK.is_match(line) && !is_rule(line))
        .map(|line| line.trim_end().trim_start_matches("Error: ").to_owned())
        .collect();
    Some(body)
}

/// The last Python exception line and what follows it (unittest's diff).
fn python_exception(text: &str) -> Option<Vec<String>> {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.iter().rposition(|line| PY_EXCEPTION.is_match(line))?;
    Some(
        lines[start..]
            .iter()
            .take_while(|line| !JS_STACK.is_match(line) && !is_rule(line))
            .map(|line| (*line).to_owned())
            .collect(),
    )
}

/// A runner's horizontal rule (`-----`, `=====`): the end of a failure's section.
fn is_rule(line: &str) -> bool {
    line.starts_with("----") || line.starts_with("====")
}

/// pytest's JUnit message: `assert 2 == 2.5` and its explanation lines.
fn pytest_message(text: &str) -> Option<Vec<String>> {
    let trimmed = text.trim_start();
    (trimmed.starts_with("assert ") || trimmed.starts_with("AssertionError"))
        .then(|| trimmed.lines().map(str::to_owned).collect())
}

/// Blank lines, advice, addresses and a full diff after a short explanation go; what is left is
/// capped.
fn compact(lines: Vec<String>) -> Vec<String> {
    let mut kept: Vec<String> = lines
        .into_iter()
        .map(|line| {
            let plain = COLOUR.replace_all(line.trim_end(), "");
            ADDRESS.replace_all(&plain, ">").into_owned()
        })
        .filter(|line| !line.trim().is_empty() && !is_advice(line))
        .collect();
    if let Some(full) = kept
        .iter()
        .position(|line| line.trim_start().starts_with("Full diff:"))
        && full > 1
    {
        kept.truncate(full);
    }
    let cut = kept.len() > MAX_LINES;
    let mut out: Vec<String> = kept
        .iter()
        .take(MAX_LINES)
        .map(|line| shorten(line))
        .collect();
    if cut {
        out.push(format!("[{} more lines]", kept.len() - MAX_LINES));
    }
    out
}

fn is_advice(line: &str) -> bool {
    let line = line.trim();
    line.starts_with("Use -v to get")
        || line.starts_with("Use -vv to get")
        || (line.contains("identical ") && line.contains("use -vv to show"))
}

fn shorten(line: &str) -> String {
    if line.chars().count() <= MAX_LINE_CHARS {
        return line.to_owned();
    }
    let kept: String = line.chars().take(MAX_LINE_CHARS).collect();
    format!("{kept}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(path: &str) -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures")
            .join(path)
    }

    /// The assertion of the first failure of a real JUnit report, from its texts as the
    /// signature reader passes them.
    fn first_junit_failure(path: &str) -> Option<String> {
        let report = meta_agent_report::parse_junit_file(
            &fixture(path),
            &meta_agent_report::Limits::default(),
        )
        .unwrap();
        let failure = &report.failures[0];
        assertion(&[
            &failure.body,
            &failure.stderr,
            &failure.stdout,
            &failure.message,
        ])
    }

    #[test]
    fn a_rust_assertion_keeps_left_and_right() {
        let body = "thread 'tests::adds_small' (20044) panicked at src/lib.rs:16:9:\nassertion `left == right` failed\n  left: 3\n right: 2\nstack backtrace:\n   0: __rustc::rust_begin_unwind\n";
        assert_eq!(
            assertion(&[body]).as_deref(),
            Some("assertion `left == right` failed\n  left: 3\n right: 2")
        );
        let old = "thread 'x' panicked at 'assertion failed: `(left == right)`\n  left: `3`,\n right: `2`', src/lib.rs:4:5\nnote: run with `RUST_BACKTRACE=1`";
        assert_eq!(
            assertion(&[old]).as_deref(),
            Some("assertion failed: `(left == right)`\n  left: `3`,\n right: `2`")
        );
    }

    #[test]
    fn pytest_keeps_the_explanation_and_drops_the_full_diff_and_addresses() {
        let body = "    def test_windows():\n>       assert windows([1, 2, 3, 4], 2) == [[1, 2], [2, 3], [3, 4]]\nE       assert [[1, 2], [2, 3]] == [[1, 2], [2, 3], [3, 4]]\nE         \nE         Right contains one more item: [3, 4]\nE         \nE         Full diff:\nE           [\nE         -     [3, 4],\nE           ]\n\ntests/test_window.py:5: AssertionError";
        assert_eq!(
            assertion(&[body]).as_deref(),
            Some(
                "assert [[1, 2], [2, 3]] == [[1, 2], [2, 3], [3, 4]]\n  Right contains one more item: [3, 4]"
            )
        );
        let message =
            "assert 2 == 2.5\n +  where 2 = <function mean at 0x7f73f6fa19e0>([1, 2, 3, 4])";
        assert_eq!(
            assertion(&["", message]).as_deref(),
            Some("assert 2 == 2.5\n +  where 2 = <function mean>([1, 2, 3, 4])")
        );
    }

    #[test]
    fn real_runner_output_of_every_ecosystem() {
        assert_eq!(
            first_junit_failure("hindsight/logs/rust/nextest-junit.run1.xml").as_deref(),
            Some("assertion `left == right` failed\n  left: 3\n right: 2")
        );
        assert_eq!(
            first_junit_failure("reports/junit/jest/jest-junit.xml").as_deref(),
            Some("expect(received).toBe(expected) // Object.is equality\nExpected: 7\nReceived: 6")
        );
        assert_eq!(
            first_junit_failure("reports/junit/vitest/vitest.xml").as_deref(),
            Some(
                "AssertionError: expected 6 to be 7 // Object.is equality\n- Expected\n+ Received\n- 7\n+ 6"
            )
        );
        let pytest = first_junit_failure("hindsight/logs/python/pytest-junit.run1.xml");
        assert!(
            pytest.as_deref().is_some_and(|a| a.starts_with("assert")),
            "{pytest:?}"
        );
        let go = std::fs::read_to_string(fixture("hindsight/logs/go/test.run1.txt")).unwrap();
        assert_eq!(
            assertion(&[&go]).as_deref(),
            Some(
                "calc_test.go:10: Add(1, 1): got 3 want 2\ncalc_test.go:16: Add(10, 20): got 31 want 30 (checked at 2026-11-22T02:35:12.280770256Z)\ncalc_test.go:24: case one: unexpected result"
            )
        );
    }

    #[test]
    fn colour_escapes_go_whether_raw_or_spelled_by_a_junit_writer() {
        let message = "AssertionError: assert '1.0 Byte' == '1 Byte'\n  #x1B[0m#x1B[91m- 1 Byte#x1B[39;49;00m\n  \u{1b}[92m+ 1.0 Byte\u{1b}[39;49;00m";
        assert_eq!(
            assertion(&[message]).as_deref(),
            Some("AssertionError: assert '1.0 Byte' == '1 Byte'\n  - 1 Byte\n  + 1.0 Byte")
        );
    }

    #[test]
    fn a_unittest_diff_follows_its_exception_line() {
        let text = "Traceback (most recent call last):\n  File \"t.py\", line 5, in test_x\n    self.assertEqual(f(), [1, 2])\nAssertionError: Lists differ: [1] != [1, 2]\n\nSecond list contains 1 additional elements.\n- [1]\n+ [1, 2]\n----------------------------------------------------------------------\nRan 1 test";
        assert_eq!(
            assertion(&[text]).as_deref(),
            Some(
                "AssertionError: Lists differ: [1] != [1, 2]\nSecond list contains 1 additional elements.\n- [1]\n+ [1, 2]"
            )
        );
    }

    #[test]
    fn long_output_is_capped_and_plain_text_is_no_assertion() {
        let many: String = (0..40).map(|n| format!("E   line {n}\n")).collect();
        let found = assertion(&[&many]).unwrap();
        assert_eq!(found.lines().count(), MAX_LINES + 1);
        assert!(found.ends_with("[28 more lines]"));
        assert_eq!(assertion(&["build finished", ""]), None);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
        #[test]
        fn any_text_gives_a_bounded_assertion_or_none(
            lines in proptest::collection::vec(
                proptest::prop_oneof![
                    "E {0,8}[ -~]{0,60}",
                    "[ -~é❯]{0,80}",
                    "thread 'x' panicked at [a-z/.:0-9]{0,20}:?",
                    " *at [a-z]{1,8} \\(f\\.js:1:2\\)",
                    "[a-z_]{1,8}_test\\.go:[0-9]{1,3}: [ -~]{0,30}",
                    "(Assertion|Value)Error: [ -~]{0,40}",
                    "expect\\(received\\)[ -~]{0,20}",
                ],
                0..30,
            )
        ) {
            let text = lines.join("\n");
            if let Some(found) = assertion(&[&text]) {
                proptest::prop_assert!(!found.is_empty());
                proptest::prop_assert!(found.lines().count() <= MAX_LINES + 1);
                for line in found.lines() {
                    proptest::prop_assert!(line.chars().count() <= MAX_LINE_CHARS + 1);
                    proptest::prop_assert!(!line.trim().is_empty());
                }
            }
        }
    }
}
