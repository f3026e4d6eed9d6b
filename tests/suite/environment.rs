//! Gates that cannot start end the run honestly, through the real binary with the loopback mock
//! LLM: escalated for the environment (`escalation.kind: environment`), with the tool's own
//! words, what to do, and **no request to the model** when it shows at the baseline: a Python
//! gate whose virtualenv the sandbox hides (under `/tmp`, outside the worktree), a program that is
//! not installed (exit 127), a test runner its interpreter cannot import (that virtualenv, let in
//! with `sandbox.read`); and a gate that cannot start only on the pristine checkout, where a
//! virtualenv copied from the worktree still points into the worktree: the change stays
//! unverified, not failed. `sandbox.read` refuses the home and credential directories.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::engine::run_json_with_model;
use crate::common::mock_llm::{MockLlm, streamed_tool_call};
use crate::common::{git, meta_agent};

const CALC: &str = "def mean(values):\n    return sum(values) // len(values)\n";
const TEST: &str = "import unittest\n\nfrom calc import mean\n\n\nclass MeanTest(unittest.TestCase):\n    \
                    def test_mean(self):\n        self.assertEqual(mean([1, 2]), 1.5)\n";

/// A committed Python project whose test fails, configured with `config` (no preset).
fn project(config: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(work.join("tests")).unwrap();
    std::fs::write(work.join("calc.py"), CALC).unwrap();
    std::fs::write(work.join("tests/test_calc.py"), TEST).unwrap();
    std::fs::write(work.join("tests/__init__.py"), "").unwrap();
    std::fs::write(work.join(".gitignore"), ".venv/\n__pycache__/\n").unwrap();
    std::fs::write(
        work.join(".meta-agent.yml"),
        format!("version: 1\npreset: none\nllm: {{reflect: false}}\n{config}"),
    )
    .unwrap();
    git(&work, &["init", "-q"]);
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "initial"]);
    (dir, work)
}

/// A virtualenv without pip (and so without pytest), outside every project: under the system
/// temporary directory, which the sandbox hides from commands.
fn outside_virtualenv() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let venv = dir.path().join("venv");
    let made = std::process::Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .status()
        .unwrap();
    assert!(made.success(), "python3 -m venv");
    (dir, venv)
}

/// Runs the task against `mock` with `--json`: the exit code, the events, the outcome.
async fn run(work: &Path, mock: &MockLlm) -> (i32, Vec<Value>, Value) {
    let url = mock.base_url.clone();
    let work = work.to_owned();
    tokio::task::spawn_blocking(move || {
        let task = [
            "run",
            "--text",
            "Make the tests pass",
            "--max-iterations",
            "2",
        ];
        run_json_with_model(&work, &url, &task)
    })
    .await
    .unwrap()
}

/// The run ended escalated for the environment, before any model call; returns its report.
fn assert_environment_before_the_model(
    work: &Path,
    mock: &MockLlm,
    (code, events, outcome): &(i32, Vec<Value>, Value),
) -> String {
    assert_eq!(outcome["outcome"], "escalated", "{outcome:#}\n{events:#?}");
    assert_eq!(*code, 4, "escalated: {outcome:#}");
    assert_eq!(outcome["escalation"]["kind"], "environment", "{outcome:#}");
    assert_eq!(outcome["escalation"]["pristine"], false, "{outcome:#}");
    assert_eq!(outcome["llm_calls"], 0, "{outcome:#}");
    assert!(
        mock.requests().is_empty(),
        "no request may reach the model: {:?}",
        mock.requests().len()
    );
    assert!(
        !events.iter().any(|e| e["event"] == "llm_call"),
        "{events:#?}"
    );
    crate::common::session_file(work, outcome, "report.md")
}

