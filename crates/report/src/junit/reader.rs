//! The streaming JUnit event loop: quick-xml events in, counters and kept failures out.
//!
//! One reused event buffer; a passing test case costs a copy of its start tag into a reused
//! buffer and a few counter updates. A finished test case is held until the next one: when the
//! held one is empty (pytest-rerunfailures writes a rerun attempt as an empty `<testcase>`) and
//! the next one has the same suite, name, classname, file and line, the next one is another
//! attempt of the same test, and the last attempt decides the outcome; a test that ended passing
//! after reruns is flaky. In vitest's and jest's reports (told by the root's name) same-named
//! test cases are distinct tests, never attempts. Failing test cases with one name (eslint and
//! ruff write one per finding) stay separate. A failure with no `file` attribute takes the
//! location its text names (vitest's ` ❯ path:line:column`). Attributes are read and text is decoded only for failures
//! that will be kept. Every event's bytes are checked to be UTF-8 so bad bytes are reported with
//! their offset. This module must not allocate per passing test (unless
//! `Limits::max_test_ids` asks for the ids), expand entities, or panic.

use std::io::{BufReader, Read};
use std::path::Path;

use quick_xml::Reader;
use quick_xml::events::{BytesStart, BytesText, Event};

use super::input::{GuardedInput, MAX_EVENT_BYTES, line_and_column};
use super::location;
use super::text::{RawTag, TextCapture, attribute};
use super::{FORMAT, FailureKind, JunitSummary, TestFailure, TestOutcome, TestStatus};
use crate::{Limits, ReportError};
use meta_agent_protocol::test_id::TestId;

/// Elements nested deeper than this are refused (bounds the suite stack and quick-xml's name
/// stack).
const MAX_DEPTH: usize = 256;
/// Size of the read buffer under the XML reader.
const READ_BUFFER_BYTES: usize = 256 * 1024;

type XmlReader<R> = Reader<GuardedInput<BufReader<R>>>;

/// Reads a whole report from `source`; `path` names it in errors and in kept failures.
pub(super) fn read_report<R: Read>(
    source: R,
    path: &Path,
    limits: &Limits,
) -> Result<JunitSummary, ReportError> {
    let input = BufReader::with_capacity(READ_BUFFER_BYTES, source);
    let mut xml = Reader::from_reader(GuardedInput::new(input, MAX_EVENT_BYTES));
    let config = xml.config_mut();
    config.trim_text(false);
    config.check_end_names = true;
    config.expand_empty_elements = false;
    let mut state = ReportState::new(path, limits);
    let mut buf = Vec::with_capacity(64 * 1024);
    loop {
        buf.clear();
        xml.get_mut().start_event();
        let event_start = xml.buffer_position();
        let event = match xml.read_event_into(&mut buf) {
            Ok(event) => event,
            Err(error) => return Err(state.xml_error(&xml, &error, event_start)),
        };
        if let Some(bad) = invalid_utf8_at(&event) {
            return Err(state.malformed(event_start + bad, "invalid UTF-8 byte".into()));
        }
        if let Some(bad) = markup_inside_tag_at(&event) {
            return Err(state.malformed(event_start + bad, "'<' inside a tag".into()));
        }
        if let Event::Eof = event {
            return state.finish(xml.buffer_position());
        }
        state.handle(event, event_start)?;
    }
}

/// Offset (from the event's start) of the first invalid UTF-8 byte in the event, if any.
fn invalid_utf8_at(event: &Event<'_>) -> Option<u64> {
    let (prefix, bytes): (u64, &[u8]) = match event {
        Event::Start(tag) | Event::Empty(tag) => (1, tag),
        Event::End(tag) => (2, tag),
        Event::Text(text) => (0, text),
        Event::Comment(text) => (4, text),
        // `<!DOCTYPE ` with the usual single space (quick-xml drops the spaces).
        Event::DocType(text) => (10, text),
        Event::CData(data) => (9, data),
        Event::GeneralRef(reference) => (1, reference),
        Event::PI(pi) => (2, pi),
        Event::Decl(_) | Event::Eof => return None,
    };
    let error = std::str::from_utf8(bytes).err()?;
    Some(prefix + error.valid_up_to() as u64)
}

/// Offset (from the event's start) of a `<` inside a start tag: never valid XML, and the sign
/// of an unclosed tag that quick-xml would otherwise read as attributes it does not check.
fn markup_inside_tag_at(event: &Event<'_>) -> Option<u64> {
    let (Event::Start(tag) | Event::Empty(tag)) = event else {
        return None;
    };
    tag.iter().position(|b| *b == b'<').map(|at| 1 + at as u64)
}

