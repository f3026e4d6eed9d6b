//! Unit tests of the JUnit reader on small inline documents (read from memory, so error
//! positions carry no line and column; the integration tests check those on files).

use std::io::{BufRead, Read};
use std::path::Path;

use super::input::{GuardedInput, line_and_column};
use super::reader::read_report;
use super::text::TextCapture;
use super::{FailureKind, JunitSummary, TestStatus};
use crate::{Limits, ReportError, trim_to};
use meta_agent_protocol::test_id::TestId;

fn read(xml: &str) -> Result<JunitSummary, ReportError> {
    read_with(xml.as_bytes(), &Limits::default())
}

fn read_with(xml: &[u8], limits: &Limits) -> Result<JunitSummary, ReportError> {
    read_report(xml, Path::new("inline.xml"), limits)
}

fn counts(summary: &JunitSummary) -> [u64; 6] {
    let s = summary;
    [s.tests, s.passed, s.failed, s.errors, s.skipped, s.flaky]
}

#[test]
fn bare_testsuite_root_counts_each_outcome() {
    let summary = read(
        r#"<testsuite name="s" tests="999">
             <testcase name="a"/>
             <testcase name="b"><failure message="m">trace</failure></testcase>
             <testcase name="c"><error/></testcase>
             <testcase name="d"><skipped/></testcase>
             <testcase name="e"></testcase>
           </testsuite>"#,
    )
    .unwrap();
    assert_eq!(counts(&summary), [5, 2, 1, 1, 1, 0]);
    assert_eq!(summary.failures.len(), 2);
    assert_eq!(summary.failures[1].kind, FailureKind::Error);
}

#[test]
fn nested_suites_count_each_testcase_once_and_ignore_suite_counts() {
    let summary = read(
        r#"<testsuites tests="1" failures="7">
             <testsuite name="Root Suite" tests="0"/>
             <testsuite name="outer" tests="50">
               <testcase name="a"/>
               <testsuite name="inner"><testcase name="b"><failure/></testcase></testsuite>
               <testcase name="c"/>
             </testsuite>
           </testsuites>"#,
    )
    .unwrap();
    assert_eq!(counts(&summary), [3, 2, 1, 0, 0, 0]);
    assert_eq!(summary.failures[0].suite, "inner");
}

#[test]
fn flaky_retries_pass_and_reruns_fail_once() {
    let summary = read(
        r#"<testsuites><testsuite name="s">
             <testcase name="flaky"><flakyFailure message="first"><system-out>x</system-out></flakyFailure></testcase>
             <testcase name="flaky-error"><flakyError/></testcase>
             <testcase name="broken"><failure message="last"/><rerunFailure/><rerunFailure/></testcase>
             <testcase name="crash"><error message="e"/><rerunError/></testcase>
           </testsuite></testsuites>"#,
    )
    .unwrap();
    assert_eq!(counts(&summary), [4, 2, 1, 1, 0, 2]);
    assert_eq!(summary.failures[0].message, "last");
}

#[test]
fn keeps_failure_details_with_cdata_entities_and_output() {
    let summary = read(
        r#"<?xml version="1.0" encoding="UTF-8"?>
           <testsuites><testsuite name="suite &amp; co">
             <testcase classname="pkg.Class" name="t&lt;1&gt;" file="src/a.py" line="42">
               <system-out>printed before &#x2713;</system-out>
               <failure message="expected &quot;a&quot;" type="AssertionError">line 1 &amp; <![CDATA[<raw> & stuff]]></failure>
               <system-err><![CDATA[warn]]></system-err>
             </testcase>
           </testsuite></testsuites>"#,
    )
    .unwrap();
    let failure = &summary.failures[0];
    assert_eq!(failure.suite, "suite & co");
    assert_eq!(failure.classname, "pkg.Class");
    assert_eq!(failure.name, "t<1>");
    assert_eq!(failure.file.as_deref(), Some("src/a.py"));
    assert_eq!(failure.line, Some(42));
    assert_eq!(failure.message, "expected \"a\"");
    assert_eq!(failure.failure_type, "AssertionError");
    assert_eq!(failure.body, "line 1 & <raw> & stuff");
    assert_eq!(failure.stdout, "printed before ✓");
    assert_eq!(failure.stderr, "warn");
    assert_eq!(failure.report, Path::new("inline.xml"));
}

#[test]
fn missing_attributes_give_empty_fields() {
    let summary = read("<testsuite><testcase><failure/></testcase></testsuite>").unwrap();
    let failure = &summary.failures[0];
    assert_eq!((failure.name.as_str(), failure.suite.as_str()), ("", ""));
    assert_eq!((failure.file.as_deref(), failure.line), (None, None));
}

