//! Integration tests: report_junit (being written).
