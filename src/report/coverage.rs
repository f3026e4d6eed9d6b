//! Coverage reader (placeholder types: the lcov and Cobertura readers are being written).

use std::path::Path;

use serde::Serialize;

use super::ReportError;

/// The format a coverage report was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CoverageFormat {
    Lcov,
    Cobertura,
}

/// Coverage of one source file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FileCoverage {
    pub path: String,
    pub lines_covered: u64,
    pub lines_total: u64,
    pub line_percent: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branches_covered: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branches_total: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch_percent: Option<f64>,
}

/// A whole coverage report: totals, and per file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CoverageReport {
    pub format: CoverageFormat,
    pub line_percent: f64,
    pub lines_covered: u64,
    pub lines_total: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch_percent: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branches_covered: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branches_total: Option<u64>,
    pub files: Vec<FileCoverage>,
}

/// Reads an lcov or Cobertura file, detecting which from its content.
pub fn parse_coverage_file(path: &Path) -> Result<CoverageReport, ReportError> {
    Err(ReportError::WrongFormat {
        path: path.to_owned(),
        expected: "coverage",
        found: "reader not written yet".into(),
    })
}