/// The one start failure the outcome names.
fn problem(outcome: &Value) -> &Value {
    let failures = outcome["escalation"]["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1, "{outcome:#}");
    &failures[0]["problem"]
}

#[tokio::test(flavor = "multi_thread")]
async fn a_gate_whose_virtualenv_the_sandbox_hides_ends_the_run_before_any_model_call() {
    let (_venv_dir, venv) = outside_virtualenv();
    let python = venv.join("bin/python");
    let (_dir, work) = project(&format!(
        "gates:\n  - name: tests\n    kind: tests\n    run: [{}, -m, unittest, discover, -s, tests, -t, .]\n",
        python.display()
    ));
    let mock = MockLlm::start(Vec::new()).await;
    let ran = run(&work, &mock).await;
    let report = assert_environment_before_the_model(&work, &mock, &ran);
    let problem = problem(&ran.2);
    let pyvenv = venv.join("pyvenv.cfg").display().to_string();
    assert_eq!(problem["kind"], "path_hidden", "{problem:#}");
    assert_eq!(problem["path"], pyvenv.as_str(), "{problem:#}");
    assert_eq!(problem["grant"], venv.display().to_string().as_str());
    assert!(
        problem["error"]
            .as_str()
            .is_some_and(|e| e.contains("PermissionError") && e.contains("pyvenv.cfg")),
        "the tool's own words: {problem:#}"
    );
    assert!(report.contains(&pyvenv), "{report}");
    assert!(
        report.contains(&format!("sandbox: {{read: [{}]}}", venv.display())),
        "the report names the setting that lets the gate read it: {report}"
    );
    assert!(report.contains("before any model call"), "{report}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_program_that_is_not_installed_ends_the_run_before_any_model_call() {
    let (_dir, work) = project(
        "gates:\n  - name: tests\n    kind: tests\n    run: \"python3 -m unittest discover -s tests -t .\"\n  \
         - name: lint\n    kind: lint\n    run: \"nosuchlinter-xyz check .\"\n",
    );
    let mock = MockLlm::start(Vec::new()).await;
    let ran = run(&work, &mock).await;
    let report = assert_environment_before_the_model(&work, &mock, &ran);
    let failures = &ran.2["escalation"]["failures"];
    assert_eq!(
        failures[0]["gate"], "lint",
        "only the gate that could not start: {failures:#}"
    );
    assert_eq!(failures[0]["problem"]["kind"], "bad_command");
    assert_eq!(failures[0]["problem"]["code"], 127);
    assert!(
        report.contains("nosuchlinter-xyz: not found"),
        "the shell's own words: {report}"
    );
    assert!(
        report.contains("install the program the gate runs"),
        "{report}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_test_runner_that_cannot_be_imported_ends_the_run_before_any_model_call() {
    let (_venv_dir, venv) = outside_virtualenv();
    let (_dir, work) = project(&format!(
        "sandbox:\n  read: [{venv}]\ngates:\n  - name: tests\n    kind: tests\n    \
         run: [{venv}/bin/python, -m, pytest, -q, \"--junitxml={{report_dir}}/junit.xml\"]\n    \
         junit: \"{{report_dir}}/junit.xml\"\n",
        venv = venv.display()
    ));
    let mock = MockLlm::start(Vec::new()).await;
    let ran = run(&work, &mock).await;
    let report = assert_environment_before_the_model(&work, &mock, &ran);
    let problem = problem(&ran.2);
    assert_eq!(
        problem["kind"], "runner_missing",
        "sandbox.read let the interpreter start; pytest itself is missing: {problem:#}"
    );
    assert_eq!(problem["runner"], "pytest");
    assert!(report.contains("No module named pytest"), "{report}");
    assert!(report.contains("install `pytest`"), "{report}");
}

/// The virtualenv `setup:` makes in the worktree has a script whose first line names the
/// worktree's interpreter, as pip's scripts do. The gates pass in the worktree once the model
/// fixed `mean`; on the pristine checkout (the virtualenv copied in with the ignored files) the
/// script still points into the worktree, which the sandbox hides there: the change is
/// unverified, not failed, and the report says to run the tool through its interpreter.
#[tokio::test(flavor = "multi_thread")]
async fn a_gate_that_cannot_start_only_on_the_pristine_checkout_is_an_environment_outcome() {
    let script = "#!%s/.venv/bin/python\\nimport sys, unittest\\n\
                  ok = unittest.main(module=None, argv=['unit', 'discover', '-s', 'tests', '-t', '.'], \
                  exit=False).result.wasSuccessful()\\nsys.exit(0 if ok else 1)\\n";
    let setup = format!(
        "python3 -m venv --without-pip .venv && printf \"{script}\" \"$PWD\" > .venv/bin/unit \
         && chmod +x .venv/bin/unit"
    );
    let (_dir, work) = project(&format!(
        "setup:\n  - run: {}\ngates:\n  - name: tests\n    kind: tests\n    run: [.venv/bin/unit]\n",
        serde_json::to_string(&setup).unwrap()
    ));
    let mock = MockLlm::start(vec![
        streamed_tool_call(
            "call_e",
            "edit_file",
            json!({"path": "calc.py", "old_string": "// len", "new_string": "/ len"}),
        ),
        streamed_tool_call(
            "call_f",
            "finish",
            json!({"summary": "mean divides exactly"}),
        ),
    ])
    .await;
    let (code, events, outcome) = run(&work, &mock).await;
    let worktree_passed = events
        .iter()
        .any(|e| e["event"] == "phase_finished" && e["outcome"] == "gates passed");
    assert!(
        worktree_passed,
        "the fix passes in the worktree: {events:#?}"
    );
    assert_eq!(outcome["outcome"], "escalated", "{outcome:#}");
    assert_eq!(code, 4);
    assert_eq!(outcome["escalation"]["kind"], "environment", "{outcome:#}");
    assert_eq!(outcome["escalation"]["pristine"], true, "{outcome:#}");
    let problem = problem(&outcome);
    assert_eq!(problem["kind"], "path_hidden", "{problem:#}");
    assert!(
        problem["path"]
            .as_str()
            .is_some_and(|p| p.ends_with("/.venv/pyvenv.cfg") && !p.contains("pristine")),
        "the worktree's virtualenv: {problem:#}"
    );
    let report = crate::common::session_file(&work, &outcome, "report.md");
    assert!(report.contains("unverified, not failed"), "{report}");
    assert!(report.contains("`.venv/bin/python -m pytest`"), "{report}");
    let head = crate::common::branch_message(&work, &outcome);
    assert!(
        !head.contains("Verified by the repository's gates"),
        "nothing is committed as verified: {head}"
    );
    assert!(
        crate::common::file_on_branch(&work, &outcome, "calc.py").contains("/ len"),
        "the change is kept on its branch"
    );
}

#[test]
fn sandbox_read_refuses_the_home_and_credential_directories() {
    let home = std::env::var("HOME").unwrap();
    for (dir, words) in [
        (home.clone(), "real home"),
        (format!("{home}/.ssh"), "credentials"),
        ("/tmp".to_owned(), "shared by every process"),
    ] {
        let (_dir, work) = project(&format!("sandbox:\n  read: [{dir}]\ngates: []\n"));
        let out = meta_agent()
            .arg("--repo")
            .arg(&work)
            .args(["config", "check"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{dir}: {stderr}");
        assert!(
            stderr.contains("sandbox.read") && stderr.contains(words),
            "{dir}: {stderr}"
        );
    }
}
