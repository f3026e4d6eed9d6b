//! Cobertura XML reader (coverage.py `coverage xml`, c8/istanbul `cobertura`, cargo-llvm-cov
//! `--cobertura`, JaCoCo's Cobertura export via cover2cover).
//!
//! A streaming quick-xml event reader: the only state is the class being read and the per-file
//! tally. Totals come from the classes' own `<lines>` (a line listed by several classes of one
//! file counts once); lines under `<methods>` are never counted: JaCoCo repeats class lines there,
//! and Istanbul (nyc) lists each function's declaration line there only, which the tool itself
//! does not count. The root's `lines-covered`/`lines-valid` (or `line-rate`) are used only when
//! the report has no class `<line>` at all. A DOCTYPE that declares
//! entities is refused, and no entity other than the five predefined ones is ever expanded. A run
//! of more than `guard::MAX_EVENT_BYTES` without markup is refused, so one event cannot grow the buffer
//! without bound.

use std::io::BufRead;
use std::path::Path;

use quick_xml::events::{BytesStart, Event};

use super::position;
use super::tally::{Counts, FileTally, ReportTally};
use super::{CoverageFormat, CoverageReport, percent};
use crate::ReportError;

mod attrs;
mod guard;

use attrs::Attrs;
use guard::RunGuard;

const FORMAT: &str = "Cobertura XML";

/// Reads a Cobertura XML report.
pub(super) fn read(path: &Path, input: impl BufRead) -> Result<CoverageReport, ReportError> {
    let mut reader = quick_xml::Reader::from_reader(std::io::BufReader::new(RunGuard::new(input)));
    reader.config_mut().check_end_names = true;
    let mut state = State::default();
    let mut buf = Vec::with_capacity(1024);
    loop {
        buf.clear();
        // Where the event starts: problems with an element are reported at its `<`.
        let offset = reader.buffer_position();
        let event = match reader.read_event_into(&mut buf) {
            Ok(event) => event,
            Err(error) => return Err(xml_error(path, reader.error_position(), &error)),
        };
        match state.event(&event, reader.decoder()) {
            Ok(Step::Continue) => {}
            Ok(Step::Done) => return Ok(state.finish()),
            Err(problem) => return Err(problem.into_report(path, offset)),
        }
    }
}

/// What the reader knows so far.
#[derive(Debug, Default)]
struct State {
    root: Option<RootSummary>,
    /// Open elements, to tell a complete document from a truncated one.
    depth: usize,
    class: Option<(String, FileTally)>,
    /// Open `<methods>` elements: their `<line>`s are not counted.
    in_methods: usize,
    tally: ReportTally,
    saw_line: bool,
}

/// The totals the root element declares, used when there are no `<line>` elements.
#[derive(Debug, Default)]
struct RootSummary {
    line_rate: Option<f64>,
    branch_rate: Option<f64>,
    lines: Option<Counts>,
    branches: Option<Counts>,
}

enum Step {
    Continue,
    Done,
}

/// A problem found while reading; positioned by the caller.
enum Problem {
    WrongFormat(String),
    Malformed(String),
}

impl Problem {
    fn into_report(self, path: &Path, offset: u64) -> ReportError {
        match self {
            Problem::WrongFormat(found) => ReportError::WrongFormat {
                path: path.to_owned(),
                expected: "coverage (lcov or Cobertura)",
                found,
            },
            Problem::Malformed(message) => malformed(path, offset, message),
        }
    }
}

fn malformed(path: &Path, offset: u64, message: String) -> ReportError {
    let at = position::from_offset(path, offset);
    ReportError::Malformed {
        path: path.to_owned(),
        format: FORMAT,
        line: at.line,
        column: at.column,
        offset,
        message,
    }
}

fn xml_error(path: &Path, offset: u64, error: &quick_xml::Error) -> ReportError {
    if let quick_xml::Error::Io(io) = error
        && io.kind() != std::io::ErrorKind::InvalidData
    {
        return ReportError::Io {
            path: path.to_owned(),
            source: std::io::Error::new(io.kind(), io.to_string()),
        };
    }
    malformed(path, offset, error.to_string())
}

impl State {
    fn event(&mut self, event: &Event<'_>, decoder: quick_xml::Decoder) -> Result<Step, Problem> {
        match event {
            Event::Start(element) => {
                self.element(element, decoder)?;
                self.depth += 1;
            }
            Event::Empty(element) => {
                self.element(element, decoder)?;
                self.end_element(element.local_name().as_ref());
            }
            Event::End(element) => {
                self.depth = self.depth.saturating_sub(1);
                self.end_element(element.local_name().as_ref());
            }
            Event::DocType(doctype) => refuse_entities(doctype)?,
            Event::Eof => return self.end_of_input(),
            Event::Text(_)
            | Event::CData(_)
            | Event::Comment(_)
            | Event::Decl(_)
            | Event::PI(_)
            | Event::GeneralRef(_) => {}
        }
        Ok(Step::Continue)
    }

    fn element(
        &mut self,
        element: &BytesStart<'_>,
        decoder: quick_xml::Decoder,
    ) -> Result<(), Problem> {
        let attrs = Attrs { element, decoder };
        if self.root.is_none() {
            return self.root_element(&attrs);
        }
        match element.local_name().as_ref() {
            b"class" => self.start_class(&attrs),
            b"methods" => {
                self.in_methods += 1;
                Ok(())
            }
            b"line" if self.in_methods == 0 => self.line(&attrs),
            _ => Ok(()),
        }
    }

