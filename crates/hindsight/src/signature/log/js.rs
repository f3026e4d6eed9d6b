//! JavaScript and TypeScript shapes: jest `●` blocks, vitest ` FAIL  file > test` blocks, mocha's numbered failures, tsc (plain
//! and `--pretty`), eslint's stylish format, `prettier --check`.

use std::sync::LazyLock;

use regex::Regex;

use super::{Found, Line, Log, indent, join_lines, lint};
use crate::SignatureKind;
use crate::signature::Candidate;
use crate::signature::normalize::compile;

static JEST_HEADER: LazyLock<Regex> = LazyLock::new(|| compile(r"^\s*● (.+)$"));
static CODE_FRAME: LazyLock<Regex> = LazyLock::new(|| compile(r"^\s*>?\s*\d+ \|"));
static STACK_AT: LazyLock<Regex> =
    LazyLock::new(|| compile(r"^\s*at (?:(.+?) \()?([^()\s]+?):(\d+):\d+\)?$"));
static MOCHA_FAILING: LazyLock<Regex> = LazyLock::new(|| compile(r"^\s+\d+ failing"));
static MOCHA_ITEM: LazyLock<Regex> = LazyLock::new(|| compile(r"^  (\d+)\) (.+)$"));
static TSC: LazyLock<Regex> =
    LazyLock::new(|| compile(r"^(\S.*?)(?:\((\d+),\d+\):|:(\d+):\d+ -) error (TS\d+): (.+)$"));
static ESLINT: LazyLock<Regex> =
    LazyLock::new(|| compile(r"^\s+(\d+):\d+\s+error\s+(.+?)(?:\s{2,}(\S+))?\s*$"));
static VITEST_HEADER: LazyLock<Regex> = LazyLock::new(|| compile(r"^\s*FAIL  (\S+) > (.+)$"));
static VITEST_AT: LazyLock<Regex> = LazyLock::new(|| compile(r"^\s*❯ (\S+?):(\d+):\d+$"));
static PRETTIER: LazyLock<Regex> = LazyLock::new(|| compile(r"^\[warn\] (\S+\.\w+)$"));

/// Tries each JavaScript shape on an anchored line.
pub(super) fn recognize(log: &Log<'_>, line: Line<'_>) -> Option<Found> {
    jest(log, line)
        .or_else(|| vitest(log, line))
        .or_else(|| mocha(log, line))
        .or_else(|| tsc(line))
        .or_else(|| eslint(log, line))
        .or_else(|| prettier(log, line))
}

/// `  ● suite › test` and its message, code frame and stack.
fn jest(log: &Log<'_>, line: Line<'_>) -> Option<Found> {
    if !(line.text.contains('●')) {
        return None;
    }
    let title = JEST_HEADER.captures(line.text)?.get(1)?.as_str().trim();
    let base = indent(line.text);
    let body: Vec<Line<'_>> = log
        .lines_from(line.next)
        .take_while(|l| l.text.trim().is_empty() || indent(l.text) > base)
        .take(300)
        .collect();
    let message = join_lines(
        body.iter()
            .map(|l| l.text)
            .take_while(|t| !CODE_FRAME.is_match(t) && !STACK_AT.is_match(t))
            .take(8),
    );
    let (frames, location) = stack(body.iter().map(|l| l.text));
    let kind = if message.contains("Exceeded timeout") {
        SignatureKind::Timeout
    } else if title.starts_with("Test suite failed to run") {
        SignatureKind::TestError
    } else {
        SignatureKind::TestFailure
    };
    let candidate = test_candidate(TestFailureParts {
        tool: "jest",
        kind,
        test: title,
        message,
        frames,
        location,
    });
    Some(Found::one(
        candidate,
        body.last().map_or(line.next, |l| l.next),
    ))
}

/// ` FAIL  file > suite > test`, its message up to the ` ❯ file:line:col` frame.
fn vitest(log: &Log<'_>, line: Line<'_>) -> Option<Found> {
    if !(line.text.contains("FAIL  ")) {
        return None;
    }
    let caps = VITEST_HEADER.captures(line.text)?;
    let test = format!("{} > {}", &caps[1], &caps[2]);
    let body: Vec<Line<'_>> = log
        .lines_from(line.next)
        .take_while(|l| !l.text.starts_with('⎯') && !VITEST_HEADER.is_match(l.text))
        .take(200)
        .collect();
    let message = join_lines(
        body.iter()
            .map(|l| l.text)
            .take_while(|t| !VITEST_AT.is_match(t) && !CODE_FRAME.is_match(t))
            .take(8),
    );
    let location = body
        .iter()
        .find_map(|l| VITEST_AT.captures(l.text))
        .map(|c| format!("{}:{}", &c[1], &c[2]));
    let kind = if message.contains("Test timed out in") {
        SignatureKind::Timeout
    } else {
        SignatureKind::TestFailure
    };
    let candidate = test_candidate(TestFailureParts {
        tool: "vitest",
        kind,
        test: &test,
        message,
        frames: Vec::new(),
        location,
    });
    Some(Found::one(
        candidate,
        body.last().map_or(line.next, |l| l.next),
    ))
}

/// The pieces of a test failure from a JavaScript runner.
struct TestFailureParts<'a> {
    tool: &'a str,
    kind: SignatureKind,
    test: &'a str,
    message: String,
    frames: Vec<String>,
    location: Option<String>,
}

