//! `meta-agent gates`: real commands, real reports, verdicts, exit codes and the summaries people
//! read.

use std::path::{Path, PathBuf};

use predicates::prelude::*;
use serde_json::Value;

use crate::common::{copy_tree, example, fixtures, meta_agent};

fn repo_with_config(config: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(".meta-agent.yml"), config).unwrap();
    dir
}

fn gates_json(repo: &Path, extra: &[&str]) -> (i32, Value) {
    let out = meta_agent()
        .arg("--repo")
        .arg(repo)
        .args(["gates", "--json"])
        .args(extra)
        .output()
        .unwrap();
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|err| {
        panic!(
            "{err}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap(), json)
}

fn gate<'a>(json: &'a Value, name: &str) -> &'a Value {
    json["gates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == name)
        .unwrap()
}

#[test]
fn the_example_passes_pytest_ruff_and_coverage() {
    let repo = tempfile::tempdir().unwrap();
    copy_tree(&example(), repo.path());
    let (code, json) = gates_json(repo.path(), &[]);
    assert_eq!(code, 0, "{json:#}");
    assert_eq!(json["passed"], true);
    let names: Vec<&str> = json["gates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["lint", "tests", "coverage"]);
    let tests = gate(&json, "tests");
    assert_eq!(tests["kind"], "tests");
    assert_eq!(tests["tests"]["tests"], 7);
    assert_eq!(tests["tests"]["passed"], 7);
    assert!(tests["duration_ms"].as_u64().is_some());
    assert_eq!(gate(&json, "lint")["lint"]["findings"], 0);
    let coverage = gate(&json, "coverage")["coverage"]["line_percent"]
        .as_f64()
        .unwrap();
    assert!(coverage >= 90.0, "{coverage}");
}

#[test]
fn a_failing_test_fails_the_gate_with_its_name_and_message() {
    let repo = tempfile::tempdir().unwrap();
    copy_tree(&example(), repo.path());
    let test_file = repo.path().join("tests/test_calc.py");
    let text = std::fs::read_to_string(&test_file)
        .unwrap()
        .replace("== 2.5", "== 2.75");
    std::fs::write(&test_file, text).unwrap();
    let (code, json) = gates_json(repo.path(), &["--only", "tests"]);
    assert_eq!(code, 1);
    assert_eq!(json["passed"], false);
    let tests = gate(&json, "tests");
    assert_eq!(tests["tests"]["failed"], 1);
    let failure = &tests["tests"]["failures"][0];
    assert_eq!(failure["name"], "test_mean");
    assert!(
        failure["message"].as_str().unwrap().contains("2.75"),
        "{failure:#}"
    );
    assert_eq!(
        json["gates"].as_array().unwrap().len(),
        1,
        "--only runs one gate"
    );
}

#[test]
fn a_runner_that_ran_nothing_does_not_pass() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(
        repo.path().join("pyproject.toml"),
        "[project]\nname = \"empty\"\n",
    )
    .unwrap();
    let (code, json) = gates_json(repo.path(), &["--only", "tests"]);
    assert_eq!(code, 1);
    let reasons = gate(&json, "tests")["reasons"].to_string();
    assert!(reasons.contains("no test ran"), "{reasons}");
}

#[test]
fn nextest_failures_are_read_from_its_junit_report() {
    let repo = tempfile::tempdir().unwrap();
    copy_tree(&fixtures().join("repos/rust-failing"), repo.path());
    let (code, json) = gates_json(repo.path(), &["--only", "tests"]);
    assert_eq!(code, 1, "{json:#}");
    let tests = &gate(&json, "tests")["tests"];
    assert_eq!(tests["tests"], 3);
    assert_eq!(tests["failed"], 1);
    assert_eq!(tests["failures"][0]["name"], "tests::mean_of_two");
}

#[test]
fn a_timeout_is_a_failure_with_its_duration() {
    let repo = repo_with_config(
        "version: 1\npreset: none\ngates:\n  - name: slow\n    run: sleep 30\n    timeout: 1s\n",
    );
    let started = std::time::Instant::now();
    let (code, json) = gates_json(repo.path(), &[]);
    assert_eq!(code, 1);
    assert!(started.elapsed().as_secs() < 15);
    let slow = gate(&json, "slow");
    assert_eq!(slow["termination"]["kind"], "timed_out");
    assert_eq!(slow["reasons"][0], "timed out after 1.0s");
    assert!(slow["duration_ms"].as_u64().unwrap() >= 1000);
}

#[test]
fn a_missing_report_fails_and_says_where_it_looked() {
    let repo = repo_with_config(
        "version: 1\npreset: none\ngates:\n  - name: t\n    run: \"true\"\n    junit: out/junit.xml\n",
    );
    let (code, json) = gates_json(repo.path(), &[]);
    assert_eq!(code, 1);
    assert_eq!(
        gate(&json, "t")["reasons"][0],
        "no JUnit report found at out/junit.xml"
    );
}

#[test]
fn a_stale_report_from_an_earlier_run_is_not_trusted() {
    let repo = repo_with_config(
        "version: 1\npreset: none\ngates:\n  - name: t\n    run: \"true\"\n    junit: junit.xml\n",
    );
    let old = repo.path().join("junit.xml");
    std::fs::copy(fixtures().join("reports/junit/pytest/xunit2.xml"), &old).unwrap();
    let an_hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&old)
        .unwrap()
        .set_modified(an_hour_ago)
        .unwrap();
    let (code, _) = gates_json(repo.path(), &[]);
    assert_eq!(code, 1);
}

