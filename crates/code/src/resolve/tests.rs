//! The resolver on small repositories of each language: re-exports, methods of instances,
//! fixtures, helpers two calls away, `super::` from a test module, a crate's integration test,
//! Go's package, and stubs that never stand in for their source.

use super::*;

/// A repository with these files; the sites' code under test as `(role, path, Owner.name,
/// depth)`.
fn reach(files: &[(&str, &str)], sites: &[Site]) -> Vec<(Role, String, String, u8)> {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let full = dir.path().join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, text).unwrap();
    }
    let mut sources = Sources::new(dir.path());
    under_test(&mut sources, sites)
        .into_iter()
        .map(|r| (r.role, r.path, r.def.qualified(), r.depth))
        .collect()
}

fn site(path: &str, line: usize, name: &str) -> Site {
    Site {
        path: path.into(),
        line: Some(line),
        name: Some(TestName::new(name)),
    }
}

fn found(role: Role, path: &str, name: &str, depth: u8) -> (Role, String, String, u8) {
    (role, path.into(), name.into(), depth)
}

#[test]
fn python_a_function_imported_through_a_package_re_export() {
    let reached = reach(
        &[
            (
                "winstats/__init__.py",
                "from .window import windows\n\n__all__ = [\"windows\"]\n",
            ),
            (
                "winstats/window.py",
                "def windows(values, size):\n    return [values[i : i + size] for i in range(len(values) - size)]\n",
            ),
            (
                "tests/test_window.py",
                "from winstats import windows\n\n\ndef test_windows():\n    assert windows([1, 2, 3, 4], 2) == [[1, 2], [2, 3], [3, 4]]\n",
            ),
        ],
        &[site(
            "tests/test_window.py",
            5,
            "tests.test_window::test_windows",
        )],
    );
    assert_eq!(
        reached,
        [
            found(Role::Test, "tests/test_window.py", "test_windows", 0),
            found(Role::UnderTest, "winstats/window.py", "windows", 1),
        ]
    );
}

#[test]
fn python_methods_of_instances_fixtures_and_a_helper_two_calls_away() {
    let reached = reach(
        &[
            (
                "src/ledger/__init__.py",
                "from ledger.book import Book\nfrom ledger.money import *\n",
            ),
            (
                "src/ledger/money.py",
                "def cents(amount):\n    return int(amount * 10)\n\n\ndef total(amounts):\n    return sum(cents(a) for a in amounts)\n",
            ),
            (
                "src/ledger/book.py",
                "from .money import total\n\n\nclass Base:\n    def size(self):\n        return 0\n\n\nclass Book(Base):\n    def __init__(self):\n        self.items = []\n\n    def add(self, amount):\n        self.items.append(amount)\n\n    def balance(self):\n        return total(self.items)\n",
            ),
            (
                "tests/conftest.py",
                "import pytest\nfrom ledger import Book\n\n\n@pytest.fixture\ndef book():\n    return Book()\n",
            ),
            (
                "tests/test_book.py",
                "import ledger\n\n\ndef test_balance(book):\n    book.add(1.5)\n    assert book.balance() == 150\n    assert book.size() == 0\n\n\ndef test_money():\n    assert ledger.total([1]) == 100\n",
            ),
        ],
        &[site(
            "tests/test_book.py",
            6,
            "tests.test_book::test_balance",
        )],
    );
    assert_eq!(
        reached,
        [
            found(Role::Test, "tests/test_book.py", "test_balance", 0),
            found(Role::Fixture, "tests/conftest.py", "book", 1),
            found(Role::UnderTest, "src/ledger/book.py", "Book.add", 1),
            found(Role::UnderTest, "src/ledger/book.py", "Book.balance", 1),
            found(Role::UnderTest, "src/ledger/book.py", "Base.size", 1),
            found(Role::UnderTest, "src/ledger/book.py", "Book.__init__", 2),
            found(Role::UnderTest, "src/ledger/money.py", "total", 2),
            found(Role::UnderTest, "src/ledger/money.py", "cents", 3),
        ]
    );
}

#[test]
fn python_a_module_attribute_through_a_star_re_export() {
    let reached = reach(
        &[
            ("src/ledger/__init__.py", "from ledger.money import *\n"),
            ("src/ledger/money.py", "def total(amounts):\n    return 0\n"),
            (
                "src/ledger/money.pyi",
                "def total(amounts: list[float]) -> int: ...\n",
            ),
            (
                "tests/test_money.py",
                "import ledger\n\n\ndef test_money():\n    assert ledger.total([1]) == 100\n",
            ),
        ],
        &[site(
            "tests/test_money.py",
            5,
            "tests.test_money::test_money",
        )],
    );
    assert_eq!(
        reached[1],
        found(Role::UnderTest, "src/ledger/money.py", "total", 1),
        "the source, never its stub: {reached:?}"
    );
}