    fn root_element(&mut self, attrs: &Attrs<'_, '_>) -> Result<(), Problem> {
        let name = attrs.element.local_name();
        if name.as_ref() != b"coverage" {
            let name = String::from_utf8_lossy(name.as_ref()).into_owned();
            return Err(Problem::WrongFormat(format!(
                "an XML document whose root is <{name}>{}",
                if name.starts_with("test") {
                    " (JUnit?)"
                } else {
                    ""
                }
            )));
        }
        let counts = |covered, valid| -> Result<Option<Counts>, Problem> {
            let covered = attrs.number(covered)?;
            let total = attrs.number(valid)?;
            Ok(covered
                .zip(total)
                .map(|(covered, total)| Counts { covered, total }))
        };
        self.root = Some(RootSummary {
            line_rate: attrs.rate("line-rate")?,
            branch_rate: attrs.rate("branch-rate")?,
            lines: counts("lines-covered", "lines-valid")?,
            branches: counts("branches-covered", "branches-valid")?,
        });
        Ok(())
    }

    fn start_class(&mut self, attrs: &Attrs<'_, '_>) -> Result<(), Problem> {
        self.close_class();
        let path = attrs
            .text("filename")?
            .or(attrs.text("name")?)
            .ok_or_else(|| Problem::Malformed("<class> without a filename".into()))?;
        let file = self.tally.take(&path);
        self.class = Some((path, file));
        Ok(())
    }

    /// `<line number="3" hits="1" branch="true" condition-coverage="50% (1/2)"/>`
    fn line(&mut self, attrs: &Attrs<'_, '_>) -> Result<(), Problem> {
        let Some((_, file)) = self.class.as_mut() else {
            return Ok(()); // A <line> outside any <class> belongs to no file.
        };
        let line = attrs.line()?;
        let number = line
            .number
            .ok_or_else(|| Problem::Malformed("<line> without a number".into()))?;
        let number = u32::try_from(number)
            .map_err(|_| Problem::Malformed(format!("line number {number} is too large")))?;
        self.saw_line = true;
        file.record_line(number, line.hits > 0, &mut self.tally.budget)
            .map_err(|e| Problem::Malformed(e.to_string()))?;
        if let Some(counts) = line.conditions.filter(|_| line.branch) {
            file.record_branch((number, 0), counts);
        }
        Ok(())
    }

    fn end_element(&mut self, name: &[u8]) {
        match name {
            b"class" => self.close_class(),
            b"methods" => self.in_methods = self.in_methods.saturating_sub(1),
            _ => {}
        }
    }

    fn close_class(&mut self) {
        if let Some((path, file)) = self.class.take() {
            self.tally.put(path, file);
        }
    }

    fn end_of_input(&mut self) -> Result<Step, Problem> {
        if self.root.is_none() {
            return Err(Problem::WrongFormat(
                "an XML document with no root element".into(),
            ));
        }
        if self.depth > 0 {
            return Err(Problem::Malformed(format!(
                "truncated: the document ends with {} element(s) still open",
                self.depth
            )));
        }
        self.close_class();
        Ok(Step::Done)
    }

    /// The report, with the root's summary standing in for missing per-line data.
    fn finish(self) -> CoverageReport {
        let root = self.root.unwrap_or_default();
        let saw_line = self.saw_line;
        let fallback_branches = self.tally.has_no_branches();
        let mut report = self.tally.into_report(CoverageFormat::Cobertura);
        if !saw_line {
            apply_line_summary(&mut report, &root);
        }
        if fallback_branches {
            apply_branch_summary(&mut report, &root, saw_line);
        }
        report
    }
}

/// Totals from the root attributes, for a report without `<line>` elements.
fn apply_line_summary(report: &mut CoverageReport, root: &RootSummary) {
    if let Some(lines) = root.lines {
        report.lines_covered = lines.covered;
        report.lines_total = lines.total;
        report.line_percent = percent(lines.covered, lines.total);
    } else if let Some(rate) = root.line_rate {
        report.line_percent = rate * 100.0;
    }
}

/// Branch totals from the root attributes, for a report whose lines carry no branch data. A bare
/// `branch-rate` is trusted only when there are no `<line>` elements to contradict it.
fn apply_branch_summary(report: &mut CoverageReport, root: &RootSummary, saw_line: bool) {
    match root.branches {
        Some(branches) if branches.total > 0 => {
            report.branches_covered = Some(branches.covered);
            report.branches_total = Some(branches.total);
            report.branch_percent = Some(percent(branches.covered, branches.total));
        }
        Some(_) => {}
        None if !saw_line => {
            report.branch_percent = root.branch_rate.filter(|r| *r > 0.0).map(|r| r * 100.0);
        }
        None => {}
    }
}

/// Refuses a DOCTYPE that declares entities (billion laughs, external entities): they are never
/// expanded, and a document that needs them is not a coverage report.
fn refuse_entities(doctype: &quick_xml::events::BytesText<'_>) -> Result<(), Problem> {
    let text: &[u8] = doctype.as_ref();
    let declares = text.windows(8).any(|w| w.eq_ignore_ascii_case(b"<!ENTITY"));
    if declares {
        return Err(Problem::Malformed(
            "the DOCTYPE declares entities; entity expansion is refused".into(),
        ));
    }
    Ok(())
}
