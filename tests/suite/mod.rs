//! Integration test modules, one per area.

mod agent;
mod attack;
mod cli_report;
mod config;
mod engine;
mod exec;
mod gates;
mod git;
mod github;
mod github_api;
mod hindsight_signature;
mod hindsight_store;
mod llm;
mod llm_wire;
mod planning;
mod redact;
mod report_coverage;
mod report_junit;
mod report_sarif;
mod sandbox;
mod tamper;
mod telemetry;
mod workflows;