#[test]
fn failure_outranks_skipped_and_first_failure_wins() {
    let summary = read(
        r#"<testsuite><testcase><skipped/><failure message="one"/><error message="two"/></testcase></testsuite>"#,
    )
    .unwrap();
    assert_eq!(counts(&summary), [1, 0, 1, 0, 0, 0]);
    assert_eq!(summary.failures[0].message, "one");
}

#[test]
fn failures_beyond_the_cap_are_counted_not_kept() {
    let limits = Limits {
        max_items: 2,
        ..Limits::default()
    };
    let cases = "<testcase><failure/></testcase>".repeat(5);
    let summary = read_with(
        format!("<testsuite>{cases}</testsuite>").as_bytes(),
        &limits,
    )
    .unwrap();
    assert_eq!(summary.failed, 5);
    assert_eq!(summary.failures.len(), 2);
    assert_eq!(summary.failures_omitted, 3);
}

#[test]
fn texts_are_trimmed_like_trim_to() {
    let limits = Limits {
        max_message_bytes: 10,
        max_body_bytes: 12,
        ..Limits::default()
    };
    let message = "é".repeat(20);
    let body = format!("{}<![CDATA[{}]]>", "b".repeat(11), "ü".repeat(30));
    let xml = format!(
        r#"<testsuite><testcase><failure message="{message}">{body}</failure></testcase></testsuite>"#
    );
    let failure = read_with(xml.as_bytes(), &limits)
        .unwrap()
        .failures
        .remove(0);
    assert_eq!(failure.message, trim_to(&message, 10));
    let full_body = format!("{}{}", "b".repeat(11), "ü".repeat(30));
    assert_eq!(failure.body, trim_to(&full_body, 12));
}

#[test]
fn text_capture_matches_trim_to_across_chunks() {
    let text = "aé日本語🚀".repeat(10);
    for max in [0, 1, 2, 3, 5, 17, 1000] {
        let mut capture = TextCapture::default();
        for chunk in text.as_bytes().chunks(3) {
            capture.push(chunk, max);
        }
        assert_eq!(capture.finish(), trim_to(&text, max), "max {max}");
    }
}

#[test]
fn undeclared_entities_are_kept_literally_never_expanded() {
    let summary =
        read("<testsuite><testcase><failure>a &custom; b</failure></testcase></testsuite>")
            .unwrap();
    assert_eq!(summary.failures[0].body, "a &custom; b");
}

#[test]
fn doctype_with_entity_declarations_is_refused() {
    let xml = r#"<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]>
<testsuite><testcase><failure>&lol2;</failure></testcase></testsuite>"#;
    let error = read(xml).unwrap_err();
    assert!(
        matches!(&error, ReportError::Malformed { message, .. } if message.contains("entities")),
        "{error}"
    );
}

#[test]
fn truncated_document_is_an_error_not_a_partial_result() {
    let error = read("<testsuites><testsuite><testcase name=\"a\"/>").unwrap_err();
    assert!(
        matches!(&error, ReportError::Malformed { message, .. } if message.contains("truncated"))
    );
    let error = read("<testsuites><testsuite><testcase name=\"a").unwrap_err();
    assert!(matches!(error, ReportError::Malformed { .. }));
}

#[test]
fn mismatched_end_tag_is_malformed() {
    let error = read("<testsuite><testcase></testsuite>").unwrap_err();
    assert!(matches!(error, ReportError::Malformed { .. }), "{error}");
}

#[test]
fn other_roots_are_the_wrong_format() {
    for xml in [
        r#"<?xml version="1.0"?><coverage line-rate="0.5"><packages/></coverage>"#,
        "<!DOCTYPE html><html><head><meta charset=utf-8></head></html>",
        "{\"tests\": 3}",
        "<?xml version=\"1.0\"?>",
    ] {
        let error = read(xml).unwrap_err();
        assert!(
            matches!(error, ReportError::WrongFormat { .. }),
            "{xml}: {error}"
        );
    }
}

#[test]
fn empty_and_blank_inputs_are_empty() {
    for xml in ["", "  \n\t ", "\u{feff}"] {
        assert!(
            matches!(read(xml), Err(ReportError::Empty { .. })),
            "{xml:?}"
        );
    }
}

#[test]
fn invalid_utf8_names_the_byte_offset() {
    let mut xml = b"<testsuite><testcase name=\"ok\"/><testcase name=\"".to_vec();
    let bad_at = xml.len() as u64;
    xml.extend_from_slice(b"\xff\xfe\"/></testsuite>");
    match read_with(&xml, &Limits::default()) {
        Err(ReportError::Malformed { offset, .. }) => assert_eq!(offset, bad_at),
        other => panic!("expected Malformed, got {other:?}"),
    }
    let mut text = b"<testsuite><testcase><failure>abc".to_vec();
    let bad_at = text.len() as u64;
    text.extend_from_slice(b"\xc3(</failure></testcase></testsuite>");
    match read_with(&text, &Limits::default()) {
        Err(ReportError::Malformed { offset, .. }) => assert_eq!(offset, bad_at),
        other => panic!("expected Malformed, got {other:?}"),
    }
}

