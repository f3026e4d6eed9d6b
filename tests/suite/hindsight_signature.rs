//! Integration tests for hindsight signatures, on real tool output produced by
//! fixtures/hindsight/regenerate.sh: stability (run1 and run2 of the same failures, in different
//! directories at different times, give the same signatures) and separation (different failures
//! give different signatures).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use meta_agent::hindsight::SignatureKind;
use meta_agent::hindsight::signature::{
    ExtractOptions, ExtractedSignature, InputFormat, extract_file, family_key,
};

use crate::common;

fn logs() -> PathBuf {
    common::fixtures().join("hindsight/logs")
}

/// The directory a fixture's project ran in (regenerate.sh saves it next to the output).
fn root_of(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let stem = name.rsplit_once('.').map_or(name, |(stem, _)| stem);
    let root = std::fs::read_to_string(path.with_file_name(format!("{stem}.root"))).unwrap();
    PathBuf::from(root.trim())
}

fn extract(path: &Path, root: Option<PathBuf>) -> Vec<ExtractedSignature> {
    let opts = ExtractOptions {
        format: InputFormat::Auto,
        repo_root: root,
        limits: Default::default(),
    };
    extract_file(path, &opts).unwrap_or_else(|e| panic!("{e}"))
}

fn fixture(rel: &str) -> Vec<ExtractedSignature> {
    let path = logs().join(rel);
    extract(&path, Some(root_of(&path)))
}

fn ids(sigs: &[ExtractedSignature]) -> BTreeSet<String> {
    sigs.iter().map(|s| s.id.clone()).collect()
}

fn templates(sigs: &[ExtractedSignature]) -> Vec<String> {
    sigs.iter()
        .map(|s| format!("{:?} {}", s.kind, s.template))
        .collect()
}

/// Every run1 fixture with its run2 twin.
fn pairs() -> Vec<(PathBuf, PathBuf)> {
    let mut pairs = Vec::new();
    for tool in std::fs::read_dir(logs()).unwrap() {
        for file in std::fs::read_dir(tool.unwrap().path()).unwrap() {
            let path = file.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap().to_owned();
            if name.contains(".run1.") && !name.ends_with(".root") {
                pairs.push((
                    path.clone(),
                    path.with_file_name(name.replace(".run1.", ".run2.")),
                ));
            }
        }
    }
    pairs.sort();
    pairs
}

#[test]
fn every_fixture_pair_gives_the_same_signatures() {
    let pairs = pairs();
    assert!(
        pairs.len() >= 20,
        "expected the regenerated fixtures, found {}",
        pairs.len()
    );
    for (run1, run2) in pairs {
        let first = extract(&run1, Some(root_of(&run1)));
        let second = extract(&run2, Some(root_of(&run2)));
        assert!(!first.is_empty(), "{} gave no signature", run1.display());
        assert_eq!(
            templates(&first),
            templates(&second),
            "{} vs run2",
            run1.display()
        );
        assert_eq!(ids(&first), ids(&second), "{}", run1.display());
    }
}

#[test]
fn pairs_agree_without_a_repository_root_too() {
    for (run1, run2) in pairs() {
        let first = extract(&run1, None);
        let second = extract(&run2, None);
        assert_eq!(
            templates(&first),
            templates(&second),
            "{} vs run2 (no root)",
            run1.display()
        );
    }
}

#[test]
fn two_runs_happened_in_different_directories() {
    for (run1, run2) in pairs() {
        assert_ne!(root_of(&run1), root_of(&run2), "{}", run1.display());
    }
}

/// The signature whose template contains `needle`, from one fixture.
fn find(sigs: &[ExtractedSignature], needle: &str) -> ExtractedSignature {
    sigs.iter()
        .find(|s| s.template.contains(needle))
        .cloned()
        .unwrap_or_else(|| panic!("no template with {needle:?} in {:#?}", templates(sigs)))
}

