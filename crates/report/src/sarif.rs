//! SARIF 2.1.0 reader: every run's results as findings with tool, rule, level, file and line.
//!
//! The file is refused before reading when it is larger than [`Limits::max_document_bytes`].
//! It is deserialized straight from a buffered reader into small structs that name only the
//! fields used (everything else is skipped); each run is resolved as soon as it is read, and
//! results past [`Limits::max_items`] are only counted. A result's level follows the spec: its
//! own `level`, else `none` for a non-failing `kind`, else its rule's
//! `defaultConfiguration.level` (found through `ruleIndex` or the rule id), else `warning`.
//! Reads only the file it is given; prints nothing.

mod level;
mod log;
mod raw;
mod resolve;
mod uri;

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use serde::de::DeserializeSeed;

use super::coverage::position;
use super::{Limits, ReportError};

const EXPECTED: &str = "SARIF 2.1.0";

pub use meta_agent_protocol::reports::{Finding, FindingLevel, SarifReport};

/// Reads a SARIF 2.1.0 file.
pub fn parse_sarif_file(path: &Path, limits: &Limits) -> Result<SarifReport, ReportError> {
    let io_error = |source| ReportError::Io {
        path: path.to_owned(),
        source,
    };
    let file = File::open(path).map_err(io_error)?;
    let size = file.metadata().map_err(io_error)?.len();
    if size > limits.max_document_bytes {
        return Err(ReportError::TooLarge {
            path: path.to_owned(),
            format: EXPECTED,
            size,
            limit: limits.max_document_bytes,
        });
    }
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    expect_object(path, &mut reader)?;
    read_log(path, reader, limits)
}

/// Skips leading whitespace (and a byte-order mark), and refuses a file that is empty or does not
/// start with a JSON object.
fn expect_object(path: &Path, reader: &mut impl BufRead) -> Result<(), ReportError> {
    let io_error = |source| ReportError::Io {
        path: path.to_owned(),
        source,
    };
    let mut at_start = true;
    loop {
        let chunk = reader.fill_buf().map_err(io_error)?;
        let Some(&first) = chunk.first() else {
            return Err(ReportError::Empty {
                path: path.to_owned(),
                expected: EXPECTED,
            });
        };
        if at_start && chunk.starts_with(b"\xEF\xBB\xBF") {
            reader.consume(3);
            at_start = false;
            continue;
        }
        at_start = false;
        if first.is_ascii_whitespace() {
            let blank = chunk.iter().take_while(|b| b.is_ascii_whitespace()).count();
            reader.consume(blank);
            continue;
        }
        if first == b'{' {
            return Ok(());
        }
        return Err(ReportError::WrongFormat {
            path: path.to_owned(),
            expected: EXPECTED,
            found: describe_start(first),
        });
    }
}

fn describe_start(first: u8) -> String {
    match first {
        b'<' => "an XML document".into(),
        b'[' => "a JSON array".into(),
        _ => format!("text starting with {:?}", char::from(first)),
    }
}

fn read_log(
    path: &Path,
    reader: impl BufRead,
    limits: &Limits,
) -> Result<SarifReport, ReportError> {
    let mut state = log::LogState::default();
    let mut deserializer = serde_json::Deserializer::from_reader(reader);
    let seed = log::LogSeed {
        state: &mut state,
        limits,
    };
    let parsed = seed
        .deserialize(&mut deserializer)
        .and_then(|()| deserializer.end());
    if let Some(found) = state
        .format_problem()
        .filter(|_| parsed.is_ok() || state.wrong_version.is_some())
    {
        return Err(ReportError::WrongFormat {
            path: path.to_owned(),
            expected: EXPECTED,
            found,
        });
    }
    parsed.map_err(|error| json_error(path, &error))?;
    Ok(state.report)
}

fn json_error(path: &Path, error: &serde_json::Error) -> ReportError {
    use serde_json::error::Category;
    let (format, message) = match error.classify() {
        Category::Io => {
            return ReportError::Io {
                path: path.to_owned(),
                source: std::io::Error::other(error.to_string()),
            };
        }
        Category::Eof => ("JSON", format!("truncated: {error}")),
        Category::Syntax => ("JSON", error.to_string()),
        Category::Data => (EXPECTED, error.to_string()),
    };
    let (line, column) = (error.line() as u64, error.column() as u64);
    ReportError::Malformed {
        path: path.to_owned(),
        format,
        line,
        column,
        offset: position::offset_of(path, line, column),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn parse(text: &str, limits: &Limits) -> Result<SarifReport, ReportError> {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(text.as_bytes()).unwrap();
        parse_sarif_file(file.path(), limits)
    }

    const LOG: &str = r#"{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"t",
        "rules":[{"id":"R1","defaultConfiguration":{"level":"error"}},{"id":"R2"}]}},
        "results":[
          {"ruleId":"R1","message":{"text":"one"},"locations":[{"physicalLocation":
            {"artifactLocation":{"uri":"file:///w/a.py"},"region":{"startLine":3}}}]},
          {"ruleIndex":1,"message":{"text":"two"}},
          {"rule":{"id":"R1"},"level":"note","message":{"text":"three"}}
        ]}]}"#;

    #[test]
    fn levels_default_from_rules_and_counts_add_up() {
        let report = parse(LOG, &Limits::default()).unwrap();
        assert_eq!((report.findings, report.errors, report.warnings), (3, 1, 1));
        let first = &report.results[0];
        assert_eq!(first.level, FindingLevel::Error);
        assert_eq!(first.file.as_deref(), Some("/w/a.py"));
        assert_eq!(first.line, Some(3));
        assert_eq!(report.results[1].rule_id.as_deref(), Some("R2"));
        assert_eq!(report.results[2].rule_id.as_deref(), Some("R1"));
    }

    #[test]
    fn results_past_the_cap_are_counted_with_their_levels() {
        let limits = Limits {
            max_items: 1,
            ..Limits::default()
        };
        let report = parse(LOG, &limits).unwrap();
        assert_eq!(report.results.len(), 1);
        assert_eq!(report.results_omitted, 2);
        assert_eq!((report.findings, report.errors, report.warnings), (3, 1, 1));
    }

    #[test]
    fn version_and_runs_are_required() {
        let wrong = parse(r#"{"version":"2.0.0","runs":[]}"#, &Limits::default());
        assert!(
            matches!(wrong, Err(ReportError::WrongFormat { .. })),
            "{wrong:?}"
        );
        let no_runs = parse(r#"{"version":"2.1.0"}"#, &Limits::default());
        assert!(
            matches!(no_runs, Err(ReportError::WrongFormat { .. })),
            "{no_runs:?}"
        );
        let schema = r#"{"$schema":"https://json.schemastore.org/sarif-2.1.0.json","runs":[]}"#;
        assert_eq!(parse(schema, &Limits::default()).unwrap().findings, 0);
    }

    #[test]
    fn null_results_mean_none() {
        let log = r#"{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"t"}},"results":null}]}"#;
        assert_eq!(parse(log, &Limits::default()).unwrap().findings, 0);
    }
}
