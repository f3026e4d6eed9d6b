//! The re-run filters against the real runners: for each of cargo-nextest, `cargo test`
//! (libtest's JUnit), pytest, jest, vitest and go test (gotestsum's JUnit), a small project whose
//! test names hold `::`, spaces, brackets, regex metacharacters, parametrisations, subtests and
//! names repeated across files runs whole; its failing tests are read from the JUnit report,
//! typed for the runner, turned into that runner's filter, and run again: the re-run must run
//! exactly those tests (`filter::check`), and they must fail again. A runner that is missing
//! fails the test, naming what installs it (scripts/test.sh installs all of them).

use std::path::{Path, PathBuf};
use std::process::Command;

use meta_agent::config::raw::TestFilterFormat;
use meta_agent::gates::filter;
use meta_agent::protocol::test_id::TestId;
use meta_agent::report::{JunitSummary, Limits, parse_junit_file};

use crate::common::git;

/// Ids and outcomes of every test case of a report.
fn read(report: &Path) -> JunitSummary {
    let limits = Limits {
        max_test_ids: 10_000,
        ..Limits::default()
    };
    parse_junit_file(report, &limits).unwrap_or_else(|e| panic!("{}: {e}", report.display()))
}

/// Runs `argv` in `dir`; its output when it cannot start.
fn run(dir: &Path, argv: &[String], env: &[(&str, &str)]) -> std::process::Output {
    Command::new(&argv[0])
        .args(&argv[1..])
        .current_dir(dir)
        .envs(env.iter().copied())
        .output()
        .unwrap_or_else(|e| panic!("{argv:?} could not start: {e}"))
}

fn strings(argv: &[&str]) -> Vec<String> {
    argv.iter().map(|s| (*s).to_owned()).collect()
}

/// One runner's case: the whole run, then the re-run of its failures.
struct Case<'a> {
    runner: TestFilterFormat,
    dir: &'a Path,
    /// The whole suite; writes `report`.
    full: Vec<String>,
    /// The re-run; `{tests}` becomes the filter; writes `report`.
    rerun: Vec<String>,
    report: PathBuf,
    env: &'a [(&'a str, &'a str)],
    /// The failing tests the whole run must report (their display), so the case is not vacuous.
    expect_failing: &'a [&'a str],
}

/// The failing tests of the whole run, typed; asserts the re-run ran exactly them.
fn check_case(case: &Case<'_>) -> Vec<TestId> {
    let out = run(case.dir, &case.full, case.env);
    let full = read(&case.report);
    let exists = |p: &Path| case.dir.join(p).is_file();
    let failing: Vec<TestId> = full
        .failures
        .iter()
        .map(|f| f.id().typed(case.runner, &exists))
        .collect();
    let mut shown: Vec<String> = failing.iter().map(ToString::to_string).collect();
    shown.sort();
    let mut expected: Vec<String> = case
        .expect_failing
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    expected.sort();
    assert_eq!(
        shown,
        expected,
        "{:?} whole run: {}",
        case.runner,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        full.passed > 0,
        "{:?}: some tests pass and must not be re-run",
        case.runner
    );
    let selection = filter::arguments(case.runner, &failing).expect("selectable");
    let argv: Vec<String> = case
        .rerun
        .iter()
        .flat_map(|arg| {
            if arg == "{tests}" {
                selection.clone()
            } else {
                vec![arg.clone()]
            }
        })
        .collect();
    std::fs::remove_file(&case.report).expect("old report removed");
    let out = run(case.dir, &argv, case.env);
    let again = read(&case.report);
    assert_eq!(
        filter::check(&failing, &again.outcomes, again.outcomes_omitted),
        Ok(()),
        "{:?} re-run {argv:?}: {}{}",
        case.runner,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        again.failed + again.errors,
        failing.len() as u64,
        "the failures fail again"
    );
    failing
}