#[test]
fn same_file_different_assertion_differs() {
    for fixture_name in ["rust/cargo-test.run1.txt", "rust/nextest.run1.txt"] {
        let sigs = fixture(fixture_name);
        let small = find(&sigs, "tests::adds_small panicked");
        let large = find(&sigs, "tests::adds_large panicked");
        assert_eq!(small.location.as_deref(), Some("src/lib.rs:16"));
        assert_eq!(large.location.as_deref(), Some("src/lib.rs:21"));
        assert_ne!(small.id, large.id);
        assert_eq!(small.kind, SignatureKind::TestFailure);
    }
    let py = fixture("python/pytest.run1.txt");
    assert_ne!(
        find(&py, "test_add_small").id,
        find(&py, "test_add_large").id
    );
    let go = fixture("go/test.run1.txt");
    assert_ne!(find(&go, "TestAddSmall").id, find(&go, "TestAddLarge").id);
}

#[test]
fn same_error_code_different_types_differs() {
    let sigs = fixture("rust/rustc-build.run1.txt");
    let str_for_u32 = find(&sigs, "expected `u32`, found `&str`");
    let int_for_string = find(&sigs, "expected `String`, found integer");
    assert!(
        str_for_u32
            .template
            .starts_with("error[E0308]: mismatched types")
    );
    assert_ne!(str_for_u32.id, int_for_string.id);
    let ts = fixture("node/tsc.run1.txt");
    assert_ne!(
        find(&ts, "Type 'string' is not assignable").id,
        find(&ts, "Type 'number' is not assignable").id
    );
}

#[test]
fn human_and_json_compiler_output_agree() {
    assert_eq!(
        ids(&fixture("rust/rustc-build.run1.txt")),
        ids(&fixture("cargo-json/build.run1.json"))
    );
    assert_eq!(
        ids(&fixture("node/tsc.run1.txt")),
        ids(&fixture("node/tsc-pretty.run1.txt"))
    );
}

#[test]
fn clippy_lints_carry_the_lint_name_in_both_outputs() {
    let human = fixture("rust/clippy.run1.txt");
    let sig = find(&human, "error[clippy::needless_return]");
    assert!(
        sig.template
            .starts_with("error[clippy::needless_return]: unneeded `return` statement"),
        "{}",
        sig.template
    );
    assert_eq!(ids(&human), ids(&fixture("cargo-json/clippy.run1.json")));
}

#[test]
fn vitest_failures_are_separated_and_timeouts_recognized() {
    let sigs = fixture("node/vitest.run1.txt");
    assert_eq!(sigs.len(), 3, "{:#?}", templates(&sigs));
    assert_ne!(find(&sigs, "adds small").id, find(&sigs, "adds large").id);
    assert_eq!(
        find(&sigs, "adds small").location.as_deref(),
        Some("sum.test.js:7")
    );
    assert_eq!(find(&sigs, "is too slow").kind, SignatureKind::Timeout);
}

#[test]
fn the_same_panic_from_cargo_test_and_nextest_agrees() {
    let cargo = fixture("rust/cargo-test.run1.txt");
    let nextest = fixture("rust/nextest.run1.txt");
    for needle in [
        "adds_small",
        "adds_large",
        "indexes",
        "reports_incidental_detail",
    ] {
        assert_eq!(
            find(&cargo, needle).id,
            find(&nextest, needle).id,
            "{needle}"
        );
    }
}

#[test]
fn incidental_detail_in_real_messages_is_normalized() {
    let rust = find(&fixture("rust/nextest.run1.txt"), "request failed");
    assert!(
        rust.template
            .contains("(pid <pid>, seed=<seed>, buffer at 0x<hex>, ThreadId(<n>))"),
        "{}",
        rust.template
    );
    let jest = find(&fixture("node/jest.run1.txt"), "lookup failed");
    assert!(
        jest.template.contains("<timestamp> (pid <pid>, id <uuid>)"),
        "{}",
        jest.template
    );
    let py = find(&fixture("python/pytest.run1.txt"), "test_fetch");
    assert!(
        py.template
            .contains("(request <uuid> at <timestamp>, pid <pid>)"),
        "{}",
        py.template
    );
}

