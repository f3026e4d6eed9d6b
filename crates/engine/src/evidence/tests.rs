use super::*;

/// A base tree held in memory.
struct Tree(Vec<(String, String)>, Vec<String>);

impl Tree {
    fn new(files: &[(&str, &str)]) -> Tree {
        let files: Vec<(String, String)> = files
            .iter()
            .map(|(p, t)| ((*p).to_owned(), (*t).to_owned()))
            .collect();
        let paths = files.iter().map(|(p, _)| p.clone()).collect();
        Tree(files, paths)
    }
}

impl BaseTree for Tree {
    fn files(&self) -> &[String] {
        &self.1
    }
    fn read(&self, path: &str) -> Option<String> {
        self.0
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, t)| t.clone())
    }
}

const TEST_CALC: &str = "from calc import mean\n\n\ndef test_mean():\n    assert mean([1, 2]) == 1.5\n\n\ndef test_add():\n    assert 1 + 1 == 2\n";

fn base() -> Tree {
    Tree::new(&[
        ("calc.py", "def mean(v):\n    return sum(v) // len(v)\n"),
        ("tests/test_calc.py", TEST_CALC),
    ])
}

fn change(path: &str, base: Option<&str>, now: Option<&str>) -> Change {
    Change {
        path: path.into(),
        base: base.map(Into::into),
        now: now.map(Into::into),
    }
}

fn kinds(changes: &[Change], tree: &Tree) -> Vec<&'static str> {
    check(changes, tree)
        .iter()
        .map(|f| f.kind.as_str())
        .collect()
}

fn edited(from: &str, to: &str) -> Change {
    assert!(TEST_CALC.contains(from));
    change(
        "tests/test_calc.py",
        Some(TEST_CALC),
        Some(&TEST_CALC.replacen(from, to, 1)),
    )
}

#[test]
fn a_loosened_assertion_is_a_changed_test() {
    let found = check(&[edited("== 1.5", ">= 1")], &base());
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].kind, EvidenceKind::TestChanged);
    assert!(
        found[0].detail.contains("`assert mean([1, 2]) >= 1`"),
        "{found:?}"
    );
}

#[test]
fn an_expected_value_rewritten_to_the_buggy_output_is_a_changed_test() {
    assert_eq!(
        kinds(&[edited("== 1.5", "== 1")], &base()),
        ["test_changed"]
    );
}

#[test]
fn a_deleted_test_function_or_file_is_refused() {
    let removed = edited("\n\ndef test_mean():\n    assert mean([1, 2]) == 1.5\n", "");
    assert_eq!(kinds(&[removed], &base()), ["test_changed"]);
    let deleted = change("tests/test_calc.py", Some(TEST_CALC), None);
    assert_eq!(kinds(&[deleted], &base()), ["test_deleted"]);
}

#[test]
fn a_new_test_appended_or_in_a_new_file_is_welcome() {
    let appended = edited(
        "== 2\n",
        "== 2\n\n\ndef test_median():\n    assert mean([3]) == 3\n",
    );
    let new_file = change(
        "tests/test_more.py",
        None,
        Some("from calc import mean\n\ndef test_one():\n    assert mean([1]) == 1\n"),
    );
    assert_eq!(
        kinds(&[appended.clone(), new_file.clone()], &base()),
        Vec::<&str>::new()
    );
    assert_eq!(
        new_tests(&[appended, new_file]),
        [
            "tests/test_calc.py::test_median",
            "tests/test_more.py::test_one"
        ]
    );
}

#[test]
fn a_widened_import_for_a_new_test_is_welcome_a_rebinding_one_is_not() {
    let widened = edited("from calc import mean\n", "from calc import mean, median\n");
    assert_eq!(kinds(&[widened], &base()), Vec::<&str>::new());
    let rebinding = edited(
        "from calc import mean\n",
        "from calc import mean\nfrom fake import mean\n",
    );
    assert_eq!(kinds(&[rebinding], &base()), ["test_changed"]);
}