fn write(dir: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

const RUST_LIB: &str = "pub fn add(a: i32, b: i32) -> i32 { a + b }\n\
    #[cfg(test)]\nmod tests {\n\
    #[test] fn adds() { assert_eq!(super::add(1, 2), 4); }\n\
    #[test] fn adds_ok() {}\n\
    mod inner { #[test] fn deep() { panic!(\"deep\") } #[test] fn deep_ok() {} }\n}\n";
/// An integration test whose binary id holds `::` (`rerun_crate::test_version_req`), with a raw
/// identifier in a module.
const RUST_IT: &str = "#[test] fn test_less_than() { assert_eq!(rerun_crate::add(1, 1), 3); }\n\
    #[test] fn test_less_than_or_equal() {}\n\
    mod m { #[test] fn r#type() { panic!(\"raw\") } #[test] fn fine() {} }\n";

fn rust_crate(dir: &Path) {
    write(
        dir,
        &[
            (
                "Cargo.toml",
                "[package]\nname = \"rerun-crate\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
            ),
            ("src/lib.rs", RUST_LIB),
            ("tests/test_version_req.rs", RUST_IT),
            (
                "src/bin/tool-x.rs",
                "fn main() {}\n#[test] fn in_bin() { panic!() }\n#[test] fn in_bin_ok() {}\n",
            ),
            (
                ".config/nextest.toml",
                "[profile.default]\nretries = 0\n[profile.default.junit]\npath = \"junit.xml\"\n",
            ),
        ],
    );
}

/// The crates of both Rust cases build into one target directory, kept apart from the suite's.
fn cargo_env(target: &Path) -> Vec<(&'static str, String)> {
    vec![("CARGO_TARGET_DIR", target.display().to_string())]
}

#[test]
fn nextest_reruns_exactly_the_failing_tests_binary_ids_with_colons_included() {
    let dir = tempfile::tempdir().unwrap();
    rust_crate(dir.path());
    let target = dir.path().join("target");
    let env = cargo_env(&target);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let report = target.join("nextest/default/junit.xml");
    let nextest = ["cargo", "nextest", "run", "--no-fail-fast"];
    let failing = check_case(&Case {
        runner: TestFilterFormat::Nextest,
        dir: dir.path(),
        full: strings(&nextest),
        rerun: [strings(&nextest), strings(&["-E", "{tests}"])].concat(),
        report,
        env: &env,
        expect_failing: &[
            "rerun-crate::tests::adds",
            "rerun-crate::tests::inner::deep",
            "rerun-crate::test_version_req::test_less_than",
            "rerun-crate::test_version_req::m::r#type",
            "rerun-crate::bin/tool-x::in_bin",
        ],
    });
    assert!(
        failing
            .iter()
            .any(|t| t.classname == "rerun-crate::test_version_req" && t.name == "test_less_than"),
        "the binary id is kept whole"
    );
}

/// libtest's JUnit (`--format junit`, unstable: `RUSTC_BOOTSTRAP=1`) is one document per test
/// binary on stdout; each is read on its own.
#[test]
fn cargo_test_reruns_exactly_the_failing_tests_by_exact_path() {
    let dir = tempfile::tempdir().unwrap();
    rust_crate(dir.path());
    let target = dir.path().join("target");
    let junit = |extra: &[&str]| -> JunitSummary {
        let mut argv = strings(&["cargo", "test", "--no-fail-fast", "-q", "--"]);
        argv.extend(strings(extra));
        argv.extend(strings(&["-Z", "unstable-options", "--format", "junit"]));
        let env = [
            ("RUSTC_BOOTSTRAP", "1"),
            ("CARGO_TARGET_DIR", target.to_str().unwrap()),
        ];
        let out = run(dir.path(), &argv, &env);
        let stdout = String::from_utf8(out.stdout).unwrap();
        let mut all = JunitSummary::default();
        for (i, document) in stdout.split("<?xml").skip(1).enumerate() {
            let path = dir.path().join(format!("junit-{i}.xml"));
            std::fs::write(&path, format!("<?xml{document}")).unwrap();
            let one = read(&path);
            all.passed += one.passed;
            all.failed += one.failed;
            all.failures.extend(one.failures);
            all.outcomes.extend(one.outcomes);
        }
        all
    };
    let full = junit(&[]);
    let failing: Vec<TestId> = full
        .failures
        .iter()
        .map(|f| f.id().typed(TestFilterFormat::Cargo, &|_| false))
        .collect();
    let mut paths = filter::arguments(TestFilterFormat::Cargo, &failing).unwrap();
    paths.sort();
    assert_eq!(
        paths,
        [
            "in_bin",
            "m::r#type",
            "test_less_than",
            "tests::adds",
            "tests::inner::deep"
        ]
    );
    assert!(full.passed >= 4);
    let args: Vec<&str> = paths.iter().map(String::as_str).collect();
    let again = junit(&[&["--exact"], &args[..]].concat());
    assert_eq!(filter::check(&failing, &again.outcomes, 0), Ok(()));
    assert_eq!(again.failed, 5);
}

const PYTEST_FILE: &str = r#"import pytest


class TestThing:
    @pytest.mark.parametrize("x", ["a b", "c::d", "[x]", "e.f", "ü", "a-b"])
    def test_param(self, x):
        assert x in ("a-b",)

    class TestInner:
        def test_nested(self):
            assert False

        def test_nested_ok(self):
            pass


def test_plain():
    assert False


@pytest.mark.parametrize("a,b", [(1, 2), (3, 4), (5, 0)], ids=["one two", "x/y", "fine"])
def test_ids(a, b):
    assert a > b
"#;

#[test]
fn pytest_reruns_exactly_the_failing_node_ids() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        &[
            ("tests/__init__.py", ""),
            ("tests/sub/__init__.py", ""),
            ("tests/sub/test_odd.py", PYTEST_FILE),
            (
                "tests/test_plain.py",
                "def test_plain():\n    assert True\n",
            ),
        ],
    );
    let report = dir.path().join("junit.xml");
    let pytest = [
        "python3",
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-o",
        "junit_family=xunit2",
    ];
    let junit = format!("--junitxml={}", report.display());
    check_case(&Case {
        runner: TestFilterFormat::Pytest,
        dir: dir.path(),
        full: [strings(&pytest), vec![junit.clone()]].concat(),
        rerun: [strings(&pytest), vec![junit, "{tests}".into()]].concat(),
        report,
        env: &[],
        expect_failing: &[
            "tests.sub.test_odd.TestThing::test_param[a b]",
            "tests.sub.test_odd.TestThing::test_param[c::d]",
            "tests.sub.test_odd.TestThing::test_param[[x]]",
            "tests.sub.test_odd.TestThing::test_param[e.f]",
            r"tests.sub.test_odd.TestThing::test_param[\xfc]",
            "tests.sub.test_odd.TestThing.TestInner::test_nested",
            "tests.sub.test_odd::test_plain",
            "tests.sub.test_odd::test_ids[one two]",
            "tests.sub.test_odd::test_ids[x/y]",
        ],
    });
}