fn test_candidate(parts: TestFailureParts<'_>) -> Candidate {
    Candidate {
        kind: parts.kind,
        template: format!("{} {}: {}", parts.tool, parts.test, parts.message),
        location: parts.location,
        test: Some(parts.test.to_owned()),
        frames: parts.frames,
        excerpt: parts.message,
    }
}

/// The top three stack frames inside the repository, and the first one's `file:line`.
fn stack<'a>(lines: impl Iterator<Item = &'a str>) -> (Vec<String>, Option<String>) {
    let mut frames = Vec::new();
    let mut location = None;
    for caps in lines.filter_map(|t| STACK_AT.captures(t)) {
        let file = &caps[2];
        if file.contains("node_modules") || file.starts_with("node:") || file.starts_with('<') {
            continue;
        }
        location.get_or_insert_with(|| format!("{file}:{}", &caps[3]));
        if frames.len() < 3 {
            let function = caps.get(1).map_or("<anonymous>", |m| m.as_str());
            frames.push(format!("{function} ({file})"));
        }
    }
    (frames, location)
}

/// `  N failing` and every numbered failure after it.
fn mocha(log: &Log<'_>, line: Line<'_>) -> Option<Found> {
    if !(line.text.contains(" failing")) {
        return None;
    }
    if !MOCHA_FAILING.is_match(line.text) {
        return None;
    }
    let lines: Vec<Line<'_>> = log.lines_from(line.next).take(20_000).collect();
    let starts: Vec<usize> = (0..lines.len())
        .filter(|&i| MOCHA_ITEM.is_match(lines[i].text))
        .collect();
    let mut candidates = Vec::new();
    for (n, &first) in starts.iter().enumerate() {
        let last = starts.get(n + 1).copied().unwrap_or(lines.len());
        let block: Vec<&str> = lines[first..last].iter().map(|l| l.text).collect();
        candidates.extend(mocha_block(&block));
    }
    let end = lines.last().map_or(line.next, |l| l.next);
    (!candidates.is_empty()).then_some(Found { candidates, end })
}

/// One numbered mocha failure: the title lines up to the one ending in `:`, the message, the stack.
fn mocha_block(block: &[&str]) -> Option<Candidate> {
    let first = MOCHA_ITEM
        .captures(block.first()?)?
        .get(2)?
        .as_str()
        .to_owned();
    let title_end = block.iter().position(|t| t.trim_end().ends_with(':'))?;
    let mut title = vec![first.trim_end_matches(':').to_owned()];
    title.extend(
        block[1..=title_end]
            .iter()
            .map(|t| t.trim().trim_end_matches(':').to_owned()),
    );
    let rest = &block[title_end + 1..];
    let message = join_lines(
        rest.iter()
            .copied()
            .take_while(|t| !STACK_AT.is_match(t))
            .take(12),
    );
    let (frames, location) = stack(rest.iter().copied());
    let kind = if message.contains("Timeout of") && message.contains("exceeded") {
        SignatureKind::Timeout
    } else {
        SignatureKind::TestFailure
    };
    let test = title.join(" › ");
    Some(test_candidate(TestFailureParts {
        tool: "mocha",
        kind,
        test: &test,
        message,
        frames,
        location,
    }))
}

/// `src/x.ts(3,5): error TS2322: ...` or the pretty `src/x.ts:3:5 - error TS2322: ...`.
fn tsc(line: Line<'_>) -> Option<Found> {
    if !(line.text.contains(" error TS")) {
        return None;
    }
    let caps = TSC.captures(line.text)?;
    let file = &caps[1];
    let line_no = caps.get(2).or(caps.get(3)).map_or("", |m| m.as_str());
    let message = &caps[5];
    let candidate = Candidate {
        kind: SignatureKind::Compile,
        template: format!("tsc {}: {message} (in {file})", &caps[4]),
        location: Some(format!("{file}:{line_no}")),
        test: None,
        frames: Vec::new(),
        excerpt: message.to_owned(),
    };
    Some(Found::one(candidate, line.next))
}

/// `  3:5  error  'x' is defined but never used  no-unused-vars` under its file header.
fn eslint(log: &Log<'_>, line: Line<'_>) -> Option<Found> {
    if !(line.text.contains(" error ")) {
        return None;
    }
    let caps = ESLINT.captures(line.text)?;
    let file = eslint_file(log, line.start)?;
    let rule = caps.get(3).map_or("parse", |m| m.as_str());
    Some(Found::one(
        lint("eslint", rule, &caps[2], file, &caps[1]),
        line.next,
    ))
}

/// The file header above an eslint finding: the nearest unindented line, within 10,000 lines.
fn eslint_file<'a>(log: &Log<'a>, start: usize) -> Option<&'a str> {
    let mut at = start;
    for _ in 0..10_000 {
        let prev = log.previous(at)?;
        if !prev.text.trim().is_empty() && indent(prev.text) == 0 {
            return Some(prev.text.trim());
        }
        at = prev.start;
    }
    None
}

/// `[warn] src/x.js` lines before prettier's `Code style issues found` line.
fn prettier(log: &Log<'_>, line: Line<'_>) -> Option<Found> {
    if !(line.text.starts_with("[warn] ")) {
        return None;
    }
    let path = PRETTIER.captures(line.text)?.get(1)?.as_str();
    let confirmed = log
        .lines_from(line.next)
        .take_while(|l| l.text.starts_with("[warn]"))
        .any(|l| l.text.contains("Code style issues"));
    confirmed.then(|| {
        let candidate =
            Candidate::formatter("prettier: code style issues in <path>", path, "", line.text);
        Found::one(candidate, line.next)
    })
}
