//! The normalizer: replaces the incidental detail of a failure message with fixed placeholders, so
//! the same failure gives the same text from any checkout, at any time, on any machine.
//!
//! Rules, applied in this order (each placeholder contains no digit, so `normalize` is idempotent):
//! - ANSI colour and cursor codes (and stray escape characters) are removed, whitespace runs
//!   collapse to one space; `file://` prefixes are dropped.
//! - Paths: the repository root (when given) is removed, making paths repository-relative; a
//!   leading `./` is dropped. Windows paths (`C:\a\b`) become `/a/b`. Well-known locations get a
//!   stable prefix: `<site-packages>/`, `<node_modules>/`, `<cargo-registry>/`, `<rustc>/` (the
//!   standard library inside `/rustc/<hash>/`), `<goroot>/`, `<gomod>/`, `<python-lib>/`; temporary
//!   directories (`/tmp/X/`, `/var/folders/../T/X/`, `/private/var/...`, `AppData/Local/Temp/X/`)
//!   become `<tmp>/` and home directories (`/home/U/`, `/Users/U/`, `/root/`) become `<home>/`.
//! - UUIDs → `<uuid>`; ISO 8601, syslog and JavaScript date-times → `<timestamp>`; bare dates and
//!   times → `<date>`, `<time>`.
//! - Line and column numbers: `file.ext:12:5` → `file.ext:<line>:<col>`, `file.ts(3,5)` →
//!   `file.ts(<line>,<col>)`, `line 12` → `line <line>`, `column 3` → `column <col>`.
//! - Hex addresses `0x7ffd..` → `0x<hex>`; last, hex strings of 12+ digits (hashes) → `<hex>`.
//! - Thread and process identity: `ThreadId(12)` → `ThreadId(<n>)`, `thread 'x' (1234)` →
//!   `thread 'x'`, `goroutine 7` → `goroutine <n>`, `Thread-3` → `Thread-<n>`, `pid 42` / `pid=42` →
//!   `pid <pid>` / `pid=<pid>`, `name[1234]:` → `name[<pid>]:`.
//! - Random seeds: `seed=1234`, `seed: 1234`, `--seed 42`, `--hypothesis-seed=7`, `@seed(99)`,
//!   `shuffle 1700000000` → the number becomes `<seed>`.
//! - Durations: `0.03s`, `12 ms`, `1.5µs`, `10m0s`, `3 seconds` → `<duration>`.
//! - Network endpoints: `127.0.0.1:8080` → `<addr>`, `localhost:3000` → `localhost:<port>`.
//! - Numbers of 7 or more digits (epoch times, counters, ids) → `<n>`.
//! - Whitespace runs (including newlines) collapse to one space; the result is trimmed.
//!
//! Numbers of up to 6 digits that are not in one of the shapes above are KEPT: inside assertion
//! messages (`left: 1, right: 2`, `index out of range [5] with length 3`, `Expected: 4`) they are
//! what tells one failure from another, and a deterministic test prints the same values each run.
//!
//! This module only transforms strings: it reads no files and knows no tool formats.

use std::borrow::Cow;
use std::path::Path;
use std::sync::LazyLock;

use regex::{Captures, Regex};

/// One rewrite rule: a pattern and its replacement (`$1`-style references allowed).
struct Rule {
    pattern: Regex,
    replacement: &'static str,
}

/// Builds a rule; the patterns are constants checked by the unit tests, so a bad one is a bug
/// caught before release, and it degrades to a pattern that never matches rather than a panic.
fn rule(pattern: &str, replacement: &'static str) -> Rule {
    Rule {
        pattern: compile(pattern),
        replacement,
    }
}

/// Compiles a constant pattern (see [`rule`]). Debug builds (every test run, which touches every
/// pattern through the fixtures) stop on a bad one; release builds degrade to no match.
pub(crate) fn compile(pattern: &str) -> Regex {
    match Regex::new(pattern) {
        Ok(regex) => regex,
        Err(err) => {
            debug_assert!(false, "bad constant pattern {pattern:?}: {err}");
            never_matches()
        }
    }
}

/// A regex that matches nothing: `[^\s\S]` is an empty class.
fn never_matches() -> Regex {
    Regex::new(r"[^\s\S]").unwrap_or_else(|_| never_matches())
}