#[test]
fn typescript_index_re_exports_classes_and_a_helper() {
    let reached = reach(
        &[
            (
                "package.json",
                r#"{"name": "winstats", "main": "dist/index.js"}"#,
            ),
            (
                "src/index.ts",
                "export { windows } from './window';\nexport * from './counter';\n",
            ),
            (
                "src/window.ts",
                "import { span } from './span';\n\nexport function windows(values: number[], size: number): number[][] {\n  return span(values.length, size).map((i) => values.slice(i, i + size));\n}\n",
            ),
            (
                "src/span.ts",
                "export const span = (n: number, size: number) => [...Array(n - size).keys()];\n",
            ),
            (
                "src/window.d.ts",
                "export declare function windows(v: number[], s: number): number[][];\n",
            ),
            (
                "src/counter.ts",
                "export class Counter {\n  private n = 0;\n  add(k: number): Counter {\n    this.n += k;\n    return this;\n  }\n  get total(): number {\n    return this.n;\n  }\n}\n",
            ),
            (
                "test/window.test.ts",
                "import { windows, Counter } from '../src';\n\ndescribe('windows', () => {\n  it('covers the end', () => {\n    expect(windows([1, 2, 3, 4], 2)).toEqual([[1, 2], [2, 3], [3, 4]]);\n  });\n  it('counts', () => {\n    const c = new Counter();\n    expect(c.add(2).add(3)).toBeTruthy();\n  });\n});\n",
            ),
        ],
        &[
            site("test/window.test.ts", 5, "windows covers the end"),
            site("test/window.test.ts", 9, "windows › counts"),
        ],
    );
    assert_eq!(
        reached,
        [
            found(Role::Test, "test/window.test.ts", "covers the end", 0),
            found(Role::Test, "test/window.test.ts", "counts", 0),
            found(Role::UnderTest, "src/window.ts", "windows", 1),
            found(Role::UnderTest, "src/counter.ts", "Counter.add", 1),
            found(Role::UnderTest, "src/span.ts", "span", 2),
        ]
    );
}

#[test]
fn javascript_require_and_the_packages_own_name() {
    let reached = reach(
        &[
            (
                "package.json",
                r#"{"name": "words", "main": "lib/index.js"}"#,
            ),
            ("lib/index.js", "module.exports = require('./count');\n"),
            (
                "lib/count.js",
                "exports.count = function (text) {\n  return text.split(' ').length - 1;\n};\n",
            ),
            (
                "test/count.test.js",
                "const { count } = require('words');\nconst assert = require('node:assert');\n\ntest('counts', () => {\n  assert.equal(count('a b'), 2);\n});\n",
            ),
        ],
        &[site("test/count.test.js", 5, "counts")],
    );
    assert_eq!(
        reached,
        [
            found(Role::Test, "test/count.test.js", "counts", 0),
            found(Role::UnderTest, "lib/count.js", "count", 1),
        ]
    );
}

#[test]
fn rust_a_cfg_test_module_through_super_and_an_integration_test_through_the_crate() {
    let lib = "mod window;\n\npub use window::windows;\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n    fn four() {\n        assert_eq!(windows(&[1, 2, 3, 4], 2).len(), 3);\n    }\n}\n";
    let window = "use crate::span::span;\n\n/// Every run.\npub fn windows(values: &[i32], size: usize) -> Vec<Vec<i32>> {\n    span(values.len(), size).map(|i| values[i..i + size].to_vec()).collect()\n}\n\npub struct Counter {\n    n: u32,\n}\n\nimpl Counter {\n    pub fn new() -> Self {\n        Counter { n: 0 }\n    }\n\n    pub fn add(&mut self, k: u32) {\n        self.n += k;\n    }\n}\n";
    let reached = reach(
        &[
            (
                "Cargo.toml",
                "[package]\nname = \"win-stats\"\nversion = \"0.1.0\"\n\n[workspace]\n",
            ),
            ("src/lib.rs", &format!("pub mod span;\n{lib}")),
            ("src/window.rs", window),
            (
                "src/span.rs",
                "pub fn span(n: usize, size: usize) -> std::ops::Range<usize> {\n    0..n - size\n}\n",
            ),
            (
                "tests/api.rs",
                "use win_stats::window_free as _;\nuse win_stats::windows;\n\n#[test]\nfn one() {\n    let mut c = win_stats::Counter::new();\n    c.add(1);\n    assert_eq!(windows(&[1], 1), vec![vec![1]]);\n}\n",
            ),
        ],
        &[
            site("src/lib.rs", 12, "win_stats::tests::four"),
            site("tests/api.rs", 8, "win_stats::api::one"),
        ],
    );
    assert_eq!(
        reached,
        [
            found(Role::Test, "src/lib.rs", "four", 0),
            found(Role::Test, "tests/api.rs", "one", 0),
            found(Role::UnderTest, "src/window.rs", "windows", 1),
            found(Role::UnderTest, "src/span.rs", "span", 2),
        ],
        "Counter is not re-exported at the crate root: `win_stats::Counter` names nothing"
    );
}