#[test]
fn deep_nesting_is_refused() {
    let xml = format!("<testsuites>{}", "<testsuite>".repeat(1000));
    let error = read(&xml).unwrap_err();
    assert!(matches!(&error, ReportError::Malformed { message, .. } if message.contains("deeper")));
}

#[test]
fn guarded_input_fails_past_the_event_limit() {
    let data = [b'x'; 100];
    let mut input = GuardedInput::new(&data[..], 10);
    input.start_event();
    let first = input.fill_buf().unwrap().len();
    input.consume(first);
    assert!(input.fill_buf().is_err());
    assert!(input.tripped());
    let mut byte = [0u8; 1];
    assert!(input.read(&mut byte).is_err());
}

#[test]
fn line_and_column_count_from_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.xml");
    std::fs::write(&path, "ab\ncde\nf").unwrap();
    assert_eq!(line_and_column(&path, 0), (1, 1));
    assert_eq!(line_and_column(&path, 4), (2, 2));
    assert_eq!(line_and_column(&path, 7), (3, 1));
    assert_eq!(line_and_column(&dir.path().join("missing"), 3), (0, 0));
}

#[test]
fn one_oversized_text_run_is_refused_at_its_start() {
    let prefix = b"<testsuite>\n<testcase><failure>".as_slice();
    let endless = std::io::repeat(b'x').take(super::input::MAX_EVENT_BYTES + 1024);
    let error = read_report(
        prefix.chain(endless),
        Path::new("big.xml"),
        &Limits::default(),
    );
    match error {
        Err(ReportError::Malformed {
            offset, message, ..
        }) => {
            assert_eq!(offset, prefix.len() as u64);
            assert!(message.contains("larger than"), "{message}");
        }
        other => panic!("expected Malformed, got {other:?}"),
    }
}

#[test]
fn consecutive_attempts_of_one_test_fold_into_one() {
    // pytest-rerunfailures' shape: earlier attempts are empty test cases, the last one decides.
    let summary = read(
        r#"<testsuites><testsuite name="pytest">
             <testcase classname="t" name="passes"/>
             <testcase classname="t" name="flaky"/>
             <testcase classname="t" name="flaky"/>
             <testcase classname="t" name="broken"/>
             <testcase classname="t" name="broken"/>
             <testcase classname="t" name="broken"><failure message="last"/></testcase>
             <testcase classname="t" name="skips"><skipped/></testcase>
           </testsuite></testsuites>"#,
    )
    .unwrap();
    assert_eq!(counts(&summary), [4, 2, 1, 0, 1, 1]);
    assert_eq!(summary.failures.len(), 1);
    assert_eq!(summary.failures[0].name, "broken");
    assert_eq!(summary.failures[0].message, "last");
}

#[test]
fn failing_cases_with_one_name_are_separate_findings() {
    // eslint and ruff write one failing test case per finding, named after the rule.
    let summary = read(
        r#"<testsuite name="sample.js">
             <testcase name="org.eslint.no-undef" classname="sample"><failure message="a"/></testcase>
             <testcase name="org.eslint.no-undef" classname="sample"><failure message="b"/></testcase>
             <testcase name="org.eslint.no-undef" classname="sample"/>
           </testsuite>"#,
    )
    .unwrap();
    assert_eq!(counts(&summary), [3, 1, 2, 0, 0, 0]);
    assert_eq!(summary.failures.len(), 2);
}

#[test]
fn same_names_elsewhere_are_other_tests() {
    let summary = read(
        r#"<testsuites>
             <testsuite name="one"><testcase name="t"/></testsuite>
             <testsuite name="one"><testcase name="t"/></testsuite>
             <testsuite name="two">
               <testcase name="t"/><testcase name="u"/><testcase name="t"/>
               <testcase classname="other" name="t"/><testcase name="t" file="b.py"/>
               <testcase name="t" file="b.py" line="3"/>
               <testcase><failure/></testcase><testcase><failure/></testcase>
             </testsuite>
           </testsuites>"#,
    )
    .unwrap();
    assert_eq!(counts(&summary), [10, 8, 2, 0, 0, 0]);
}