#[test]
fn optional_gates_with_missing_tools_are_skipped_visibly() {
    let repo = repo_with_config(
        "version: 1\npreset: none\ngates:\n  - name: fancy\n    run: [fancy-linter-xyz]\n    requires: [fancy-linter-xyz]\n    optional: true\n  - name: ok\n    run: \"true\"\n  - name: needed\n    run: [needed-tool-xyz]\n    requires: [needed-tool-xyz]\n    enabled: true\n",
    );
    let (code, json) = gates_json(repo.path(), &["--only", "fancy", "--only", "ok"]);
    assert_eq!(code, 0, "{json:#}");
    assert_eq!(gate(&json, "fancy")["status"], "skipped");
    assert!(
        gate(&json, "fancy")["reasons"][0]
            .as_str()
            .unwrap()
            .contains("fancy-linter-xyz")
    );
    let (code, json) = gates_json(repo.path(), &["--only", "needed"]);
    assert_eq!(code, 1);
    assert_eq!(gate(&json, "needed")["status"], "failed");
}

#[test]
fn results_keep_the_configured_order_whatever_finishes_first() {
    let repo = repo_with_config(
        "version: 1\npreset: none\nloop:\n  gate_concurrency: 3\ngates:\n  - name: slow\n    run: sleep 1\n  - name: fast\n    run: \"true\"\n  - name: broken\n    run: exit 3\n",
    );
    let started = std::time::Instant::now();
    let (code, json) = gates_json(repo.path(), &[]);
    assert_eq!(code, 1);
    let names: Vec<&str> = json["gates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["slow", "fast", "broken"]);
    assert_eq!(gate(&json, "broken")["reasons"][0], "exited with code 3");
    assert!(started.elapsed().as_secs_f64() < 5.0);
}

#[test]
fn secrets_in_the_bots_environment_never_reach_a_gate() {
    let repo = repo_with_config(
        "version: 1\npreset: none\ngates:\n  - name: leak\n    run: env; exit 1\n",
    );
    let out = meta_agent()
        .arg("--repo")
        .arg(repo.path())
        .args(["gates", "--json"])
        .env("GITHUB_TOKEN", "ghs_CANARY_gh")
        .env("ANTHROPIC_API_KEY", "sk-ant-CANARY")
        .env("ACTIONS_RUNTIME_TOKEN", "CANARY_actions")
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("PATH="), "{stdout}");
    assert!(!stdout.contains("CANARY"), "{stdout}");
}

#[test]
fn no_gates_at_all_is_a_usage_error_that_says_why() {
    let dir = tempfile::tempdir().unwrap();
    meta_agent()
        .arg("--repo")
        .arg(dir.path())
        .arg("gates")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no gates to run"));
    meta_agent()
        .arg("--repo")
        .arg(example())
        .args(["gates", "--only", "nope"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--only nope: no such gate (gates: lint, tests, coverage)",
        ));
}

/// Durations and temporary paths vary run to run; everything else a person reads is pinned.
fn stable(text: &str) -> String {
    let durations = regex::Regex::new(r"\b\d+(\.\d+)?(ms|s)\b").unwrap();
    let temps = regex::Regex::new(r"/tmp/[^\s:]+").unwrap();
    let spaces = regex::Regex::new(r" +").unwrap();
    let text = durations.replace_all(text, "[time]");
    let text = temps.replace_all(&text, "[tmp]");
    spaces.replace_all(&text, " ").into_owned()
}

