//! Each runner's JUnit naming and [`TestId::typed`] as a parser/writer pair (property tests: a
//! test written the way the runner writes it reads back to the same selector), the display, and
//! serde of both the typed form and the older `classname::name` strings.

use std::path::Path;

use proptest::prelude::*;

use super::*;

fn nothing_exists(_: &Path) -> bool {
    false
}

fn ident() -> impl Strategy<Value = String> {
    "[a-z_][a-z0-9_]{0,8}"
}

/// A title as people write them: spaces, brackets, `::`, `>`, regex metacharacters, non-ASCII.
fn title() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 _:()\\[\\]<>?.*+$^|/é-]{1,16}".prop_filter("not blank", |t| !t.trim().is_empty())
}

proptest! {
    #[test]
    fn pytest_node_parts_read_back_from_what_pytest_writes(
        dirs in prop::collection::vec(ident(), 0..3),
        module in ident(),
        classes in prop::collection::vec("[A-Z][a-zA-Z0-9]{0,6}", 0..3),
        function in ident(),
        params in prop::option::of(title()),
    ) {
        let mut path = dirs.clone();
        path.push(module);
        let file = format!("{}.py", path.join("/"));
        let mut dotted = path.clone();
        dotted.extend(classes.iter().cloned());
        let name = match &params {
            Some(params) => format!("{function}[{params}]"),
            None => function.clone(),
        };
        let exists = |p: &Path| p == Path::new(&file);
        let id = TestId::junit(&dotted.join("."), &name, None).typed(TestFilterFormat::Pytest, &exists);
        prop_assert_eq!(&id.select, &Selector::Pytest { file: file.clone(), classes: classes.clone(), function: name.clone() });
        // xunit1 names the file itself: no file system needed.
        let id = TestId::junit(&dotted.join("."), &name, Some(&file)).typed(TestFilterFormat::Pytest, &nothing_exists);
        prop_assert_eq!(id.select, Selector::Pytest { file, classes, function: name });
    }

    #[test]
    fn nextest_binary_id_and_test_path_read_back_whatever_they_hold(
        krate in "[a-z][a-z0-9_-]{0,8}",
        target in prop::option::of(("(bin/|test/|example/|)", "[a-z][a-z0-9_-]{0,8}")),
        path in prop::collection::vec(ident(), 1..4),
    ) {
        let binary_id = match target {
            Some((kind, name)) => format!("{krate}::{kind}{name}"),
            None => krate,
        };
        let test = path.join("::");
        let id = TestId::junit(&binary_id, &test, None).typed(TestFilterFormat::Nextest, &nothing_exists);
        prop_assert_eq!(&id.select, &Selector::Nextest { binary_id: binary_id.clone(), test: test.clone() });
        prop_assert_eq!(id.to_string(), format!("{binary_id}::{test}"));
    }

    #[test]
    fn libtest_paths_read_back_from_its_junit_class_names(
        modules in prop::collection::vec(ident(), 0..3),
        function in ident(),
        integration in any::<bool>(),
    ) {
        let path = modules.iter().chain([&function]).cloned().collect::<Vec<_>>().join("::");
        // What libtest's junit formatter writes (library/test/src/formatters/junit.rs).
        let (classname, name) = if integration {
            ("integration".to_owned(), path.clone())
        } else if modules.is_empty() {
            ("crate".to_owned(), function.clone())
        } else {
            (modules.join("::"), function.clone())
        };
        let id = TestId::junit(&classname, &name, None).typed(TestFilterFormat::Cargo, &nothing_exists);
        prop_assert_eq!(id.select, Selector::Cargo { path });
    }

    #[test]
    fn jest_full_names_read_back_from_what_jest_junit_writes(
        describes in prop::collection::vec(title(), 0..3),
        test in title(),
        file in prop::option::of("[a-z]{1,6}/[a-z]{1,6}\\.test\\.ts"),
    ) {
        // A first describe title that starts with a space cannot be told from jest-junit's own
        // separator: the selector drops one leading space, and the jest filter allows one.
        prop_assume!(!describes.first().is_some_and(|d| d.starts_with(' ')));
        let full_name = describes.iter().chain([&test]).cloned().collect::<Vec<_>>().join(" ");
        // jest-junit's default templates: "{classname} {title}" for both, the describe titles
        // joined by a space as {classname}.
        let written = format!("{} {test}", describes.join(" "));
        let id = TestId::junit(&written, &written, file.as_deref()).typed(TestFilterFormat::Jest, &nothing_exists);
        prop_assert_eq!(&id.select, &Selector::Jest { file, full_name });
        prop_assert_eq!(id.to_string(), written, "the name already holds the class name");
    }
}

