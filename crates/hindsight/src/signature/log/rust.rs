//! Rust shapes: rustc (and clippy) human diagnostics, panics (Rust ≥ 1.73 and the older one-line
//! form, with or without a backtrace), cargo-nextest TIMEOUT lines, `cargo fmt --check` diffs.

use std::sync::LazyLock;

use regex::Regex;

use super::{Found, Line, Log, join_lines};
use crate::SignatureKind;
use crate::signature::normalize::compile;
use crate::signature::{Candidate, RustDiagnostic};

static RUSTC_HEADER: LazyLock<Regex> = LazyLock::new(|| compile(r"^error(?:\[([\w:]+)\])?: (.+)$"));
static RUSTC_SPAN: LazyLock<Regex> = LazyLock::new(|| compile(r"^\s*--> (.+?):(\d+):\d+$"));
static RUSTC_LABEL: LazyLock<Regex> = LazyLock::new(|| compile(r"^\s*\d*\s*\|[^\^]*?\^+ (.+)$"));
static LINT_NAME: LazyLock<Regex> =
    LazyLock::new(|| compile(r"(?:#\[deny\(|-D )`?((?:clippy::)?[\w-]+)"));
static PANIC_NEW: LazyLock<Regex> =
    LazyLock::new(|| compile(r"^\s*thread '([^']*)'(?: \(\d+\))? panicked at (.+?):(\d+):\d+:$"));
static PANIC_OLD: LazyLock<Regex> = LazyLock::new(|| {
    compile(r"^\s*thread '([^']*)'(?: \(\d+\))? panicked at '(.*)', (.+?):(\d+):\d+$")
});
static FRAME: LazyLock<Regex> = LazyLock::new(|| compile(r"^\s*\d+: (.+)$"));
static FRAME_AT: LazyLock<Regex> = LazyLock::new(|| compile(r"^\s*at (.+?):(\d+)(?::\d+)?$"));
static NEXTEST_TIMEOUT: LazyLock<Regex> =
    LazyLock::new(|| compile(r"^\s*TIMEOUT \[[^\]]*\](?: \(\d+/\d+\))? (\S+) (\S+)\s*$"));
static FMT_DIFF: LazyLock<Regex> =
    LazyLock::new(|| compile(r"^Diff in (.+?)(?: at line (\d+):|:(\d+):)\s*$"));

/// Compiler messages that only summarize others.
const RUSTC_NOISE: &[&str] = &[
    "aborting due to",
    "could not compile",
    "test failed, to rerun",
];

/// Tries each Rust shape on an anchored line.
pub(super) fn recognize(log: &Log<'_>, line: Line<'_>) -> Option<Found> {
    rustc(log, line)
        .or_else(|| panic(log, line))
        .or_else(|| nextest_timeout(line))
        .or_else(|| fmt_diff(line))
}

/// `error[E0308]: mismatched types` with its ` --> path` and primary label.
fn rustc(log: &Log<'_>, line: Line<'_>) -> Option<Found> {
    if !(line.text.starts_with("error")) {
        return None;
    }
    let caps = RUSTC_HEADER.captures(line.text)?;
    let message = caps.get(2)?.as_str();
    if RUSTC_NOISE.iter().any(|noise| message.contains(noise)) {
        return None;
    }
    let mut diagnostic = RustDiagnostic {
        code: caps.get(1).map(|m| m.as_str().to_owned()),
        message: message.to_owned(),
        ..RustDiagnostic::default()
    };
    let mut end = line.next;
    for (seen, next) in log.lines_from(line.next).enumerate() {
        if seen > 80 || starts_new_message(next.text) {
            break;
        }
        read_diagnostic_line(&mut diagnostic, next.text);
        end = next.next;
    }
    diagnostic.path.as_ref()?;
    Some(Found::one(diagnostic.into_candidate(), end))
}

fn starts_new_message(text: &str) -> bool {
    ["error", "warning", "For more information", "Some errors"]
        .iter()
        .any(|start| text.starts_with(start))
}

/// Takes the first span, the first primary label and a lint name from one block line.
fn read_diagnostic_line(diagnostic: &mut RustDiagnostic, text: &str) {
    if diagnostic.path.is_none()
        && let Some(span) = RUSTC_SPAN.captures(text)
    {
        diagnostic.path = Some(span[1].to_owned());
        diagnostic.line = span[2].parse().ok();
    } else if diagnostic.label.is_none()
        && let Some(label) = RUSTC_LABEL.captures(text)
    {
        diagnostic.label = Some(label[1].trim().to_owned());
    } else if diagnostic.code.is_none()
        && text.trim_start().starts_with("= note:")
        && let Some(lint) = LINT_NAME.captures(text)
    {
        diagnostic.code = Some(lint[1].replace('-', "_"));
    }
}

