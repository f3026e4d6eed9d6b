//! Integration test modules, one per area.

mod report_coverage;
mod report_junit;
mod report_sarif;
mod hindsight_signature;
mod hindsight_store;
