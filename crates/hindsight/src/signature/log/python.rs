//! Python shapes: pytest failure blocks (with the short summary for the node id), bare tracebacks,
//! `ruff check` concise output, `ruff format --check` and `black --check`.

use std::sync::LazyLock;

use regex::Regex;

use super::{Found, Line, Log, join_lines, lint};
use crate::SignatureKind;
use crate::signature::Candidate;
use crate::signature::normalize::compile;

static PYTEST_HEADER: LazyLock<Regex> = LazyLock::new(|| compile(r"^_{3,} (.+?) _{3,}$"));
static PYTEST_WHERE: LazyLock<Regex> = LazyLock::new(|| compile(r"^(\S+?):(\d+): (\w[\w.]*)$"));
/// `path.py:12:`, `path.py:12: in func` or `path.py:12: Type`: one entry of pytest's traceback.
static PYTEST_FRAME: LazyLock<Regex> = LazyLock::new(|| compile(r"^(\S+\.py):(\d+):(?: .*)?$"));
static SUMMARY: LazyLock<Regex> = LazyLock::new(|| compile(r"^(FAILED|ERROR) (\S+?)(?: - (.*))?$"));
static TB_FILE: LazyLock<Regex> =
    LazyLock::new(|| compile(r#"^\s*File "([^"]+)", line (\d+), in (.+)$"#));
/// An exception line: a class name, maybe dotted (`packaging.version.InvalidVersion`,
/// `json.decoder.JSONDecodeError`, `socket.timeout`), then maybe `: message`.
static EXCEPTION: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r"^((?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*|\w*(?:Error|Exception|Exit|Interrupt|Warning|Failed|Timeout|timeout)\w*))(?::\s*(.*))?$",
    )
});
/// Frames kept per failure: enough to reach the test from where an exception was raised (the
/// fix often belongs in a caller, not in the innermost frame).
const MAX_FRAMES: usize = 8;
/// `~~~ Stack of MainThread (140299741715328) ~~~`: one thread of a pytest-timeout dump.
static THREAD_STACK: LazyLock<Regex> = LazyLock::new(|| compile(r"^~+ Stack of (.+?) \(\d+\) ~+$"));
static RUFF_CONCISE: LazyLock<Regex> =
    LazyLock::new(|| compile(r"^(\S+?):(\d+):\d+: ([A-Z]+[0-9]+) (?:\[\*\] )?(.+)$"));
static RUFF_SPAN: LazyLock<Regex> = LazyLock::new(|| compile(r"^\s*--> (.+?):(\d+):\d+$"));
static BLACK: LazyLock<Regex> = LazyLock::new(|| compile(r"^would reformat (.+)$"));
static RUFF_FORMAT_OLD: LazyLock<Regex> = LazyLock::new(|| compile(r"^Would reformat: (.+)$"));

/// Tries each Python shape on an anchored line.
pub(super) fn recognize(log: &Log<'_>, line: Line<'_>) -> Option<Found> {
    pytest_block(log, line)
        .or_else(|| pytest_summary(log, line))
        .or_else(|| traceback(log, line))
        .or_else(|| timeout_dump(log, line))
        .or_else(|| ruff_check(log, line))
        .or_else(|| formatter(log, line))
}

/// A `____ test_name ____` block of pytest's FAILURES or ERRORS section.
fn pytest_block(log: &Log<'_>, line: Line<'_>) -> Option<Found> {
    if !(line.text.starts_with("___")) {
        return None;
    }
    let name = PYTEST_HEADER.captures(line.text)?.get(1)?.as_str();
    let section = section_of(log, line.start)?;
    let body: Vec<Line<'_>> = log
        .lines_from(line.next)
        .take_while(|l| !PYTEST_HEADER.is_match(l.text) && !l.text.starts_with("-----"))
        .take_while(|l| !l.text.starts_with("=========="))
        .take(400)
        .collect();
    let errors: Vec<&str> = body
        .iter()
        .filter_map(|l| l.text.strip_prefix("E "))
        .filter(|e| !e.trim_start().starts_with('+'))
        .take(3)
        .collect();
    let origin = body
        .iter()
        .rev()
        .find_map(|l| PYTEST_WHERE.captures(l.text));
    let frames = pytest_frames(body.iter().map(|l| l.text));
    let message = join_lines(errors.iter().copied());
    let node = node_id(log, name).unwrap_or_else(|| name.to_owned());
    let kind = pytest_kind(section, &message);
    let exception = origin
        .as_ref()
        .map_or("", |c| c.get(3).map_or("", |m| m.as_str()));
    let candidate = Candidate {
        kind,
        template: pytest_template(&node, exception, &message),
        location: frames
            .first()
            .cloned()
            .or_else(|| origin.as_ref().map(|c| format!("{}:{}", &c[1], &c[2]))),
        test: Some(node),
        frames,
        excerpt: message,
    };
    Some(Found::one(
        candidate,
        body.last().map_or(line.next, |l| l.next),
    ))
}