#[test]
fn rust_methods_through_a_constructor_and_a_re_exported_type() {
    let reached = reach(
        &[
            (
                "Cargo.toml",
                "[package]\nname = \"counter\"\nversion = \"0.1.0\"\n",
            ),
            ("src/lib.rs", "mod counter;\npub use counter::Counter;\n"),
            (
                "src/counter.rs",
                "pub struct Counter {\n    n: u32,\n}\n\nimpl Counter {\n    pub fn new() -> Self {\n        Counter { n: 0 }\n    }\n\n    pub fn add(&mut self, k: u32) -> &mut Self {\n        self.bump(k);\n        self\n    }\n\n    fn bump(&mut self, k: u32) {\n        self.n += k - 1;\n    }\n}\n",
            ),
            (
                "tests/count.rs",
                "use counter::Counter;\n\n#[test]\nfn adds() {\n    let mut c = Counter::new();\n    c.add(2);\n}\n",
            ),
        ],
        &[site("tests/count.rs", 6, "counter::count::adds")],
    );
    assert_eq!(
        reached,
        [
            found(Role::Test, "tests/count.rs", "adds", 0),
            found(Role::UnderTest, "src/counter.rs", "Counter.new", 1),
            found(Role::UnderTest, "src/counter.rs", "Counter.add", 1),
            found(Role::UnderTest, "src/counter.rs", "Counter.bump", 2),
        ]
    );
}

#[test]
fn go_calls_within_the_package_and_methods_of_a_constructed_value() {
    let reached = reach(
        &[
            ("go.mod", "module example.com/calc\n\ngo 1.21\n"),
            (
                "calc.go",
                "package calc\n\n// Mean averages.\nfunc Mean(v []float64) float64 {\n\treturn sum(v) / float64(len(v)-1)\n}\n",
            ),
            (
                "sum.go",
                "package calc\n\nfunc sum(v []float64) float64 {\n\tt := 0.0\n\tfor _, x := range v {\n\t\tt += x\n\t}\n\treturn t\n}\n\ntype Window struct{ n int }\n\nfunc NewWindow(n int) *Window { return &Window{n: n} }\n\nfunc (w *Window) Push(x int) { w.n += x }\n",
            ),
            (
                "calc_test.go",
                "package calc\n\nimport \"testing\"\n\nfunc TestMean(t *testing.T) {\n\tw := NewWindow(1)\n\tw.Push(2)\n\tif got := Mean([]float64{1, 2, 3, 4}); got != 2.5 {\n\t\tt.Errorf(\"Mean = %v, want 2.5\", got)\n\t}\n}\n",
            ),
        ],
        &[site("calc_test.go", 9, "TestMean")],
    );
    assert_eq!(
        reached,
        [
            found(Role::Test, "calc_test.go", "TestMean", 0),
            found(Role::UnderTest, "sum.go", "NewWindow", 1),
            found(Role::UnderTest, "sum.go", "Window.Push", 1),
            found(Role::UnderTest, "calc.go", "Mean", 1),
            found(Role::UnderTest, "sum.go", "sum", 2),
        ]
    );
}

#[test]
fn a_line_in_another_function_is_not_taken_for_the_test() {
    let reached = reach(
        &[
            (
                "calc.py",
                "def mean(v):\n    return sum(v) / (len(v) - 1)\n",
            ),
            (
                "tests/test_calc.py",
                "from calc import mean\n\n\ndef test_mean():\n    assert mean([]) == 0\n",
            ),
        ],
        &[site("calc.py", 2, "tests.test_calc::test_mean")],
    );
    assert!(reached.is_empty(), "{reached:?}");
}
