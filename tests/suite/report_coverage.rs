//! Integration tests: report_coverage (being written).