#[test]
fn vitest_and_go_keep_what_their_reports_say() {
    let vitest = TestId::junit("test/a.test.ts", "outer > a > b?", None)
        .typed(TestFilterFormat::Vitest, &nothing_exists);
    assert_eq!(
        vitest.select,
        Selector::Vitest {
            file: "test/a.test.ts".into(),
            name: "outer > a > b?".into()
        }
    );
    let go = TestId::junit("example.com/m/pkg", "TestTable/two", None)
        .typed(TestFilterFormat::Go, &nothing_exists);
    assert_eq!(
        go.select,
        Selector::Go {
            package: "example.com/m/pkg".into(),
            test: "TestTable/two".into()
        }
    );
    assert_eq!(go.select.runner(), Some(TestFilterFormat::Go));
}

/// The nextest id of issue #24: split at its first `::` it named no test at all.
#[test]
fn an_integration_test_keeps_its_binary_id_whole() {
    let id = TestId::junit("semver::test_version_req", "test_less_than", None)
        .typed(TestFilterFormat::Nextest, &nothing_exists);
    assert_eq!(
        id.select,
        Selector::Nextest {
            binary_id: "semver::test_version_req".into(),
            test: "test_less_than".into()
        }
    );
    assert_eq!(id.to_string(), "semver::test_version_req::test_less_than");
}

#[test]
fn a_pytest_module_not_found_is_the_whole_class_name() {
    let id = TestId::junit("tests.test_gone", "test_a", None)
        .typed(TestFilterFormat::Pytest, &nothing_exists);
    assert_eq!(
        id.select,
        Selector::Pytest {
            file: "tests/test_gone.py".into(),
            classes: vec![],
            function: "test_a".into()
        }
    );
}

#[test]
fn the_display_drops_a_class_name_the_name_already_holds_and_nothing_else() {
    assert_eq!(TestId::junit("", "alone", None).to_string(), "alone");
    assert_eq!(
        TestId::junit("arithmetic adds", "arithmetic adds", None).to_string(),
        "arithmetic adds"
    );
    // A test whose name merely starts like its binary keeps the binary.
    assert_eq!(
        TestId::junit("rc", "rc_tests::x", None).to_string(),
        "rc::rc_tests::x"
    );
}

proptest! {
    #[test]
    fn typed_ids_survive_serde(
        classname in title(), name in title(), file in prop::option::of(title()),
        runner in prop::sample::select(vec![
            TestFilterFormat::Pytest, TestFilterFormat::Nextest, TestFilterFormat::Cargo,
            TestFilterFormat::Jest, TestFilterFormat::Vitest, TestFilterFormat::Go,
        ]),
    ) {
        let id = TestId::junit(&classname, &name, file.as_deref()).typed(runner, &nothing_exists);
        let json = serde_json::to_string(&id).unwrap();
        prop_assert_eq!(serde_json::from_str::<TestId>(&json).unwrap(), id.clone());
        let yaml = serde_yaml::to_string(&id).unwrap();
        prop_assert_eq!(serde_yaml::from_str::<TestId>(&yaml).unwrap(), id);
    }

    /// Sessions saved before ids were typed hold `classname::name` strings: they load, show as
    /// they did, and select nothing (a re-run of them is the whole gate).
    #[test]
    fn old_string_ids_load_and_show_as_they_were(
        classname in "([a-z_.]{1,8})?", name in "[a-z_]{1,8}(::[a-z_]{1,8})?",
    ) {
        let text = if classname.is_empty() { name.clone() } else { format!("{classname}::{name}") };
        let id: TestId = serde_json::from_value(serde_json::Value::String(text.clone())).unwrap();
        prop_assert_eq!(id.to_string(), text);
        prop_assert!(id.select.is_unknown());
    }
}