#[test]
fn summaries_people_read_are_stable() {
    let repo = repo_with_config(
        "version: 1\npreset: none\ngates:\n  - name: unit\n    run: [cp, xunit2.xml, \"{report_dir}/junit.xml\"]\n    junit: \"{report_dir}/junit.xml\"\n  - name: build\n    run: \"echo 'error: cannot find value `x` in this scope' >&2; exit 101\"\n",
    );
    // Gates read only the worktree, the toolchains and the system: the fixture goes in the tree.
    let fixture = fixtures().join("reports/junit/pytest/xunit2.xml");
    std::fs::copy(fixture, repo.path().join("xunit2.xml")).unwrap();
    let terminal = meta_agent()
        .arg("--repo")
        .arg(repo.path())
        .arg("gates")
        .output()
        .unwrap();
    insta::assert_snapshot!(
        "gates_terminal",
        stable(&String::from_utf8_lossy(&terminal.stdout))
    );
    let markdown = meta_agent()
        .arg("--repo")
        .arg(repo.path())
        .args(["gates", "--markdown"])
        .output()
        .unwrap();
    insta::assert_snapshot!(
        "gates_markdown",
        stable(&String::from_utf8_lossy(&markdown.stdout))
    );
}

#[test]
fn gates_write_only_to_the_worktree_tmp_toolchain_caches_and_configured_dirs() {
    let caps = meta_agent::exec::detect::detect();
    // Outside /tmp, where other checkouts live.
    let home = crate::common::outside_tmp();
    std::fs::create_dir_all(home.path().join(".cache")).unwrap();
    std::fs::create_dir_all(home.path().join(".cargo/bin")).unwrap();
    std::fs::create_dir_all(home.path().join("shared-out")).unwrap();
    std::fs::create_dir_all(home.path().join("private")).unwrap();
    std::fs::write(home.path().join("private/secret"), "CANARY-home-file").unwrap();
    let shared_tmp = std::env::temp_dir().join(format!("meta-agent-shared-{}", std::process::id()));
    std::fs::write(&shared_tmp, "CANARY-shared-tmp").unwrap();
    let real = home.path().display();
    let config = format!(
        "version: 1\npreset: none\nsandbox:\n  writable: [{shared}]\ngates:\n  - name: own\n    run: touch in-tree && test \"$HOME\" != {real} && touch \"$HOME/h\" \"$TMPDIR/t\" && test \"$TMPDIR\" != /tmp\n  - name: cache\n    run: echo x > \"$XDG_CACHE_HOME/ok\" && test -s \"$XDG_CACHE_HOME/ok\"\n  - name: configured\n    run: touch {shared}/ok\n  - name: elsewhere\n    run: touch {real}/private/leak\n  - name: toolchain-bin\n    run: touch {real}/.cargo/bin/git\n  - name: read-home\n    run: cat {real}/private/secret\n  - name: shared-tmp\n    run: cat {tmp}; touch {tmp}-planted\n",
        shared = home.path().join("shared-out").display(),
        tmp = shared_tmp.display(),
    );
    let repo = repo_with_config(&config);
    let out = meta_agent()
        .arg("--repo")
        .arg(repo.path())
        .args(["gates", "--json"])
        .env("HOME", home.path())
        .output()
        .unwrap();
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let _ = std::fs::remove_file(&shared_tmp);
    let planted = PathBuf::from(format!("{}-planted", shared_tmp.display()));
    let tmp_planted = planted.exists();
    let _ = std::fs::remove_file(&planted);
    assert_eq!(gate(&json, "own")["status"], "passed", "{json:#}");
    assert_eq!(gate(&json, "configured")["status"], "passed", "{json:#}");
    assert_eq!(gate(&json, "elsewhere")["status"], "failed", "{json:#}");
    assert_eq!(gate(&json, "toolchain-bin")["status"], "failed", "{json:#}");
    assert_eq!(gate(&json, "read-home")["status"], "failed", "{json:#}");
    assert_eq!(gate(&json, "shared-tmp")["status"], "failed", "{json:#}");
    assert!(!tmp_planted, "a gate wrote into the shared /tmp");
    for canary in ["CANARY-home-file", "CANARY-shared-tmp"] {
        assert!(!json.to_string().contains(canary), "{json:#}");
    }
    assert!(repo.path().join("in-tree").exists());
    // The caches: through an overlay whose writes are discarded (read-only without namespaces).
    assert!(
        !home.path().join(".cache/ok").exists(),
        "a gate wrote the real cache"
    );
    let cache_passed = gate(&json, "cache")["status"] == "passed";
    if caps.user_namespaces {
        assert!(cache_passed, "the overlay is writable: {json:#}");
    } else {
        eprintln!("NOTE: no user namespaces here: the caches are read-only to gates");
        assert!(!cache_passed, "{json:#}");
    }
    assert!(!home.path().join(".cargo/bin/git").exists());
    assert!(
        !home.path().join("private/leak").exists(),
        "a write outside the allowed places got through"
    );
}