#[test]
fn timeouts_are_recognized_in_every_runner() {
    let cases = [
        ("rust/nextest.run1.txt", "too_slow"),
        ("rust/nextest-junit.run1.xml", "too_slow"),
        ("python/pytest.run1.txt", "test_too_slow"),
        ("python/pytest-junit.run1.xml", "test_too_slow"),
        ("python-library/timeout-thread.run1.txt", "pytest-timeout"),
        ("node/jest.run1.txt", "is too slow"),
        ("node/mocha.run1.txt", "is too slow"),
        ("node/vitest.run1.txt", "is too slow"),
        ("go/timeout.run1.txt", "timed out"),
    ];
    for (name, needle) in cases {
        assert_eq!(
            find(&fixture(name), needle).kind,
            SignatureKind::Timeout,
            "{name}"
        );
    }
}

#[test]
fn formatter_and_lint_templates_are_the_documented_ones() {
    let cases = [
        (
            "rust/fmt-check.run1.txt",
            "rustfmt: formatting differs in <path>",
            "src/lib.rs:1",
        ),
        (
            "python/ruff-format.run1.txt",
            "ruff format: would reformat <path>",
            "messy.py",
        ),
        (
            "python/black.run1.txt",
            "black: would reformat <path>",
            "messy.py",
        ),
        (
            "node/prettier.run1.txt",
            "prettier: code style issues in <path>",
            "src/messy.js",
        ),
    ];
    for (name, template, location) in cases {
        let sigs = fixture(name);
        assert_eq!(sigs.len(), 1, "{name}: {:?}", templates(&sigs));
        assert_eq!(sigs[0].template, template);
        assert_eq!(sigs[0].kind, SignatureKind::Lint);
        assert_eq!(sigs[0].location.as_deref(), Some(location));
    }
    let eslint = fixture("node/eslint.run1.txt");
    assert_eq!(eslint.len(), 4);
    assert_eq!(
        find(&eslint, "eqeqeq").location.as_deref(),
        Some("src/app.js:4")
    );
    let ruff = fixture("python/ruff-check.run1.txt");
    assert_eq!(
        find(&ruff, "`os`").template,
        "ruff F401: `os` imported but unused"
    );
    assert_eq!(
        ids(&ruff),
        ids(&fixture("sarif/ruff.run1.sarif")),
        "ruff text and SARIF agree"
    );
}

#[test]
fn crashes_keep_frames_inside_the_repository() {
    let py = fixture("python/traceback.run1.txt");
    assert_eq!(py.len(), 1);
    assert_eq!(py[0].kind, SignatureKind::Crash);
    assert_eq!(
        py[0].frames,
        [
            "calc.py:11 in parse",
            "app.py:5 in main",
            "app.py:9 in <module>"
        ]
    );
    let go = find(
        &fixture("go/panic.run1.txt"),
        "index out of range [5] with length 3",
    );
    assert_eq!(go.frames, ["example.com/hs.Nth", "example.com/hs.TestNth"]);
    assert_eq!(go.test.as_ref().map(|t| t.as_str()), Some("TestNth"));
    let main = find(&fixture("rust/main-panic.run1.txt"), "thread 'main'");
    assert_eq!(main.kind, SignatureKind::Crash);
    assert_eq!(main.frames, ["hs_fmt::main"]);
}

#[test]
fn tests_are_identified() {
    let mocha = fixture("node/mocha.run1.txt");
    assert_eq!(mocha.len(), 4);
    assert!(
        mocha.iter().any(
            |s| s.test.as_ref().map(|t| t.as_str()) == Some("sum › small › adds small numbers")
        )
    );
    let pytest = find(&fixture("python/pytest.run1.txt"), "test_add_small");
    assert_eq!(
        pytest.test.as_ref().map(|t| t.as_str()),
        Some("tests/test_calc.py::test_add_small")
    );
    assert_eq!(pytest.location.as_deref(), Some("tests/test_calc.py:7"));
    let parse = find(&fixture("python/pytest.run1.txt"), "test_parse");
    assert_eq!(parse.frames, ["calc.py:11", "tests/test_calc.py:16"]);
}

#[test]
fn json_has_the_documented_fields() {
    let sig = &fixture("rust/rustc-build.run1.txt")[0];
    let json = serde_json::to_value(sig).unwrap();
    for field in [
        "signature",
        "template",
        "family",
        "kind",
        "file",
        "location",
        "test",
        "frames",
        "excerpt",
    ] {
        assert!(json.get(field).is_some(), "missing {field}");
    }
    assert_eq!(json["signature"].as_str().map(str::len), Some(16));
    assert_eq!(json["kind"], "compile");
}