/// A panic: where, which thread (a test's name under libtest), the message and in-repo frames.
fn panic(log: &Log<'_>, line: Line<'_>) -> Option<Found> {
    if !(line.text.contains("panicked at")) {
        return None;
    }
    let (thread, path, line_no, inline) = panic_header(line.text)?;
    let mut message = inline.map(str::to_owned);
    let mut end = line.next;
    if message.is_none() {
        let body: Vec<Line<'_>> = log
            .lines_from(line.next)
            .take_while(|l| !ends_panic_message(l.text))
            .take(20)
            .collect();
        end = body.last().map_or(end, |l| l.next);
        message = Some(join_lines(body.iter().map(|l| l.text)));
    }
    let (frames, frames_end) = backtrace(log, end);
    let is_test = !matches!(thread, "main" | "<unnamed>");
    let who = if is_test {
        format!("test {thread}")
    } else {
        format!("thread '{thread}'")
    };
    let message = message.unwrap_or_default();
    let candidate = Candidate {
        kind: if is_test {
            SignatureKind::TestFailure
        } else {
            SignatureKind::Crash
        },
        template: format!("{who} panicked at {path}: {message}"),
        location: Some(format!("{path}:{line_no}")),
        test: is_test.then(|| thread.to_owned()),
        frames,
        excerpt: message,
    };
    Some(Found::one(candidate, frames_end.max(end)))
}

/// Thread, path, line and (old format) the message of a panic header.
fn panic_header(text: &str) -> Option<(&str, &str, &str, Option<&str>)> {
    if let Some(c) = PANIC_NEW.captures(text) {
        let (_, [thread, path, line]) = c.extract();
        return Some((thread, path, line, None));
    }
    let c = PANIC_OLD.captures(text)?;
    let (_, [thread, message, path, line]) = c.extract();
    Some((thread, path, line, Some(message)))
}

fn ends_panic_message(text: &str) -> bool {
    let text = text.trim_start();
    text.is_empty() || text.starts_with("note:") || text.starts_with("stack backtrace:")
}

/// The top three frames inside the repository from a `stack backtrace:` block at `start`.
fn backtrace(log: &Log<'_>, start: usize) -> (Vec<String>, usize) {
    let mut lines = log.lines_from(start).peekable();
    if !lines
        .peek()
        .is_some_and(|l| l.text.trim_start().starts_with("stack backtrace:"))
    {
        return (Vec::new(), start);
    }
    let mut frames: Vec<String> = Vec::new();
    let mut function = None;
    let mut end = start;
    for line in lines.skip(1) {
        if let Some(at) = FRAME_AT.captures(line.text) {
            if let Some(name) = function.take().filter(|_| in_repo(&at[1])) {
                push_frame(&mut frames, name);
            }
        } else if let Some(frame) = FRAME.captures(line.text) {
            function = Some(frame[1].trim_end_matches("::{{closure}}").to_owned());
        } else {
            break;
        }
        end = line.next;
    }
    (frames, end)
}

fn push_frame(frames: &mut Vec<String>, name: String) {
    if frames.len() < 3 && !frames.contains(&name) {
        frames.push(name);
    }
}

/// A backtrace path inside the repository: relative, not the standard library or a registry.
fn in_repo(path: &str) -> bool {
    !path.starts_with('/') && !path.starts_with("<") && !path.contains(".cargo/registry")
}

/// `TIMEOUT [   2.004s] (3/6) crate tests::slow`.
fn nextest_timeout(line: Line<'_>) -> Option<Found> {
    if !(line.text.contains("TIMEOUT")) {
        return None;
    }
    let caps = NEXTEST_TIMEOUT.captures(line.text)?;
    let test = format!("{} {}", &caps[1], &caps[2]);
    Some(Found::one(
        Candidate {
            kind: SignatureKind::Timeout,
            template: format!("timeout: test {test}"),
            location: None,
            test: Some(test),
            frames: Vec::new(),
            excerpt: line.text.trim().to_owned(),
        },
        line.next,
    ))
}

/// `Diff in /abs/src/lib.rs:1:` (or the older `... at line 1:`) from `cargo fmt --check`.
fn fmt_diff(line: Line<'_>) -> Option<Found> {
    if !(line.text.starts_with("Diff in ")) {
        return None;
    }
    let caps = FMT_DIFF.captures(line.text)?;
    let line_no = caps.get(2).or(caps.get(3)).map_or("", |m| m.as_str());
    Some(Found::one(
        Candidate::formatter(
            "rustfmt: formatting differs in <path>",
            &caps[1],
            line_no,
            line.text,
        ),
        line.next,
    ))
}
