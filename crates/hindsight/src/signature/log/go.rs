//! Go shapes: `--- FAIL: TestX (0.00s)` with its `file_test.go:12: message` lines (subtests too),
//! `panic: ...` with its goroutine trace, and `panic: test timed out after 10m0s`.

use std::sync::LazyLock;

use regex::Regex;

use super::{Found, Line, Log, indent, join_lines};
use crate::SignatureKind;
use crate::signature::Candidate;
use crate::signature::normalize::compile;

static FAIL: LazyLock<Regex> = LazyLock::new(|| compile(r"^\s*--- FAIL: (\S+) \(.*\)$"));
static MESSAGE: LazyLock<Regex> = LazyLock::new(|| compile(r"^\s+(\w[\w.-]*\.go):(\d+): (.*)$"));
static PANIC: LazyLock<Regex> = LazyLock::new(|| compile(r"^panic: (.+?)(?: \[recovered\])?$"));
static FRAME_FILE: LazyLock<Regex> =
    LazyLock::new(|| compile(r"^\t(\S+?):(\d+)(?: \+0x[0-9a-f]+)?$"));
static TEST_FUNC: LazyLock<Regex> = LazyLock::new(|| compile(r"\.(Test\w+)$"));

/// Tries each Go shape on an anchored line.
pub(super) fn recognize(log: &Log<'_>, line: Line<'_>) -> Option<Found> {
    test_failure(log, line).or_else(|| panic(log, line))
}

/// A `--- FAIL:` line and the message lines indented under it (not its subtests').
fn test_failure(log: &Log<'_>, line: Line<'_>) -> Option<Found> {
    if !(line.text.contains("--- FAIL")) {
        return None;
    }
    let test = FAIL.captures(line.text)?.get(1)?.as_str();
    let base = indent(line.text);
    let mut messages = Vec::new();
    let mut location = None;
    for next in log.lines_from(line.next) {
        if indent(next.text) <= base || FAIL.is_match(next.text) {
            break;
        }
        if let Some(caps) = MESSAGE.captures(next.text) {
            location.get_or_insert_with(|| format!("{}:{}", &caps[1], &caps[2]));
            messages.push(format!("{}: {}", &caps[1], &caps[3]));
        } else if !messages.is_empty() {
            messages.push(next.text.trim().to_owned());
        }
    }
    if messages.is_empty() {
        // A parent whose subtests failed, or a test that panicked: the panic reports it.
        return None;
    }
    let message = join_lines(messages.iter().take(6).map(String::as_str));
    let candidate = Candidate {
        kind: SignatureKind::TestFailure,
        template: format!("go test {test}: {message}"),
        location,
        test: Some(test.to_owned()),
        frames: Vec::new(),
        excerpt: message,
    };
    Some(Found::one(candidate, line.next))
}

/// `panic: ...` (a test timeout too) with the top frames inside the module.
fn panic(log: &Log<'_>, line: Line<'_>) -> Option<Found> {
    if !(line.text.starts_with("panic: ")) {
        return None;
    }
    let message = PANIC.captures(line.text)?.get(1)?.as_str();
    let trace: Vec<Line<'_>> = log
        .lines_from(line.next)
        .take_while(|l| !l.text.starts_with("FAIL") && !l.text.starts_with("exit status"))
        .take(2000)
        .collect();
    let (frames, location) = module_frames(&trace);
    let timeout = message.starts_with("test timed out");
    let test = failing_test(log, line.start).or_else(|| test_from_frames(&frames));
    let kind = match (timeout, &test) {
        (true, _) => SignatureKind::Timeout,
        (false, Some(_)) => SignatureKind::TestError,
        (false, None) => SignatureKind::Crash,
    };
    let top = frames.first().map_or(String::new(), |f| format!(" in {f}"));
    let candidate = Candidate {
        kind,
        template: format!("go panic: {message}{top}"),
        location,
        test,
        frames,
        excerpt: message.to_owned(),
    };
    Some(Found::one(
        candidate,
        trace.last().map_or(line.next, |l| l.next),
    ))
}

/// Functions of frames whose file is not in GOROOT or the module cache, innermost first.
fn module_frames(trace: &[Line<'_>]) -> (Vec<String>, Option<String>) {
    let mut frames = Vec::new();
    let mut location = None;
    for pair in trace.windows(2) {
        let Some(file) = FRAME_FILE.captures(pair[1].text) else {
            continue;
        };
        let path = &file[1];
        if path.contains("/src/runtime/")
            || path.contains("/src/testing/")
            || path.contains("/go/src/")
            || path.contains("/go-1.")
            || path.contains("/pkg/mod/")
            || path.starts_with("_testmain")
        {
            continue;
        }
        let function = pair[0]
            .text
            .split('(')
            .next()
            .unwrap_or_default()
            .trim()
            .to_owned();
        if frames.len() < 3 && !frames.contains(&function) {
            location.get_or_insert_with(|| format!("{path}:{}", &file[2]));
            frames.push(function);
        }
    }
    (frames, location)
}

/// The test named by a `--- FAIL:` line right before the panic.
fn failing_test(log: &Log<'_>, start: usize) -> Option<String> {
    let prev = log.previous(start)?;
    FAIL.captures(prev.text).map(|c| c[1].to_owned())
}

/// A `pkg.TestX` frame names the test that was running.
fn test_from_frames(frames: &[String]) -> Option<String> {
    frames
        .iter()
        .find_map(|f| TEST_FUNC.captures(f).map(|c| c[1].to_owned()))
}