/// Characters that may precede the start of an absolute path.
const PATH_START: &str = r#"(^|[\s"'(\[=,:;<>|`])"#;
/// Characters of one path component.
const COMPONENT: &str = r#"[^/\s"'():;,<>|`\]\[]+"#;

static ANSI: LazyLock<Regex> = LazyLock::new(|| {
    compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-B]")
});

static WINDOWS_PATH: LazyLock<Regex> =
    LazyLock::new(|| compile(r#"(^|[\s"'(\[=,;<>|`])[A-Za-z]:\\[^\s"'()<>|`]*"#));

/// Path rules, most specific first.
static PATH_RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    let p = PATH_START;
    let c = COMPONENT;
    vec![
        rule(r"file://", ""),
        rule(
            &format!(r"{p}(?:/{c})*?/site-packages/"),
            "$1<site-packages>/",
        ),
        rule(&format!(r"{p}(?:/{c})*/node_modules/"), "$1<node_modules>/"),
        rule(
            &format!(r"{p}(?:/{c})*?/\.cargo/registry/src/{c}/"),
            "$1<cargo-registry>/",
        ),
        rule(&format!(r"{p}/rustc/[0-9a-f]{{7,40}}/"), "$1<rustc>/"),
        rule(&format!(r"{p}(?:/{c})*?/pkg/mod/"), "$1<gomod>/"),
        rule(
            &format!(r"{p}(?:/usr(?:/local)?/lib|/usr/local|/opt)/go(?:-[0-9.]+)?/"),
            "$1<goroot>/",
        ),
        rule(
            &format!(r"{p}(?:/{c})*?/lib/python[0-9.]*/"),
            "$1<python-lib>/",
        ),
        rule(
            &format!(r"{p}(?:/private)?/var/folders/{c}/{c}/T/{c}"),
            "$1<tmp>",
        ),
        rule(&format!(r"{p}/Users/{c}/AppData/Local/Temp/{c}"), "$1<tmp>"),
        rule(&format!(r"{p}(?:/private)?/(?:var/)?tmp/{c}"), "$1<tmp>"),
        rule(
            &format!(r"{p}(?:/home/{c}|/Users/{c}|/root)(/|$)"),
            "$1<home>$2",
        ),
        rule(r"(^|[\s(])\./([\w.])", "$1$2"),
        rule(r"\bpytest-\d+\b", "pytest-<n>"),
    ]
});

/// Rules for values: identities, times, positions, numbers. Order matters (see the module doc).
static VALUE_RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    const MONTH: &str = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*";
    const DAY: &str = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*";
    vec![
        rule(
            r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b",
            "<uuid>",
        ),
        rule(
            r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:\s?Z\b|\s?[+-]\d{2}:?\d{2}\b|\s?UTC\b)?",
            "<timestamp>",
        ),
        rule(
            &format!(
                r"\b(?:{DAY},?\s+)?(?:{MONTH}\s+\d{{1,2}}|\d{{1,2}}\s+{MONTH}),?(?:\s+\d{{4}})?\s+\d{{2}}:\d{{2}}(?::\d{{2}}(?:\.\d+)?)?(?:\s+(?:GMT|UTC)?[+-]\d{{4}}(?:\s+\([^)]*\))?|\s+(?:GMT|UTC)\b)?"
            ),
            "<timestamp>",
        ),
        rule(
            &format!(r"\b(?:{DAY},?\s+)?{MONTH}\s+\d{{1,2}},?\s+\d{{4}}\b"),
            "<date>",
        ),
        rule(r"\b\d{4}-\d{2}-\d{2}\b", "<date>"),
        rule(r"\b\d{1,3}(?:\.\d{1,3}){3}:\d{1,5}\b", "<addr>"),
        rule(r"\blocalhost:\d{1,5}\b", "localhost:<port>"),
        rule(
            r"(\.[A-Za-z][A-Za-z0-9]{0,7}|>|\]|node:[\w/]+):\d+:\d+\b",
            "$1:<line>:<col>",
        ),
        rule(r"(\.[A-Za-z][A-Za-z0-9]{0,7}|>|\]):\d+\b", "$1:<line>"),
        rule(
            r"(\.[A-Za-z][A-Za-z0-9]{0,7})\(\d+,\d+\)",
            "$1(<line>,<col>)",
        ),
        rule(r"\b([Ll]ine|LINE)(\s+|:\s*)\d+", "$1$2<line>"),
        rule(r"\b([Cc]olumn|col)(\s+|:\s*)\d+", "$1$2<col>"),
        rule(r"\b\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\b", "<time>"),
        rule(r"\b0[xX][0-9a-fA-F]+\b", "0x<hex>"),
        rule(r"\bThreadId\(\d+\)", "ThreadId(<n>)"),
        rule(r"(thread '[^']*') \(\d+\)", "$1"),
        rule(r"\bgoroutine \d+\b", "goroutine <n>"),
        rule(r"\bThread-\d+\b", "Thread-<n>"),
        rule(
            r"\b([Pp][Ii][Dd]|[Pp]rocess)(\s*[=:]\s*|\s+)\d+\b",
            "$1$2<pid>",
        ),
        rule(r"\b([A-Za-z][\w.-]*)\[\d+\]:", "$1[<pid>]:"),
        rule(
            r"(?i)(\b[\w-]*seed|\bshuffle)(\s*[=:]\s*|\s+|\()(?:0x)?[0-9a-f]+\b",
            "$1$2<seed>",
        ),
        rule(
            r"\b(?:\d+(?:\.\d+)?\s?(?:ns|µs|μs|us|ms|seconds?|secs?|minutes?|mins?|hours?|h|m|s))+\b",
            "<duration>",
        ),
        rule(r"\b\d{7,}(?:\.\d+)?\b", "<n>"),
    ]
});