#[test]
fn insertions_that_reach_existing_tests_are_refused() {
    let cases = [
        // A skip marker on an existing test.
        ("def test_mean():", "@pytest.mark.skip\ndef test_mean():"),
        // An early return inside an existing test.
        (
            "    assert mean([1, 2])",
            "    return\n    assert mean([1, 2])",
        ),
        // A new test that swallows the rest of an existing one.
        (
            "    assert mean([1, 2])",
            "def test_x():\n    assert mean([1, 2])",
        ),
        // An autouse fixture among the tests.
        (
            "\n\ndef test_add",
            "\n\n@pytest.fixture(autouse=True)\ndef patch():\n    pass\n\n\ndef test_add",
        ),
    ];
    for (from, to) in cases {
        assert_eq!(
            kinds(&[edited(from, to)], &base()),
            ["test_changed"],
            "{to}"
        );
    }
}

#[test]
fn rust_cfg_test_modules_are_test_code_the_rest_of_the_file_is_not() {
    let src = "pub fn mean(v: &[f64]) -> f64 {\n    v.iter().sum::<f64>() / v.len() as f64\n}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n    fn half() {\n        assert_eq!(mean(&[1.0, 2.0]), 1.5);\n    }\n}\n";
    let tree = Tree::new(&[("src/lib.rs", src)]);
    let fix = src.replace("/ v.len() as f64", "/ (v.len() as f64)");
    assert_eq!(
        kinds(&[change("src/lib.rs", Some(src), Some(&fix))], &tree),
        Vec::<&str>::new()
    );
    let loosened = src.replace(
        "assert_eq!(mean(&[1.0, 2.0]), 1.5)",
        "assert!(mean(&[1.0, 2.0]) > 1.0)",
    );
    assert_eq!(
        kinds(&[change("src/lib.rs", Some(src), Some(&loosened))], &tree),
        ["test_changed"]
    );
    let added = src.replace(
        "        assert_eq!(mean(&[1.0, 2.0]), 1.5);\n    }\n",
        "        assert_eq!(mean(&[1.0, 2.0]), 1.5);\n    }\n\n    #[test]\n    fn one() {\n        assert_eq!(mean(&[1.0]), 1.0);\n    }\n",
    );
    let added = change("src/lib.rs", Some(src), Some(&added));
    assert_eq!(
        kinds(std::slice::from_ref(&added), &tree),
        Vec::<&str>::new()
    );
    assert_eq!(new_tests(&[added]), ["src/lib.rs::one"]);
}

#[test]
fn go_and_js_tests_are_read_by_their_own_rules() {
    let go = "package calc\n\nimport \"testing\"\n\nfunc TestMean(t *testing.T) {\n\tif Mean([]float64{1, 2}) != 1.5 {\n\t\tt.Fatal(\"mean\")\n\t}\n}\n";
    let js = "const { mean } = require('./calc');\n\ntest('mean', () => {\n  expect(mean([1, 2])).toBe(1.5);\n});\n";
    let tree = Tree::new(&[("calc_test.go", go), ("calc.test.js", js)]);
    let go_loose = go.replace("!= 1.5", "< 1");
    let js_loose = js.replace("toBe(1.5)", "toBeGreaterThan(1)");
    assert_eq!(
        kinds(
            &[
                change("calc_test.go", Some(go), Some(&go_loose)),
                change("calc.test.js", Some(js), Some(&js_loose)),
            ],
            &tree
        ),
        ["test_changed", "test_changed"]
    );
}

#[test]
fn test_configuration_is_refused_wherever_it_lives() {
    let tree = base();
    let cases = [
        change(
            "conftest.py",
            None,
            Some("def pytest_runtest_makereport(): pass\n"),
        ),
        change(
            "pytest.ini",
            None,
            Some("[pytest]\naddopts = -p no:warnings\n"),
        ),
        change(
            "pyproject.toml",
            Some("[project]\nname = 'c'\n"),
            Some("[project]\nname = 'c'\n[tool.pytest.ini_options]\naddopts = '-k add'\n"),
        ),
        change(
            "setup.cfg",
            Some("[metadata]\nname = c\n[tool:pytest]\ntestpaths = tests\n"),
            Some("[metadata]\nname = c\n[tool:pytest]\ntestpaths = docs\n"),
        ),
        change(
            "package.json",
            Some("{\"scripts\": {\"test\": \"jest\"}}"),
            Some("{\"scripts\": {\"test\": \"jest || true\"}}"),
        ),
        change(
            "jest.config.js",
            Some("module.exports = {};\n"),
            Some("module.exports = {testPathIgnorePatterns: ['calc']};\n"),
        ),
        change("vitest.config.ts", None, Some("export default {}\n")),
        change(
            ".cargo/config.toml",
            None,
            Some("[build]\nrustflags = ['--cfg', 'x']\n"),
        ),
        change("build.rs", None, Some("fn main() {}\n")),
        change(
            "Makefile",
            Some("build:\n\tcc x.c\ntest:\n\tpytest\n"),
            Some("build:\n\tcc x.c\ntest:\n\tpytest || true\n"),
        ),
        change(
            "go.mod",
            Some("module x\n"),
            Some("module x\nreplace example.com/y => ./fake\n"),
        ),
        change("tests/__init__.py", None, Some("")),
    ];
    for case in cases {
        let path = case.path.clone();
        assert_eq!(kinds(&[case], &tree), ["test_config_changed"], "{path}");
    }
}

