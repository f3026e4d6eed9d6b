//! Coverage reader: lcov and Cobertura XML, told apart by their content (never the extension).
//!
//! Both readers stream their input. What they keep grows with the number of source files and
//! their length in lines (two bits per source line, plus one small record per branch), never with
//! the length of the report: a line repeated in several lcov records or several Cobertura classes
//! is counted once. Totals are computed from the per-line data when the report has any, and fall
//! back to the summary counts the tool wrote (lcov `LF`/`LH`, Cobertura root attributes) when it
//! has none. This module reads only the file it is given and prints nothing.
//!
//! An empty but valid report (zero instrumented lines) has `line_percent` 0.0, not 100.0: "nothing
//! was measured" must not look like full coverage, and the coverage gate decides what to make of
//! `lines_total == 0`.

mod cobertura;
mod lcov;
pub(super) mod position;
mod sniff;
mod tally;

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use super::ReportError;

pub use meta_agent_protocol::reports::{CoverageFormat, CoverageReport, FileCoverage};

/// Reads an lcov or Cobertura file, detecting which from its content.
pub fn parse_coverage_file(path: &Path) -> Result<CoverageReport, ReportError> {
    let io_error = |source| ReportError::Io {
        path: path.to_owned(),
        source,
    };
    let mut file = File::open(path).map_err(io_error)?;
    let format = sniff::detect(path, &mut file)?;
    let reader = BufReader::with_capacity(64 * 1024, file);
    match format {
        CoverageFormat::Lcov => lcov::read(path, reader),
        CoverageFormat::Cobertura => cobertura::read(path, reader),
    }
}

/// `covered / total` as a percent, 0.0 when `total` is 0.
fn percent(covered: u64, total: u64) -> f64 {
    if total == 0 {
        return 0.0;
    }
    covered as f64 * 100.0 / total as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_of_nothing_is_zero() {
        assert_eq!(percent(0, 0), 0.0);
        assert_eq!(percent(1, 4), 25.0);
    }
}