/// Hex strings of 12 or more digits, judged by [`replace_hashes`] (they must contain a digit).
static LONG_HEX: LazyLock<Regex> = LazyLock::new(|| compile(r"\b[0-9a-fA-F]{12,}\b"));

/// Replaces incidental detail in `text` with placeholders; see the module doc for the rules.
pub fn normalize(text: &str, repo_root: Option<&Path>) -> String {
    let text = collapse_whitespace(&strip_ansi(text));
    let text = strip_root(&text, repo_root);
    let text = windows_paths(&text);
    let text = apply(&PATH_RULES, text);
    let text = apply(&VALUE_RULES, text);
    collapse_whitespace(&replace_hashes(&text))
}

/// Removes ANSI colour and cursor codes.
pub fn strip_ansi(text: &str) -> Cow<'_, str> {
    if !text.contains('\x1b') {
        return Cow::Borrowed(text);
    }
    // A lone escape left over could join its neighbours into a new sequence on a second pass.
    Cow::Owned(ANSI.replace_all(text, "").replace('\x1b', ""))
}

/// Normalizes only the paths in `text` (root, temporary and well-known prefixes, `./`), keeping
/// line numbers: used for locations and frames.
pub fn normalize_path(text: &str, repo_root: Option<&Path>) -> String {
    let text = strip_ansi(text);
    let text = strip_root(&text, repo_root);
    let text = windows_paths(&text);
    apply(&PATH_RULES, text).trim().to_owned()
}

/// Removes the repository root, making paths under it repository-relative.
fn strip_root<'a>(text: &'a str, repo_root: Option<&Path>) -> Cow<'a, str> {
    let Some(root) = repo_root.and_then(Path::to_str) else {
        return Cow::Borrowed(text);
    };
    let root = root.trim_end_matches(['/', '\\']);
    if root.len() < 2 || !text.contains(root) {
        return Cow::Borrowed(text);
    }
    let separator = if root.contains('\\') { "\\" } else { "/" };
    Cow::Owned(
        text.replace(&format!("{root}{separator}"), "")
            .replace(root, "."),
    )
}

/// `C:\Users\me\x.rs` → `/Users/me/x.rs`, so the other path rules apply to Windows paths too.
fn windows_paths(text: &str) -> Cow<'_, str> {
    if !text.contains(":\\") {
        return Cow::Borrowed(text);
    }
    WINDOWS_PATH.replace_all(text, |caps: &Captures| {
        let path = &caps[0][caps[1].len()..];
        format!("{}{}", &caps[1], path[2..].replace('\\', "/"))
    })
}

