//! `meta-agent eval`: suites run end to end through the binary on real git repositories with real
//! tools (pytest, cargo, node), graded, resumed, sharded and merged, compared, mined from a real
//! history; the LLM judge against the loopback mock LLM; the suite parser under proptest; the
//! report and summary under insta.

use std::path::{Path, PathBuf};

use meta_agent::eval::grade::{Grade, GraderDetail};
use meta_agent::eval::results::RunResult;
use meta_agent::eval::summary::{self, summarize};
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::common::mock_llm::{MockLlm, openai_answer};
use crate::common::{git, meta_agent};

fn bundled() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("evals/bundled")
}

/// Runs `meta-agent eval ...` in `cwd`, returning the exit code, stdout and stderr.
fn eval(cwd: &Path, args: &[&str]) -> (i32, String, String) {
    let out = meta_agent()
        .current_dir(cwd)
        .env("OPENAI_API_KEY", "sk-test-eval-0000")
        .arg("eval")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn last_json(stdout: &str) -> Value {
    serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap_or(Value::Null)
}

const PY_GATES: &str = "version: 1\npreset: none\ngates:\n  - name: tests\n    kind: tests\n    run: [python3, -m, pytest, -q, -p, no:cacheprovider, -o, junit_family=xunit2, \"--junitxml={report_dir}/junit.xml\"]\n    junit: \"{report_dir}/junit.xml\"\n    env: {PYTHONDONTWRITEBYTECODE: \"1\"}\n";

/// A suite directory with a Python source whose `half` is wrong, a scripted task file that fixes
/// it (no model needed) and `tasks` as the suite's task list.
fn scripted_suite(tasks: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("src/tests")).unwrap();
    std::fs::write(
        root.join("src/half.py"),
        "def half(x):\n    return x // 2\n",
    )
    .unwrap();
    std::fs::write(
        root.join("src/tests/test_half.py"),
        "from half import half\n\n\ndef test_half():\n    assert half(3) == 1.5\n",
    )
    .unwrap();
    std::fs::write(
        root.join("src/pyproject.toml"),
        "[tool.pytest.ini_options]\npythonpath = [\".\"]\n",
    )
    .unwrap();
    std::fs::write(root.join("gates.yml"), PY_GATES).unwrap();
    std::fs::write(
        root.join("fix.yml"),
        "title: half must divide exactly\nedits:\n  - summary: true division\n    changes:\n      - replace: {path: half.py, search: \"x // 2\", replace: \"x / 2\"}\n",
    )
    .unwrap();
    std::fs::write(
        root.join("suite.yml"),
        format!("version: 1\nname: scripted\ntasks:\n{tasks}"),
    )
    .unwrap();
    dir
}

const FIX_TASK: &str =
    "  - id: half\n    source: {dir: src}\n    task_file: fix.yml\n    config_file: gates.yml\n";

