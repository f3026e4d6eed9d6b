//! Integration tests of the JUnit reader through the library API: real tool reports against the
//! counts each tool printed itself, failure details, bad input reported with file positions,
//! merging, and property tests (no panic on arbitrary or mutated input; generated reports
//! round-trip their counts).

use std::io::Write;
use std::path::{Path, PathBuf};

use meta_agent::report::{
    FailureKind, JunitSummary, Limits, ReportError, parse_junit_file, parse_junit_files,
};
use proptest::prelude::*;
use serde::Deserialize;

use crate::common::fixtures;

fn junit_dir() -> PathBuf {
    fixtures().join("reports/junit")
}

fn parse(relative: &str) -> JunitSummary {
    let path = junit_dir().join(relative);
    parse_junit_file(&path, &Limits::default()).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

fn counts(s: &JunitSummary) -> [u64; 6] {
    [s.tests, s.passed, s.failed, s.errors, s.skipped, s.flaky]
}

#[derive(Deserialize)]
struct Expectations {
    fixtures: Vec<Expected>,
}

#[derive(Deserialize)]
struct Expected {
    report: String,
    summary_file: Option<String>,
    summary: String,
    tests: u64,
    passed: u64,
    failed: u64,
    errors: u64,
    skipped: u64,
    flaky: u64,
}

fn expectations() -> Vec<Expected> {
    let text = std::fs::read_to_string(junit_dir().join("expected.json")).unwrap();
    serde_json::from_str::<Expectations>(&text)
        .unwrap()
        .fixtures
}

#[test]
fn every_fixture_matches_the_counts_its_tool_reported() {
    for expected in expectations() {
        let summary = parse(&expected.report);
        let want = [
            expected.tests,
            expected.passed,
            expected.failed,
            expected.errors,
            expected.skipped,
            expected.flaky,
        ];
        assert_eq!(
            counts(&summary),
            want,
            "{} (tool said: {})",
            expected.report,
            expected.summary
        );
        assert_eq!(
            summary.failures.len() as u64,
            expected.failed + expected.errors
        );
    }
}

#[test]
fn expectations_agree_with_the_saved_tool_summaries() {
    for expected in expectations() {
        let Some(file) = expected.summary_file else {
            continue;
        };
        let saved = std::fs::read_to_string(junit_dir().join(&file)).unwrap();
        assert_eq!(saved.trim_end_matches('\n'), expected.summary, "{file}");
    }
}

#[test]
fn every_report_fixture_has_expectations() {
    let listed: Vec<String> = expectations().into_iter().map(|e| e.report).collect();
    for entry in walkdir::WalkDir::new(junit_dir()).min_depth(2).max_depth(2) {
        let path = entry.unwrap().into_path();
        if path.extension().is_some_and(|ext| ext == "xml") {
            let relative = path
                .strip_prefix(junit_dir())
                .unwrap()
                .to_string_lossy()
                .into_owned();
            assert!(
                listed.contains(&relative),
                "{relative} is not in expected.json"
            );
        }
    }
}

#[test]
fn pytest_rerunfailures_attempts_are_one_test_each_and_the_retried_pass_is_flaky() {
    // 7 <testcase> elements for 4 tests: pytest-rerunfailures writes every attempt.
    let path = junit_dir().join("pytest/rerunfailures.xml");
    let raw = std::fs::read_to_string(&path).unwrap();
    assert_eq!(raw.matches("<testcase ").count(), 7);
    let summary = parse("pytest/rerunfailures.xml");
    assert_eq!(counts(&summary), [4, 2, 1, 0, 1, 1]);
    let [failure] = summary.failures.as_slice() else {
        panic!("one kept failure: {:#?}", summary.failures);
    };
    assert_eq!(failure.name, "test_fails_every_attempt");
    assert!(
        failure.body.contains("arithmetic is broken"),
        "{}",
        failure.body
    );
}

#[test]
fn nextest_retries_keep_the_final_failure_and_its_output() {
    let summary = parse("nextest/retries.xml");
    let failure = &summary.failures[0];
    assert_eq!(failure.kind, FailureKind::Failure);
    assert_eq!(failure.name, "tests::always_fails");
    assert_eq!(failure.suite, "nextest-junit-fixture");
    assert!(
        failure.message.contains("panicked at src/lib.rs"),
        "{}",
        failure.message
    );
    assert_eq!(failure.failure_type, "test failure with exit code 101");
    assert!(failure.body.contains("two and two"));
    assert!(
        failure
            .stdout
            .contains("stdout of the failing test: ünïcödé")
    );
    assert!(failure.stderr.contains("panicked"));
}

#[test]
fn pytest_xunit1_has_file_and_line_and_xunit2_has_not() {
    let xunit1 = parse("pytest/xunit1.xml");
    let wrong_total = xunit1
        .failures
        .iter()
        .find(|f| f.name == "test_wrong_total")
        .unwrap();
    assert_eq!(wrong_total.file.as_deref(), Some("test_sample.py"));
    assert_eq!(wrong_total.line, Some(22));
    assert_eq!(wrong_total.classname, "test_sample");
    assert!(wrong_total.stdout.contains("computing the total…"));
    let xunit2 = parse("pytest/xunit2.xml");
    assert!(
        xunit2
            .failures
            .iter()
            .all(|f| f.file.is_none() && f.line.is_none())
    );
    let setup_error = xunit2
        .failures
        .iter()
        .find(|f| f.kind == FailureKind::Error)
        .unwrap();
    assert_eq!(setup_error.name, "test_needs_resource");
    assert!(
        setup_error
            .message
            .contains("database unavailable during setup")
    );
}

#[test]
fn pytest_unicode_and_huge_messages_are_kept_and_trimmed() {
    let limits = Limits::default();
    let summary = parse("pytest/xunit2.xml");
    let unicode = summary
        .failures
        .iter()
        .find(|f| f.name == "test_unicode_failure")
        .unwrap();
    assert!(unicode.message.contains("ünïcödé ✗ 🚀"));
    let huge = summary
        .failures
        .iter()
        .find(|f| f.name == "test_huge_message")
        .unwrap();
    assert!(
        huge.body.ends_with("bytes trimmed]"),
        "{}",
        &huge.body[huge.body.len() - 60..]
    );
    assert!(huge.body.len() < limits.max_body_bytes + 64);
    assert!(huge.message.len() < limits.max_message_bytes + 64);
}

#[test]
fn surefire_flaky_rerun_and_cdata_details() {
    let summary = parse("handwritten/surefire.xml");
    let divides = summary
        .failures
        .iter()
        .find(|f| f.name == "divides")
        .unwrap();
    assert_eq!(divides.message, "expected: <2> but was: <3>");
    assert_eq!(divides.failure_type, "org.opentest4j.AssertionFailedError");
    assert!(
        divides
            .body
            .starts_with("org.opentest4j.AssertionFailedError")
    );
    assert_eq!(divides.stdout, "dividing 6 by 3 — résultat\n");
    let connects = summary
        .failures
        .iter()
        .find(|f| f.name == "connects")
        .unwrap();
    assert_eq!(connects.kind, FailureKind::Error);
    let always = summary
        .failures
        .iter()
        .find(|f| f.name == "alwaysFails")
        .unwrap();
    assert_eq!(always.message, "boom");
}

#[test]
fn js_reporters_keep_names_files_and_bodies() {
    let jest = parse("jest/jest-junit.xml");
    let wrong = jest
        .failures
        .iter()
        .find(|f| f.name == "arithmetic wrong product")
        .unwrap();
    assert_eq!(wrong.file.as_deref(), Some("sample.test.js"));
    assert!(wrong.body.contains("Expected: 7"));
    let thrown = jest
        .failures
        .iter()
        .find(|f| f.name.ends_with("throws"))
        .unwrap();
    assert!(
        thrown
            .body
            .contains(r#"undefined is not a function <&> "quoted""#)
    );
    let mocha = parse("mocha/mocha-junit-reporter.xml");
    let unicode = mocha
        .failures
        .iter()
        .find(|f| f.name.contains("unicode"))
        .unwrap();
    assert_eq!(unicode.suite, "nested");
    assert_eq!(unicode.failure_type, "AssertionError");
    let vitest = parse("vitest/vitest.xml");
    assert!(
        vitest
            .failures
            .iter()
            .any(|f| f.name.contains("unicode failure ✓"))
    );
}

#[test]
fn lint_findings_are_failing_testcases() {
    let ruff = parse("ruff/ruff.xml");
    let unused = ruff
        .failures
        .iter()
        .find(|f| f.message.contains("`os` imported"))
        .unwrap();
    assert_eq!(
        (unused.name.as_str(), unused.line),
        ("org.ruff.F401", Some(1))
    );
    let eslint = parse("eslint/eslint.xml");
    assert!(
        eslint
            .failures
            .iter()
            .any(|f| f.name == "org.eslint.no-undef")
    );
}

#[test]
fn several_files_merge_with_one_cap() {
    let paths: Vec<PathBuf> = expectations()
        .iter()
        .map(|e| junit_dir().join(&e.report))
        .collect();
    let total = parse_junit_files(&paths, &Limits::default()).unwrap();
    let tests: u64 = expectations().iter().map(|e| e.tests).sum();
    let failing: u64 = expectations().iter().map(|e| e.failed + e.errors).sum();
    assert_eq!(total.tests, tests);
    assert_eq!(total.failures.len() as u64, failing);
    let capped = Limits {
        max_items: 3,
        ..Limits::default()
    };
    let total = parse_junit_files(&paths, &capped).unwrap();
    assert_eq!(total.failures.len(), 3);
    assert_eq!(total.failures_omitted, failing - 3);
    assert!((total.pass_rate() - total.passed as f64 / tests as f64).abs() < 1e-12);
}

fn write_temp(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn malformed_at(error: &ReportError) -> (u64, u64, u64) {
    match error {
        ReportError::Malformed {
            line,
            column,
            offset,
            ..
        } => (*line, *column, *offset),
        other => panic!("expected Malformed, got {other:?}"),
    }
}

#[test]
fn syntax_errors_name_the_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let xml =
        b"<testsuite>\n  <testcase name=\"a\"/>\n  <testcase name=\"b\" <oops/>\n</testsuite>\n";
    let path = write_temp(dir.path(), "bad.xml", xml);
    let error = parse_junit_file(&path, &Limits::default()).unwrap_err();
    let (line, _, offset) = malformed_at(&error);
    assert_eq!(line, 3, "{error}");
    assert!(offset > 30);
    let shown = error.to_string();
    assert!(shown.contains("bad.xml:3:"), "{shown}");
}

#[test]
fn truncated_real_report_is_an_error_with_its_end_position() {
    let dir = tempfile::tempdir().unwrap();
    let full = std::fs::read(junit_dir().join("nextest/retries.xml")).unwrap();
    let last_line = full[..full.len() - 1]
        .iter()
        .rposition(|b| *b == b'\n')
        .unwrap();
    let cut = last_line + 1; // drops the closing </testsuites>
    let path = write_temp(dir.path(), "cut.xml", &full[..cut]);
    let error = parse_junit_file(&path, &Limits::default()).unwrap_err();
    let (line, _, offset) = malformed_at(&error);
    assert_eq!(offset, cut as u64);
    assert_eq!(
        line,
        full[..cut].iter().filter(|b| **b == b'\n').count() as u64 + 1
    );
}

#[test]
fn non_utf8_bytes_are_reported_at_their_offset() {
    let dir = tempfile::tempdir().unwrap();
    let mut xml = b"<testsuite>\n<testcase name=\"caf".to_vec();
    let bad = xml.len() as u64;
    xml.extend_from_slice(b"\xe9\"/>\n</testsuite>\n");
    let path = write_temp(dir.path(), "latin1.xml", &xml);
    let error = parse_junit_file(&path, &Limits::default()).unwrap_err();
    assert_eq!(malformed_at(&error), (2, 20, bad));
}

#[test]
fn wrong_formats_empty_and_missing_files_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let cobertura = br#"<?xml version="1.0" ?>
<!DOCTYPE coverage SYSTEM "http://cobertura.sourceforge.net/xml/coverage-04.dtd">
<coverage line-rate="0.8" branch-rate="0" version="1.9" timestamp="1"><sources/><packages/></coverage>"#;
    let html = b"<!DOCTYPE html>\n<html><head><title>Report</title></head><body><br></body></html>";
    for (name, bytes) in [
        ("cobertura.xml", &cobertura[..]),
        ("report.html", &html[..]),
    ] {
        let path = write_temp(dir.path(), name, bytes);
        let error = parse_junit_file(&path, &Limits::default()).unwrap_err();
        assert!(
            matches!(&error, ReportError::WrongFormat { path: p, .. } if *p == path),
            "{error}"
        );
    }
    let empty = write_temp(dir.path(), "empty.xml", b"");
    let error = parse_junit_file(&empty, &Limits::default()).unwrap_err();
    assert!(matches!(error, ReportError::Empty { .. }));
    let missing = dir.path().join("missing.xml");
    let error = parse_junit_file(&missing, &Limits::default()).unwrap_err();
    assert!(matches!(&error, ReportError::Io { path, .. } if *path == missing));
}

#[test]
fn billion_laughs_is_refused_without_expanding() {
    let dir = tempfile::tempdir().unwrap();
    let mut doctype = String::from("<!DOCTYPE testsuite [\n<!ENTITY lol0 \"lol\">\n");
    for level in 1..10 {
        let refs = format!("&lol{};", level - 1).repeat(10);
        doctype.push_str(&format!("<!ENTITY lol{level} \"{refs}\">\n"));
    }
    let xml = format!(
        "<?xml version=\"1.0\"?>\n{doctype}]>\n<testsuite><testcase><failure>&lol9;</failure></testcase></testsuite>"
    );
    let path = write_temp(dir.path(), "lol.xml", xml.as_bytes());
    let error = parse_junit_file(&path, &Limits::default()).unwrap_err();
    let (line, _, _) = malformed_at(&error);
    assert_eq!(line, 2);
}

#[test]
fn many_passing_tests_stream_and_extra_failures_are_only_counted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.xml");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    write!(out, "<testsuites>").unwrap();
    for suite in 0..100 {
        write!(out, "<testsuite name=\"s{suite}\">").unwrap();
        for case in 0..1000 {
            if case % 100 == 0 {
                write!(out, "<testcase name=\"f{case}\"><failure message=\"m\"><![CDATA[trace]]></failure></testcase>").unwrap();
            } else {
                write!(
                    out,
                    "<testcase classname=\"c\" name=\"t{case}\" time=\"0.001\"/>"
                )
                .unwrap();
            }
        }
        write!(out, "</testsuite>").unwrap();
    }
    write!(out, "</testsuites>").unwrap();
    drop(out);
    let summary = parse_junit_file(&path, &Limits::default()).unwrap();
    assert_eq!(counts(&summary), [100_000, 99_000, 1_000, 0, 0, 0]);
    assert_eq!(summary.failures.len(), Limits::default().max_items);
    assert_eq!(
        summary.failures_omitted,
        1_000 - Limits::default().max_items as u64
    );
}

