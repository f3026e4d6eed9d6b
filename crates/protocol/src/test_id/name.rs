//! [`TestName`]: the text a runner knows one failing test by, as a failure's signature carries
//! it, and the one reader of its parts. A failure read from a JUnit report names its test by
//! the [`TestId`]'s display; one read from a plain log (pytest's `FAILED tests/test_a.py::t`,
//! libtest's `thread 'tests::mean' panicked`, jest's `● suite › adds`, go's `--- FAIL: TestX/one`)
//! has no report to type it from, only the runner's words. Both are a `TestName`; what the
//! engine, the code reader and the task's reading need of it (the function or block it ends
//! with, its parametrisation, the file it starts with) is read here, nowhere else.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::TestId;

/// One test, as its runner wrote its name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TestName(String);

/// The separators runners put between a test's enclosing names and its own, outermost last:
/// jest's and vitest's titles, a Rust or pytest path, a dotted module.
const SEPARATORS: [&str; 4] = [" › ", " > ", "::", "."];

impl TestName {
    /// A name as a runner's log wrote it.
    pub fn new(text: impl Into<String>) -> TestName {
        TestName(text.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The function or block name it ends with: `test_mean` of
    /// `tests.test_calc::test_mean[1-2]`, `mean` of `winstats::tests::mean`, `adds` of
    /// `suite › adds` or `suite > adds`, `TestMean` of `TestMean/one`.
    pub fn function(&self) -> &str {
        let id = self.0.trim();
        let id = id.split_once('[').map_or(id, |(head, _)| head);
        let last = SEPARATORS
            .iter()
            .fold(id, |rest, sep| rest.rsplit(sep).next().unwrap_or(rest));
        let last = last.split('/').next().unwrap_or(last);
        last.trim_end_matches("()").trim()
    }

    /// Its parametrisation, brackets included (`[1-2]` of `test_mean[1-2]`), if any.
    pub fn parameters(&self) -> Option<&str> {
        self.0.find('[').map(|at| &self.0[at..])
    }

    /// The repository files it may start with, most literal first: `test/add.test.ts` of
    /// `test/add.test.ts::adds`; `tests.test_calc` and `tests/test_calc.py` of
    /// `tests.test_calc::test_mean` (pytest's dotted module). Empty when it names no file.
    pub fn module_files(&self) -> Vec<String> {
        let Some((head, _)) = self.0.split_once("::") else {
            return Vec::new();
        };
        vec![head.to_owned(), format!("{}.py", head.replace('.', "/"))]
    }
}

impl TestName {
    /// Whether it is one of `new`, the tests a change declares (`path::name`; a JavaScript
    /// test's title may hold spaces): the same last name (`test_median` of
    /// `tests.test_calc::test_median[1-2]`, `adds` of `calc adds`), or a title it holds.
    pub fn is_among(&self, new: &[String]) -> bool {
        let function = self.function();
        let last = function.rsplit(' ').next().unwrap_or(function);
        new.iter().any(|entry| {
            let name = entry.rsplit("::").next().unwrap_or(entry);
            name == last || (!name.is_empty() && name.contains(' ') && self.0.contains(name))
        })
    }
}

impl From<&TestId> for TestName {
    fn from(id: &TestId) -> TestName {
        TestName(id.to_string())
    }
}

impl From<&str> for TestName {
    fn from(text: &str) -> TestName {
        TestName::new(text)
    }
}

impl fmt::Display for TestName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn the_function_a_runner_names_last() {
        let function = |id: &str| TestName::new(id).function().to_owned();
        assert_eq!(function("tests.test_calc::test_mean[1-2]"), "test_mean");
        assert_eq!(
            function("winstats::tests::windows_of_four"),
            "windows_of_four"
        );
        assert_eq!(function("arithmetic > wrong product"), "wrong product");
        assert_eq!(function("suite › adds"), "adds");
        assert_eq!(function("TestTable/one"), "TestTable");
        assert_eq!(function("test_mean"), "test_mean");
        assert_eq!(function("Calc.testAdd()"), "testAdd");
    }

    #[test]
    fn parameters_and_module_files() {
        let name = TestName::new("tests.test_calc::test_mean[1-2]");
        assert_eq!(name.parameters(), Some("[1-2]"));
        assert_eq!(
            name.module_files(),
            ["tests.test_calc", "tests/test_calc.py"]
        );
        let vitest = TestName::new("test/add.test.ts::adds");
        assert_eq!(vitest.parameters(), None);
        assert_eq!(vitest.module_files()[0], "test/add.test.ts");
        assert!(TestName::new("suite › adds").module_files().is_empty());
    }

    #[test]
    fn a_junit_id_is_named_by_its_display_and_serde_is_the_plain_text() {
        let id = TestId::junit("tests.test_calc", "test_mean[1-2]", None);
        let name = TestName::from(&id);
        assert_eq!(name.as_str(), "tests.test_calc::test_mean[1-2]");
        let json = serde_json::to_string(&name).unwrap();
        assert_eq!(json, "\"tests.test_calc::test_mean[1-2]\"");
        assert_eq!(serde_json::from_str::<TestName>(&json).unwrap(), name);
    }

    #[test]
    fn junit_names_are_matched_to_new_tests() {
        let new = vec![
            "tests/test_calc.py::test_median".to_owned(),
            "calc.test.js::adds two".to_owned(),
        ];
        let among = |name: &str| TestName::new(name).is_among(&new);
        assert!(among("test_median"));
        assert!(among("tests.test_calc::test_median[1-2]"));
        assert!(among("calc adds two"));
        assert!(among("calc › adds two"));
        assert!(!among("test_mean"));
        assert!(!among("tests.test_calc::test_median_old"));
    }

    proptest! {
        /// Whatever enclosing names, separators and parameters a runner writes around a
        /// function, the function reads back (and the parameters do).
        #[test]
        fn the_function_reads_back_through_any_runner_shape(
            outer in prop::collection::vec("[a-z][a-z0-9_]{0,6}", 0..3),
            function in "[a-z][a-z0-9_]{0,8}",
            sep in prop::sample::select(vec![" › ", " > ", "::", "."]),
            params in prop::option::of("\\[[a-z0-9-]{1,5}\\]"),
        ) {
            let mut text = outer.join(sep);
            if !text.is_empty() {
                text.push_str(sep);
            }
            text.push_str(&function);
            text.push_str(params.as_deref().unwrap_or_default());
            let name = TestName::new(text);
            prop_assert_eq!(name.function(), function.as_str());
            prop_assert_eq!(name.parameters(), params.as_deref());
        }

        /// Any text at all: reading its parts never panics, and the function is a part of it.
        #[test]
        fn any_text_reads_without_panic(text in ".{0,40}") {
            let name = TestName::new(text.clone());
            prop_assert!(text.contains(name.function()));
            let _ = name.module_files();
        }
    }
}