/// Where the reader stands in the document.
struct ReportState<'a> {
    path: &'a Path,
    limits: &'a Limits,
    summary: JunitSummary,
    depth: usize,
    root_seen: bool,
    /// Non-whitespace content seen before any element (decides Empty versus WrongFormat).
    content_seen: bool,
    suites: SuiteStack,
    case: CaseState,
    held: Held,
    repeats: Repeats,
}

impl<'a> ReportState<'a> {
    fn new(path: &'a Path, limits: &'a Limits) -> Self {
        ReportState {
            path,
            limits,
            summary: JunitSummary::default(),
            depth: 0,
            root_seen: false,
            content_seen: false,
            suites: SuiteStack::default(),
            case: CaseState::default(),
            held: Held::default(),
            repeats: Repeats::Attempts,
        }
    }

    fn handle(&mut self, event: Event<'_>, offset: u64) -> Result<(), ReportError> {
        match event {
            Event::Start(tag) => self.start(&tag, offset),
            Event::Empty(tag) => {
                self.open_element(&tag)?;
                self.close_element();
                Ok(())
            }
            Event::End(_) => {
                self.depth = self.depth.saturating_sub(1);
                self.close_element();
                Ok(())
            }
            Event::Text(text) => {
                self.text(&text);
                Ok(())
            }
            Event::CData(data) => {
                self.content_seen = true;
                self.case.push_text(&data, self.limits);
                Ok(())
            }
            Event::GeneralRef(reference) => {
                self.content_seen = true;
                self.case.push_reference(&reference, self.limits);
                Ok(())
            }
            Event::DocType(doctype) => self.doctype(&doctype, offset),
            Event::Decl(_) | Event::PI(_) | Event::Comment(_) => {
                self.content_seen = true;
                Ok(())
            }
            Event::Eof => Ok(()),
        }
    }

    fn start(&mut self, tag: &BytesStart<'_>, offset: u64) -> Result<(), ReportError> {
        if self.depth >= MAX_DEPTH {
            let message = format!("elements nested deeper than {MAX_DEPTH} levels");
            return Err(self.malformed(offset, message));
        }
        self.open_element(tag)?;
        self.depth += 1;
        Ok(())
    }

    /// Handles an element's start at the current depth (before it is entered).
    fn open_element(&mut self, tag: &BytesStart<'_>) -> Result<(), ReportError> {
        let local = tag.local_name();
        let name = local.as_ref();
        if !self.root_seen {
            self.check_root(name)?;
            self.repeats = Repeats::of_root(tag);
        }
        if self.case.open {
            if self.depth == self.case.depth + 1 {
                let keep = self.summary.failures.len() < self.limits.max_items;
                self.case.child(name, tag, keep, self.limits);
            }
        } else if name == b"testsuite" {
            self.suites.push(self.depth, tag);
        } else if name == b"testcase" {
            self.case.begin(self.depth, tag);
        }
        Ok(())
    }

    /// Handles the end of the element at the current depth (after it is left).
    fn close_element(&mut self) {
        if !self.case.open {
            self.suites.pop_at(self.depth);
        } else if self.depth == self.case.depth {
            self.finish_case();
        } else if self.depth == self.case.depth + 1 {
            self.case.capture = Capture::Nothing;
        }
    }

    fn check_root(&mut self, name: &[u8]) -> Result<(), ReportError> {
        if name == b"testsuites" || name == b"testsuite" {
            self.root_seen = true;
            return Ok(());
        }
        let shown = String::from_utf8_lossy(&name[..name.len().min(100)]);
        Err(self.wrong_format(format!(
            "the root element is <{shown}>, not <testsuites> or <testsuite>"
        )))
    }

    fn text(&mut self, text: &BytesText<'_>) {
        if self.case.capture != Capture::Nothing {
            self.case.push_text(text, self.limits);
        } else if !self.root_seen && !text.iter().all(u8::is_ascii_whitespace) {
            self.content_seen = true;
        }
    }

    fn doctype(&mut self, doctype: &BytesText<'_>, offset: u64) -> Result<(), ReportError> {
        self.content_seen = true;
        if doctype.windows(8).any(|window| window == b"<!ENTITY") {
            let message = "the DOCTYPE declares entities; they are refused, never expanded";
            return Err(self.malformed(offset, message.into()));
        }
        Ok(())
    }