#[test]
fn the_bundled_suite_runs_offline_and_its_statistics_match_hand_computed_values() {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("bundled");
    let suite = bundled();
    let (code, stdout, stderr) = eval(
        out.path(),
        &[
            "run",
            suite.to_str().unwrap(),
            "--jobs",
            "2",
            "--out",
            dir.to_str().unwrap(),
            "--json",
        ],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let summary = last_json(&stdout);
    let grades: Vec<(String, String)> = summary["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["task"].as_str().unwrap().to_owned(),
                r["grade"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected: Vec<(String, String)> = [
        ("js-words", "pass"),
        ("py-clamp", "fail"),
        ("py-escalate", "pass"),
        ("py-range", "pass"),
        ("py-ratio", "pass"),
        ("py-stats", "pass"),
        ("py-velocity", "pass"),
        ("rust-max", "pass"),
        ("rust-sum", "pass"),
    ]
    .iter()
    .map(|(t, g)| ((*t).to_owned(), (*g).to_owned()))
    .collect();
    assert_eq!(grades, expected, "{summary:#}\n{stderr}");
    assert_eq!(
        (summary["tasks"].as_u64(), summary["runs"].as_u64()),
        (Some(9), Some(9))
    );
    assert_eq!(summary["passed"], 8);
    assert_eq!(summary["failed"], 1);
    assert_eq!(summary["errors"], 0);
    assert_eq!(summary["pending"], 0);
    // By hand: 8/9; Wilson 95 % for 8 of 9 is (0.56500, 0.98011); pass@1 with one run per task
    // is the pass rate. Every committed run makes 2 calls (the act, then the requirements review
    // after green gates) of 900 prompt and 60 completion tokens; the escalation makes 1 (its act;
    // no review while the gates fail): mean 17/9, median 2.
    let close = |value: &Value, expected: f64| (value.as_f64().unwrap() - expected).abs() < 1e-4;
    assert!(close(&summary["pass_rate"], 8.0 / 9.0), "{summary}");
    assert!(close(&summary["pass_rate_ci95"][0], 0.565_000), "{summary}");
    assert!(close(&summary["pass_rate_ci95"][1], 0.980_109), "{summary}");
    assert!(close(&summary["pass_at_k"]["1"], 8.0 / 9.0), "{summary}");
    assert!(
        close(&summary["llm_calls"]["mean"], 17.0 / 9.0),
        "{summary}"
    );
    assert!(close(&summary["llm_calls"]["median"], 2.0), "{summary}");
    assert!(
        close(&summary["prompt_tokens"]["mean"], 1700.0),
        "{summary}"
    );
    assert!(
        close(&summary["completion_tokens"]["median"], 120.0),
        "{summary}"
    );
    let clamp = summary["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["task"] == "py-clamp")
        .unwrap();
    assert_eq!(
        clamp["outcome"], "committed",
        "the visible gates passed: {clamp:#}"
    );
    let hidden = &clamp["grader_details"][1];
    assert_eq!(hidden["kind"], "hidden_tests");
    assert!(
        hidden["detail"]
            .as_str()
            .unwrap()
            .contains("failing: test_inside"),
        "{hidden}"
    );
    for key in [
        "task",
        "run",
        "outcome",
        "grade",
        "grader_details",
        "llm_calls",
        "prompt_tokens",
        "cost_usd",
        "wall_s",
    ] {
        assert!(clamp.get(key).is_some(), "{key} missing: {clamp}");
    }
    // The files of the output directory.
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert!(
        junit.contains("tests=\"1\"") && junit.contains("eval.py-clamp"),
        "{junit}"
    );
    let (code, report, _) = {
        let out = meta_agent()
            .args(["report", "junit", "--json"])
            .arg(dir.join("junit.xml"))
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            (),
        )
    };
    let read: Value = serde_json::from_str(&report).unwrap();
    assert_eq!(
        (read["tests"].as_u64(), read["failed"].as_u64()),
        (Some(9), Some(1)),
        "{code:?} {report}"
    );
    let lines = std::fs::read_to_string(dir.join("results.jsonl")).unwrap();
    assert_eq!(lines.lines().count(), 9);
    let markdown = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(markdown.contains("**Pass rate 88.9 %**"), "{markdown}");
    assert!(
        markdown.contains("### py-clamp run 1: fail (committed)"),
        "{markdown}"
    );
    assert!(
        std::fs::read_to_string(dir.join("diffs/py-stats-run1.diff"))
            .unwrap()
            .contains("+    return sum(values) / len(values)")
    );
    // Nothing was written into the sources.
    assert!(!suite.join("repos/py-stats/.git").exists());
    assert_eq!(git(&suite, &["status", "--porcelain", "--", "."]), "");

    // --resume of a finished evaluation repeats nothing.
    let (code, stdout, stderr) = eval(
        out.path(),
        &[
            "run",
            suite.to_str().unwrap(),
            "--out",
            dir.to_str().unwrap(),
            "--resume",
            "--json",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        std::fs::read_to_string(dir.join("results.jsonl")).unwrap(),
        lines
    );
    assert_eq!(last_json(&stdout)["passed"], 8);
}

#[test]
fn an_interrupted_evaluation_resumes_without_repeating_finished_runs() {
    let suite = scripted_suite(FIX_TASK);
    let out = suite.path().join("out");
    let path = suite.path().join("suite.yml");
    let (code, _, stderr) = eval(
        suite.path(),
        &[
            "run",
            path.to_str().unwrap(),
            "--runs",
            "2",
            "--shard",
            "1/2",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let first = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
    assert_eq!(first.lines().count(), 1);
    // A kill mid-write leaves half a line: it is dropped and that run redone.
    std::fs::write(
        out.join("results.jsonl"),
        format!("{first}{{\"task\": \"half\", \"ru"),
    )
    .unwrap();
    let (code, _, stderr) = eval(
        suite.path(),
        &[
            "run",
            path.to_str().unwrap(),
            "--runs",
            "2",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 2, "an existing evaluation needs --resume");
    assert!(stderr.contains("--resume"), "{stderr}");
    let (code, stdout, stderr) = eval(
        suite.path(),
        &[
            "run",
            path.to_str().unwrap(),
            "--runs",
            "2",
            "--out",
            out.to_str().unwrap(),
            "--resume",
            "--json",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let text = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        first.trim_end(),
        "the finished run is kept as it was"
    );
    assert!(
        lines
            .iter()
            .all(|line| serde_json::from_str::<Value>(line).is_ok()),
        "{text}"
    );
    let summary = last_json(&stdout);
    assert_eq!(
        (summary["runs"].as_u64(), summary["passed"].as_u64()),
        (Some(2), Some(2)),
        "{summary}"
    );
    assert_eq!(summary["pass_at_k"]["2"], 1.0);
}

#[test]
fn shards_merge_into_the_whole_evaluation() {
    let suite = scripted_suite(&format!(
        "{FIX_TASK}  - id: again\n    source: {{dir: src}}\n    task_file: fix.yml\n    config_file: gates.yml\n"
    ));
    let path = suite.path().join("suite.yml");
    let mut dirs = Vec::new();
    for shard in ["1/2", "2/2"] {
        let dir = suite.path().join(format!("shard{}", &shard[..1]));
        let (code, _, stderr) = eval(
            suite.path(),
            &[
                "run",
                path.to_str().unwrap(),
                "--shard",
                shard,
                "--out",
                dir.to_str().unwrap(),
            ],
        );
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(
            std::fs::read_to_string(dir.join("results.jsonl"))
                .unwrap()
                .lines()
                .count(),
            1
        );
        dirs.push(dir);
    }
    let merged = suite.path().join("merged");
    let (code, stdout, stderr) = eval(
        suite.path(),
        &[
            "merge",
            dirs[0].to_str().unwrap(),
            dirs[1].to_str().unwrap(),
            "--out",
            merged.to_str().unwrap(),
            "--json",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let summary = last_json(&stdout);
    assert_eq!(
        (summary["tasks"].as_u64(), summary["passed"].as_u64()),
        (Some(2), Some(2)),
        "{summary}"
    );
    assert!(merged.join("junit.xml").is_file() && merged.join("report.md").is_file());
    let (code, _, stderr) = eval(
        suite.path(),
        &[
            "merge",
            dirs[0].to_str().unwrap(),
            dirs[0].to_str().unwrap(),
            "--out",
            merged.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 2);
    assert!(stderr.contains("also in another shard"), "{stderr}");
}

#[test]
fn a_failing_setup_is_an_error_not_a_failure() {
    let suite = scripted_suite(&format!(
        "{FIX_TASK}    setup: [\"echo cannot fetch >&2; exit 3\"]\n"
    ));
    let out = suite.path().join("out");
    let (code, stdout, stderr) = eval(
        suite.path(),
        &[
            "run",
            suite.path().join("suite.yml").to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--json",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let summary = last_json(&stdout);
    assert_eq!(
        (summary["errors"].as_u64(), summary["failed"].as_u64()),
        (Some(1), Some(0)),
        "{summary}"
    );
    assert_eq!(summary["results"][0]["outcome"], "error");
    let results = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
    assert!(
        results.contains("exited with code 3") && results.contains("cannot fetch"),
        "{results}"
    );
}

#[test]
fn bad_suites_are_named_before_any_run_and_nothing_is_written() {
    let cases: [(&str, &str, &str); 5] = [
        (
            "  - id: a\n    source: {dir: src}\n    task: x\n    graders:\n      - vibes: {}\n",
            "suite.yml:8:",
            "vibes",
        ),
        (
            "  - id: a\n    source: {dir: nowhere}\n    task: x\n",
            "tasks[0].source.dir",
            "is not a directory",
        ),
        (
            "  - id: a\n    source: {dir: src}\n    task: x\n    graders:\n      - hidden_tests: {files: {tests/t.py: hidden/missing.py}}\n",
            "hidden_tests.files.tests/t.py",
            "does not exist",
        ),
        (
            "  - id: a\n    source: {dir: src}\n    task: x\n    colour: blue\n",
            "suite.yml:",
            "colour",
        ),
        (
            "  - id: a\n    source: {dir: src}\n    task: x\n  - id: a\n    source: {dir: src}\n    task: y\n",
            "suite.yml:7: tasks[1].id",
            "used twice",
        ),
    ];
    for (tasks, place, what) in cases {
        let suite = scripted_suite(tasks);
        let out = suite.path().join("out");
        let (code, stdout, stderr) = eval(
            suite.path(),
            &[
                "run",
                suite.path().to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ],
        );
        assert_eq!(code, 2, "{tasks}\n{stdout}\n{stderr}");
        assert!(
            stderr.contains(place) && stderr.contains(what),
            "{place} / {what}: {stderr}"
        );
        assert!(
            !out.exists(),
            "nothing is written before the suite is valid"
        );
        assert!(
            !suite.path().join("src/.git").exists(),
            "the source stays untouched"
        );
    }
}

#[test]
fn a_human_grade_stays_pending_until_recorded() {
    let suite = scripted_suite(&format!(
        "{FIX_TASK}    graders:\n      - composite:\n          mode: all\n          graders:\n            - grader: {{gates: {{}}}}\n            - grader: {{human: {{checklist: [\"the change is minimal\", \"no new dependency\"]}}}}\n"
    ));
    let out = suite.path().join("out");
    let (code, stdout, stderr) = eval(
        suite.path(),
        &[
            "run",
            suite.path().to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--json",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let summary = last_json(&stdout);
    assert_eq!(
        (summary["pending"].as_u64(), summary["passed"].as_u64()),
        (Some(1), Some(0)),
        "{summary}"
    );
    let review = std::fs::read_to_string(out.join("review.md")).unwrap();
    assert!(
        review.contains("- [ ] the change is minimal\n- [ ] no new dependency"),
        "{review}"
    );
    assert!(
        review.contains("eval grade DIR --task half --run 1"),
        "{review}"
    );
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert!(
        junit.contains("<skipped") && junit.contains("pending a human grade"),
        "{junit}"
    );
    let (code, stdout, stderr) = eval(
        suite.path(),
        &[
            "grade",
            out.to_str().unwrap(),
            "--task",
            "half",
            "--run",
            "1",
            "--pass",
            "--note",
            "looks right",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "half run 1: now pass\n");
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(
        (summary["pending"].as_u64(), summary["passed"].as_u64()),
        (Some(0), Some(1))
    );
    assert!(
        std::fs::read_to_string(out.join("results.jsonl"))
            .unwrap()
            .contains("graded pass by a person: looks right")
    );
    let (code, _, stderr) = eval(
        suite.path(),
        &[
            "grade",
            out.to_str().unwrap(),
            "--task",
            "half",
            "--run",
            "1",
            "--fail",
        ],
    );
    assert_eq!(code, 2);
    assert!(stderr.contains("no human grade pending"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_llm_judge_scores_the_diff_with_the_fast_model_and_keeps_its_reasoning() {
    let mock = MockLlm::start(vec![openai_answer(
        "",
        &[(
            "call_g",
            "grade",
            "{\"score\": 8, \"reasoning\": \"true division, minimal change\"}",
        )],
        "tool_calls",
    )])
    .await;
    let suite = scripted_suite(&format!(
        "{FIX_TASK}    graders:\n      - llm_judge: {{rubric: \"half uses true division and nothing else changes\", threshold: 7}}\n"
    ));
    let gates = format!(
        "{PY_GATES}llm: {{provider: openai, base_url: \"{}\", model: main-model, fast_model: fast-model}}\n",
        mock.base_url
    );
    std::fs::write(suite.path().join("gates.yml"), gates).unwrap();
    let root = suite.path().to_owned();
    let (code, stdout, stderr) = tokio::task::spawn_blocking(move || {
        eval(
            &root,
            &[
                "run",
                root.to_str().unwrap(),
                "--out",
                root.join("out").to_str().unwrap(),
                "--json",
            ],
        )
    })
    .await
    .unwrap();
    assert_eq!(code, 0, "{stderr}");
    let summary = last_json(&stdout);
    let judge = &summary["results"][0]["grader_details"][0];
    assert_eq!(judge["grade"], "pass", "{summary:#}");
    assert_eq!(judge["score"], 8.0);
    assert!(
        judge["detail"]
            .as_str()
            .unwrap()
            .contains("true division, minimal change")
    );
    let requests = mock.requests();
    assert_eq!(
        requests.len(),
        1,
        "the scripted build needs no model; only the judge asks"
    );
    let body = requests[0].json();
    assert_eq!(body["model"], "fast-model");
    let prompt = body["messages"][1]["content"].as_str().unwrap();
    assert!(
        prompt.contains("<diff>\n") && prompt.contains("+    return x / 2"),
        "{prompt}\n{summary:#}"
    );
}

fn result(task: &str, run: u32, grade: Grade) -> RunResult {
    RunResult {
        task: task.into(),
        run,
        outcome: if grade == Grade::Pass {
            "committed"
        } else {
            "escalated"
        }
        .into(),
        grade,
        grader_details: vec![GraderDetail::leaf(
            "gates",
            grade,
            if grade == Grade::Pass {
                "all gates passed"
            } else {
                "failed: tests: 1 test failed"
            },
        )],
        llm_calls: 3 + run,
        prompt_tokens: 1000 * u64::from(run),
        completion_tokens: 100,
        cost_usd: 0.002 * f64::from(run),
        wall_s: 1.5 * f64::from(run),
        overhead_s: 0.02,
        note: (grade != Grade::Pass)
            .then(|| "Escalated: the tests still fail after 3 iterations.".to_owned()),
    }
}

fn write_summary(dir: &Path, summary: &summary::Summary) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("summary.json"),
        serde_json::to_string(summary).unwrap(),
    )
    .unwrap();
}

#[test]
fn compare_gates_on_a_significant_regression_only() {
    let dir = tempfile::tempdir().unwrap();
    let tasks: Vec<String> = (0..10).map(|i| format!("t{i}")).collect();
    let a = summarize(
        "a",
        tasks.iter().map(|t| result(t, 1, Grade::Pass)).collect(),
    );
    let worse = summarize(
        "b",
        tasks
            .iter()
            .enumerate()
            .map(|(i, t)| result(t, 1, if i < 7 { Grade::Fail } else { Grade::Pass }))
            .collect(),
    );
    let slightly = summarize(
        "c",
        tasks
            .iter()
            .enumerate()
            .map(|(i, t)| result(t, 1, if i < 1 { Grade::Fail } else { Grade::Pass }))
            .collect(),
    );
    write_summary(&dir.path().join("a"), &a);
    write_summary(&dir.path().join("b"), &worse);
    write_summary(&dir.path().join("c"), &slightly);
    let (code, stdout, _) = eval(dir.path(), &["compare", "a", "b"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("B is significantly WORSE than A (regression)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("exact sign test over 10 paired tasks (0 better, 7 worse)"),
        "{stdout}"
    );
    let (code, stdout, _) = eval(dir.path(), &["compare", "a", "c", "--json"]);
    assert_eq!(code, 0, "{stdout}");
    let comparison: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(comparison["verdict"], "same");
    assert_eq!(comparison["p_value"], 1.0);
    let (code, _, _) = eval(dir.path(), &["compare", "a", "b", "--threshold", "0.8"]);
    assert_eq!(code, 0, "a drop within the threshold passes the gate");
    let (code, _, stderr) = eval(dir.path(), &["compare", "a", "missing"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("missing/summary.json"), "{stderr}");
}

#[test]
fn the_report_and_the_summary_read_as_expected() {
    let results = vec![
        result("fix-mean", 1, Grade::Pass),
        result("fix-mean", 2, Grade::Pass),
        result("fix-sum", 1, Grade::Pass),
        result("fix-sum", 2, Grade::Fail),
        result("flaky-net", 1, Grade::Error),
        result("flaky-net", 2, Grade::Pending),
    ];
    let summary = summarize("demo", results);
    insta::assert_snapshot!("eval_report_md", summary::to_markdown(&summary));
    insta::assert_json_snapshot!("eval_summary_json", summary::to_json(&summary));
}

#[test]
fn mine_turns_commits_that_fixed_failing_tests_into_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(repo.join("tests")).unwrap();
    let write = |path: &str, text: &str| std::fs::write(repo.join(path), text).unwrap();
    write(".meta-agent.yml", PY_GATES);
    write(
        "pyproject.toml",
        "[tool.pytest.ini_options]\npythonpath = [\".\"]\n",
    );
    write(
        "calc.py",
        "def add(a, b):\n    return a + b\n\n\ndef half(x):\n    return x // 2\n",
    );
    write(
        "tests/test_calc.py",
        "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    );
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "calculator"]);
    write(
        "calc.py",
        "def add(a, b):\n    return a + b\n\n\ndef half(x):\n    return x / 2\n",
    );
    write(
        "tests/test_half.py",
        "from calc import half\n\n\ndef test_half_of_odd():\n    assert half(3) == 1.5\n",
    );
    git(&repo, &["add", "-A"]);
    git(
        &repo,
        &["commit", "-qm", "Fix half of odd numbers\n\nhalf(3) was 1."],
    );
    write("README.md", "calc\n");
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "docs"]);
    write(
        "tests/test_more.py",
        "from calc import add\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n",
    );
    write(
        "calc.py",
        "def add(a, b):\n    return b + a\n\n\ndef half(x):\n    return x / 2\n",
    );
    git(&repo, &["add", "-A"]);
    git(
        &repo,
        &["commit", "-qm", "refactor with a test that already passed"],
    );
    let out = dir.path().join("mined");
    let output = meta_agent()
        .args([
            "--repo",
            repo.to_str().unwrap(),
            "eval",
            "mine",
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("skip   docs: no tests changed"), "{stdout}");
    assert!(stdout.contains("skip   refactor with a test that already passed: the new tests already pass on the parent"), "{stdout}");
    assert!(
        stdout.contains("task   Fix half of odd numbers"),
        "{stdout}"
    );
    assert!(stdout.contains("1 tasks written"), "{stdout}");
    let suite: Value =
        serde_yaml::from_str(&std::fs::read_to_string(out.join("suite.yml")).unwrap()).unwrap();
    let task = &suite["tasks"][0];
    assert!(
        task["task"]
            .as_str()
            .unwrap()
            .starts_with("Fix half of odd numbers")
    );
    let hidden = &task["graders"][0]["hidden_tests"];
    assert_eq!(
        hidden["fail_to_pass"][0]
            .as_str()
            .unwrap()
            .rsplit("::")
            .next(),
        Some("test_half_of_odd"),
        "{hidden}"
    );
    let kept = out.join(hidden["files"]["tests/test_half.py"].as_str().unwrap());
    assert!(
        std::fs::read_to_string(kept)
            .unwrap()
            .contains("half(3) == 1.5")
    );
    // The mined suite is a valid suite: it loads with its checks.
    meta_agent::eval::suite::Suite::load(&out).unwrap();
}

#[test]
fn the_suite_schema_is_printed_and_describes_the_graders() {
    let (code, stdout, _) = eval(Path::new("."), &["schema"]);
    assert_eq!(code, 0);
    let schema: Value = serde_json::from_str(&stdout).unwrap();
    let text = schema.to_string();
    for grader in [
        "hidden_tests",
        "llm_judge",
        "composite",
        "human",
        "pattern",
        "exact",
    ] {
        assert!(text.contains(grader), "{grader}");
    }
    let bundled = std::fs::read_to_string(bundled().join("suite.yml")).unwrap();
    let instance: Value = serde_yaml::from_str(&bundled).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert!(
        validator.is_valid(&instance),
        "the bundled suite matches the schema"
    );
    assert!(!validator.is_valid(
        &json!({"version": 1, "tasks": [{"id": "a", "source": {}, "graders": [{"vibes": {}}]}]})
    ));
}

proptest! {
    #[test]
    fn the_suite_parser_never_panics(text in "\\PC{0,400}") {
        let _ = meta_agent::eval::suite::parse(&text, Path::new("suite.yml"));
    }

    #[test]
    fn generated_suites_read_back_as_written(
        ids in proptest::collection::btree_set("[a-z][a-z0-9-]{0,12}", 1..5),
        weight in 0.0f64..10.0,
        threshold in 0.0f64..1.0,
        regex in "[a-z]{1,8}",
    ) {
        let tasks: Vec<Value> = ids.iter().map(|id| json!({
            "id": id,
            "source": {"git": "https://example.com/r.git", "commit": "abc"},
            "task": format!("do {id}"),
            "graders": [{"composite": {"mode": "weighted", "threshold": threshold, "graders": [
                {"weight": weight, "grader": {"pattern": {"regex": regex, "absent": true}}},
                {"grader": {"gates": {}}}
            ]}}]
        })).collect();
        let text = serde_yaml::to_string(&json!({"version": 1, "tasks": tasks})).unwrap();
        let file = meta_agent::eval::suite::parse(&text, Path::new("s.yml")).unwrap();
        prop_assert_eq!(file.tasks.len(), ids.len());
        let again = serde_yaml::to_string(&file).unwrap();
        let reread = meta_agent::eval::suite::parse(&again, Path::new("s.yml")).unwrap();
        prop_assert_eq!(serde_json::to_value(&reread.tasks).unwrap(), serde_json::to_value(&file.tasks).unwrap());
    }
}