#[test]
fn product_parts_of_shared_files_may_change() {
    let tree = base();
    let cases = [
        change(
            "package.json",
            Some("{\"version\": \"1.0.0\", \"scripts\": {\"test\": \"jest\"}}"),
            Some(
                "{\"version\": \"1.0.1\", \"scripts\": {\"test\": \"jest\"}, \"dependencies\": {}}",
            ),
        ),
        change(
            "pyproject.toml",
            Some("[project]\nname = 'c'\n[tool.pytest.ini_options]\naddopts = '-q'\n"),
            Some(
                "[project]\nname = 'c'\nversion = '2'\n[tool.pytest.ini_options]\naddopts = '-q'\n",
            ),
        ),
        change(
            "Makefile",
            Some("build:\n\tcc x.c\ntest:\n\tpytest\n"),
            Some("build:\n\tcc -O2 x.c\ntest:\n\tpytest\n"),
        ),
        change("calc.py", Some("x = 1\n"), Some("x = 2\n")),
    ];
    for case in cases {
        let path = case.path.clone();
        assert_eq!(kinds(&[case], &tree), Vec::<&str>::new(), "{path}");
    }
}

#[test]
fn hooks_and_shadowing_modules_are_refused() {
    let tree = Tree::new(&[
        ("src/calc.py", "def mean(v): ...\n"),
        (
            "tests/test_calc.py",
            "import helpers\nfrom calc import mean\n\ndef test_x():\n    assert helpers.ok()\n",
        ),
        ("web/util.ts", "export const x = 1;\n"),
    ]);
    let cases = [
        (
            change("sitecustomize.py", None, Some("import os\n")),
            "startup_hook",
        ),
        (
            change("zz.pth", None, Some("import fake\n")),
            "startup_hook",
        ),
        (
            change("node_modules/lodash/index.js", None, Some("x\n")),
            "startup_hook",
        ),
        (
            change("calc.py", None, Some("def mean(v): return 1.5\n")),
            "shadowing_module",
        ),
        (
            change("statistics.py", None, Some("x = 1\n")),
            "shadowing_module",
        ),
        (
            change("helpers.py", None, Some("def ok(): return True\n")),
            "shadowing_module",
        ),
        (change("web/util.js", None, Some("x\n")), "shadowing_module"),
    ];
    for (case, kind) in cases {
        let path = case.path.clone();
        assert_eq!(kinds(&[case], &tree), [kind], "{path}");
    }
    let fine = change("src/stats.py", None, Some("def median(v): ...\n"));
    assert_eq!(kinds(&[fine], &tree), Vec::<&str>::new());
}

#[test]
fn snapshots_and_fixtures_may_be_added_not_changed() {
    let tree = Tree::new(&[
        ("src/snapshots/a.snap", "x\n"),
        ("tests/fixtures/in.json", "{}\n"),
    ]);
    let added = change("src/snapshots/b.snap", None, Some("y\n"));
    assert_eq!(kinds(&[added], &tree), Vec::<&str>::new());
    let changed = change("src/snapshots/a.snap", Some("x\n"), Some("y\n"));
    let deleted = change("tests/fixtures/in.json", Some("{}\n"), None);
    assert_eq!(
        kinds(&[changed, deleted], &tree),
        ["test_data_changed", "test_data_changed"]
    );
}