#[test]
fn handwritten_shapes_are_recognized() {
    let dir = logs().join("handwritten");
    let old_panic = extract(&dir.join("rust-old-panic.txt"), None);
    let sig = find(&old_panic, "panicked at src/main.rs");
    assert!(
        sig.template
            .contains("called `Option::unwrap()` on a `None` value"),
        "{}",
        sig.template
    );
    let new_panic = extract(&dir.join("rust-new-panic.txt"), None);
    assert_eq!(
        ids(&old_panic),
        ids(&new_panic),
        "old and new panic formats agree"
    );
}

/// The project a fixture's tool ran on, as a checkout somewhere else (another runner's log read
/// against this repository).
fn project(name: &str) -> PathBuf {
    common::fixtures().join("hindsight/projects").join(name)
}

#[test]
fn library_raised_exceptions_are_anchored_at_the_innermost_repository_frame() {
    let crash = fixture("python-library/traceback.run1.txt");
    assert_eq!(crash.len(), 1, "{:#?}", templates(&crash));
    assert_eq!(crash[0].kind, SignatureKind::Crash);
    assert_eq!(
        crash[0].template,
        "python packaging.version.InvalidVersion: Invalid version: 'not a version' \
         at settings.py in minimum"
    );
    assert_eq!(crash[0].location.as_deref(), Some("settings.py:11"));
    assert_eq!(
        crash[0].frames,
        [
            "settings.py:11 in minimum",
            "app.py:5 in main",
            "app.py:9 in <module>"
        ]
    );
    for name in [
        "python-library/pytest.run1.txt",
        "python-library/pytest-junit.run1.xml",
    ] {
        let sigs = fixture(name);
        let stdlib = find(&sigs, "test_load");
        assert!(stdlib.template.contains("JSONDecodeError"), "{name}");
        assert_eq!(stdlib.location.as_deref(), Some("settings.py:7"), "{name}");
        assert_eq!(stdlib.frames, ["settings.py:7", "tests/test_settings.py:5"]);
        let installed = find(&sigs, "test_minimum");
        assert_eq!(installed.location.as_deref(), Some("settings.py:11"));
        assert!(installed.template.contains("InvalidVersion"), "{name}");
    }
}

#[test]
fn pytest_junit_failures_carry_location_and_frames_from_their_text() {
    let sigs = fixture("python/pytest-junit.run1.xml");
    let small = find(&sigs, "test_add_small");
    assert_eq!(small.location.as_deref(), Some("tests/test_calc.py:7"));
    assert_eq!(small.frames, ["tests/test_calc.py:7"]);
    let parse = find(&sigs, "test_parse");
    assert_eq!(parse.location.as_deref(), Some("calc.py:11"));
    assert_eq!(parse.frames, ["calc.py:11", "tests/test_calc.py:16"]);
    assert!(
        sigs.iter()
            .all(|s| s.location.is_some() && !s.frames.is_empty()),
        "{sigs:#?}"
    );
}

#[test]
fn pytest_timeout_thread_dumps_are_timeouts_at_the_repository_frame() {
    let sigs = fixture("python-library/timeout-thread.run1.txt");
    assert_eq!(sigs.len(), 1, "{:#?}", templates(&sigs));
    let timeout = &sigs[0];
    assert_eq!(timeout.kind, SignatureKind::Timeout);
    assert_eq!(
        timeout.template,
        "pytest-timeout: Timeout at tests/test_slow.py in wait_for_ready"
    );
    assert_eq!(timeout.location.as_deref(), Some("tests/test_slow.py:5"));
    assert_eq!(
        timeout.frames,
        [
            "tests/test_slow.py:5 in wait_for_ready",
            "tests/test_slow.py:9 in test_hangs"
        ]
    );
    assert_eq!(
        timeout.test.as_ref().map(|t| t.as_str()),
        Some("tests/test_slow.py::test_hangs")
    );
}