/// `pytest NODE: TYPE: MESSAGE`, the type left out when the message already starts with it.
fn pytest_template(node: &str, exception: &str, message: &str) -> String {
    if exception.is_empty() || message.starts_with(exception) {
        format!("pytest {node}: {message}")
    } else {
        format!("pytest {node}: {exception}: {message}")
    }
}

/// The frames inside the repository of a pytest traceback (its `path.py:N:` lines), innermost
/// first, as `path:line`, each once, at most [`MAX_FRAMES`].
pub(crate) fn pytest_frames<'a>(lines: impl DoubleEndedIterator<Item = &'a str>) -> Vec<String> {
    let mut frames: Vec<String> = Vec::new();
    for caps in lines.rev().filter_map(|l| PYTEST_FRAME.captures(l)) {
        let frame = format!("{}:{}", &caps[1], &caps[2]);
        if python_in_repo(&caps[1]) && !frames.contains(&frame) {
            frames.push(frame);
        }
        if frames.len() == MAX_FRAMES {
            break;
        }
    }
    frames
}

/// The section a `____ name ____` block sits in: ERRORS (setup/teardown errors) or FAILURES;
/// `None` for other sections that use the same underlined headers (pytest-cov's "tests
/// coverage", "warnings summary"). A block with no section line before it counts as a failure.
fn section_of(log: &Log<'_>, start: usize) -> Option<&'static str> {
    let mut at = start;
    for _ in 0..2000 {
        let Some(prev) = log.previous(at) else { break };
        if prev.text.starts_with("=====") {
            return if prev.text.contains(" ERRORS ") {
                Some("errors")
            } else if prev.text.contains(" FAILURES ") {
                Some("failures")
            } else {
                None
            };
        }
        at = prev.start;
    }
    Some("failures")
}

fn pytest_kind(section: &str, message: &str) -> SignatureKind {
    if message.contains("Timeout") && message.contains("Failed:") || message.contains("Timeout >") {
        SignatureKind::Timeout
    } else if section == "errors" {
        SignatureKind::TestError
    } else {
        SignatureKind::TestFailure
    }
}

/// The full node id (`tests/test_x.py::test_y`) for a block name, from the short summary.
fn node_id(log: &Log<'_>, name: &str) -> Option<String> {
    let wanted = format!("::{}", name.replace('.', "::"));
    log.pytest_summary()
        .iter()
        .find(|id| id.ends_with(&wanted))
        .cloned()
}

/// Every node id in pytest's short summary, read in one pass over lines starting `FAILED `/`ERROR `.
pub(super) fn summary_ids(log: &Log<'_>) -> Vec<String> {
    let bytes = log.text.as_bytes();
    let mut ids = Vec::new();
    for needle in [&b"\nFAILED "[..], &b"\nERROR "[..]] {
        for at in memchr::memmem::find_iter(bytes, needle) {
            if let Some(caps) = log.line(at + 1).and_then(|l| SUMMARY.captures(l.text)) {
                ids.push((at, caps[2].to_owned()));
            }
        }
    }
    if let Some(caps) = log.line(0).and_then(|l| SUMMARY.captures(l.text)) {
        ids.push((0, caps[2].to_owned()));
    }
    ids.sort();
    ids.into_iter().map(|(_, id)| id).collect()
}

/// A short-summary line when the log has no failure blocks (`--tb=no`, `-q`).
fn pytest_summary(log: &Log<'_>, line: Line<'_>) -> Option<Found> {
    if !(line.text.starts_with("FAILED ") || line.text.starts_with("ERROR ")) {
        return None;
    }
    let caps = SUMMARY.captures(line.text)?;
    let node = caps.get(2)?.as_str();
    let collection_error = &caps[1] == "ERROR" && node.ends_with(".py");
    if !(node.contains("::") || collection_error) || has_blocks(log, line.start) {
        return None;
    }
    let message = untruncated(caps.get(3).map_or("", |m| m.as_str()));
    let kind = if &caps[1] == "ERROR" {
        SignatureKind::TestError
    } else {
        pytest_kind("failures", message)
    };
    Some(Found::one(
        Candidate {
            kind,
            template: format!("pytest {node}: {message}"),
            location: node.split("::").next().map(str::to_owned),
            test: Some(node.to_owned()),
            frames: Vec::new(),
            excerpt: message.to_owned(),
        },
        line.next,
    ))
}

/// pytest cuts summary messages to the terminal width with `...`; the cut word is a fragment
/// (half a UUID, say) that would differ run to run, so it goes, leaving a fixed marker.
fn untruncated(message: &str) -> &str {
    match message.strip_suffix("...") {
        Some(cut) => cut.rsplit_once(' ').map_or(cut, |(kept, _)| kept),
        None => message,
    }
}

/// Whether a `= FAILURES =` or `= ERRORS =` section precedes `start`.
fn has_blocks(log: &Log<'_>, start: usize) -> bool {
    log.first_pytest_section().is_some_and(|at| at < start)
}

/// `Traceback (most recent call last):` up to the exception line.
fn traceback(log: &Log<'_>, line: Line<'_>) -> Option<Found> {
    if !line
        .text
        .trim_start()
        .starts_with("Traceback (most recent call last)")
    {
        return None;
    }
    let base = super::indent(line.text);
    let mut files = Vec::new();
    for next in log.lines_from(line.next).take(500) {
        if let Some(file) = TB_FILE.captures(next.text) {
            files.push((file[1].to_owned(), file[2].to_owned(), file[3].to_owned()));
        } else if super::indent(next.text) <= base && !next.text.trim().is_empty() {
            return traceback_end(next, files);
        }
    }
    None
}

/// Builds the candidate from the exception line and the frames inside the repository.
fn traceback_end(last: Line<'_>, files: Vec<Frame>) -> Option<Found> {
    let exception = last.text.trim();
    EXCEPTION.captures(exception)?;
    let stack = RepoStack::of(&files);
    Some(Found::one(
        Candidate {
            kind: SignatureKind::Crash,
            template: format!("python {exception}{}", stack.at()),
            location: stack.location(),
            test: None,
            frames: stack.frames(),
            excerpt: exception.to_owned(),
        },
        last.next,
    ))
}

/// One `File "path", line N, in func` frame: path, line, function.
type Frame = (String, String, String);

/// The frames of a stack that are inside the repository, innermost first.
struct RepoStack<'a>(Vec<&'a Frame>);

