//! Integration tests of the SARIF reader through the library API: logs from ruff, eslint and
//! clippy-sarif against the counts each tool printed itself, a merged multi-run log, a hand-written
//! CodeQL-shaped log for level defaults and URI bases, bad input, limits, and property tests (no
//! panic on arbitrary or mutated input).

use std::io::Write;
use std::path::{Path, PathBuf};

use meta_agent::report::{FindingLevel, Limits, ReportError, SarifReport, parse_sarif_file};
use proptest::prelude::*;

use crate::common::fixtures;

fn sarif_dir() -> PathBuf {
    fixtures().join("reports/sarif")
}

fn parse(relative: &str) -> SarifReport {
    parse_with(relative, &Limits::default())
}

fn parse_with(relative: &str, limits: &Limits) -> SarifReport {
    let path = sarif_dir().join(relative);
    parse_sarif_file(&path, limits).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

fn summary(relative: &str) -> String {
    std::fs::read_to_string(sarif_dir().join(relative)).unwrap()
}

/// The integers in `text`, in order.
fn numbers(text: &str) -> Vec<u64> {
    text.split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect()
}

fn temp_file(bytes: &[u8]) -> tempfile::NamedTempFile {
    let mut file = tempfile::Builder::new()
        .suffix(".sarif")
        .tempfile()
        .unwrap();
    file.write_all(bytes).unwrap();
    file.flush().unwrap();
    file
}

fn parse_bytes(bytes: &[u8]) -> Result<SarifReport, ReportError> {
    let file = temp_file(bytes);
    parse_sarif_file(file.path(), &Limits::default())
}

// ---- real tools against their own counts ----

#[test]
fn ruff_findings_match_its_count() {
    let printed = summary("ruff-summary.txt");
    let found = printed.lines().find(|l| l.starts_with("Found")).unwrap();
    let report = parse("ruff.sarif");
    assert_eq!(report.findings, numbers(found)[0], "{found}");
    assert_eq!(report.results.len() as u64, report.findings);
    let first = &report.results[0];
    assert_eq!(first.tool, "ruff");
    assert_eq!(first.rule_id.as_deref(), Some("F401"));
    assert_eq!(first.file.as_deref(), Some("/project/app.py"));
    assert_eq!(first.line, Some(2));
    assert_eq!(first.message, "`os` imported but unused");
    assert_eq!(
        report.errors, report.findings,
        "ruff writes every result at level error"
    );
}

#[test]
fn eslint_findings_match_its_problem_count() {
    let printed = summary("eslint-summary.txt");
    let problems = printed.lines().find(|l| l.contains("problems")).unwrap();
    let [total, errors, warnings] = numbers(problems)[..] else {
        panic!("{problems}")
    };
    let report = parse("eslint.sarif");
    assert_eq!(
        (report.findings, report.errors, report.warnings),
        (total, errors, warnings)
    );
    assert!(report.results.iter().all(|f| f.tool == "ESLint"));
    assert!(
        report
            .results
            .iter()
            .all(|f| f.file.as_deref() == Some("/project/index.js"))
    );
    let rules: Vec<_> = report
        .results
        .iter()
        .filter_map(|f| f.rule_id.as_deref())
        .collect();
    assert!(
        rules.contains(&"no-undef") && rules.contains(&"eqeqeq"),
        "{rules:?}"
    );
}

#[test]
fn clippy_sarif_findings_match_its_warning_count() {
    let printed = summary("clippy-summary.txt");
    let warnings = numbers(printed.split("generated").nth(1).unwrap())[0];
    let report = parse("clippy.sarif");
    assert_eq!((report.findings, report.warnings), (warnings, warnings));
    assert!(report.results.iter().all(|f| {
        f.rule_id
            .as_deref()
            .is_some_and(|r| r.starts_with("clippy::"))
    }));
    assert!(
        report
            .results
            .iter()
            .all(|f| f.file.as_deref() == Some("src/lib.rs") && f.line.is_some())
    );
}

#[test]
fn several_runs_add_up_and_keep_their_tool_names() {
    let report = parse("multi-run.sarif");
    let parts = ["ruff.sarif", "eslint.sarif", "clippy.sarif"].map(parse);
    assert_eq!(
        report.findings,
        parts.iter().map(|p| p.findings).sum::<u64>()
    );
    assert_eq!(report.errors, parts.iter().map(|p| p.errors).sum::<u64>());
    assert_eq!(
        report.warnings,
        parts.iter().map(|p| p.warnings).sum::<u64>()
    );
    let mut tools: Vec<&str> = report.results.iter().map(|f| f.tool.as_str()).collect();
    tools.dedup();
    assert_eq!(tools, ["ruff", "ESLint", "clippy"]);
}

#[test]
fn rule_defaults_message_strings_and_uri_bases() {
    let report = parse("handwritten/rule-defaults.sarif");
    assert_eq!((report.findings, report.errors, report.warnings), (5, 1, 2));
    let levels: Vec<FindingLevel> = report.results.iter().map(|f| f.level).collect();
    use FindingLevel::{Error, None, Note, Warning};
    assert_eq!(levels, [Error, Note, Warning, None, Warning]);
    let r = &report.results;
    assert_eq!(r[0].message, "This query depends on a user-provided value.");
    assert_eq!(
        (r[0].file.as_deref(), r[0].line),
        (Some("src/db.js"), Some(12))
    );
    assert_eq!(r[1].rule_id.as_deref(), Some("js/unused-local-variable"));
    assert_eq!(r[1].file.as_deref(), Some("src/util.js"));
    assert_eq!(r[2].file.as_deref(), Some("src/app main.js"));
    assert_eq!(r[4].rule_id.as_deref(), Some("js/sql-injection"));
    assert_eq!(r[3].file, Option::None);
}

#[test]
fn report_serializes_with_the_cli_field_names() {
    let value = serde_json::to_value(parse("eslint.sarif")).unwrap();
    assert!(value["findings"].is_u64());
    assert!(value["results"].is_array());
    assert_eq!(value["results"][0]["level"], "error");
}

// ---- limits ----

#[test]
fn results_past_the_cap_are_counted_not_kept() {
    let limits = Limits {
        max_items: 2,
        ..Limits::default()
    };
    let capped = parse_with("multi-run.sarif", &limits);
    let full = parse("multi-run.sarif");
    assert_eq!(capped.results.len(), 2);
    assert_eq!(capped.results_omitted, full.findings - 2);
    assert_eq!(
        (capped.findings, capped.errors, capped.warnings),
        (full.findings, full.errors, full.warnings)
    );
    assert_eq!(full.results_omitted, 0);
}

#[test]
fn messages_are_trimmed() {
    let limits = Limits {
        max_message_bytes: 6,
        ..Limits::default()
    };
    let report = parse_with("ruff.sarif", &limits);
    assert!(
        report.results[0].message.starts_with("`os` i"),
        "{}",
        report.results[0].message
    );
    assert!(report.results[0].message.contains("trimmed"));
}

#[test]
fn files_over_the_document_limit_are_refused_before_reading() {
    let limits = Limits {
        max_document_bytes: 100,
        ..Limits::default()
    };
    let err = parse_sarif_file(&sarif_dir().join("ruff.sarif"), &limits).unwrap_err();
    match err {
        ReportError::TooLarge { size, limit, .. } => assert!(size > limit && limit == 100),
        other => panic!("{other:?}"),
    }
}

// ---- bad input ----

fn malformed(result: Result<SarifReport, ReportError>) -> (u64, u64, String) {
    match result {
        Err(ReportError::Malformed {
            line,
            column,
            message,
            ..
        }) => (line, column, message),
        other => panic!("expected Malformed, got {other:?}"),
    }
}

fn wrong_format(result: Result<SarifReport, ReportError>) -> String {
    match result {
        Err(ReportError::WrongFormat { found, .. }) => found,
        other => panic!("expected WrongFormat, got {other:?}"),
    }
}

#[test]
fn truncated_json_names_line_and_column() {
    let bytes = std::fs::read(sarif_dir().join("eslint.sarif")).unwrap();
    let file = temp_file(&bytes[..bytes.len() / 2]);
    let err = parse_sarif_file(file.path(), &Limits::default()).unwrap_err();
    assert!(err.to_string().contains(&file.path().display().to_string()));
    let (line, _, message) = malformed(Err(err));
    assert!(line > 10, "{line}");
    assert!(message.contains("truncated"), "{message}");
    let (line, column, _) = malformed(parse_bytes(b"{\"version\": \"2.1.0\",\n  \"runs\": [}"));
    assert_eq!((line, column), (2, 12));
}

#[test]
fn the_wrong_kind_of_document_is_refused() {
    assert!(wrong_format(parse_bytes(br#"{"foo": 1}"#)).contains("runs"));
    assert!(wrong_format(parse_bytes(br#"{"version": "2.0.0", "runs": []}"#)).contains("2.0.0"));
    assert!(wrong_format(parse_bytes(br#"{"runs": []}"#)).contains("version"));
    assert!(wrong_format(parse_bytes(b"<testsuites/>")).contains("XML"));
    assert!(wrong_format(parse_bytes(b"[1, 2]")).contains("array"));
    assert!(wrong_format(parse_bytes(b"SF:a\nend_of_record\n")).contains("text"));
}

#[test]
fn empty_and_blank_files_are_empty() {
    assert!(matches!(parse_bytes(b""), Err(ReportError::Empty { .. })));
    assert!(matches!(
        parse_bytes(b"\n  \t\n"),
        Err(ReportError::Empty { .. })
    ));
}

#[test]
fn missing_file_is_an_io_error() {
    let err = parse_sarif_file(Path::new("/nonexistent/x.sarif"), &Limits::default()).unwrap_err();
    assert!(matches!(err, ReportError::Io { .. }), "{err:?}");
}

#[test]
fn non_utf8_and_wrong_types_are_malformed() {
    let (line, _, _) = malformed(parse_bytes(
        b"{\"version\":\"2.1.0\",\n\"runs\":[{\"tool\":{\"driver\":{\"name\":\"a\xff\"}}}]}",
    ));
    assert_eq!(line, 2);
    let (_, _, message) = malformed(parse_bytes(br#"{"version":"2.1.0","runs":[{"results":[{"locations":[{"physicalLocation":{"region":{"startLine":"x"}}}]}]}]}"#));
    assert!(message.contains("invalid type"), "{message}");
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let mut text = br#"{"version":"2.1.0","runs":[{"properties":"#.to_vec();
    text.extend(std::iter::repeat_n(b'[', 100_000));
    malformed(parse_bytes(&text));
}

#[test]
fn trailing_garbage_is_malformed() {
    malformed(parse_bytes(br#"{"version":"2.1.0","runs":[]} trailing"#));
}

// ---- property tests ----

fn real_fixtures() -> Vec<Vec<u8>> {
    [
        "ruff.sarif",
        "eslint.sarif",
        "clippy.sarif",
        "handwritten/rule-defaults.sarif",
    ]
    .iter()
    .map(|name| std::fs::read(sarif_dir().join(name)).unwrap())
    .collect()
}

/// Ok, or an error that names the file; never a panic.
fn check_no_panic(bytes: &[u8]) {
    let file = temp_file(bytes);
    let limits = Limits {
        max_items: 3,
        max_message_bytes: 16,
        ..Limits::default()
    };
    if let Err(err) = parse_sarif_file(file.path(), &limits) {
        let text = err.to_string();
        assert!(text.contains(&file.path().display().to_string()), "{text}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        check_no_panic(&bytes);
    }

    #[test]
    fn mutated_fixtures_never_panic(
        which in 0usize..4,
        edits in prop::collection::vec((any::<usize>(), any::<u8>(), 0u8..3), 1..8),
    ) {
        let mut bytes = real_fixtures().swap_remove(which);
        for (at, byte, kind) in edits {
            if bytes.is_empty() {
                break;
            }
            let i = at % bytes.len();
            match kind {
                0 => bytes[i] = byte,
                1 => bytes.truncate(i),
                _ => bytes.insert(i, byte),
            }
        }
        check_no_panic(&bytes);
    }

    #[test]
    fn counts_match_generated_levels(levels in prop::collection::vec(0u8..5, 0..40), cap in 0usize..10) {
        let names = ["error", "warning", "note", "none", ""];
        let results: Vec<String> = levels
            .iter()
            .map(|l| match names[*l as usize] {
                "" => r#"{"message":{"text":"m"}}"#.to_owned(),
                name => format!(r#"{{"level":"{name}","message":{{"text":"m"}}}}"#),
            })
            .collect();
        let log = format!(r#"{{"version":"2.1.0","runs":[{{"tool":{{"driver":{{"name":"g"}}}},"results":[{}]}}]}}"#, results.join(","));
        let file = temp_file(log.as_bytes());
        let limits = Limits { max_items: cap, ..Limits::default() };
        let report = parse_sarif_file(file.path(), &limits).unwrap();
        let errors = levels.iter().filter(|l| **l == 0).count() as u64;
        let warnings = levels.iter().filter(|l| **l == 1 || **l == 4).count() as u64;
        prop_assert_eq!((report.findings, report.errors, report.warnings), (levels.len() as u64, errors, warnings));
        prop_assert_eq!(report.results.len(), levels.len().min(cap));
        prop_assert_eq!(report.results_omitted as usize, levels.len().saturating_sub(cap));
    }
}