/// The invariants every successful read keeps.
fn check_invariants(summary: &JunitSummary, limits: &Limits) {
    let s = summary;
    assert_eq!(s.passed + s.failed + s.errors + s.skipped, s.tests);
    assert!(s.flaky <= s.passed);
    assert!(s.failures.len() <= limits.max_items);
    assert_eq!(
        s.failures.len() as u64 + s.failures_omitted,
        s.failed + s.errors
    );
    for failure in &s.failures {
        assert!(failure.message.len() <= limits.max_message_bytes + 40);
        assert!(failure.body.len() <= limits.max_body_bytes + 40);
        assert!(failure.stdout.len() <= limits.max_body_bytes + 40);
    }
}

fn read_bytes(bytes: &[u8], limits: &Limits) -> Result<JunitSummary, ReportError> {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(bytes).unwrap();
    parse_junit_file(file.path(), limits)
}

fn small_limits() -> Limits {
    Limits {
        max_items: 3,
        max_message_bytes: 16,
        max_body_bytes: 32,
        ..Limits::default()
    }
}

fn real_fixture_bytes() -> &'static [Vec<u8>] {
    static FIXTURES: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    FIXTURES.get_or_init(|| {
        expectations()
            .iter()
            .map(|e| std::fs::read(junit_dir().join(&e.report)).unwrap())
            .collect()
    })
}

