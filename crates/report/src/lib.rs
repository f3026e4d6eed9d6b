//! Readers for the reports quality gates produce: JUnit XML, coverage (lcov, Cobertura) and SARIF;
//! and [`junit_writer`], the JUnit XML the bot writes itself for CI test reporters.
//!
//! Every reader streams its input and keeps memory bounded whatever the file holds: passing tests
//! cost a counter, failures and findings are kept up to a cap and trimmed to [`Limits`]. Bad input
//! (malformed, truncated, the wrong format, empty, non-UTF-8, entity tricks, gigabyte files) is a
//! [`ReportError`] naming the file and the position, never a panic. This module does no I/O other
//! than reading the report files it is given, and prints nothing (the writer returns its text).

#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod coverage;
pub mod junit;
pub mod junit_writer;
pub mod sarif;

use std::path::PathBuf;

pub use coverage::{CoverageFormat, CoverageReport, FileCoverage, parse_coverage_file};
pub use junit::{
    FailureKind, JunitSummary, TestFailure, TestOutcome, TestStatus, parse_junit_file,
    parse_junit_files,
};
pub use sarif::{Finding, FindingLevel, SarifReport, parse_sarif_file};

/// Bounds on what a reader keeps, so memory does not grow with the size of the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// At most this many failures (JUnit) or findings (SARIF) are kept in detail; the rest are
    /// only counted.
    pub max_items: usize,
    /// Messages and types are trimmed to this many bytes (on a character boundary).
    pub max_message_bytes: usize,
    /// Bodies (stack traces) and captured output are trimmed to this many bytes.
    pub max_body_bytes: usize,
    /// Reports read whole (SARIF is JSON) larger than this are refused.
    pub max_document_bytes: u64,
    /// JUnit: keep the id and outcome of at most this many test cases, passing ones included
    /// (0, the default: none, so reading stays flat in memory; the `hidden_tests` grader of
    /// `meta-agent eval` asks for them to judge named tests).
    pub max_test_ids: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_items: 200,
            max_message_bytes: 2 * 1024,
            max_body_bytes: 16 * 1024,
            max_document_bytes: 256 * 1024 * 1024,
            max_test_ids: 0,
        }
    }
}

/// Why a report could not be read. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The file could not be opened or read.
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is empty (zero bytes or only whitespace).
    #[error("{path} is empty: expected a {expected} report")]
    Empty {
        path: PathBuf,
        expected: &'static str,
    },
    /// The file is well-formed but is not the expected kind of report.
    #[error("{path} is not a {expected} report: {found}")]
    WrongFormat {
        path: PathBuf,
        expected: &'static str,
        found: String,
    },
    /// The file is malformed or truncated; `line` and `column` are 1-based when known, and
    /// `offset` is the byte offset.
    #[error("{path}:{line}:{column}: malformed {format} (byte {offset}): {message}")]
    Malformed {
        path: PathBuf,
        format: &'static str,
        line: u64,
        column: u64,
        offset: u64,
        message: String,
    },
    /// The file is larger than the reader accepts for its format.
    #[error("{path} is {size} bytes, more than the {limit}-byte limit for a {format} report")]
    TooLarge {
        path: PathBuf,
        format: &'static str,
        size: u64,
        limit: u64,
    },
}

impl ReportError {
    /// The file the error is about.
    pub fn path(&self) -> &std::path::Path {
        match self {
            ReportError::Io { path, .. }
            | ReportError::Empty { path, .. }
            | ReportError::WrongFormat { path, .. }
            | ReportError::Malformed { path, .. }
            | ReportError::TooLarge { path, .. } => path,
        }
    }

    /// The same error naming `path` instead (a report read through a descriptor the caller
    /// opened safely is parsed as `/proc/self/fd/N`; people read the path it was found at).
    pub fn for_path(self, path: &std::path::Path) -> ReportError {
        let path = path.to_owned();
        match self {
            ReportError::Io { source, .. } => ReportError::Io { path, source },
            ReportError::Empty { expected, .. } => ReportError::Empty { path, expected },
            ReportError::WrongFormat {
                expected, found, ..
            } => ReportError::WrongFormat {
                path,
                expected,
                found,
            },
            ReportError::Malformed {
                format,
                line,
                column,
                offset,
                message,
                ..
            } => ReportError::Malformed {
                path,
                format,
                line,
                column,
                offset,
                message,
            },
            ReportError::TooLarge {
                format,
                size,
                limit,
                ..
            } => ReportError::TooLarge {
                path,
                format,
                size,
                limit,
            },
        }
    }
}

pub use meta_agent_protocol::text::trim_to;