/// Where `npm ci` put the JavaScript runners (scripts/test.sh does it).
fn node_bin(tool: &str) -> PathBuf {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/rerun-tools/node_modules/.bin");
    let path = bin.join(tool);
    assert!(
        path.exists(),
        "{} is missing: run `npm ci` in fixtures/rerun-tools (scripts/test.sh does)",
        path.display()
    );
    path
}

const JS_A: &str = r#"describe("outer (x)", () => {
  test("adds [1, 2]", () => { expect(1 + 2).toBe(4); });
  describe("inner::deep", () => {
    test("a > b?", () => { expect(1).toBe(2); });
    test("ok", () => {});
  });
});
test("top level $ ^", () => { expect(0).toBe(1); });
test("same name", () => { expect(0).toBe(1); });
test.each([[1, 2], [3, 3]])("each %i + %i", (a, b) => { expect(a).toBe(b); });
"#;
/// A test named like a failing one of the other file: it passes and must not run again.
const JS_B: &str = "test(\"same name\", () => {});\ntest(\"other\", () => {});\n";

#[test]
fn jest_reruns_exactly_the_failing_tests_by_full_name_and_file() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        &[
            ("test/a.test.js", JS_A),
            ("test/b.test.js", JS_B),
            (
                "package.json",
                "{\"name\": \"rerun-jest\", \"private\": true}\n",
            ),
        ],
    );
    let jest = node_bin("jest").display().to_string();
    // jest resolves its reporters from the project.
    let modules = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/rerun-tools/node_modules");
    std::os::unix::fs::symlink(modules, dir.path().join("node_modules")).unwrap();
    let full = strings(&[
        &jest,
        "--ci",
        "--reporters=default",
        "--reporters=jest-junit",
    ]);
    let env = [
        ("JEST_JUNIT_OUTPUT_DIR", "out"),
        ("JEST_JUNIT_ADD_FILE_ATTRIBUTE", "true"),
    ];
    let failing = check_case(&Case {
        runner: TestFilterFormat::Jest,
        dir: dir.path(),
        full: full.clone(),
        rerun: [full, strings(&["-t", "{tests}"])].concat(),
        report: dir.path().join("out/junit.xml"),
        env: &env,
        expect_failing: &[
            "outer (x) adds [1, 2]",
            "outer (x) inner::deep a > b?",
            " top level $ ^",
            " same name",
            " each 1 + 2",
        ],
    });
    assert!(
        failing
            .iter()
            .all(|t| t.file.as_deref() == Some("test/a.test.js"))
    );
}

