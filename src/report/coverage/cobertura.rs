//! Cobertura XML reader (coverage.py `coverage xml`, c8/istanbul `cobertura`, cargo-llvm-cov
//! `--cobertura`, JaCoCo's Cobertura export via cover2cover).
//!
//! A streaming quick-xml event reader: the only state is the class being read and the per-file
//! tally. Totals come from the `<line>` elements (a line listed by several classes of one file, or
//! again under `<methods>`, counts once); the root's `lines-covered`/`lines-valid` (or
//! `line-rate`) are used only when the report has no `<line>` at all. A DOCTYPE that declares
//! entities is refused, and no entity other than the five predefined ones is ever expanded. A run
//! of more than [`MAX_EVENT_BYTES`] without markup is refused, so one event cannot grow the buffer
//! without bound.

use std::io::{BufRead, Read};
use std::path::Path;

use quick_xml::XmlVersion;
use quick_xml::events::{BytesStart, Event};

use super::position;
use super::tally::{Counts, FileTally, ReportTally};
use super::{CoverageFormat, CoverageReport, percent};
use crate::report::ReportError;

const FORMAT: &str = "Cobertura XML";
/// Longest tag or text run accepted between two markup characters.
pub(super) const MAX_EVENT_BYTES: usize = 1024 * 1024;

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
            b"line" => self.line(&attrs),
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
        if name == b"class" {
            self.close_class();
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

/// `"50% (1/2)"` → 1 of 2 branches covered.
fn conditions(text: &str) -> Option<Counts> {
    let inner = text.split_once('(')?.1.split_once(')')?.0;
    let (covered, total) = inner.split_once('/')?;
    let covered: u64 = covered.trim().parse().ok()?;
    let total: u64 = total.trim().parse().ok()?;
    Some(Counts {
        covered: covered.min(total),
        total,
    })
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

/// What a `<line>` element says.
#[derive(Debug, Default)]
struct LineAttrs {
    number: Option<u64>,
    hits: u64,
    branch: bool,
    conditions: Option<Counts>,
}

fn parse_number(name: &str, value: &str) -> Result<u64, Problem> {
    value
        .parse()
        .map_err(|_| Problem::Malformed(format!("attribute {name} is not a number: {value:?}")))
}

/// `hits`, read as 0 when negative; floats such as `1.0` are accepted.
fn parse_hits(value: &str) -> Result<u64, Problem> {
    if let Ok(hits) = value.parse::<u64>() {
        return Ok(hits);
    }
    let float = value.parse::<f64>().ok().filter(|f| f.is_finite());
    let integer = value.parse::<i128>().ok().map(|n| n.max(0) as f64);
    integer
        .or(float)
        .map(|n| n.max(0.0) as u64)
        .ok_or_else(|| Problem::Malformed(format!("attribute hits is not a number: {value:?}")))
}

/// The attributes of one element, decoded on demand.
struct Attrs<'a, 'b> {
    element: &'a BytesStart<'b>,
    decoder: quick_xml::Decoder,
}

impl Attrs<'_, '_> {
    fn text(&self, name: &str) -> Result<Option<String>, Problem> {
        let attr = self
            .element
            .try_get_attribute(name)
            .map_err(|e| Problem::Malformed(e.to_string()))?;
        let Some(attr) = attr else {
            return Ok(None);
        };
        attr.decoded_and_normalized_value(XmlVersion::Implicit1_0, self.decoder)
            .map(|v| Some(v.into_owned()))
            .map_err(|e| Problem::Malformed(format!("attribute {name}: {e}")))
    }

    fn number(&self, name: &str) -> Result<Option<u64>, Problem> {
        self.parsed(name, |v| v.parse::<u64>().ok())
    }

    fn rate(&self, name: &str) -> Result<Option<f64>, Problem> {
        self.parsed(name, |v| v.parse::<f64>().ok().filter(|r| r.is_finite()))
    }

    /// The attributes of a `<line>`, read in one pass (this is the hot path of the reader).
    fn line(&self) -> Result<LineAttrs, Problem> {
        let mut line = LineAttrs::default();
        for attr in self.element.attributes() {
            let attr = attr.map_err(|e| Problem::Malformed(e.to_string()))?;
            let key = attr.key.local_name();
            if !matches!(
                key.as_ref(),
                b"number" | b"hits" | b"branch" | b"condition-coverage"
            ) {
                continue;
            }
            let value = self.value(&attr)?;
            let value = value.trim();
            match key.as_ref() {
                b"number" => line.number = Some(parse_number("number", value)?),
                b"hits" => line.hits = parse_hits(value)?,
                b"branch" => line.branch = value == "true",
                _ => line.conditions = conditions(value),
            }
        }
        Ok(line)
    }

    /// An attribute's value as text: borrowed when it has no escapes, decoded otherwise.
    fn value<'v>(
        &self,
        attr: &'v quick_xml::events::attributes::Attribute<'_>,
    ) -> Result<std::borrow::Cow<'v, str>, Problem> {
        let invalid = || Problem::Malformed("attribute value is not UTF-8".into());
        if !attr.value.contains(&b'&') {
            return std::str::from_utf8(&attr.value)
                .map(std::borrow::Cow::Borrowed)
                .map_err(|_| invalid());
        }
        attr.decoded_and_normalized_value(XmlVersion::Implicit1_0, self.decoder)
            .map(|v| std::borrow::Cow::Owned(v.into_owned()))
            .map_err(|e| Problem::Malformed(format!("attribute value: {e}")))
    }

    fn parsed<T>(
        &self,
        name: &str,
        parse: impl Fn(&str) -> Option<T>,
    ) -> Result<Option<T>, Problem> {
        let Some(value) = self.text(name)? else {
            return Ok(None);
        };
        let value = value.trim();
        if value.is_empty() {
            return Ok(None);
        }
        parse(value).map(Some).ok_or_else(|| {
            Problem::Malformed(format!("attribute {name} is not a number: {value:?}"))
        })
    }
}

/// Passes bytes through, failing once more than [`MAX_EVENT_BYTES`] go by without a `<` or `>`.
struct RunGuard<R> {
    inner: R,
    run: usize,
}

impl<R> RunGuard<R> {
    fn new(inner: R) -> Self {
        RunGuard { inner, run: 0 }
    }
}

impl<R: Read> Read for RunGuard<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(out)?;
        let chunk = &out[..n];
        let is_markup = |b: &u8| matches!(b, b'<' | b'>');
        let longest = match (
            chunk.iter().position(is_markup),
            chunk.iter().rposition(is_markup),
        ) {
            (Some(first), Some(last)) => {
                let inner = if last - first > MAX_EVENT_BYTES {
                    longest_run(&chunk[first..=last])
                } else {
                    0
                };
                let longest = (self.run + first).max(inner);
                self.run = n - last - 1;
                longest
            }
            _ => {
                self.run += n;
                self.run
            }
        };
        if longest.max(self.run) > MAX_EVENT_BYTES {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("more than {MAX_EVENT_BYTES} bytes without markup"),
            ));
        }
        Ok(n)
    }
}

/// The longest stretch of `bytes` without `<` or `>`.
fn longest_run(bytes: &[u8]) -> usize {
    bytes
        .split(|b| matches!(b, b'<' | b'>'))
        .map(<[u8]>::len)
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn condition_coverage_is_parsed() {
        assert_eq!(
            conditions("50% (1/2)"),
            Some(Counts {
                covered: 1,
                total: 2
            })
        );
        assert_eq!(conditions("100%"), None);
    }
}
