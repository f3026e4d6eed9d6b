//! Integration tests of the coverage reader through the library API: real reports from
//! coverage.py, c8 and cargo-llvm-cov against the totals each tool reported itself, a hand-written
//! JaCoCo Cobertura export, bad input reported with file positions, and property tests (no panic
//! on arbitrary or mutated input; generated lcov gives exactly the expected totals).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use meta_agent::report::{CoverageFormat, CoverageReport, ReportError, parse_coverage_file};
use proptest::prelude::*;
use serde_json::Value;

use crate::common::fixtures;

fn coverage_dir() -> PathBuf {
    fixtures().join("reports/coverage")
}

fn parse(relative: &str) -> CoverageReport {
    let path = coverage_dir().join(relative);
    parse_coverage_file(&path).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

fn json(relative: &str) -> Value {
    let text = std::fs::read_to_string(coverage_dir().join(relative)).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn temp_file(bytes: &[u8], suffix: &str) -> tempfile::NamedTempFile {
    let mut file = tempfile::Builder::new().suffix(suffix).tempfile().unwrap();
    file.write_all(bytes).unwrap();
    file.flush().unwrap();
    file
}

fn parse_bytes(bytes: &[u8]) -> Result<CoverageReport, ReportError> {
    let file = temp_file(bytes, ".cov");
    parse_coverage_file(file.path())
}

fn assert_close(actual: f64, expected: f64, what: &str) {
    assert!(
        (actual - expected).abs() < 0.01,
        "{what}: {actual} vs {expected}"
    );
}

fn lines(report: &CoverageReport) -> (u64, u64) {
    (report.lines_covered, report.lines_total)
}

fn branches(report: &CoverageReport) -> (Option<u64>, Option<u64>) {
    (report.branches_covered, report.branches_total)
}

// ---- real tools against their own totals ----

#[test]
fn coverage_py_cobertura_and_lcov_match_coverage_json() {
    let totals = &json("python/coverage.json")["totals"];
    let covered = totals["covered_lines"].as_u64().unwrap();
    let statements = totals["num_statements"].as_u64().unwrap();
    let branch_hit = totals["covered_branches"].as_u64().unwrap();
    let branch_all = totals["num_branches"].as_u64().unwrap();
    let percent = totals["percent_statements_covered"].as_f64().unwrap();
    for (name, format) in [
        ("python/coverage.xml", CoverageFormat::Cobertura),
        ("python/coverage.lcov", CoverageFormat::Lcov),
    ] {
        let report = parse(name);
        assert_eq!(report.format, format, "{name}");
        assert_eq!(lines(&report), (covered, statements), "{name}");
        assert_eq!(
            branches(&report),
            (Some(branch_hit), Some(branch_all)),
            "{name}"
        );
        assert_close(report.line_percent, percent, name);
        assert_close(report.branch_percent.unwrap(), 50.0, name);
        assert_eq!(report.files.len(), 1, "{name}");
        assert_eq!(report.files[0].path, "calc.py");
    }
}

#[test]
fn coverage_py_report_txt_total_rounds_to_the_combined_percent() {
    // `coverage report` prints (lines + branches) covered, rounded: 57% for 17 of 30.
    let text = std::fs::read_to_string(coverage_dir().join("python/report.txt")).unwrap();
    let total = text.lines().find(|l| l.starts_with("TOTAL")).unwrap();
    let printed: f64 = total
        .split_whitespace()
        .last()
        .unwrap()
        .trim_end_matches('%')
        .parse()
        .unwrap();
    let report = parse("python/coverage.xml");
    let hit = report.lines_covered + report.branches_covered.unwrap();
    let all = report.lines_total + report.branches_total.unwrap();
    assert_eq!((hit as f64 * 100.0 / all as f64).round(), printed);
}

#[test]
fn c8_lcov_and_cobertura_match_its_json_summary() {
    let total = &json("node/coverage-summary.json")["total"];
    let covered = total["lines"]["covered"].as_u64().unwrap();
    let all = total["lines"]["total"].as_u64().unwrap();
    let branch_hit = total["branches"]["covered"].as_u64().unwrap();
    let branch_all = total["branches"]["total"].as_u64().unwrap();
    let pct = total["lines"]["pct"].as_f64().unwrap();
    for name in ["node/lcov.info", "node/cobertura-coverage.xml"] {
        let report = parse(name);
        assert_eq!(lines(&report), (covered, all), "{name}");
        assert_eq!(
            branches(&report),
            (Some(branch_hit), Some(branch_all)),
            "{name}"
        );
        // istanbul truncates percentages to two decimals.
        assert!(
            (report.line_percent - pct).abs() < 0.01,
            "{name}: {}",
            report.line_percent
        );
        let paths: Vec<&str> = report.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["calc.js", "util.js"], "{name}");
    }
}

#[test]
fn nyc_cobertura_counts_class_lines_not_method_lines() {
    // nyc lists each function's declaration line under <methods> only: 3 of calc.js's and 2 of
    // util.js's lines are not in the tool's own totals (10 of 15 lines, 66.66 %).
    let total = &json("node-nyc/coverage-summary.json")["total"];
    let covered = total["lines"]["covered"].as_u64().unwrap();
    let all = total["lines"]["total"].as_u64().unwrap();
    let pct = total["lines"]["pct"].as_f64().unwrap();
    let raw =
        std::fs::read_to_string(coverage_dir().join("node-nyc/cobertura-coverage.xml")).unwrap();
    assert!(
        raw.matches("<line ").count() as u64 > all,
        "the fixture lists method lines besides class lines"
    );
    let report = parse("node-nyc/cobertura-coverage.xml");
    assert_eq!(lines(&report), (covered, all));
    assert_eq!(
        branches(&report),
        (
            total["branches"]["covered"].as_u64(),
            total["branches"]["total"].as_u64()
        )
    );
    assert!(
        (report.line_percent - pct).abs() < 0.01,
        "{}",
        report.line_percent
    );
    let text = std::fs::read_to_string(coverage_dir().join("node-nyc/summary.txt")).unwrap();
    let line = text.lines().find(|l| l.starts_with("Lines")).unwrap();
    assert!(line.contains(&format!("( {covered}/{all} )")), "{line}");
}

#[test]
fn c8_text_summary_agrees() {
    let text = std::fs::read_to_string(coverage_dir().join("node/summary.txt")).unwrap();
    let report = parse("node/lcov.info");
    let expected = format!("( {}/{} )", report.lines_covered, report.lines_total);
    let line = text.lines().find(|l| l.starts_with("Lines")).unwrap();
    assert!(line.contains(&expected), "{line} vs {expected}");
}

#[test]
fn cargo_llvm_cov_lcov_and_cobertura_match_its_summary() {
    let totals = &json("rust/summary.json")["data"][0]["totals"]["lines"];
    let covered = totals["covered"].as_u64().unwrap();
    let count = totals["count"].as_u64().unwrap();
    let percent = totals["percent"].as_f64().unwrap();
    for name in ["rust/lcov.info", "rust/cobertura.xml"] {
        let report = parse(name);
        assert_eq!(lines(&report), (covered, count), "{name}");
        assert_close(report.line_percent, percent, name);
        // Stable Rust has no branch coverage: BRF:0 / branches-valid="0" means no branches.
        assert_eq!(report.branch_percent, None, "{name}");
    }
}

#[test]
fn jacoco_cobertura_export_dedupes_lines_across_classes_and_methods() {
    let report = parse("handwritten/jacoco-cobertura.xml");
    assert_eq!(lines(&report), (8, 12));
    assert_eq!(branches(&report), (Some(3), Some(4)));
    assert_close(report.line_percent, 66.666, "jacoco");
    let calc = &report.files[0];
    assert_eq!(calc.path, "com/example/Calc.java");
    assert_eq!((calc.lines_covered, calc.lines_total), (6, 10));
    assert_eq!(calc.branch_percent, Some(75.0));
    assert_eq!(report.files[1].branch_percent, None);
}

#[test]
fn format_is_detected_from_content_not_extension() {
    let lcov = std::fs::read(coverage_dir().join("node/lcov.info")).unwrap();
    let file = temp_file(&lcov, ".xml");
    assert_eq!(
        parse_coverage_file(file.path()).unwrap().format,
        CoverageFormat::Lcov
    );
    let xml = std::fs::read(coverage_dir().join("python/coverage.xml")).unwrap();
    let file = temp_file(&xml, ".info");
    assert_eq!(
        parse_coverage_file(file.path()).unwrap().format,
        CoverageFormat::Cobertura
    );
}

#[test]
fn report_serializes_with_the_cli_field_names() {
    let value = serde_json::to_value(parse("python/coverage.xml")).unwrap();
    for key in [
        "line_percent",
        "lines_covered",
        "lines_total",
        "branch_percent",
        "files",
    ] {
        assert!(value.get(key).is_some(), "missing {key}");
    }
    let rust = serde_json::to_value(parse("rust/lcov.info")).unwrap();
    assert!(rust.get("branch_percent").is_none());
}

// ---- edge cases of valid input ----

#[test]
fn empty_but_valid_reports_have_zero_percent() {
    for text in [
        "TN:\n",
        "<coverage/>",
        "<?xml version=\"1.0\"?><coverage><packages/></coverage>",
    ] {
        let report = parse_bytes(text.as_bytes()).unwrap();
        assert_eq!(
            (report.lines_total, report.line_percent),
            (0, 0.0),
            "{text}"
        );
        assert!(report.files.is_empty());
    }
}

#[test]
fn byte_order_marks_are_skipped() {
    let lcov = parse_bytes(b"\xEF\xBB\xBFSF:a.rs\nDA:1,1\nend_of_record\n").unwrap();
    assert_eq!(lines(&lcov), (1, 1));
    let xml = b"\xEF\xBB\xBF<?xml version=\"1.0\"?><coverage><packages><package><classes><class filename=\"a.py\"><lines><line number=\"1\" hits=\"0\"/></lines></class></classes></package></packages></coverage>";
    let cobertura = parse_bytes(xml).unwrap();
    assert_eq!(lines(&cobertura), (0, 1));
}

#[test]
fn cobertura_without_lines_falls_back_to_root_attributes() {
    let counts = br#"<coverage lines-covered="3" lines-valid="4" line-rate="0.75" branches-covered="1" branches-valid="2"><packages/></coverage>"#;
    let report = parse_bytes(counts).unwrap();
    assert_eq!(lines(&report), (3, 4));
    assert_eq!(report.line_percent, 75.0);
    assert_eq!(report.branch_percent, Some(50.0));
    let rate_only = br#"<coverage line-rate="0.5" branch-rate="0"/>"#;
    let report = parse_bytes(rate_only).unwrap();
    assert_eq!(report.line_percent, 50.0);
    assert_eq!(report.branch_percent, None);
}

#[test]
fn cobertura_method_lines_never_count_and_empty_methods_close() {
    let xml = br#"<coverage lines-covered="9" lines-valid="9"><packages><package><classes>
        <class filename="a.js"><methods><method name="f"><lines><line number="1" hits="0"/></lines></method></methods>
          <lines><line number="2" hits="1"/></lines></class>
        <class filename="b.js"><methods/><lines><line number="5" hits="0"/></lines></class>
      </classes></package></packages></coverage>"#;
    let report = parse_bytes(xml).unwrap();
    assert_eq!(lines(&report), (1, 2));
    let only_methods = br#"<coverage lines-covered="3" lines-valid="4"><packages><package><classes>
        <class filename="a.js"><methods><method name="f"><lines><line number="1" hits="0"/></lines></method></methods></class>
      </classes></package></packages></coverage>"#;
    assert_eq!(
        lines(&parse_bytes(only_methods).unwrap()),
        (3, 4),
        "no class line: the root's totals"
    );
}

#[test]
fn lcov_repeated_source_records_merge() {
    let text = "SF:/src/a.rs\nDA:1,1\nDA:2,0\nBRDA:2,0,0,0\nend_of_record\n\
                SF:/src/b.rs\nDA:1,1\nend_of_record\n\
                SF:/src/a.rs\nDA:2,4\nDA:3,0\nBRDA:2,0,0,1\nend_of_record\n";
    let report = parse_bytes(text.as_bytes()).unwrap();
    assert_eq!(report.files.len(), 2);
    assert_eq!(
        (report.files[0].lines_covered, report.files[0].lines_total),
        (2, 3)
    );
    assert_eq!(branches(&report), (Some(1), Some(1)));
}

// ---- bad input ----

fn malformed_at(result: Result<CoverageReport, ReportError>) -> (u64, u64, String) {
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

#[test]
fn malformed_lcov_numbers_name_the_line() {
    let (line, column, message) =
        malformed_at(parse_bytes(b"TN:\nSF:a.js\nDA:x,y\nend_of_record\n"));
    assert_eq!((line, column), (3, 4));
    assert!(message.contains("not a number"), "{message}");
    let err = parse_bytes(b"SF:a\nDA:3,many\nend_of_record\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains(":2:"), "{err}");
}

#[test]
fn malformed_cobertura_numbers_name_the_element_position() {
    let xml = b"<coverage>\n<packages><package><classes><class filename=\"a.py\"><lines>\n  <line number=\"x\" hits=\"1\"/></lines></class></classes></package></packages></coverage>";
    let (line, column, message) = malformed_at(parse_bytes(xml));
    assert_eq!((line, column), (3, 3));
    assert!(message.contains("number"), "{message}");
}

#[test]
fn lcov_without_a_record_or_truncated_is_malformed() {
    let (line, _, message) = malformed_at(parse_bytes(b"TN:\nDA:1,1\n"));
    assert_eq!(line, 2);
    assert!(message.contains("outside a record"), "{message}");
    let (_, _, message) = malformed_at(parse_bytes(b"SF:a\nDA:1,1\n"));
    assert!(message.contains("end_of_record"), "{message}");
}

#[test]
fn truncated_xml_names_a_position() {
    let xml = std::fs::read(coverage_dir().join("python/coverage.xml")).unwrap();
    let cut = &xml[..xml.len() / 2];
    let file = temp_file(cut, ".xml");
    let err = parse_coverage_file(file.path()).unwrap_err();
    let text = err.to_string();
    assert!(text.contains(&file.path().display().to_string()), "{text}");
    let ReportError::Malformed { line, column, .. } = err else {
        panic!("{err:?}")
    };
    assert!(line > 1 && column >= 1, "{line}:{column}");
}

#[test]
fn junit_given_as_coverage_is_the_wrong_format() {
    let junit = br#"<?xml version="1.0"?><testsuites><testsuite name="s" tests="1"><testcase name="t"/></testsuite></testsuites>"#;
    match parse_bytes(junit) {
        Err(ReportError::WrongFormat { found, .. }) => {
            assert!(found.contains("testsuites"), "{found}")
        }
        other => panic!("{other:?}"),
    }
    let sarif = br#"{"version":"2.1.0","runs":[]}"#;
    assert!(matches!(
        parse_bytes(sarif),
        Err(ReportError::WrongFormat { .. })
    ));
    assert!(matches!(
        parse_bytes(b"hello world\n"),
        Err(ReportError::WrongFormat { .. })
    ));
}

#[test]
fn empty_and_blank_files_are_empty() {
    assert!(matches!(parse_bytes(b""), Err(ReportError::Empty { .. })));
    assert!(matches!(
        parse_bytes(b" \n\t\r\n"),
        Err(ReportError::Empty { .. })
    ));
}

#[test]
fn missing_file_is_an_io_error() {
    let err = parse_coverage_file(Path::new("/nonexistent/coverage.xml")).unwrap_err();
    assert!(matches!(err, ReportError::Io { .. }), "{err:?}");
}

#[test]
fn non_utf8_bytes_are_malformed_with_a_position() {
    let (line, column, _) =
        malformed_at(parse_bytes(b"SF:a\nDA:1,1\nSF:b\xff\xfe\nend_of_record\n"));
    assert_eq!((line, column), (3, 5));
    let xml = b"<coverage><packages><package><classes><class filename=\"a\xff.py\"><lines/></class></classes></package></packages></coverage>";
    malformed_at(parse_bytes(xml));
}

#[test]
fn entity_declarations_are_refused_and_never_expanded() {
    let laughs = br#"<?xml version="1.0"?>
<!DOCTYPE coverage [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]>
<coverage><packages><package><classes><class filename="&lol2;"/></classes></package></packages></coverage>"#;
    let (line, _, message) = malformed_at(parse_bytes(laughs));
    assert_eq!(line, 2);
    assert!(message.contains("entit"), "{message}");
    let undeclared = br#"<coverage><packages><package><classes><class filename="&xxe;"/></classes></package></packages></coverage>"#;
    malformed_at(parse_bytes(undeclared));
    // A DOCTYPE without an internal subset (cargo-llvm-cov, cover2cover) is fine.
    assert!(parse("rust/cobertura.xml").lines_total > 0);
}

#[test]
fn overlong_lines_and_markup_free_runs_are_refused() {
    let mut lcov = b"SF:".to_vec();
    lcov.extend(std::iter::repeat_n(b'a', 200_000));
    let (line, _, message) = malformed_at(parse_bytes(&lcov));
    assert_eq!(line, 1);
    assert!(message.contains("longer than"), "{message}");
    let mut xml = b"<coverage><sources><source>".to_vec();
    xml.extend(std::iter::repeat_n(b'x', 2 * 1024 * 1024));
    let (_, _, message) = malformed_at(parse_bytes(&xml));
    assert!(message.contains("without markup"), "{message}");
}

#[test]
fn huge_line_numbers_are_refused_not_allocated() {
    let (_, _, message) = malformed_at(parse_bytes(b"SF:a\nDA:4294967295,1\nend_of_record\n"));
    assert!(message.contains("limit"), "{message}");
}

#[test]
fn a_long_report_of_few_files_streams() {
    // 200k records of the same two files: totals stay those of the two files.
    let mut text = String::with_capacity(8 << 20);
    for i in 0..100_000u32 {
        for file in ["a.rs", "b.rs"] {
            text.push_str(&format!(
                "SF:{file}\nDA:{},1\nDA:{},0\nend_of_record\n",
                i % 50 + 1,
                60
            ));
        }
    }
    let report = parse_bytes(text.as_bytes()).unwrap();
    assert_eq!(lines(&report), (100, 102));
}

// ---- property tests ----

fn real_fixtures() -> Vec<Vec<u8>> {
    [
        "python/coverage.xml",
        "python/coverage.lcov",
        "node/lcov.info",
        "node/cobertura-coverage.xml",
        "rust/cobertura.xml",
        "handwritten/jacoco-cobertura.xml",
    ]
    .iter()
    .map(|name| std::fs::read(coverage_dir().join(name)).unwrap())
    .collect()
}

#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Truncate(usize),
    Insert(usize, Vec<u8>),
    Delete(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Mutation::Flip(at, byte)),
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(at, bytes)| Mutation::Insert(at, bytes)),
        (any::<usize>(), 1usize..64).prop_map(|(at, n)| Mutation::Delete(at, n)),
    ]
}