#[test]
fn vitest_reruns_exactly_the_failing_tests_by_name_and_file() {
    let dir = tempfile::tempdir().unwrap();
    let indented = |text: &str| text.lines().map(|l| format!("{l}\n")).collect::<String>();
    write(
        dir.path(),
        &[
            ("test/a.test.js", &indented(JS_A)),
            ("test/b.test.js", JS_B),
            (
                "vitest.config.mjs",
                "export default { test: { globals: true, include: [\"test/**/*.test.js\"] } };\n",
            ),
            (
                "package.json",
                "{\"name\": \"rerun-vitest\", \"private\": true, \"type\": \"module\"}\n",
            ),
        ],
    );
    let vitest = node_bin("vitest").display().to_string();
    let full = strings(&[
        &vitest,
        "run",
        "--reporter=default",
        "--reporter=junit",
        "--outputFile.junit=out/junit.xml",
    ]);
    check_case(&Case {
        runner: TestFilterFormat::Vitest,
        dir: dir.path(),
        full: full.clone(),
        rerun: [full, strings(&["-t", "{tests}"])].concat(),
        report: dir.path().join("out/junit.xml"),
        env: &[],
        expect_failing: &[
            "test/a.test.js::outer (x) > adds [1, 2]",
            "test/a.test.js::outer (x) > inner::deep > a > b?",
            "test/a.test.js::top level $ ^",
            "test/a.test.js::same name",
            "test/a.test.js::each 1 + 2",
        ],
    });
}

const GO_ROOT: &str = r#"package rerun

import "testing"

func TestAdds(t *testing.T) { t.Fatal("adds") }
func TestOK(t *testing.T)   {}
func TestTable(t *testing.T) {
	for _, name := range []string{"two words", "a|b", "x.y", "fine"} {
		t.Run(name, func(t *testing.T) {
			if name != "fine" {
				t.Fatal(name)
			}
		})
	}
}
"#;
/// A package with a test named like a failing one of the root package: it passes.
const GO_SUB: &str = "package sub\n\nimport \"testing\"\n\nfunc TestAdds(t *testing.T) {}\n";

#[test]
fn go_test_reruns_exactly_the_failing_tests_subtests_and_packages() {
    for tool in ["go", "gotestsum"] {
        assert!(
            Command::new(tool).arg("--version").output().is_ok()
                || Command::new(tool).arg("version").output().is_ok(),
            "`{tool}` is not on PATH: scripts/test.sh installs Debian's golang-go and gotestsum"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        &[
            ("go.mod", "module example.com/rerun\n\ngo 1.19\n"),
            ("calc_test.go", GO_ROOT),
            ("pkg/sub/sub_test.go", GO_SUB),
        ],
    );
    let home = dir.path().join("home");
    let cache = dir.path().join("cache");
    let env = [
        ("HOME", home.to_str().unwrap()),
        ("GOCACHE", cache.to_str().unwrap()),
        ("GOFLAGS", "-mod=mod"),
        ("GOPROXY", "off"),
    ];
    check_case(&Case {
        runner: TestFilterFormat::Go,
        dir: dir.path(),
        full: strings(&["gotestsum", "--junitfile", "junit.xml", "--", "./..."]),
        rerun: strings(&[
            "gotestsum",
            "--junitfile",
            "junit.xml",
            "--",
            "-run",
            "{tests}",
        ]),
        report: dir.path().join("junit.xml"),
        env: &env,
        expect_failing: &[
            "example.com/rerun::TestAdds",
            "example.com/rerun::TestTable/two_words",
            "example.com/rerun::TestTable/a|b",
            "example.com/rerun::TestTable/x.y",
            "example.com/rerun::TestTable",
        ],
    });
}

/// The templates of every signature the run found.
fn templates(events: &[serde_json::Value]) -> Vec<String> {
    super::engine::events_named(events, "signature_found")
        .iter()
        .map(|e| e["template"].to_string())
        .collect()
}

/// The configuration of the end-to-end crate: the Rust preset's nextest gate, its `rerun_failed`
/// included, on a crate in a subdirectory of the repository.
const CRATE_CONFIG: &str = r#"version: 1
preset: none
gates:
  - name: tests
    kind: tests
    workdir: semverish
    run: [cargo, nextest, run, --no-fail-fast, --profile, meta-agent, --tool-config-file, "meta-agent:{report_dir}/nextest.toml"]
    junit: "{report_dir}/junit.xml"
    rerun_failed:
      format: nextest
      run: [cargo, nextest, run, --no-fail-fast, --profile, meta-agent, --tool-config-file, "meta-agent:{report_dir}/nextest.toml", -E, "{tests}"]
    files:
      nextest.toml: |
        [profile.meta-agent]
        fail-fast = false
        retries = 0
        [profile.meta-agent.junit]
        path = "{report_dir}/junit.xml"
"#;

/// Issue #24's defect, end to end through the binary: a crate whose integration test
/// (`semverish::test_version_req`, a binary id holding `::`) fails; the flaky check and the fast
/// re-run select exactly it, the scripted one-line fix is judged passed in one iteration and
/// committed, and no harness failure ("exited with code 4", nextest's "no tests to run") is
/// taken for a verdict or learned as a signature.
#[test]
fn a_crates_failing_integration_test_is_rerun_alone_and_its_fix_passes_in_one_iteration() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source");
    write(
        &source,
        &[
            (".gitignore", "target/\n"),
            (".meta-agent.yml", CRATE_CONFIG),
            (
                "semverish/Cargo.toml",
                "[package]\nname = \"semverish\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
            ),
            (
                "semverish/src/lib.rs",
                "/// Whether `a` is below `b`.\npub fn less_than(a: u32, b: u32) -> bool {\n    a <= b\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn one_below_two() {\n        assert!(super::less_than(1, 2));\n    }\n}\n",
            ),
            (
                "semverish/tests/test_version_req.rs",
                "#[test]\nfn test_less_than() {\n    assert!(!semverish::less_than(2, 2));\n}\n\n#[test]\nfn test_less_than_below() {\n    assert!(semverish::less_than(1, 2));\n}\n",
            ),
        ],
    );
    let (scratch, work) = crate::common::scratch_repo(&source);
    let (events, outcome) = super::engine::committed_in_one_iteration(
        &work,
        scratch.path(),
        "title: Fix less_than at equality\nedits:\n  - summary: compare strictly in less_than\n    changes:\n      - replace: {path: semverish/src/lib.rs, search: 'a <= b', replace: 'a < b'}\n",
    );
    let commands: Vec<&str> = super::engine::events_named(&events, "gate_started")
        .iter()
        .filter_map(|e| e["command"].as_str())
        .collect();
    let filter = "-E (binary_id(=semverish::test_version_req) & test(=test_less_than))";
    assert_eq!(
        commands
            .iter()
            .map(|c| c.ends_with(filter))
            .collect::<Vec<_>>(),
        [false, true, false],
        "three gate runs: the baseline, the flaky check selecting the failing integration test by \
         its whole binary id, the change's gates on its pristine checkout: {commands:#?}"
    );
    assert!(
        super::engine::events_named(&events, "rerun_rejected").is_empty(),
        "every re-run ran exactly what it selected"
    );
    let signatures = templates(&events);
    assert!(
        signatures
            .iter()
            .all(|t| !t.contains("code 4") && !t.contains("exited with")),
        "{signatures:#?}"
    );
    let committed = git(
        &work,
        &["show", "--format=", crate::common::run_branch(&outcome)],
    );
    assert!(committed.contains("+    a < b"), "{committed}");
    assert!(
        !committed.contains("code 4") && !committed.contains("no tests to run"),
        "nothing learned from a harness failure: {committed}"
    );
}