impl<'a> RepoStack<'a> {
    /// `frames` as printed (outermost first).
    fn of(frames: &'a [Frame]) -> Self {
        RepoStack(
            frames
                .iter()
                .rev()
                .filter(|f| python_in_repo(&f.0))
                .collect(),
        )
    }

    /// ` at <file> in <function>` of the innermost frame (the signature's anchor), or nothing.
    fn at(&self) -> String {
        self.0.first().map_or(String::new(), |(file, _, func)| {
            format!(" at {file} in {func}")
        })
    }

    /// `file:line` of the innermost frame.
    fn location(&self) -> Option<String> {
        self.0
            .first()
            .map(|(file, line, _)| format!("{file}:{line}"))
    }

    /// The innermost [`MAX_FRAMES`] as `file:line in function`.
    fn frames(&self) -> Vec<String> {
        self.0
            .iter()
            .take(MAX_FRAMES)
            .map(|(file, line, func)| format!("{file}:{line} in {func}"))
            .collect()
    }
}

/// pytest-timeout's `thread` method: between two `+++ Timeout +++` banners, the stack of every
/// thread, then the process exits (no report, no summary). The test ran on the main thread, so
/// its innermost frame inside the repository anchors the signature. A dump without the main
/// thread (the `signal` method shows only the other threads, then fails the test the usual way)
/// is left to the pytest failure block.
fn timeout_dump(log: &Log<'_>, line: Line<'_>) -> Option<Found> {
    if !is_timeout_banner(line.text) {
        return None;
    }
    let mut threads: Vec<(String, Vec<Frame>)> = Vec::new();
    let mut end = line.next;
    for next in log.lines_from(line.next).take(20_000) {
        if is_timeout_banner(next.text) {
            end = next.next;
            break;
        }
        if let Some(caps) = THREAD_STACK.captures(next.text) {
            threads.push((caps[1].to_owned(), Vec::new()));
        } else if let Some(file) = TB_FILE.captures(next.text) {
            let frame = (file[1].to_owned(), file[2].to_owned(), file[3].to_owned());
            threads.last_mut()?.1.push(frame);
        } else if super::indent(next.text) == 0 && !next.text.trim().is_empty() {
            break;
        }
        end = next.next;
    }
    let (_, stack) = threads.into_iter().find(|(name, _)| name == "MainThread")?;
    Some(Found::one(timeout_candidate(&stack), end))
}

/// `+++++ Timeout +++++`, the banner pytest-timeout writes around its dump; the first one may
/// follow pytest's progress line (`tests/test_slow.py +++++ Timeout +++++`).
fn is_timeout_banner(text: &str) -> bool {
    let Some((before, after)) = text.trim_end().split_once("+ Timeout +") else {
        return false;
    };
    before.ends_with("++") && after.bytes().all(|b| b == b'+')
}

