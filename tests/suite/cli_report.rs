//! `meta-agent report junit|coverage|sarif`: the JSON contract, human output and bad input.

use predicates::prelude::*;
use serde_json::Value;

use crate::common::{fixtures, meta_agent};

fn report_json(args: &[&str]) -> Value {
    let out = meta_agent()
        .arg("report")
        .args(args)
        .arg("--json")
        .assert()
        .success();
    serde_json::from_slice(&out.get_output().stdout).unwrap()
}

fn path(relative: &str) -> String {
    fixtures()
        .join("reports")
        .join(relative)
        .display()
        .to_string()
}

#[test]
fn junit_json_has_the_documented_top_level_counts() {
    let json = report_json(&["junit", &path("junit/pytest/xunit2.xml")]);
    for key in ["tests", "passed", "failed", "errors", "skipped", "flaky"] {
        assert!(
            json[key].is_u64(),
            "{key} missing or not an integer: {json:#}"
        );
    }
    assert_eq!(
        (json["tests"].as_u64(), json["failed"].as_u64()),
        (Some(9), Some(3))
    );
    assert_eq!(
        json["failures"].as_array().unwrap().len(),
        4,
        "3 failures and 1 error in detail"
    );
    let rate = json["pass_rate"].as_f64().unwrap();
    assert!((rate - 4.0 / 9.0).abs() < 1e-9);
}

#[test]
fn several_junit_files_are_merged() {
    let json = report_json(&[
        "junit",
        &path("junit/pytest/xunit2.xml"),
        &path("junit/jest/jest-junit.xml"),
    ]);
    assert_eq!(json["tests"], 17);
    assert_eq!(json["failed"], 6);
}

#[test]
fn coverage_json_has_line_and_branch_percent() {
    let json = report_json(&["coverage", &path("coverage/python/coverage.xml")]);
    assert!(json["line_percent"].is_f64());
    assert!(json["lines_covered"].is_u64() && json["lines_total"].is_u64());
    assert!(
        json["branch_percent"].is_f64(),
        "coverage.py with --branch reports branches: {json:#}"
    );
}

#[test]
fn sarif_json_counts_findings_and_lists_results() {
    let json = report_json(&["sarif", &path("sarif/ruff.sarif")]);
    let findings = json["findings"].as_u64().unwrap();
    assert!(findings > 0);
    assert_eq!(json["results"].as_array().unwrap().len() as u64, findings);
    assert!(json["results"][0]["rule_id"].is_string());
}

#[test]
fn human_output_summarises() {
    meta_agent()
        .args(["report", "junit", &path("junit/pytest/xunit2.xml")])
        .assert()
        .success()
        .stdout(predicate::str::starts_with(
            "9 tests: 4 passed, 3 failed, 1 error, 1 skipped, 0 flaky (pass rate 44.4%)",
        ));
}

#[test]
fn bad_input_is_a_usage_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let truncated = dir.path().join("truncated.xml");
    std::fs::write(
        &truncated,
        "<testsuites><testsuite name=\"a\"><testcase name=\"x\">",
    )
    .unwrap();
    meta_agent()
        .args(["report", "junit"])
        .arg(&truncated)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("truncated.xml"));
    let empty = dir.path().join("empty.info");
    std::fs::write(&empty, "").unwrap();
    meta_agent()
        .args(["report", "coverage"])
        .arg(&empty)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("empty.info is empty"));
    meta_agent()
        .args(["report", "sarif", &path("junit/pytest/xunit2.xml")])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("xunit2.xml"));
    meta_agent()
        .args(["report", "junit", "/nonexistent/junit.xml"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "cannot read /nonexistent/junit.xml",
        ));
}

#[test]
fn help_lists_the_commands() {
    let out = meta_agent().arg("--help").assert().success();
    let help = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    insta::assert_snapshot!("help", help);
}