#[test]
fn a_log_from_another_runner_resolves_against_this_checkout() {
    let cases = [
        ("python-library/traceback.run1.txt", "python-library"),
        ("python-library/timeout-thread.run1.txt", "python-library"),
        ("python/traceback.run1.txt", "python"),
    ];
    for (name, project_name) in cases {
        let path = logs().join(name);
        let here = extract(&path, Some(project(project_name)));
        assert_eq!(
            templates(&here),
            templates(&extract(&path, Some(root_of(&path)))),
            "{name}: this checkout and the runner's own root agree"
        );
        let run2 = logs().join(name.replace(".run1.", ".run2."));
        assert_eq!(
            ids(&here),
            ids(&extract(&run2, Some(project(project_name))))
        );
        for sig in &here {
            for place in sig.location.iter().chain(&sig.frames) {
                assert!(
                    !place.starts_with('/') && !place.contains("<tmp>"),
                    "{name}: {place} is not repository-relative"
                );
            }
        }
    }
}

#[test]
fn runner_workspace_prefixes_do_not_reach_the_signature() {
    let path = logs().join("python-library/traceback.run1.txt");
    let text = std::fs::read_to_string(&path).unwrap();
    let recorded = root_of(&path).display().to_string();
    let dir = tempfile::tempdir().unwrap();
    let mut found = Vec::new();
    for (i, prefix) in ["/home/runner/work/x/x", "/tmp/ci/x", "/__w/x/x"]
        .iter()
        .enumerate()
    {
        let copy = dir.path().join(format!("runner{i}.log"));
        std::fs::write(&copy, text.replace(&recorded, prefix)).unwrap();
        found.push(extract(&copy, Some(project("python-library"))));
    }
    assert_eq!(ids(&found[0]), ids(&found[1]));
    assert_eq!(ids(&found[0]), ids(&found[2]));
    assert_eq!(found[1][0].frames[0], "settings.py:11 in minimum");
}