/// One edit of a document: overwrite, insert or delete a byte, or cut the rest.
#[derive(Debug, Clone)]
enum Mutation {
    Overwrite(usize, u8),
    Insert(usize, u8),
    Delete(usize),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let interesting = prop_oneof![
        Just(b'<'),
        Just(b'>'),
        Just(b'&'),
        Just(b'"'),
        Just(b'/'),
        Just(0xff),
        any::<u8>()
    ];
    prop_oneof![
        (any::<usize>(), interesting.clone()).prop_map(|(at, b)| Mutation::Overwrite(at, b)),
        (any::<usize>(), interesting).prop_map(|(at, b)| Mutation::Insert(at, b)),
        any::<usize>().prop_map(Mutation::Delete),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn apply(bytes: &mut Vec<u8>, edit: &Mutation) {
    if bytes.is_empty() {
        return;
    }
    let len = bytes.len();
    match *edit {
        Mutation::Overwrite(at, b) => bytes[at % len] = b,
        Mutation::Insert(at, b) => bytes.insert(at % (len + 1), b),
        Mutation::Delete(at) => {
            bytes.remove(at % len);
        }
        Mutation::Truncate(at) => bytes.truncate(at % len),
    }
}

/// How a generated test case ends.
#[derive(Debug, Clone, Copy)]
enum Generated {
    Pass,
    Fail,
    Error,
    Skip,
    Flaky,
    Rerun,
    /// pytest-rerunfailures: this many earlier attempts, each its own `<testcase>` with the same
    /// name, then a last attempt that passes (flaky) or fails.
    Attempts(u8, bool),
}

fn generated_case() -> impl Strategy<Value = (Generated, String)> {
    let outcome = prop_oneof![
        Just(Generated::Pass),
        Just(Generated::Fail),
        Just(Generated::Error),
        Just(Generated::Skip),
        Just(Generated::Flaky),
        Just(Generated::Rerun),
        (1u8..4, any::<bool>()).prop_map(|(n, passes)| Generated::Attempts(n, passes)),
    ];
    (outcome, "\\PC{0,40}")
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// One generated case; `index` makes its name unique in its suite (consecutive cases with one
/// name are attempts of one test).
fn render_case(out: &mut String, index: usize, (outcome, text): &(Generated, String)) {
    let name = format!("{index}-{}", escape(text));
    let open = format!("<testcase classname=\"c\" name=\"{name}\">");
    if let Generated::Attempts(earlier, _) = outcome {
        for _ in 0..*earlier {
            out.push_str(&format!("{open}</testcase>"));
        }
    }
    out.push_str(&open);
    let body = format!("<![CDATA[{}]]>", text.replace("]]>", ""));
    match outcome {
        Generated::Pass => {}
        Generated::Fail => out.push_str(&format!("<failure message=\"{name}\">{body}</failure>")),
        Generated::Error => out.push_str(&format!("<error type=\"E\">{name}</error>")),
        Generated::Skip => out.push_str("<skipped/>"),
        Generated::Flaky => out.push_str(&format!("<flakyFailure>{body}</flakyFailure>")),
        Generated::Rerun => out.push_str("<failure/><rerunFailure/><rerunFailure/>"),
        Generated::Attempts(_, true) => {}
        Generated::Attempts(_, false) => out.push_str(&format!("<failure>{body}</failure>")),
    }
    out.push_str(&format!("<system-out>{name}</system-out></testcase>"));
}

fn render(suites: &[Vec<(Generated, String)>], nest: bool) -> String {
    let mut out =
        String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites tests=\"1\">");
    for (index, cases) in suites.iter().enumerate() {
        out.push_str(&format!(
            "<testsuite name=\"s{index}\" tests=\"7\" failures=\"0\">"
        ));
        for (at, case) in cases.iter().enumerate() {
            render_case(&mut out, at, case);
        }
        if !nest {
            out.push_str("</testsuite>");
        }
    }
    if nest {
        out.push_str(&"</testsuite>".repeat(suites.len()));
    }
    out.push_str("</testsuites>\n");
    out
}

fn expected_counts(suites: &[Vec<(Generated, String)>]) -> [u64; 6] {
    let mut c = [0u64; 6];
    for (outcome, _) in suites.iter().flatten() {
        c[0] += 1;
        match outcome {
            Generated::Pass => c[1] += 1,
            Generated::Fail | Generated::Rerun | Generated::Attempts(_, false) => c[2] += 1,
            Generated::Error => c[3] += 1,
            Generated::Skip => c[4] += 1,
            Generated::Flaky | Generated::Attempts(_, true) => {
                c[1] += 1;
                c[5] += 1;
            }
        }
    }
    c
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let limits = small_limits();
        if let Ok(summary) = read_bytes(&bytes, &limits) {
            check_invariants(&summary, &limits);
        }
    }

    #[test]
    fn mutated_real_reports_never_panic(
        pick in any::<prop::sample::Index>(),
        edits in proptest::collection::vec(mutation(), 1..8),
    ) {
        let fixtures = real_fixture_bytes();
        let mut bytes = pick.get(fixtures).clone();
        for edit in &edits {
            apply(&mut bytes, edit);
        }
        let limits = small_limits();
        if let Ok(summary) = read_bytes(&bytes, &limits) {
            check_invariants(&summary, &limits);
        }
    }

    #[test]
    fn generated_reports_round_trip_their_counts(
        suites in proptest::collection::vec(proptest::collection::vec(generated_case(), 0..12), 1..6),
        nest in any::<bool>(),
    ) {
        let limits = small_limits();
        let summary = read_bytes(render(&suites, nest).as_bytes(), &limits).unwrap();
        prop_assert_eq!(counts(&summary), expected_counts(&suites));
        check_invariants(&summary, &limits);
    }
}