    /// Ends the open test case: another attempt of the held one replaces it; any other test
    /// case commits the held one and is held in its place.
    fn finish_case(&mut self) {
        self.case.open = false;
        self.case.capture = Capture::Nothing;
        let suite = self.suites.innermost_serial();
        let named = self
            .case
            .tag
            .write_identity(IDENTITY, &mut self.case.identity);
        let retry = named
            && self.repeats == Repeats::Attempts
            && self.held.attempts > 0
            && self.held.outcome == Outcome::Passed
            && !self.held.retried
            && self.held.suite == suite
            && self.held.identity == self.case.identity;
        if !retry {
            self.commit_held();
            std::mem::swap(&mut self.held.identity, &mut self.case.identity);
            self.held.suite = suite;
            self.held.id = self.wanted_id();
        }
        self.held.attempts = self.held.attempts.saturating_add(1);
        self.held.outcome = self.case.outcome;
        self.held.retried = self.case.retried;
        self.held.failure = match self.case.outcome {
            Outcome::Failed(kind) if self.summary.failures.len() < self.limits.max_items => {
                let context = FailureContext {
                    report: self.path,
                    suite: self.suites.innermost_name(self.limits.max_message_bytes),
                    limits: self.limits,
                };
                Some(self.case.take_failure(kind, context))
            }
            Outcome::Passed | Outcome::Skipped | Outcome::Failed(_) => None,
        };
    }

    /// The open test case's id when outcomes are kept and there is room; nothing is read
    /// otherwise (the default: a passing test then costs no allocation).
    fn wanted_id(&self) -> Option<TestId> {
        if self.summary.outcomes.len() >= self.limits.max_test_ids {
            return None;
        }
        let max = self.limits.max_message_bytes;
        let attribute = |name: &[u8]| self.case.tag.attribute(name, max);
        Some(TestId::junit(
            &attribute(b"classname").unwrap_or_default(),
            &attribute(b"name").unwrap_or_default(),
            attribute(b"file").as_deref(),
        ))
    }

    /// Counts the held test case (as its last attempt ended) and keeps its failure, if any.
    fn commit_held(&mut self) {
        if self.held.attempts == 0 {
            return;
        }
        let held = &mut self.held;
        let summary = &mut self.summary;
        summary.tests += 1;
        match held.outcome {
            Outcome::Passed => summary.flaky += u64::from(held.retried || held.attempts > 1),
            Outcome::Skipped => summary.skipped += 1,
            Outcome::Failed(FailureKind::Failure) => summary.failed += 1,
            Outcome::Failed(FailureKind::Error) => summary.errors += 1,
        }
        if matches!(held.outcome, Outcome::Failed(_)) {
            match held.failure.take() {
                Some(failure) if summary.failures.len() < self.limits.max_items => {
                    summary.failures.push(failure);
                }
                Some(_) | None => summary.failures_omitted += 1,
            }
        }
        let status = match held.outcome {
            Outcome::Passed => TestStatus::Passed,
            Outcome::Skipped => TestStatus::Skipped,
            Outcome::Failed(FailureKind::Failure) => TestStatus::Failed,
            Outcome::Failed(FailureKind::Error) => TestStatus::Errored,
        };
        match held.id.take() {
            Some(id) => summary.outcomes.push(TestOutcome { id, status }),
            None if self.limits.max_test_ids > 0 => summary.outcomes_omitted += 1,
            None => {}
        }
        held.attempts = 0;
        held.failure = None;
    }

    fn finish(mut self, end: u64) -> Result<JunitSummary, ReportError> {
        self.commit_held();
        if self.depth > 0 {
            let message = format!(
                "the file ends with {} element(s) still open: truncated",
                self.depth
            );
            return Err(self.malformed(end, message));
        }
        if !self.root_seen {
            return Err(if self.content_seen {
                self.wrong_format("no <testsuites> or <testsuite> element".into())
            } else {
                ReportError::Empty {
                    path: self.path.to_owned(),
                    expected: FORMAT,
                }
            });
        }
        let s = &mut self.summary;
        s.passed = s.tests.saturating_sub(s.failed + s.errors + s.skipped);
        Ok(self.summary)
    }

    fn malformed(&self, offset: u64, message: String) -> ReportError {
        let (line, column) = line_and_column(self.path, offset);
        ReportError::Malformed {
            path: self.path.to_owned(),
            format: FORMAT,
            line,
            column,
            offset,
            message,
        }
    }