/// A frame in a file missing from this checkout (a module the program wrote at run time under
/// `build/`): stripped of the runner's prefix all the same, on any runner.
#[test]
fn a_frame_missing_from_the_checkout_loses_the_runner_prefix_too() {
    let path = logs().join("python-library/generated.run1.txt");
    let checkout = project("python-library");
    assert!(
        !checkout.join("build/rules.py").exists(),
        "the fixture's point: the checkout lacks the innermost frame's file"
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let recorded = root_of(&path).display().to_string();
    let dir = tempfile::tempdir().unwrap();
    let mut found = vec![
        extract(&path, Some(checkout.clone())),
        extract(
            &logs().join("python-library/generated.run2.txt"),
            Some(checkout.clone()),
        ),
    ];
    for (i, prefix) in ["/home/runner/work/x/x", "/opt/ci/builds/x"]
        .iter()
        .enumerate()
    {
        let copy = dir.path().join(format!("runner{i}.log"));
        std::fs::write(&copy, text.replace(&recorded, prefix)).unwrap();
        found.push(extract(&copy, Some(checkout.clone())));
    }
    for other in &found[1..] {
        assert_eq!(ids(&found[0]), ids(other));
        assert_eq!(found[0][0].frames, other[0].frames);
        assert_eq!(found[0][0].location, other[0].location);
    }
    let crash = &found[0][0];
    assert_eq!(
        crash.location.as_deref(),
        Some("build/rules.py:2"),
        "{crash:#?}"
    );
    assert_eq!(crash.frames[0], "build/rules.py:2 in limit", "{crash:#?}");
    assert!(
        crash
            .frames
            .iter()
            .all(|f| !f.starts_with('/') && !f.contains("<tmp>")),
        "{crash:#?}"
    );
}

#[test]
fn near_misses_share_a_family_and_different_failures_do_not() {
    let calc = fixture("python/pytest.run1.txt");
    let settings = fixture("python-library/pytest.run1.txt");
    let parse = find(&calc, "test_parse");
    let port = find(&settings, "test_port");
    assert_ne!(
        parse.id, port.id,
        "another test in another file and project"
    );
    assert_eq!(
        parse.family, port.family,
        "{} / {}",
        parse.template, port.template
    );
    let junit_parse = find(&fixture("python/pytest-junit.run1.xml"), "test_parse");
    let junit_port = find(
        &fixture("python-library/pytest-junit.run1.xml"),
        "test_port",
    );
    assert_eq!(junit_parse.family, junit_port.family);
    assert_eq!(junit_parse.family, parse.family, "log and JUnit forms meet");
    let near = fixture("rust/near-miss.run1.txt");
    let triples = find(&near, "tests::triples");
    let converts = find(&near, "converts_seconds");
    let adds_small = find(&fixture("rust/cargo-test.run1.txt"), "adds_small");
    assert_ne!(triples.id, converts.id);
    assert_ne!(triples.id, adds_small.id);
    assert_eq!(
        triples.family, converts.family,
        "the same assert_eq! failing with other values in another test and file"
    );
    assert_eq!(triples.family, adds_small.family, "and in another crate");
    assert_ne!(triples.family, find(&near, "finds_the_default").family);
    for (a, b) in [
        (&parse, &find(&settings, "test_load")),
        (&parse, &find(&calc, "test_fetch")),
        (&parse, &find(&calc, "test_too_slow")),
        (&port, &find(&settings, "test_minimum")),
    ] {
        assert_ne!(a.family, b.family, "{} / {}", a.template, b.template);
    }
    let rustc = fixture("rust/rustc-build.run1.txt");
    let families: BTreeSet<&str> = rustc.iter().map(|s| s.family.as_str()).collect();
    assert!(
        families.len() > 1,
        "different error codes: {:#?}",
        templates(&rustc)
    );
}

#[test]
fn every_signature_carries_the_family_of_its_kind_and_template() {
    for (run1, _) in pairs() {
        for sig in extract(&run1, Some(root_of(&run1))) {
            assert_eq!(
                sig.family,
                family_key(sig.kind, &sig.template),
                "{}",
                sig.template
            );
        }
    }
}

#[test]
fn unreadable_input_is_an_error_naming_the_file() {
    let missing = logs().join("no-such-file.txt");
    let opts = ExtractOptions {
        format: InputFormat::Log,
        repo_root: None,
        limits: Default::default(),
    };
    let err = extract_file(&missing, &opts).unwrap_err();
    assert!(err.to_string().contains("no-such-file.txt"), "{err}");
}

mod properties {
    //! Property tests for the normalizer: incidental detail never changes a signature, and
    //! normalizing twice changes nothing.

    use std::path::PathBuf;

    use meta_agent::hindsight::SignatureKind;
    use meta_agent::hindsight::signature::{normalize, signature_id};
    use proptest::prelude::*;

    /// Words that carry meaning and must survive (none of them looks like incidental detail).
    const WORDS: &[&str] = &[
        "assertion",
        "failed",
        "expected",
        "found",
        "mismatched",
        "types",
        "left",
        "right",
        "called",
        "unwrap",
        "None",
        "cannot",
        "borrow",
        "index",
        "out",
        "range",
        "AssertionError:",
        "E0308",
        "TS2322",
        "no-unused-vars",
        "`u32`",
        "'x'",
        "==",
        "!==",
        "[5]",
        "3",
        "42",
    ];

    /// One piece of incidental detail, drawn fresh each time.
    #[derive(Debug, Clone, Copy)]
    enum Detail {
        Path,
        Address,
        Duration,
        Timestamp,
        Ansi,
        Uuid,
        Pid,
        Seed,
        Thread,
    }

    fn detail_kind() -> impl Strategy<Value = Detail> {
        prop_oneof![
            Just(Detail::Path),
            Just(Detail::Address),
            Just(Detail::Duration),
            Just(Detail::Timestamp),
            Just(Detail::Ansi),
            Just(Detail::Uuid),
            Just(Detail::Pid),
            Just(Detail::Seed),
            Just(Detail::Thread),
        ]
    }

    /// A template: words, with slots for detail between them.
    fn template() -> impl Strategy<Value = Vec<(String, Option<Detail>)>> {
        prop::collection::vec(
            (
                prop::sample::select(WORDS).prop_map(str::to_owned),
                prop::option::of(detail_kind()),
            ),
            1..12,
        )
    }

    /// A random repository root in one of the shapes CI machines use.
    fn root() -> impl Strategy<Value = String> {
        let name = "[a-zA-Z0-9]{4,10}";
        prop_oneof![
            name.prop_map(|n| format!("/tmp/tmp.{n}/proj")),
            (name, name).prop_map(|(u, n)| format!("/home/{u}/work/{n}")),
            (name, name).prop_map(|(a, b)| format!("/private/var/folders/xy/{a}/T/{b}")),
            name.prop_map(|n| format!("/github/workspace/{n}")),
        ]
    }

    fn render(detail: Detail, root: &str, r: &mut impl FnMut() -> u64) -> String {
        match detail {
            Detail::Path => format!("{root}/src/lib.rs:{}:{}", r() % 900 + 1, r() % 80 + 1),
            Detail::Address => format!("0x{:x}", r() | 0x1000),
            Detail::Duration => match r() % 4 {
                0 => format!("{}.{:03}s", r() % 100, r() % 1000),
                1 => format!("{} ms", r() % 100_000),
                2 => format!("{}m{}s", r() % 60, r() % 60),
                _ => format!("{}.{}µs", r() % 1000, r() % 10),
            },
            Detail::Timestamp => format!(
                "2026-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
                r() % 12 + 1,
                r() % 28 + 1,
                r() % 24,
                r() % 60,
                r() % 60,
                r() % 1000
            ),
            Detail::Ansi => format!("\x1b[{}mred\x1b[0m", 30 + r() % 8),
            Detail::Uuid => format!(
                "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
                r() as u32,
                r() as u16,
                r() as u16,
                r() as u16,
                r() & 0xffff_ffff_ffff
            ),
            Detail::Pid => format!("(pid {})", r() % 4_000_000),
            Detail::Seed => format!("seed={}", r()),
            Detail::Thread => format!("ThreadId({})", r() % 1000),
        }
    }

    fn fill(template: &[(String, Option<Detail>)], root: &str, seed: u64) -> String {
        let mut state = seed | 1;
        let mut r = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut out = String::new();
        for (word, detail) in template {
            out.push_str(word);
            out.push(' ');
            if let Some(detail) = detail {
                out.push_str(&render(*detail, root, &mut r));
                out.push(' ');
            }
        }
        out
    }

    proptest! {
        #[test]
        fn incidental_detail_never_changes_the_signature(
            template in template(), root1 in root(), root2 in root(), seed1: u64, seed2: u64,
        ) {
            let first = normalize(&fill(&template, &root1, seed1), Some(&PathBuf::from(&root1)));
            let second = normalize(&fill(&template, &root2, seed2), Some(&PathBuf::from(&root2)));
            prop_assert_eq!(&first, &second);
            prop_assert_eq!(signature_id(SignatureKind::TestFailure, &first), signature_id(SignatureKind::TestFailure, &second));
        }

        #[test]
        fn without_a_root_temporary_prefixes_still_vanish(template in template(), seed1: u64, seed2: u64, a in "[a-z0-9]{6}", b in "[a-z0-9]{6}") {
            let first = normalize(&fill(&template, &format!("/tmp/tmp.{a}/proj"), seed1), None);
            let second = normalize(&fill(&template, &format!("/tmp/tmp.{b}/proj"), seed2), None);
            prop_assert_eq!(first, second);
        }

        #[test]
        fn normalize_is_idempotent_on_filled_templates(template in template(), root in root(), seed: u64) {
            let once = normalize(&fill(&template, &root, seed), Some(&PathBuf::from(&root)));
            prop_assert_eq!(normalize(&once, Some(&PathBuf::from(&root))), once.clone());
            prop_assert_eq!(normalize(&once, None), once);
        }

        #[test]
        fn normalize_is_idempotent_on_arbitrary_text(text in "[ -~\\n\\t\\x1bµ]{0,200}") {
            let once = normalize(&text, None);
            prop_assert_eq!(normalize(&once, None), once);
        }

        #[test]
        fn different_words_give_different_templates(a in prop::sample::select(WORDS), b in prop::sample::select(WORDS)) {
            prop_assume!(a != b);
            prop_assert_ne!(normalize(&format!("error: {a}"), None), normalize(&format!("error: {b}"), None));
        }
    }
}
