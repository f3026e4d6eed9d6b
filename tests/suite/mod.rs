//! Integration test modules, one per area.

mod action;
mod agent;
mod attack;
mod cli_report;
mod config;
mod dist;
mod engine;
mod exec;
mod gates;
mod git;
mod github;
mod github_api;
mod github_app;
mod hindsight_signature;
mod hindsight_store;
mod llm;
mod planning;
mod redact;
mod report_coverage;
mod report_junit;
mod report_sarif;
mod sandbox;
mod tamper;
mod telemetry;
mod telemetry_export;
mod workflows;