/// The timeout signature of the main thread's stack (outermost frame first, as printed).
fn timeout_candidate(stack: &[Frame]) -> Candidate {
    let stack = RepoStack::of(stack);
    let at = stack.at();
    let test = stack
        .0
        .iter()
        .rev()
        .find(|(_, _, func)| func.starts_with("test"))
        .map(|(file, _, func)| format!("{file}::{func}"));
    Candidate {
        kind: SignatureKind::Timeout,
        template: format!("pytest-timeout: Timeout{at}"),
        location: stack.location(),
        test,
        frames: stack.frames(),
        excerpt: format!("Timeout (pytest-timeout thread dump){at}"),
    }
}

/// Whether a frame's file is the repository's own: not an installed package (site-packages,
/// dist-packages), not the standard library (`.../lib/pythonX.Y/`), not `<frozen ...>`, not an
/// installed console script (`.../bin/pytest`, no `.py`).
pub(crate) fn python_in_repo(path: &str) -> bool {
    let console_script = path.contains("/bin/") && !path.ends_with(".py");
    !(path.contains("site-packages")
        || path.contains("dist-packages")
        || path.contains("/lib/python")
        || path.starts_with('<')
        || console_script)
}

/// `ruff check --output-format concise`: the finding lines above its `Found N errors.` line.
fn ruff_check(log: &Log<'_>, line: Line<'_>) -> Option<Found> {
    if !line.text.starts_with("Found ") || !line.text.contains(" error") {
        return None;
    }
    let mut findings = Vec::new();
    let mut at = line.start;
    while let Some(prev) = log.previous(at) {
        let Some(c) = RUFF_CONCISE.captures(prev.text) else {
            break;
        };
        findings.push(lint("ruff", &c[3], &c[4], &c[1], &c[2]));
        at = prev.start;
    }
    findings.reverse();
    (!findings.is_empty()).then_some(Found {
        candidates: findings,
        end: line.next,
    })
}

/// `black --check` (`would reformat PATH`), `ruff format --check` (old `Would reformat: PATH`,
/// new `unformatted: File would be reformatted` + ` --> PATH:L:C`).
fn formatter(log: &Log<'_>, line: Line<'_>) -> Option<Found> {
    if !(line.text.contains("reformat")) {
        return None;
    }
    let text = line.text.trim();
    let candidate = if let Some(c) = BLACK.captures(text) {
        Candidate::formatter("black: would reformat <path>", &c[1], "", text)
    } else if let Some(c) = RUFF_FORMAT_OLD.captures(text) {
        Candidate::formatter("ruff format: would reformat <path>", &c[1], "", text)
    } else if text.ends_with("File would be reformatted") {
        let span = log
            .line(line.next)
            .and_then(|l| RUFF_SPAN.captures(l.text))?;
        Candidate::formatter("ruff format: would reformat <path>", &span[1], "", text)
    } else {
        return None;
    };
    Some(Found::one(candidate, line.next))
}

#[cfg(test)]
mod coverage_section_tests {
    use crate::signature::{ExtractOptions, InputFormat, extract_log};

    #[test]
    fn a_traceback_keeps_its_callers_up_to_the_test() {
        let body = "tests/test_table.py:5: in test_fits\n    assert tabler.render(rows, 2) == 'ab'\n\
tabler/table.py:8: in render\n    return _line(row, width - 1)\n\
tabler/table.py:12: in _line\n    return cells.pad(cell, width)\n\
tabler/cells.py:4: in pad\n    return check(text, width)\n\
/usr/lib/python3/dist-packages/x.py:9: in helper\n    pass\n\
tabler/cells.py:7: ValueError";
        assert_eq!(
            super::pytest_frames(body.lines()),
            [
                "tabler/cells.py:7",
                "tabler/cells.py:4",
                "tabler/table.py:12",
                "tabler/table.py:8",
                "tests/test_table.py:5"
            ],
            "innermost first, the fix's likely place two frames up kept, the test last"
        );
    }

    #[test]
    fn pytest_cov_headers_are_not_failures() {
        let text = "=================================== FAILURES ===================================\n\
__________________________________ test_mean ___________________________________\n\
\n    def test_mean():\n>       assert mean([1, 2]) == 1.5\nE       assert 1 == 1.5\n\n\
tests/test_calc.py:28: AssertionError\n\
================================ tests coverage ================================\n\
_______________ coverage: platform linux, python 3.11.7-final-0 ________________\n\
\nName      Stmts   Miss  Cover\ncalc.py      18      0   100%\n";
        let options = ExtractOptions {
            format: InputFormat::Log,
            repo_root: None,
            limits: meta_agent_report::Limits::default(),
        };
        let found = extract_log(text, std::path::Path::new("log"), &options);
        let templates: Vec<&str> = found.iter().map(|s| s.template.as_str()).collect();
        assert_eq!(templates.len(), 1, "{templates:?}");
        assert!(templates[0].contains("test_mean"), "{templates:?}");
    }
}