    fn wrong_format(&self, found: String) -> ReportError {
        ReportError::WrongFormat {
            path: self.path.to_owned(),
            expected: FORMAT,
            found,
        }
    }

    /// Maps a quick-xml error; `event_start` is where the event being read began.
    fn xml_error<R: Read>(
        &self,
        xml: &XmlReader<R>,
        error: &quick_xml::Error,
        event_start: u64,
    ) -> ReportError {
        match error {
            quick_xml::Error::Io(_) if xml.get_ref().tripped() => {
                let limit = MAX_EVENT_BYTES >> 20;
                let message = format!("a tag or text run starting here is larger than {limit} MiB");
                self.malformed(event_start, message)
            }
            quick_xml::Error::Io(io) => ReportError::Io {
                path: self.path.to_owned(),
                source: std::io::Error::new(io.kind(), io.to_string()),
            },
            other => self.malformed(xml.error_position(), other.to_string()),
        }
    }
}

/// The open `<testsuite>` elements: their depth, serial number and raw start tag, buffers
/// reused.
#[derive(Default)]
struct SuiteStack {
    entries: Vec<(usize, u64, RawTag)>,
    open: usize,
    /// Suites opened so far: each one gets the next number, so two suites never look alike.
    opened: u64,
}

impl SuiteStack {
    fn push(&mut self, depth: usize, tag: &BytesStart<'_>) {
        if self.open == self.entries.len() {
            self.entries.push((depth, 0, RawTag::default()));
        }
        self.opened += 1;
        let entry = &mut self.entries[self.open];
        entry.0 = depth;
        entry.1 = self.opened;
        entry.2.set(tag);
        self.open += 1;
    }

    /// The serial number of the innermost open suite; 0 outside any suite.
    fn innermost_serial(&self) -> u64 {
        self.open
            .checked_sub(1)
            .map_or(0, |top| self.entries[top].1)
    }

    fn pop_at(&mut self, depth: usize) {
        if self.open > 0 && self.entries[self.open - 1].0 == depth {
            self.open -= 1;
        }
    }

    fn innermost_name(&self, max: usize) -> String {
        self.open
            .checked_sub(1)
            .and_then(|top| self.entries[top].2.attribute(b"name", max))
            .unwrap_or_default()
    }
}

/// How a test case ended, as far as read.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    #[default]
    Passed,
    Skipped,
    Failed(FailureKind),
}

/// Which text of the open test case the next text events belong to.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Capture {
    #[default]
    Nothing,
    Body,
    Stdout,
    Stderr,
}

/// What consecutive test cases with one identity are, by the tool that wrote the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Repeats {
    /// Attempts of one test (pytest-rerunfailures writes each rerun as its own test case).
    Attempts,
    /// Distinct tests that happen to share a name: vitest and jest (their JUnit reporters name
    /// the root `vitest tests` and `jest tests`) allow duplicate titles in one file and describe
    /// block, and write a retried test once.
    Distinct,
}

impl Repeats {
    /// From the root element's `name`.
    fn of_root(tag: &BytesStart<'_>) -> Repeats {
        let named = |wanted: &[u8]| {
            tag.attributes()
                .flatten()
                .any(|attr| attr.key.as_ref() == b"name" && attr.value.as_ref() == wanted)
        };
        if named(b"vitest tests") || named(b"jest tests") {
            Repeats::Distinct
        } else {
            Repeats::Attempts
        }
    }
}

/// The attributes that identify a test case: attempts of one test share all of them. Test cases
/// without a name are never taken for attempts of one test.
const IDENTITY: &[&[u8]] = &[b"name", b"classname", b"file", b"line"];

/// The last finished test case, not counted yet: the next one may be another attempt of it.
#[derive(Default)]
struct Held {
    /// Attempts seen; 0 when nothing is held.
    attempts: u32,
    /// The serial number of the suite it is in.
    suite: u64,
    /// Its [`IDENTITY`] attribute values (a reused buffer).
    identity: Vec<u8>,
    /// How its last attempt ended.
    outcome: Outcome,
    /// Its last attempt carried `<flakyFailure>`/`<rerunFailure>` elements.
    retried: bool,
    /// The last attempt's failure, when it failed and there was room to keep it.
    failure: Option<TestFailure>,
    /// Its id, when outcomes are kept ([`Limits::max_test_ids`]) and there is room.
    id: Option<TestId>,
}