#[test]
fn attempts_keep_the_cap_on_kept_failures() {
    let limits = Limits {
        max_items: 1,
        ..Limits::default()
    };
    let attempts = |name: &str| {
        format!("<testcase name=\"{name}\"/>").repeat(2)
            + &format!("<testcase name=\"{name}\"><failure/></testcase>")
    };
    let xml = format!("<testsuite>{}{}</testsuite>", attempts("a"), attempts("b"));
    let summary = read_with(xml.as_bytes(), &limits).unwrap();
    assert_eq!(counts(&summary), [2, 0, 2, 0, 0, 0]);
    assert_eq!(summary.failures.len(), 1);
    assert_eq!(summary.failures[0].name, "a");
    assert_eq!(summary.failures_omitted, 1);
}

#[test]
fn outcomes_are_kept_by_id_only_when_asked_and_up_to_the_cap() {
    let xml = "<testsuites><testsuite name=\"s\">\
        <testcase classname=\"tests.test_a\" name=\"test_ok\"/>\
        <testcase classname=\"tests.test_a\" name=\"test_skip\"><skipped/></testcase>\
        <testcase classname=\"tests.test_a\" name=\"test_bad\"><failure message=\"x\"/></testcase>\
        <testcase name=\"bare\"><error/></testcase>\
        <testcase classname=\"c\" name=\"flaky\"/><testcase classname=\"c\" name=\"flaky\"/>\
        </testsuite></testsuites>";
    assert!(
        read(xml).unwrap().outcomes.is_empty(),
        "not kept by default"
    );
    let limits = Limits {
        max_test_ids: 100,
        ..Limits::default()
    };
    let kept: Vec<(String, TestStatus)> = read_with(xml.as_bytes(), &limits)
        .unwrap()
        .outcomes
        .into_iter()
        .map(|o| (o.id.to_string(), o.status))
        .collect();
    let expected = [
        ("tests.test_a::test_ok", TestStatus::Passed),
        ("tests.test_a::test_skip", TestStatus::Skipped),
        ("tests.test_a::test_bad", TestStatus::Failed),
        ("bare", TestStatus::Errored),
        ("c::flaky", TestStatus::Passed),
    ];
    assert_eq!(
        kept,
        expected
            .iter()
            .map(|(id, status)| ((*id).to_owned(), *status))
            .collect::<Vec<_>>()
    );
    let capped = read_with(
        xml.as_bytes(),
        &Limits {
            max_test_ids: 2,
            ..Limits::default()
        },
    )
    .unwrap();
    assert_eq!(capped.outcomes.len(), 2);
    assert_eq!(capped.outcomes_omitted, 3);
}

#[test]
fn vitest_tests_with_one_name_are_distinct_tests_never_attempts() {
    let report = |root: &str| {
        format!(
            r#"<testsuites name="{root}"><testsuite name="test/base.test.ts">
                 <testcase classname="test/base.test.ts" name="base &gt; parses"></testcase>
                 <testcase classname="test/base.test.ts" name="base &gt; parses"></testcase>
                 <testcase classname="test/base.test.ts" name="base &gt; other"></testcase>
               </testsuite></testsuites>"#
        )
    };
    let vitest = read(&report("vitest tests")).unwrap();
    assert_eq!(
        counts(&vitest),
        [3, 3, 0, 0, 0, 0],
        "a green run has no flaky test"
    );
    let jest = read(&report("jest tests")).unwrap();
    assert_eq!(counts(&jest), [3, 3, 0, 0, 0, 0]);
    let pytest = read(&report("pytest tests")).unwrap();
    assert_eq!(
        counts(&pytest),
        [2, 2, 0, 0, 0, 1],
        "pytest-rerunfailures' attempts are still one test"
    );
}

#[test]
fn a_vitest_failure_carries_the_file_and_line_its_text_names() {
    let summary = read(
        r#"<testsuites name="vitest tests"><testsuite name="test/base.test.ts">
             <testcase classname="test/base.test.ts" name="base &gt; adds">
               <failure message="expected 6 to be 7" type="AssertionError">
AssertionError: expected 6 to be 7
 ❯ node_modules/@vitest/expect/dist/index.js:12:3
 ❯ test/base.test.ts:36:41
               </failure>
             </testcase>
             <testcase classname="x" name="y" file="given.ts" line="3"><failure>❯ other.ts:9:1</failure></testcase>
           </testsuite></testsuites>"#,
    )
    .unwrap();
    let failure = &summary.failures[0];
    assert_eq!(failure.file.as_deref(), Some("test/base.test.ts"));
    assert_eq!(failure.line, Some(36));
    assert_eq!(
        summary.failures[1].file.as_deref(),
        Some("given.ts"),
        "attributes win"
    );
    assert_eq!(summary.failures[1].line, Some(3));
    assert_eq!(
        failure.id(),
        TestId::junit("test/base.test.ts", "base > adds", None),
        "a location read from the text is not part of the test's identity"
    );
    assert_eq!(
        summary.failures[1].id(),
        TestId::junit("x", "y", Some("given.ts"))
    );
}