/// A re-run filter that selects nothing (here: a `-k` that deselects every test) is a harness
/// problem: the event says so, the gate runs whole instead, nothing is learned from it, and the
/// scripted fix is still judged on the real gates and committed in one iteration.
#[test]
fn a_filter_that_selects_nothing_is_a_harness_problem_never_a_verdict() {
    let (dir, work) = super::engine::example_with(super::engine::wrong_mean);
    let config = work.join(".meta-agent.yml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(
        "  - name: tests\n    rerun_failed:\n      format: pytest\n      run: [python3, -m, pytest, -q, -p, no:cacheprovider, -o, junit_family=xunit2, \"--junitxml={report_dir}/junit.xml\", \"{tests}\", -k, no_such_test]\n",
    );
    std::fs::write(&config, text).unwrap();
    git(
        &work,
        &["commit", "-q", "-am", "a re-run that selects nothing"],
    );
    let (events, outcome) = super::engine::committed_in_one_iteration(
        &work,
        dir.path(),
        "title: Fix mean of floats\nedits:\n  - summary: use true division\n    changes:\n      - replace: {path: calc.py, search: 'sum(values) // len(values)', replace: 'sum(values) / len(values)'}\n",
    );
    let rejected = super::engine::events_named(&events, "rerun_rejected");
    assert!(!rejected.is_empty(), "the bad filter is seen");
    assert_eq!(rejected[0]["gate"], "tests");
    let reason = rejected[0]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("the re-run filter selected 0 of the 1 failing test(s); not run: `tests.test_calc::test_mean`"),
        "{reason}"
    );
    assert_eq!(
        outcome["flaky"],
        serde_json::json!([]),
        "the failing test was re-run whole, not taken for flaky"
    );
    let signatures = templates(&events);
    assert!(
        signatures.iter().all(|t| !t.contains("exited with code")),
        "{signatures:#?}"
    );
}