fn apply(bytes: &mut Vec<u8>, mutation: &Mutation) {
    if bytes.is_empty() {
        return;
    }
    match mutation {
        Mutation::Flip(at, byte) => {
            let i = at % bytes.len();
            bytes[i] = *byte;
        }
        Mutation::Truncate(at) => bytes.truncate(at % bytes.len()),
        Mutation::Insert(at, extra) => {
            let i = at % bytes.len();
            bytes.splice(i..i, extra.iter().copied());
        }
        Mutation::Delete(at, n) => {
            let i = at % bytes.len();
            let end = (i + n).min(bytes.len());
            bytes.drain(i..end);
        }
    }
}

/// Ok, or an error that names the file; never a panic.
fn check_no_panic(bytes: &[u8]) {
    let file = temp_file(bytes, ".cov");
    if let Err(err) = parse_coverage_file(file.path()) {
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
    fn lcov_like_text_never_panics(lines in prop::collection::vec(
        "(SF:[a-c]|DA:[0-9x,-]{0,8}|BRDA:[0-9,e-]{0,10}|LF:[0-9]{0,3}|end_of_record|TN:|BRF:1)", 0..20)) {
        check_no_panic(lines.join("\n").as_bytes());
    }

    #[test]
    fn mutated_fixtures_never_panic(
        which in 0usize..6,
        mutations in prop::collection::vec(mutation(), 1..6),
    ) {
        let mut bytes = real_fixtures().swap_remove(which);
        mutations.iter().for_each(|m| apply(&mut bytes, m));
        check_no_panic(&bytes);
    }

    #[test]
    fn generated_lcov_gives_exact_totals(
        records in prop::collection::vec(
            (0usize..4, prop::collection::vec((1u32..200, 0u64..3), 0..30)),
            0..12,
        ),
    ) {
        let mut text = String::new();
        let mut expected: BTreeMap<String, (BTreeSet<u32>, BTreeSet<u32>)> = BTreeMap::new();
        for (file, hits) in &records {
            let path = format!("src/f{file}.rs");
            text.push_str(&format!("TN:\nSF:{path}\n"));
            let entry = expected.entry(path).or_default();
            for (line, count) in hits {
                text.push_str(&format!("DA:{line},{count}\n"));
                entry.1.insert(*line);
                if *count > 0 {
                    entry.0.insert(*line);
                }
            }
            text.push_str("end_of_record\n");
        }
        if text.is_empty() {
            text.push_str("TN:\n");
        }
        let report = parse_bytes(text.as_bytes()).unwrap();
        let covered: usize = expected.values().map(|(c, _)| c.len()).sum();
        let total: usize = expected.values().map(|(_, t)| t.len()).sum();
        prop_assert_eq!(lines(&report), (covered as u64, total as u64));
        prop_assert_eq!(report.files.len(), expected.len());
        for (file, (path, (c, t))) in report.files.iter().zip(&expected) {
            prop_assert_eq!(&file.path, path);
            prop_assert_eq!((file.lines_covered, file.lines_total), (c.len() as u64, t.len() as u64));
        }
    }
}