/// `meta-agent gates` involves no model: gates keep the host's network there (a gate offline by
/// default is offline only inside a run), and no offline variable is set for them.
#[test]
fn meta_agent_gates_runs_gates_with_the_network_on() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let repo = repo_with_config(&format!(
        "version: 1\npreset: none\ngates:\n  - name: probe\n    run: [bash, -c, \"echo probe > /dev/tcp/127.0.0.1/{port} && test -z \\\"$CARGO_NET_OFFLINE\\\"\"]\n"
    ));
    let (code, json) = gates_json(repo.path(), &[]);
    assert_eq!(code, 0, "{json:#}");
    assert_eq!(gate(&json, "probe")["status"], "passed");
    listener.set_nonblocking(true).unwrap();
    assert!(listener.accept().is_ok(), "the gate reached the listener");
}

#[test]
fn gates_junit_report_has_one_case_per_gate_and_reads_back() {
    let fixture = fixtures().join("reports/junit/pytest/xunit2.xml");
    let repo = repo_with_config(
        "version: 1\npreset: none\ngates:\n  - name: unit\n    run: [cp, xunit2.xml, \"{report_dir}/junit.xml\"]\n    junit: \"{report_dir}/junit.xml\"\n  - name: ok\n    run: \"true\"\n  - name: build\n    run: \"echo 'error: cannot find value `x` in this scope' >&2; exit 101\"\n  - name: slow\n    run: sleep 30\n    timeout: 1s\n  - name: fancy\n    run: [fancy-linter-xyz]\n    requires: [fancy-linter-xyz]\n    optional: true\n",
    );
    // Gates read only the worktree, the toolchains and the system: the fixture goes in the tree.
    std::fs::copy(&fixture, repo.path().join("xunit2.xml")).unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let report = out_dir.path().join("reports/gates.xml");
    let out = meta_agent()
        .arg("--repo")
        .arg(repo.path())
        .args(["gates", "--json", "--junit"])
        .arg(&report)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["passed"], false, "stdout stays the --json summary");
    let read = meta_agent::report::parse_junit_file(&report, &Default::default()).unwrap();
    let counts = [
        read.tests,
        read.passed,
        read.failed,
        read.errors,
        read.skipped,
    ];
    assert_eq!(
        counts,
        [5, 1, 2, 1, 1],
        "tests, passed, failed, errors, skipped"
    );
    let failures: Vec<(&str, &str, &str)> = read
        .failures
        .iter()
        .map(|f| (f.name.as_str(), f.classname.as_str(), f.message.as_str()))
        .collect();
    assert_eq!(
        failures,
        [
            (
                "unit",
                "meta-agent.gates.tests",
                "4 of 9 tests failed (3 failures, 1 errors)"
            ),
            ("build", "meta-agent.gates.custom", "exited with code 101"),
            ("slow", "meta-agent.gates.custom", "timed out after 1.0s"),
        ]
    );
    assert!(
        read.failures[0]
            .body
            .contains("✗ test_sample::test_wrong_total")
    );
    assert!(read.failures[1].body.contains("cannot find value `x`"));
    let xml = std::fs::read_to_string(&report).unwrap();
    let fixtures_dir = regex::escape(&fixtures().display().to_string());
    let report_dirs = format!(
        r#"{}/[^\s<&"]+"#,
        regex::escape(&std::env::temp_dir().display().to_string())
    );
    insta::with_settings!({filters => vec![
        (r#"time="[0-9.]+""#, r#"time="[duration]""#),
        (fixtures_dir.as_str(), "[fixtures]"),
        (report_dirs.as_str(), "[report_dir]"),
    ]}, {
        insta::assert_snapshot!("gates_junit", xml);
    });
}

#[test]
fn an_unwritable_junit_path_is_a_usage_error_naming_it() {
    let repo =
        repo_with_config("version: 1\npreset: none\ngates:\n  - name: ok\n    run: \"true\"\n");
    let blocker = tempfile::NamedTempFile::new().unwrap();
    let path = blocker.path().join("gates.xml");
    meta_agent()
        .arg("--repo")
        .arg(repo.path())
        .args(["gates", "--junit"])
        .arg(&path)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!(
            "--junit {}",
            path.display()
        )));
}
