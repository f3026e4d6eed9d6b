//! SARIF reader (placeholder types: the reader is being written).

use std::path::Path;

use serde::Serialize;

use super::{Limits, ReportError};

/// SARIF result levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingLevel {
    None,
    Note,
    Warning,
    Error,
}

/// One SARIF result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub tool: String,
    pub rule_id: Option<String>,
    pub level: FindingLevel,
    pub message: String,
    pub file: Option<String>,
    pub line: Option<u32>,
}

/// All results of a SARIF log (every run), kept in detail up to a cap.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SarifReport {
    /// Total number of results.
    pub findings: u64,
    /// Results at level error.
    pub errors: u64,
    /// Results at level warning.
    pub warnings: u64,
    pub results: Vec<Finding>,
    /// Results counted but not kept in `results` because the cap was reached.
    pub results_omitted: u64,
}

/// Reads a SARIF 2.1.0 file.
pub fn parse_sarif_file(path: &Path, limits: &Limits) -> Result<SarifReport, ReportError> {
    let _ = limits;
    Err(ReportError::WrongFormat {
        path: path.to_owned(),
        expected: "SARIF 2.1.0",
        found: "reader not written yet".into(),
    })
}
