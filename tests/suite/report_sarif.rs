//! Integration tests: report_sarif (being written).