/// What a kept failure needs from outside its test case.
struct FailureContext<'a> {
    report: &'a Path,
    suite: String,
    limits: &'a Limits,
}

/// The open `<testcase>`; one value reused for every test case.
#[derive(Default)]
struct CaseState {
    open: bool,
    depth: usize,
    tag: RawTag,
    outcome: Outcome,
    /// A `<flakyFailure>`, `<rerunFailure>` (or their error forms) was seen: the test was retried.
    retried: bool,
    /// Its [`IDENTITY`], written when it ends (a reused buffer, swapped with the held one's).
    identity: Vec<u8>,
    message: String,
    failure_type: String,
    capture: Capture,
    body: TextCapture,
    stdout: TextCapture,
    stderr: TextCapture,
}

impl CaseState {
    fn begin(&mut self, depth: usize, tag: &BytesStart<'_>) {
        self.open = true;
        self.depth = depth;
        self.tag.set(tag);
        self.outcome = Outcome::Passed;
        self.retried = false;
        self.capture = Capture::Nothing;
        self.message.clear();
        self.failure_type.clear();
        self.body.clear();
        self.stdout.clear();
        self.stderr.clear();
    }

    /// A direct child of the test case; `keep` says whether its details will be kept.
    fn child(&mut self, name: &[u8], tag: &BytesStart<'_>, keep: bool, limits: &Limits) {
        match name {
            b"failure" => self.fail(FailureKind::Failure, tag, keep, limits),
            b"error" => self.fail(FailureKind::Error, tag, keep, limits),
            b"skipped" if self.outcome == Outcome::Passed => self.outcome = Outcome::Skipped,
            b"flakyFailure" | b"flakyError" | b"rerunFailure" | b"rerunError" => {
                self.retried = true;
            }
            b"system-out" if keep => self.capture = Capture::Stdout,
            b"system-err" if keep => self.capture = Capture::Stderr,
            _ => {}
        }
    }

    /// The first `<failure>` or `<error>` decides the outcome; later ones are ignored.
    fn fail(&mut self, kind: FailureKind, tag: &BytesStart<'_>, keep: bool, limits: &Limits) {
        if matches!(self.outcome, Outcome::Failed(_)) {
            return;
        }
        self.outcome = Outcome::Failed(kind);
        if keep {
            let max = limits.max_message_bytes;
            self.message = attribute(tag, b"message", max).unwrap_or_default();
            self.failure_type = attribute(tag, b"type", max).unwrap_or_default();
            self.capture = Capture::Body;
        }
    }

    fn live_capture(&mut self) -> Option<&mut TextCapture> {
        match self.capture {
            Capture::Nothing => None,
            Capture::Body => Some(&mut self.body),
            Capture::Stdout => Some(&mut self.stdout),
            Capture::Stderr => Some(&mut self.stderr),
        }
    }

    fn push_text(&mut self, text: &[u8], limits: &Limits) {
        if let Some(capture) = self.live_capture() {
            capture.push(text, limits.max_body_bytes);
        }
    }

    fn push_reference(&mut self, reference: &quick_xml::events::BytesRef<'_>, limits: &Limits) {
        if let Some(capture) = self.live_capture() {
            capture.push_reference(reference, limits.max_body_bytes);
        }
    }

    /// The failure of the test case that just ended; with no `file` attribute, the location
    /// the runner wrote in its text (vitest's ` ❯ path:line:column`).
    fn take_failure(&mut self, kind: FailureKind, context: FailureContext<'_>) -> TestFailure {
        let max = context.limits.max_message_bytes;
        let body = self.body.finish();
        let line: Option<u32> = self
            .tag
            .attribute(b"line", max)
            .and_then(|l| l.trim().parse().ok());
        let (file, line, file_in_text) = match self.tag.attribute(b"file", max) {
            Some(file) => (Some(file), line, false),
            None => match location::runner_location(&body) {
                Some((file, at)) if line.is_none() => (Some(file), Some(at), true),
                Some(_) | None => (None, line, false),
            },
        };
        TestFailure {
            kind,
            report: context.report.to_owned(),
            suite: context.suite,
            classname: self.tag.attribute(b"classname", max).unwrap_or_default(),
            name: self.tag.attribute(b"name", max).unwrap_or_default(),
            file,
            file_in_text,
            line,
            message: std::mem::take(&mut self.message),
            failure_type: std::mem::take(&mut self.failure_type),
            body,
            stdout: self.stdout.finish(),
            stderr: self.stderr.finish(),
        }
    }
}