/// The existing tests' run leaves out every test file the change wrote, new ones included, and
/// keeps its product code: what a shared file's product part gains stays, a new module that
/// declares tests under a product name goes, a new Rust module (its test module inside) stays.
#[test]
fn the_test_tree_is_every_test_file_the_change_wrote_and_nothing_else() {
    let rebinding = "import calc\ncalc.mean = lambda v: sum(v) / len(v)\n\n\ndef test_aaa():\n    assert True\n";
    let changes = [
        change(
            "calc.py",
            Some("def mean(v):\n    return sum(v) // len(v)\n"),
            Some("def mean(v):\n    return sum(v) / len(v)\n"),
        ),
        change("tests/test_aaa.py", None, Some(rebinding)),
        edited(
            "\n\n\ndef test_add",
            "\n\n\ndef test_new():\n    assert True\n\n\ndef test_add",
        ),
        change("tests/snapshots/new.snap", None, Some("x")),
        change("checks/verify_calc.py", None, Some(rebinding)),
        change(
            "src/lib/util.py",
            None,
            Some("def helper():\n    return 1\n"),
        ),
        change(
            "src/extra.rs",
            None,
            Some(
                "pub fn one() -> u8 { 1 }\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn one() {}\n}\n",
            ),
        ),
        change(
            "pyproject.toml",
            Some("[project]\nname = \"c\"\n"),
            Some("[project]\nname = \"c\"\ndependencies = [\"attrs\"]\n"),
        ),
        change(
            "setup.cfg",
            Some("[metadata]\nname = c\n"),
            Some("[metadata]\nname = c\n[tool:pytest]\naddopts = -p calc_patch\n"),
        ),
        change("web/sum.test.ts", None, Some("test('adds', () => {});\n")),
        change("pkg/__init__.py", None, Some("")),
    ];
    assert_eq!(
        test_tree_paths(&changes),
        [
            "checks/verify_calc.py",
            "pkg/__init__.py",
            "setup.cfg",
            "tests/snapshots/new.snap",
            "tests/test_aaa.py",
            "tests/test_calc.py",
            "web/sum.test.ts",
        ]
    );
    let unchanged = change("tests/test_calc.py", Some(TEST_CALC), Some(TEST_CALC));
    assert!(test_tree_paths(&[unchanged]).is_empty());
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    fn test_file() -> impl Strategy<Value = Vec<String>> {
        prop::collection::vec("[a-z]{1,8}", 1..6).prop_map(|names| {
            names
                .iter()
                .map(|n| format!("def test_{n}():\n    assert f({n:?}) == 1\n"))
                .collect()
        })
    }

    proptest! {
        /// Changing any one existing line of a test file is refused; appending a new test is not.
        #[test]
        fn any_edit_of_an_existing_line_is_refused(
            blocks in test_file(),
            pick in any::<prop::sample::Index>(),
            replacement in "[ -~]{0,20}",
        ) {
            let text = blocks.join("\n\n");
            let lines: Vec<&str> = text.lines().collect();
            let filled: Vec<usize> = (0..lines.len()).filter(|&i| !lines[i].trim().is_empty()).collect();
            let at = filled[pick.index(filled.len())];
            prop_assume!(lines[at] != replacement);
            let mut edited: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
            edited[at] = replacement;
            let now = edited.join("\n") + "\n";
            let tree = Tree::new(&[("tests/test_p.py", &text)]);
            let found = check(&[change("tests/test_p.py", Some(&text), Some(&now))], &tree);
            prop_assert_eq!(found.len(), 1, "{}", now);
            let appended = format!("{text}\n\ndef test_zz_new():\n    assert g() == 2\n");
            let fine = check(&[change("tests/test_p.py", Some(&text), Some(&appended))], &tree);
            prop_assert!(fine.is_empty(), "{:?}", fine);
        }

        /// Any text in any file: the check answers, never panics.
        #[test]
        fn never_panics(path in "[a-z_/.]{1,20}", old in "\\PC{0,200}", new in "\\PC{0,200}") {
            let tree = Tree::new(&[(path.as_str(), old.as_str())]);
            let _ = check(&[change(&path, Some(&old), Some(&new))], &tree);
            let _ = new_tests(&[change(&path, Some(&old), Some(&new))]);
        }
    }
}
