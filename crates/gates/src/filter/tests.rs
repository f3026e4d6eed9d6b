//! Every runner's filter against a parser of that filter's syntax (the formatter/parser pair as
//! a round trip, property-tested), and the selection check. The real runners are tried in
//! `tests/suite/rerun.rs`.

use proptest::prelude::*;

use super::*;

fn typed(select: Selector) -> TestId {
    TestId {
        classname: String::new(),
        name: format!("{select:?}"),
        file: None,
        select,
    }
}

/// Reads a filterset written by [`nextest_filterset`] back into (binary id, test) pairs.
fn parse_filterset(text: &str) -> Vec<(String, String)> {
    text.split(" | ")
        .map(|term| {
            let inner = term
                .strip_prefix("(binary_id(=")
                .and_then(|t| t.strip_suffix("))"))
                .expect("term shape");
            let (binary, test) = inner.split_once(") & test(=").expect("two matchers");
            (unescape(binary), unescape(test))
        })
        .collect()
}

/// nextest's string escapes: `\u{hex}`; every other character stands for itself (and `)`,
/// `,` or a space never appear unescaped).
fn unescape(text: &str) -> String {
    assert!(
        !text.contains([')', ',', ' ', '(']),
        "unescaped delimiter in {text:?}"
    );
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("\\u{") {
        out.push_str(&rest[..at]);
        let end = rest[at..].find('}').expect("closed escape") + at;
        let code = u32::from_str_radix(&rest[at + 3..end], 16).expect("hex");
        out.push(char::from_u32(code).expect("char"));
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

/// A pytest node id back into its parts: the parameters first (they may hold `::`), then `::`.
fn parse_node_id(id: &str) -> (String, Vec<String>, String) {
    let (path, params) = match id.find('[') {
        Some(at) => (&id[..at], &id[at..]),
        None => (id, ""),
    };
    let mut parts: Vec<String> = path.split("::").map(str::to_owned).collect();
    let function = format!("{}{params}", parts.pop().expect("a function"));
    let file = parts.remove(0);
    (file, parts, function)
}

/// go's `-run` matching (testing/match.go): alternatives at top-level `|`, levels at top-level
/// `/`, each level matched against the name's element at that depth; deeper elements than the
/// pattern has levels match.
fn go_matches(pattern: &str, test: &str) -> bool {
    go_split(pattern).iter().any(|levels| {
        test.split('/').enumerate().all(|(depth, element)| {
            levels
                .get(depth)
                .is_none_or(|level| regex::Regex::new(level).unwrap().is_match(element))
        })
    })
}

fn go_split(pattern: &str) -> Vec<Vec<String>> {
    let (mut alternatives, mut levels, mut current) = (Vec::new(), Vec::new(), String::new());
    let (mut brackets, mut parens) = (0i32, 0i32);
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '[' => brackets += 1,
            ']' => brackets = (brackets - 1).max(0),
            '(' if brackets == 0 => parens += 1,
            ')' if brackets == 0 => parens -= 1,
            '\\' => {
                current.push(c);
                current.extend(chars.next());
                continue;
            }
            '/' if brackets == 0 && parens == 0 => {
                levels.push(std::mem::take(&mut current));
                continue;
            }
            '|' if brackets == 0 && parens == 0 => {
                levels.push(std::mem::take(&mut current));
                alternatives.push(std::mem::take(&mut levels));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    levels.push(current);
    alternatives.push(levels);
    alternatives
}

fn js_regex(pattern: &str, case_insensitive: bool) -> regex::Regex {
    regex::RegexBuilder::new(pattern)
        .case_insensitive(case_insensitive)
        .build()
        .unwrap_or_else(|e| panic!("{pattern}: {e}"))
}

/// Any text, spaces, brackets, `::`, `>` and regex metacharacters included.
fn text() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 _:()\\[\\]<>?.*+$^|/\\\\{},é✓-]{1,14}"
}

fn title() -> impl Strategy<Value = String> {
    text().prop_filter("no edge spaces", |t| t.trim() == t && !t.is_empty())
}

proptest! {
    #[test]
    fn a_nextest_filterset_reads_back_to_the_tests_it_selects(
        tests in prop::collection::vec((any::<String>(), any::<String>()), 1..5),
    ) {
        let ids: Vec<TestId> = tests.iter().map(|(binary_id, test)| typed(Selector::Nextest {
            binary_id: binary_id.clone(), test: test.clone(),
        })).collect();
        let args = arguments(TestFilterFormat::Nextest, &ids).unwrap();
        prop_assert_eq!(args.len(), 1);
        prop_assert_eq!(parse_filterset(&args[0]), tests);
    }

    #[test]
    fn pytest_node_ids_read_back_to_their_parts(
        file in "[a-z_]{1,6}(/[a-z_]{1,6}){0,2}\\.py",
        classes in prop::collection::vec("[A-Z][a-zA-Z0-9_]{0,6}", 0..3),
        function in "[a-z_][a-z0-9_]{0,8}",
        params in prop::option::of(text()),
    ) {
        let function = match params {
            Some(params) => format!("{function}[{params}]"),
            None => function,
        };
        let id = typed(Selector::Pytest { file: file.clone(), classes: classes.clone(), function: function.clone() });
        let args = arguments(TestFilterFormat::Pytest, &[id]).unwrap();
        prop_assert_eq!(parse_node_id(&args[0]), (file, classes, function));
    }

    #[test]
    fn libtest_paths_are_the_arguments_themselves(paths in prop::collection::vec(text(), 1..4)) {
        let ids: Vec<TestId> = paths.iter().map(|path| typed(Selector::Cargo { path: path.clone() })).collect();
        prop_assert_eq!(arguments(TestFilterFormat::Cargo, &ids).unwrap(), paths);
    }

    /// jest matches `--testNamePattern` case-insensitively against the full name.
    #[test]
    fn a_jest_pattern_matches_its_tests_and_no_other_name(
        names in prop::collection::btree_set(title(), 1..4),
        other in title(),
        file in "[a-z]{1,5}/[a-z.]{1,6}\\.test\\.js",
    ) {
        let ids: Vec<TestId> = names.iter().map(|n| typed(Selector::Jest {
            file: Some(file.clone()), full_name: n.clone(),
        })).collect();
        let args = arguments(TestFilterFormat::Jest, &ids).unwrap();
        let pattern = js_regex(&args[0], true);
        for name in &names {
            prop_assert!(pattern.is_match(name), "{} does not match {name:?}", args[0]);
            let leading = format!(" {name}");
            prop_assert!(pattern.is_match(&leading), "{} does not match {leading:?}", args[0]);
        }
        let lower = |s: &str| s.to_lowercase();
        if !names.iter().any(|n| lower(n) == lower(&other) || lower(n) == lower(other.trim_start())) {
            prop_assert!(!pattern.is_match(&other), "{} matches {other:?}", args[0]);
        }
        let path = js_regex(&args[1], false);
        let (inside, beside) = (format!("/checkout/{file}"), format!("/checkout/{file}x"));
        prop_assert!(path.is_match(&inside));
        prop_assert!(!path.is_match(&beside));
        prop_assert_eq!(args.len(), 2, "one file");
    }

    /// vitest's JUnit joins titles with ` > `; its `-t` matches them joined with a space.
    #[test]
    fn a_vitest_pattern_matches_the_name_vitest_matches(
        titles in prop::collection::vec(title(), 1..4),
        other in prop::collection::vec("[a-z]{1,6}", 1..3),
    ) {
        let id = typed(Selector::Vitest { file: "a.test.ts".into(), name: titles.join(" > ") });
        let args = arguments(TestFilterFormat::Vitest, &[id]).unwrap();
        let pattern = js_regex(&args[0], false);
        prop_assert!(pattern.is_match(&titles.join(" ")), "{} vs {:?}", args[0], titles.join(" "));
        if other.join(" ") != titles.join(" ") && other.join(" > ") != titles.join(" > ") {
            prop_assert!(!pattern.is_match(&other.join(" ")));
        }
        prop_assert_eq!(&args[1], "a.test.ts");
    }

    #[test]
    fn a_go_run_expression_selects_its_tests_at_every_level(
        tests in prop::collection::btree_set(
            ("Test[A-Z][a-z]{0,4}", prop::option::of("[a-zA-Z0-9_()|.+*#-]{1,6}")), 1..4),
        other in ("Test[A-Z][a-z]{0,4}", prop::option::of("[a-z]{1,4}")),
    ) {
        let names: Vec<String> = tests.iter().map(|(top, sub)| match sub {
            Some(sub) => format!("{top}/{sub}"),
            None => top.clone(),
        }).collect();
        let ids: Vec<TestId> = names.iter().map(|test| typed(Selector::Go {
            package: "example.com/m".into(), test: test.clone(),
        })).collect();
        let args = arguments(TestFilterFormat::Go, &ids).unwrap();
        for name in &names {
            prop_assert!(go_matches(&args[0], name), "{} does not run {name}", args[0]);
        }
        let other_top = &other.0;
        if !tests.iter().any(|(top, _)| top == other_top) {
            prop_assert!(!go_matches(&args[0], other_top), "{} runs {other_top}", args[0]);
        }
        prop_assert_eq!(&args[1..], ["example.com/m".to_owned()]);
    }
}

#[test]
fn the_integration_test_of_issue_24_is_selected_by_its_whole_binary_id() {
    let id = TestId::junit("semver::test_version_req", "test_less_than", None)
        .typed(TestFilterFormat::Nextest, &|_| false);
    assert_eq!(
        arguments(TestFilterFormat::Nextest, &[id]).unwrap(),
        ["(binary_id(=semver::test_version_req) & test(=test_less_than))"]
    );
}

#[test]
fn a_go_parent_failing_with_its_subtests_is_left_to_them() {
    let go = |test: &str| {
        typed(Selector::Go {
            package: "example.com/m".into(),
            test: test.into(),
        })
    };
    let args = arguments(
        TestFilterFormat::Go,
        &[go("TestTable"), go("TestTable/a|b"), go("TestAdds")],
    )
    .unwrap();
    assert_eq!(args, [r"^TestTable$/^a\|b$|^TestAdds$", "example.com/m"]);
}

#[test]
fn ids_of_another_runner_or_none_are_not_selected() {
    let unknown = TestId::junit("tests.test_calc", "test_mean", None);
    assert!(matches!(
        arguments(TestFilterFormat::Pytest, &[unknown]),
        Err(Unselectable::NotTyped { .. })
    ));
    assert_eq!(
        arguments(TestFilterFormat::Pytest, &[]),
        Err(Unselectable::Nothing)
    );
}

fn outcome(id: &TestId, status: TestStatus) -> TestOutcome {
    TestOutcome {
        id: TestId::junit(&id.classname, &id.name, id.file.as_deref()),
        status,
    }
}

#[test]
fn a_rerun_counts_only_when_it_ran_exactly_the_selection() {
    let a = TestId::junit("rc::it", "a", None).typed(TestFilterFormat::Nextest, &|_| false);
    let b = TestId::junit("rc::it", "b", None).typed(TestFilterFormat::Nextest, &|_| false);
    let c = TestId::junit("rc", "c", None);
    let selected = [a.clone(), b.clone()];
    let exact = [
        outcome(&a, TestStatus::Failed),
        outcome(&b, TestStatus::Passed),
    ];
    assert_eq!(check(&selected, &exact, 0), Ok(()));
    let none = check(&selected, &[], 0).unwrap_err();
    assert_eq!(
        none.to_string(),
        "the re-run filter selected 0 of the 2 failing test(s); not run: `rc::it::a`, `rc::it::b`"
    );
    let skipped = [
        outcome(&a, TestStatus::Passed),
        outcome(&b, TestStatus::Skipped),
    ];
    assert_eq!(
        check(&selected, &skipped, 0).unwrap_err().missing,
        ["rc::it::b"]
    );
    let more = [
        exact[0].clone(),
        exact[1].clone(),
        outcome(&c, TestStatus::Passed),
    ];
    assert_eq!(
        check(&selected, &more, 0).unwrap_err().to_string(),
        "the re-run filter selected 2 of the 2 failing test(s); ran 1 other(s): `rc::c`"
    );
    assert!(check(&selected, &exact, 1).unwrap_err().unknown);
}

/// The failure of a vitest run and the same test passing in a re-run are one test: the re-run
/// check finds it (a file read from the failure's text once made every vitest re-run a
/// mismatch, and the whole gate ran again). Both read by the JUnit reader from files.
#[test]
fn a_vitest_failure_and_its_passing_rerun_are_the_same_test() {
    use meta_agent_report::Limits;
    use meta_agent_report::junit::parse_junit_file;
    let case = |body: &str| {
        format!(
            r#"<testsuites name="vitest tests"><testsuite name="test/window.test.ts">
                 <testcase classname="test/window.test.ts" name="windows &gt; cover every value">{body}</testcase>
               </testsuite></testsuites>"#
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let (failing, passing) = (dir.path().join("failed.xml"), dir.path().join("rerun.xml"));
    std::fs::write(
        &failing,
        case(
            "<failure message=\"expected\">AssertionError\n ❯ test/window.test.ts:12:5\n</failure>",
        ),
    )
    .unwrap();
    std::fs::write(&passing, case("")).unwrap();
    let failed = parse_junit_file(&failing, &Limits::default()).unwrap();
    let limits = Limits {
        max_test_ids: 10,
        ..Limits::default()
    };
    let rerun = parse_junit_file(&passing, &limits).unwrap();
    let selected = [failed.failures[0].id()];
    assert_eq!(
        check(&selected, &rerun.outcomes, rerun.outcomes_omitted),
        Ok(())
    );
}