/// Hashes (hex runs of 12+ characters with at least one digit) become `<hex>`.
fn replace_hashes(text: &str) -> Cow<'_, str> {
    LONG_HEX.replace_all(text, |caps: &Captures| {
        let hex = &caps[0];
        if hex.bytes().any(|b| b.is_ascii_digit()) && !hex.bytes().all(|b| b.is_ascii_digit()) {
            "<hex>".to_owned()
        } else {
            hex.to_owned()
        }
    })
}

/// Applies each rule in turn.
fn apply<'a>(rules: &[Rule], text: Cow<'a, str>) -> Cow<'a, str> {
    rules.iter().fold(text, |text, rule| {
        match rule.pattern.replace_all(&text, rule.replacement) {
            Cow::Borrowed(_) => text,
            Cow::Owned(changed) => Cow::Owned(changed),
        }
    })
}

/// Collapses every whitespace run to one space and trims the ends.
fn collapse_whitespace(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(text: &str) -> String {
        normalize(text, None)
    }

    #[test]
    fn every_rule_compiles() {
        for pattern in PATH_RULES
            .iter()
            .chain(VALUE_RULES.iter())
            .map(|r| &r.pattern)
        {
            assert_ne!(pattern.as_str(), never_matches().as_str(), "bad pattern");
        }
        assert_ne!(ANSI.as_str(), never_matches().as_str());
        assert_ne!(WINDOWS_PATH.as_str(), never_matches().as_str());
    }

    #[test]
    fn paths_become_stable() {
        let root = Path::new("/work/ci/checkout");
        assert_eq!(
            normalize("panicked at /work/ci/checkout/src/lib.rs:5:9", Some(root)),
            "panicked at src/lib.rs:<line>:<col>"
        );
        assert_eq!(
            n("at /tmp/tmp.AbC123/proj/src/x.rs:3"),
            "at <tmp>/proj/src/x.rs:<line>"
        );
        assert_eq!(
            n("at /private/var/folders/ab/cd12/T/tmp9/p/x.py"),
            "at <tmp>/p/x.py"
        );
        assert_eq!(
            n(r"at C:\Users\bob\AppData\Local\Temp\xy\p\x.py"),
            "at <tmp>/p/x.py"
        );
        assert_eq!(n(r"at C:\Users\bob\p\x.py"), "at <home>/p/x.py");
        assert_eq!(n("/home/alice/src/app.py"), "<home>/src/app.py");
        assert_eq!(
            n(r#"File "/usr/lib/python3.11/site-packages/requests/api.py", line 59"#),
            r#"File "<site-packages>/requests/api.py", line <line>"#
        );
        assert_eq!(
            n("(/a/b/node_modules/jest-circus/build/x.js:1:2)"),
            "(<node_modules>/jest-circus/build/x.js:<line>:<col>)"
        );
        assert_eq!(
            n("/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/serde-1.0.1/src/de.rs"),
            "<cargo-registry>/serde-1.0.1/src/de.rs"
        );
        assert_eq!(
            n("/usr/lib/go-1.19/src/testing/testing.go:1446"),
            "<goroot>/src/testing/testing.go:<line>"
        );
    }

    #[test]
    fn values_become_placeholders() {
        assert_eq!(n("\x1b[31merror\x1b[0m at 0x7ffd5a3c"), "error at 0x<hex>");
        assert_eq!(n("2026-11-22T02:13:24.123Z boom"), "<timestamp> boom");
        assert_eq!(
            n("Nov 22 02:13:24 host sshd[4242]: x"),
            "<timestamp> host sshd[<pid>]: x"
        );
        assert_eq!(
            n("took 0.03s, 12 ms, 10m0s"),
            "took <duration>, <duration>, <duration>"
        );
        assert_eq!(n("id 123e4567-e89b-12d3-a456-426614174000"), "id <uuid>");
        assert_eq!(
            n("seed=1234 --seed 42 pid 99"),
            "seed=<seed> --seed <seed> pid <pid>"
        );
        assert_eq!(
            n("ThreadId(12) thread 'main' (4711) panicked"),
            "ThreadId(<n>) thread 'main' panicked"
        );
    }

    #[test]
    fn assertion_values_are_kept() {
        assert_eq!(n("left: 1\n right: 2"), "left: 1 right: 2");
        assert_eq!(
            n("index out of range [5] with length 3"),
            "index out of range [5] with length 3"
        );
        assert_ne!(n("assert 3 == 2"), n("assert 31 == 30"));
    }
}
