//! End to end: `meta-agent run` and `resume` on scratch copies of the example repository, with a
//! local bare remote, the real gates (ruff, pytest, coverage) and real git.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::common::{example, git, meta_agent, scratch_repo, session_file};

/// The example with one change committed on top.
pub(super) fn example_with(change: impl FnOnce(&Path)) -> (tempfile::TempDir, std::path::PathBuf) {
    let (dir, work) = scratch_repo(&example());
    change(&work);
    git(&work, &["commit", "-q", "-am", "break it"]);
    (dir, work)
}

pub(super) fn edit(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{from} not in {}", path.display());
    std::fs::write(path, text.replacen(from, to, 1)).unwrap();
}

pub(super) fn unused_import(work: &Path) {
    edit(
        &work.join("calc.py"),
        "\n\ndef add",
        "\nimport math\n\n\ndef add",
    );
}

pub(super) fn wrong_mean(work: &Path) {
    edit(
        &work.join("calc.py"),
        "sum(values) / len(values)",
        "sum(values) // len(values)",
    );
}

/// Runs meta-agent with `--json`; returns the exit code, the events and the outcome (last line).
pub(super) fn run_json(work: &Path, args: &[&str]) -> (i32, Vec<Value>, Value) {
    json_lines(meta_agent().arg("--repo").arg(work).args(args))
}

/// [`run_json`] with the model at `url` (an OpenAI-compatible mock: `test-model`, a test key).
pub(super) fn run_json_with_model(
    work: &Path,
    url: &str,
    args: &[&str],
) -> (i32, Vec<Value>, Value) {
    json_lines(
        meta_agent()
            .env("OPENAI_API_KEY", "sk-test-model-0000")
            .arg("--repo")
            .arg(work)
            .args(["--llm-provider", "openai", "--llm-base-url", url])
            .args(["--model", "test-model"])
            .args(args),
    )
}

/// Runs `command` with `--json`: the exit code, the events and the outcome (the last line).
fn json_lines(command: &mut assert_cmd::Command) -> (i32, Vec<Value>, Value) {
    let out = command.arg("--json").output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let mut lines: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    let outcome = lines.pop().unwrap_or_else(|| {
        panic!(
            "no output; stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap(), lines, outcome)
}

pub(super) fn events_named<'a>(events: &'a [Value], name: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["event"] == name).collect()
}

pub(super) fn trailers(work: &Path, rev: &str) -> Vec<(String, String)> {
    let message = git(work, &["log", "-1", "--format=%B", rev]);
    let mut child = Command::new("git")
        .args(["interpret-trailers", "--parse"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), message.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|line| {
            line.split_once(": ")
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
        })
        .collect()
}

pub(super) fn trailer<'a>(trailers: &'a [(String, String)], key: &str) -> &'a str {
    trailers
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no {key} in {trailers:?}"))
}

pub(super) fn task_file(dir: &Path, yaml: &str) -> String {
    let path = dir.join("task.yml");
    std::fs::write(&path, yaml).unwrap();
    path.display().to_string()
}

/// `meta-agent run` of the scripted task `yaml` (written in `dir`) on `work`: it must commit
/// after one act. Returns the events and the outcome.
pub(super) fn committed_in_one_iteration(
    work: &Path,
    dir: &Path,
    yaml: &str,
) -> (Vec<Value>, Value) {
    let task = task_file(dir, yaml);
    let (code, events, outcome) = run_json(work, &["run", "--task", &task]);
    assert_eq!(code, 0, "{outcome:#}");
    assert_eq!(outcome["outcome"], "committed");
    assert_eq!(outcome["iterations"], 1, "the fix passed the first time");
    (events, outcome)
}

#[test]
fn hindsight_fixes_a_lint_failure_with_no_llm_call_and_commits_with_trailers() {
    let (_dir, work) = example_with(unused_import);
    let (code, events, outcome) = run_json(&work, &["run", "--text", "Make the gates pass"]);
    assert_eq!(code, 0, "{outcome:#}");
    assert_eq!(outcome["outcome"], "committed");
    assert_eq!(outcome["llm_calls"], 0);
    assert_eq!(
        outcome["iterations"], 1,
        "the baseline's failure is fixed by hindsight in the first act"
    );
    assert_eq!(outcome["branch"], "meta-agent/make-the-gates-pass");
    assert!(events_named(&events, "llm_call").is_empty());
    let applied = events_named(&events, "resolution_applied");
    assert_eq!(applied.len(), 1, "{applied:?}");
    assert_eq!(applied[0]["description"], "command: ruff check --fix");

    let head = git(&work, &["rev-parse", "--abbrev-ref", "HEAD"]);
    assert_eq!(
        head.trim(),
        "main",
        "the user's checkout stays on its branch"
    );
    let branch = "meta-agent/make-the-gates-pass";
    let trailers = trailers(&work, branch);
    assert_eq!(trailer(&trailers, "Meta-Agent-Iterations"), "1");
    assert!(trailer(&trailers, "Meta-Agent-Hindsight-Used").starts_with("yes ("));
    assert_eq!(
        trailer(&trailers, "Meta-Agent-Patterns-Applied"),
        "command: ruff check --fix"
    );
    assert_eq!(
        trailer(&trailers, "Meta-Agent-Gates"),
        "lint=pass tests=pass(7/7) coverage=pass(100.0%>=90%)"
    );
    assert_eq!(
        trailer(&trailers, "Meta-Agent-Session"),
        outcome["session"].as_str().unwrap()
    );
    assert!(!crate::common::file_on_branch(&work, &outcome, "calc.py").contains("import math"));

    let files = git(&work, &["show", "--name-only", "--format=", branch]);
    assert!(files.contains("calc.py"), "{files}");
    assert!(
        files.contains(".meta-agent/hindsight/"),
        "the outcome is recorded with the fix: {files}"
    );
    assert!(!files.contains(".coverage"), "{files}");
    let audit: Vec<Value> = session_file(&work, &outcome, "audit.jsonl")
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let commands: Vec<&str> = audit
        .iter()
        .filter(|a| a["action"] == "command.run")
        .filter_map(|a| a["detail"]["command"].as_str())
        .collect();
    assert!(commands.contains(&"ruff check --fix"), "{commands:?}");
    assert!(
        commands.iter().any(|c| c.starts_with("python3 -m pytest")),
        "gate commands are audited: {commands:?}"
    );
    assert!(
        audit.iter().any(|a| a["action"] == "commit"),
        "the commit is audited"
    );
    let metrics = session_file(&work, &outcome, "metrics.prom");
    assert!(
        metrics.contains("meta_agent_loop_total{outcome=\"committed\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("meta_agent_gate_evaluations{gate=\"lint\",result=\"fail\"} 1"),
        "{metrics}"
    );
    let remote_branches = git(&work, &["ls-remote", "--heads", "origin"]);
    assert!(
        !remote_branches.contains("meta-agent/"),
        "nothing is pushed by run: {remote_branches}"
    );
}

#[test]
fn a_dry_run_prints_what_it_would_commit_and_commits_nothing() {
    let (_dir, work) = example_with(unused_import);
    let before = git(&work, &["rev-parse", "HEAD"]);
    let out = meta_agent()
        .arg("--repo")
        .arg(&work)
        .args(["run", "--text", "Make the gates pass", "--dry-run"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.contains("--- diff (dry run: not committed) ---"),
        "{stdout}"
    );
    assert!(stdout.contains("-import math"), "{stdout}");
    assert!(
        stdout.contains("--- commit message (dry run: not committed) ---"),
        "{stdout}"
    );
    assert!(stdout.contains("Meta-Agent-Gates: lint=pass"), "{stdout}");
    assert_eq!(git(&work, &["rev-parse", "HEAD"]), before);
    assert_eq!(git(&work, &["status", "--porcelain"]), "");
    assert_eq!(
        git(&work, &["branch", "--format=%(refname:short)"]).trim(),
        "main"
    );
}

#[test]
fn scripted_edits_fix_a_failing_test_in_one_iteration() {
    let (dir, work) = example_with(wrong_mean);
    let task = task_file(
        dir.path(),
        "title: Fix mean of floats\nissue: 12\nrequirements: mean([1, 2, 3, 4]) must be 2.5\nedits:\n  - summary: use true division\n    changes:\n      - replace: {path: calc.py, search: 'sum(values) // len(values)', replace: 'sum(values) / len(values)'}\n",
    );
    let (code, _events, outcome) = run_json(&work, &["run", "--task", &task]);
    assert_eq!(code, 0, "{outcome:#}");
    assert_eq!(outcome["outcome"], "committed");
    assert_eq!(
        outcome["iterations"], 1,
        "one act (after the baseline) fixed it: one iteration"
    );
    let branch = crate::common::run_branch(&outcome);
    let message = git(&work, &["log", "-1", "--format=%B", branch]);
    assert!(
        message.starts_with("Use true division\n\nTask: Fix mean of floats\n"),
        "the subject is the step's summary, the task is in the body: {message}"
    );
    assert!(
        message.contains("- build: use true division (calc.py)"),
        "{message}"
    );
    assert!(message.contains("\nFixes #12\n"), "{message}");
    let trailers = trailers(&work, branch);
    assert_eq!(trailer(&trailers, "Meta-Agent-Iterations"), "1");
    assert_eq!(trailer(&trailers, "Meta-Agent-Hindsight-Used"), "no");
}

/// Session ids, branches, durations and temporary paths vary; the rest of the report is pinned.
fn stable_report(text: &str, session: &str) -> String {
    let text = text.replace(session, "[session]");
    let temps = regex::Regex::new(r"/tmp/[^\s`]+").unwrap();
    temps.replace_all(&text, "[tmp]").into_owned()
}

#[test]
fn a_persistent_failure_escalates_after_two_iterations_with_a_report() {
    let (dir, work) = example_with(wrong_mean);
    let task = task_file(
        dir.path(),
        "title: Fix mean\nrequirements: mean([1, 2, 3, 4]) must be 2.5\nedits:\n  - summary: reword the docstring\n    changes:\n      - replace: {path: calc.py, search: 'A tiny calculator', replace: 'A small calculator'}\n  - summary: reword it again\n    changes:\n      - replace: {path: calc.py, search: 'A small calculator', replace: 'A little calculator'}\n",
    );
    let (code, events, outcome) = run_json(&work, &["run", "--task", &task]);
    assert_eq!(code, 4, "{outcome:#}");
    assert_eq!(outcome["outcome"], "escalated");
    assert_eq!(
        outcome["iterations"], 2,
        "two acts, the same failure after each"
    );
    let decided: Vec<&str> = events_named(&events, "decided")
        .iter()
        .map(|e| e["decision"].as_str().unwrap())
        .collect();
    assert_eq!(
        decided,
        ["continue", "continue", "await_guidance"],
        "after the baseline, after the build, after the same failures again"
    );
    let tests_runs: Vec<&str> = events_named(&events, "gate_started")
        .iter()
        .filter(|e| e["gate"] == "tests")
        .map(|e| e["command"].as_str().unwrap())
        .collect();
    let full = tests_runs.iter().filter(|c| !c.contains("::")).count();
    let quick = tests_runs
        .iter()
        .filter(|c| c.ends_with("tests/test_calc.py::test_mean"))
        .count();
    assert_eq!(
        (full, quick),
        (3, 1),
        "the baseline, its flaky check of the failing test (the task is about it), then the \
         full gates once per candidate on its pristine checkout; the failing test failed again \
         there, twice in a row, so it was not re-run for flakiness: {tests_runs:#?}"
    );
    let verified: Vec<&str> = events_named(&events, "phase_finished")
        .iter()
        .filter(|e| e["phase"] == "verify")
        .map(|e| e["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(
        verified, ["pristine checkout: gates failed"; 2],
        "each act's change was observed on its pristine checkout"
    );
    let gates = outcome["gates"].as_str().unwrap();
    assert!(
        gates.contains("tests=fail(6/7)"),
        "the last observation ran the whole suite: {gates}"
    );
    let session = outcome["session"].as_str().unwrap();
    let report = session_file(&work, &outcome, "report.md");
    let escalation = report.split("--- escalation report ---\n").nth(1).unwrap();
    insta::assert_snapshot!(
        "persistent_failure_escalation",
        stable_report(escalation, session)
    );
    let wip = git(&work, &["log", "-1", "--format=%s", "meta-agent/fix-mean"]);
    assert_eq!(
        wip.trim(),
        "WIP: meta-agent: Fix mean",
        "the work in progress is kept"
    );
    let place = crate::common::session_worktree(&work, &outcome);
    let entries = walkdir::WalkDir::new(place.join(".meta-agent/hindsight"))
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .count();
    assert!(
        entries >= 1,
        "remaining signatures are recorded as unresolved"
    );
}

#[test]
fn without_an_llm_or_a_known_fix_the_run_escalates_clearly() {
    let (_dir, work) = example_with(wrong_mean);
    let (code, _events, outcome) = run_json(&work, &["run", "--text", "Fix mean"]);
    assert_eq!(code, 4);
    assert_eq!(outcome["outcome"], "escalated");
    assert_eq!(outcome["llm_calls"], 0);
    let report = session_file(&work, &outcome, "report.md");
    assert!(
        report.contains("only an LLM (or a person) could go further"),
        "{report}"
    );
    assert!(
        report.contains("tests/test_calc.py") || report.contains("test_mean"),
        "{report}"
    );
}

#[test]
fn a_flaky_test_is_reported_not_fixed() {
    let (_dir, work) = example_with(|work| {
        std::fs::write(
            work.join("tests/test_flaky.py"),
            // Flaky in the tests gate only (the one that writes JUnit): the coverage gate runs
            // the same file at the same time, and must not race it for the marker. The marker is
            // in an ignored directory of the worktree: gates write nowhere else.
            "import pathlib\nimport sys\n\n\ndef test_sometimes():\n    if not any('junitxml' in arg for arg in sys.argv):\n        return\n    marker = pathlib.Path('.pytest_cache') / 'flaky-marker'\n    marker.parent.mkdir(exist_ok=True)\n    first = not marker.exists()\n    marker.touch()\n    assert not first, 'fails on the first run only'\n",
        )
        .unwrap();
        git(work, &["add", "-A"]);
    });
    let (code, events, outcome) = run_json(&work, &["run", "--text", "Check the gates"]);
    assert_eq!(code, 0, "{outcome:#}");
    assert_eq!(outcome["outcome"], "nothing_to_do");
    assert_eq!(
        outcome["flaky"],
        serde_json::json!(["tests.test_flaky::test_sometimes"])
    );
    assert_eq!(events_named(&events, "flaky_test").len(), 1);
}

#[test]
fn a_change_that_skips_a_failing_test_is_refused() {
    let (dir, work) = example_with(wrong_mean);
    let task = task_file(
        dir.path(),
        "title: Make the tests green\nedits:\n  - summary: skip the failing test\n    changes:\n      - replace: {path: tests/test_calc.py, search: \"def test_mean():\", replace: \"@pytest.mark.skip(reason='later')\\ndef test_mean():\"}\n",
    );
    let (code, events, outcome) = run_json(&work, &["run", "--task", &task]);
    assert_ne!(code, 0);
    assert_eq!(outcome["outcome"], "escalated");
    let refused = outcome["refused_changes"].as_array().unwrap();
    assert!(!refused.is_empty(), "{outcome:#}");
    assert!(
        refused[0].as_str().unwrap().contains("tests/test_calc.py"),
        "{refused:?}"
    );
    assert_eq!(events_named(&events, "tamper_refused").len(), 1);
    let place = crate::common::session_worktree(&work, &outcome);
    let test = std::fs::read_to_string(place.join("tests/test_calc.py")).unwrap();
    assert!(!test.contains("mark.skip"), "the refused change was undone");
}

#[test]
fn a_clean_repository_has_nothing_to_do() {
    let (_dir, work) = scratch_repo(&example());
    let (code, _events, outcome) = run_json(&work, &["run", "--text", "Check the gates"]);
    assert_eq!(code, 0);
    assert_eq!(outcome["outcome"], "nothing_to_do");
    assert_eq!(
        outcome["iterations"], 0,
        "the baseline shows green gates: nothing is built, no iteration runs"
    );
    let isolation = outcome["isolation"].as_str().unwrap();
    assert!(
        isolation.contains("Landlock"),
        "what the machine supports is reported: {isolation}"
    );
    assert!(outcome["commit"].is_null());
}

/// Starts a run, SIGKILLs it when the `nth` event matching `point` streams out, resumes it, and
/// checks the resumed run ends exactly as an uninterrupted one does.
fn killed_and_resumed(point: impl Fn(&Value) -> bool) {
    use std::io::BufRead;
    let (_dir, work) = example_with(unused_import);
    let mut child = crate::common::meta_agent_process(env!("CARGO_BIN_EXE_meta-agent").as_ref())
        .arg("--repo")
        .arg(&work)
        .args(["run", "--text", "Make the gates pass", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut seen = Vec::new();
    for line in stdout.lines() {
        let event: Value = serde_json::from_str(&line.unwrap()).unwrap();
        let hit = point(&event);
        seen.push(event);
        if hit {
            child.kill().unwrap();
            break;
        }
    }
    child.wait().unwrap();
    assert!(
        seen.iter().all(|e| e["event"] != "run_finished"),
        "killed too late: {seen:?}"
    );
    let (code, events, outcome) = run_json(&work, &["resume"]);
    assert_eq!(code, 0, "{outcome:#}");
    assert_eq!(events_named(&events, "recovered").len(), 1);
    assert_eq!(outcome["outcome"], "committed");
    assert_eq!(outcome["iterations"], 1);
    let branch = crate::common::run_branch(&outcome);
    let trailers = trailers(&work, branch);
    assert_eq!(
        trailer(&trailers, "Meta-Agent-Gates"),
        "lint=pass tests=pass(7/7) coverage=pass(100.0%>=90%)"
    );
    assert!(!crate::common::file_on_branch(&work, &outcome, "calc.py").contains("import math"));
    let state: Value = serde_json::from_str(&session_file(&work, &outcome, "state.json")).unwrap();
    assert_eq!(state["recoveries"].as_array().unwrap().len(), 1);
    assert!(
        !crate::common::session_worktree(&work, &outcome).exists(),
        "everything was committed: the run's worktree went"
    );
    assert_eq!(git(&work, &["status", "--porcelain"]).trim(), "");
}

#[test]
fn killed_while_the_first_gates_run_resumes_to_the_same_commit() {
    killed_and_resumed(|event| event["event"] == "gate_started");
}

#[test]
fn killed_while_applying_a_resolution_resumes_to_the_same_commit() {
    killed_and_resumed(|event| event["event"] == "resolution_applied");
}

#[test]
fn killed_before_the_final_reflection_resumes_to_the_same_commit() {
    killed_and_resumed(|event| {
        event["event"] == "state_changed"
            && event["to"] == "deciding"
            && event["reason"] == "pristine checkout: gates passed"
    });
}

#[test]
fn the_quickstart_example_is_fixed_by_hindsight_alone() {
    let examples =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/broken-calc");
    let (_dir, work) = scratch_repo(&examples);
    let (code, events, outcome) = run_json(
        &work,
        &["run", "--text", "Make the gates pass", "--dry-run"],
    );
    assert_eq!(code, 0, "{outcome:#}");
    assert_eq!(outcome["outcome"], "committed");
    assert_eq!(outcome["dry_run"], true);
    assert_eq!(outcome["llm_calls"], 0);
    assert_eq!(
        outcome["iterations"], 1,
        "the first act, before any model call, applies the command and the learned patch"
    );
    let mut applied: Vec<&str> = events_named(&events, "resolution_applied")
        .iter()
        .map(|e| e["description"].as_str().unwrap())
        .collect();
    applied.dedup();
    assert_eq!(applied, ["command: ruff check --fix", "patch: calc.py"]);
    assert_eq!(
        outcome["gates"],
        "lint=pass tests=pass(7/7) coverage=pass(100.0%>=90%)"
    );
    let place = crate::common::session_worktree(&work, &outcome);
    assert_eq!(outcome["worktree"], place.display().to_string());
    assert_eq!(
        git(&place, &["status", "--porcelain"]).trim(),
        "M calc.py",
        "a dry run leaves the fix in the run's worktree only"
    );
    assert_eq!(git(&work, &["status", "--porcelain"]).trim(), "");
}

#[test]
fn a_patch_learned_on_an_unreviewed_branch_is_not_applied() {
    let examples =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/broken-calc");
    let (_dir, work) = scratch_repo(&examples);
    let store = work.join(".meta-agent/hindsight/entries");
    let saved = tempfile::tempdir().unwrap();
    crate::common::copy_tree(&store, saved.path());
    git(&work, &["rm", "-q", "-r", ".meta-agent/hindsight/entries"]);
    git(
        &work,
        &["commit", "-q", "-m", "main has no learned entries"],
    );
    git(&work, &["checkout", "-q", "-b", "feature"]);
    crate::common::copy_tree(saved.path(), &store);
    git(&work, &["add", "-A"]);
    git(
        &work,
        &["commit", "-q", "-m", "entries learned by an unreviewed run"],
    );

    let (code, events, outcome) = run_json(
        &work,
        &["run", "--text", "Make the gates pass", "--dry-run"],
    );
    assert_eq!(code, 4, "{outcome:#}");
    assert_eq!(outcome["outcome"], "escalated");
    let applied: Vec<&str> = events_named(&events, "resolution_applied")
        .iter()
        .map(|e| e["description"].as_str().unwrap())
        .collect();
    assert_eq!(
        applied,
        ["command: ruff check --fix"],
        "only the catalog's command is trusted"
    );
}

#[test]
fn metrics_are_pushed_to_a_configured_gateway() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let gateway = format!("http://{}", listener.local_addr().unwrap());
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        let mut request = Vec::new();
        let mut chunk = [0u8; 8192];
        while !String::from_utf8_lossy(&request).contains("meta_agent_loop_total") {
            let read = stream.read(&mut chunk).unwrap();
            if read == 0 {
                break;
            }
            request.extend_from_slice(&chunk[..read]);
        }
        stream
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
            .unwrap();
        String::from_utf8(request).unwrap()
    });
    let (_dir, work) = example_with(|work| {
        let config = work.join(".meta-agent.yml");
        let text = std::fs::read_to_string(&config).unwrap();
        std::fs::write(
            &config,
            format!("{text}telemetry:\n  push_gateway: {gateway}\n"),
        )
        .unwrap();
    });
    let (code, _events, outcome) = run_json(&work, &["run", "--text", "Check the gates"]);
    assert_eq!(code, 0, "{outcome:#}");
    let request = server.join().unwrap();
    let session = outcome["session"].as_str().unwrap();
    assert!(
        request.starts_with(&format!(
            "PUT /metrics/job/meta-agent/session/{session} HTTP/1.1"
        )),
        "{request}"
    );
    assert!(
        request.contains("meta_agent_loop_total{outcome=\"nothing_to_do\"} 1"),
        "{request}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_escalated_run_resumed_with_guidance_commits_on_its_branch() {
    let (_dir, work) = example_with(|work| {
        wrong_mean(work);
        let config = work.join(".meta-agent.yml");
        let mut text = std::fs::read_to_string(&config).unwrap();
        text.push_str("llm: {reflect: false}\n");
        std::fs::write(&config, text).unwrap();
    });
    let (work, code, outcome) = tokio::task::spawn_blocking(move || {
        let (code, _events, outcome) = run_json(&work, &["run", "--text", "Fix mean"]);
        (work, code, outcome)
    })
    .await
    .unwrap();
    assert_eq!(code, 4, "{outcome}");
    let branch = outcome["branch"].as_str().unwrap().to_owned();
    let mock = crate::common::mock_llm::MockLlm::start(vec![
        crate::common::mock_llm::streamed_tool_call(
            "call_e",
            "edit_file",
            serde_json::json!({"path": "calc.py", "old_string": "sum(values) // len(values)",
                   "new_string": "sum(values) / len(values)"}),
        ),
        crate::common::mock_llm::streamed_tool_call(
            "call_f",
            "finish",
            serde_json::json!({"summary": "true division"}),
        ),
    ])
    .await;
    let base_url = mock.base_url.clone();
    let session = outcome["session"].as_str().unwrap().to_owned();
    let (work, code, resumed) = tokio::task::spawn_blocking(move || {
        let args = [
            "--llm-provider",
            "openai",
            "--llm-base-url",
            &base_url,
            "--model",
            "test-model",
            "resume",
            &session,
            "--guidance",
            "floor division truncates: use /",
        ];
        let out = meta_agent()
            .env("OPENAI_API_KEY", "sk-test-resume-0000")
            .arg("--repo")
            .arg(&work)
            .args(args)
            .arg("--json")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let last: Value = stdout
            .lines()
            .last()
            .and_then(|line| serde_json::from_str(line).ok())
            .unwrap_or_else(|| panic!("{}", String::from_utf8_lossy(&out.stderr)));
        (work, out.status.code().unwrap(), last)
    })
    .await
    .unwrap();
    assert_eq!(code, 0, "{resumed:#}");
    assert_eq!(resumed["outcome"], "committed", "{resumed:#}");
    assert_eq!(resumed["branch"], branch.as_str());
    let requests = mock.requests();
    assert!(
        requests[0].body.contains("floor division truncates: use /"),
        "{}",
        requests[0].body
    );
    let fixed = git(&work, &["show", &format!("{branch}:calc.py")]);
    assert!(fixed.contains("sum(values) / len(values)"), "{fixed}");
    let audit = session_file(&work, &resumed, "audit.jsonl");
    let llm_calls = audit
        .lines()
        .filter(|line| line.contains("\"llm.call\""))
        .count();
    assert_eq!(
        llm_calls,
        requests.len(),
        "every model call is audited: {audit}"
    );
}

/// A loopback listener that counts connections until dropped (network tests below).
struct Loopback {
    port: u16,
    connections: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Loopback {
    fn start() -> Loopback {
        use std::sync::atomic::Ordering;
        let socket = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        socket.set_nonblocking(true).unwrap();
        let port = socket.local_addr().unwrap().port();
        let connections = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (count, done) = (connections.clone(), stop.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                match socket.accept() {
                    Ok(_) => {
                        count.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
                }
            }
        });
        Loopback {
            port,
            connections,
            stop,
        }
    }

    fn seen(&self) -> usize {
        self.connections.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The example with its configuration replaced by `config` (committed).
fn example_configured(config: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    example_with(|work| std::fs::write(work.join(".meta-agent.yml"), config).unwrap())
}

#[test]
fn setup_runs_once_before_the_build_online_and_gates_are_offline_unless_they_say_network_on() {
    let caps = meta_agent::exec::detect::detect();
    let (setup, online, offline) = (Loopback::start(), Loopback::start(), Loopback::start());
    let marks = tempfile::tempdir().unwrap();
    let mark = marks.path().join("setup");
    let offline_env = marks.path().join("offline-env");
    let config = format!(
        "version: 1\npreset: none\nsetup:\n  - run: [bash, -c, \"echo fetch > /dev/tcp/127.0.0.1/{setup} && if [ -e added.txt ]; then echo after >> {mark}; else echo before >> {mark}; fi\"]\n    timeout: 1m\ngates:\n  - name: online\n    network: on\n    run: [bash, -c, \"echo probe > /dev/tcp/127.0.0.1/{online}\"]\n  - name: offline\n    run: [bash, -c, \"echo \\\"$CARGO_NET_OFFLINE\\\" >> {env}; echo probe > /dev/tcp/127.0.0.1/{offline}; true\"]\n",
        setup = setup.port,
        online = online.port,
        offline = offline.port,
        mark = mark.display(),
        env = offline_env.display(),
    );
    // Commands write nowhere outside the worktree but their own temporary directory and what
    // the configuration makes writable.
    let config = format!(
        "{config}sandbox:\n  writable: [{}]\n",
        marks.path().display()
    );
    let (dir, work) = example_configured(&config);
    let task = task_file(
        dir.path(),
        "title: Add a file\nedits:\n  - summary: add it\n    changes:\n      - write: {path: added.txt, content: \"hello\\n\"}\n",
    );
    let (code, events, outcome) = run_json(&work, &["run", "--dry-run", "--task", &task]);
    assert_eq!(code, 0, "{outcome:#}\n{events:#?}");
    assert_eq!(
        std::fs::read_to_string(&mark).unwrap(),
        "before\n",
        "setup ran once, before the build"
    );
    assert_eq!(setup.seen(), 1, "setup had the network");
    assert!(online.seen() >= 1, "a gate with `network: on` had it");
    let first_setup = events
        .iter()
        .position(|e| {
            e["event"] == "command_run" && e["command"].as_str().unwrap().contains("echo fetch")
        })
        .expect("the setup command is a command_run event");
    let first_gate = events
        .iter()
        .position(|e| e["event"] == "gate_started")
        .unwrap();
    assert!(first_setup < first_gate);
    assert!(
        std::fs::read_to_string(&offline_env)
            .unwrap()
            .lines()
            .all(|line| line == "true"),
        "offline gates get CARGO_NET_OFFLINE=true"
    );
    if !caps.user_namespaces {
        eprintln!(
            "SKIPPED the offline check: {} — checking that the result says the network was ON",
            caps.describe()
        );
        let finished = events_named(&events, "gate_finished");
        let offline_gate = finished.iter().find(|e| e["gate"] == "offline").unwrap();
        assert!(
            offline_gate["detail"]
                .as_str()
                .unwrap()
                .contains("network ON"),
            "{offline_gate}"
        );
        return;
    }
    assert_eq!(offline.seen(), 0, "the default gate had no network");
}

#[test]
fn a_failing_setup_command_ends_the_run_before_the_build_and_names_the_command() {
    let (dir, work) = example_configured(
        "version: 1\npreset: python\nsetup:\n  - run: \"echo cannot reach the registry >&2; exit 3\"\n",
    );
    let task = task_file(
        dir.path(),
        "title: Add a file\nedits:\n  - summary: add it\n    changes:\n      - write: {path: added.txt, content: \"hello\\n\"}\n",
    );
    let (code, events, outcome) = run_json(&work, &["run", "--dry-run", "--task", &task]);
    assert_eq!(code, 4, "{outcome:#}");
    assert_eq!(outcome["outcome"], "escalated");
    let escalated = events_named(&events, "escalated");
    let reason = escalated[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains(
            "setup command `echo cannot reach the registry >&2; exit 3` exited with code 3"
        ) && reason.contains("cannot reach the registry"),
        "{reason}"
    );
    assert!(events_named(&events, "gate_started").is_empty());
    let place = crate::common::session_worktree(&work, &outcome);
    assert!(
        place.is_dir() && !place.join("added.txt").exists(),
        "nothing was built"
    );
    let report = session_file(&work, &outcome, "report.md");
    assert!(
        report.contains("setup command `echo cannot reach"),
        "{report}"
    );
}

/// The `tests` gate's runs of a finished run, from its trace: each run's command and where it
/// ran (every gate run starts the tests gate once: the baseline, a flaky check, a fast re-run, a
/// full run in the worktree, the pristine verification).
fn tests_gate_runs(work: &Path, outcome: &Value) -> Vec<(String, String)> {
    session_file(work, outcome, "trace.jsonl")
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|e| e["event"] == "command_run")
        .filter(|e| {
            let command = e["command"].as_str().unwrap_or_default();
            command.contains("--junitxml=") && command.contains("/tests/junit.xml")
        })
        .map(|e| {
            (
                e["command"].as_str().unwrap().to_owned(),
                e["cwd"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

const TRUE_DIVISION: &str = "title: Fix mean of floats\nedits:\n  - summary: use true division\n    changes:\n      - replace: {path: calc.py, search: 'sum(values) // len(values)', replace: 'sum(values) / len(values)'}\n";

/// Issue #25's target: a one-line fix takes three gate runs from the first observation to the
/// verified commit: the baseline, the flaky check of its failing test (the task is about it),
/// and the full gates once on the pristine checkout of the change (the observation and the
/// verification in one run; no full run in the worktree).
#[test]
fn a_one_line_fix_takes_three_gate_runs_the_last_on_its_pristine_checkout() {
    let (dir, work) = example_with(wrong_mean);
    let (events, outcome) = committed_in_one_iteration(&work, dir.path(), TRUE_DIVISION);
    let runs = tests_gate_runs(&work, &outcome);
    assert_eq!(runs.len(), 3, "{runs:#?}");
    assert!(!runs[0].0.contains("::") && !runs[0].1.contains("meta-agent-pristine-"));
    assert!(
        runs[1].0.ends_with(" tests/test_calc.py::test_mean"),
        "{runs:#?}"
    );
    assert!(
        !runs[2].0.contains("::") && runs[2].1.contains("meta-agent-pristine-"),
        "the full gates once, on the pristine checkout: {runs:#?}"
    );
    let after_act: Vec<(&str, &str)> = events_named(&events, "phase_finished")
        .iter()
        .filter(|e| e["iteration"] == 1 && e["phase"] != "build")
        .map(|e| (e["phase"].as_str().unwrap(), e["outcome"].as_str().unwrap()))
        .collect();
    assert_eq!(after_act, [("verify", "pristine checkout: gates passed")]);
    let message = crate::common::branch_message(&work, &outcome);
    assert!(
        message.contains("Verified by the repository's gates"),
        "{message}"
    );
}

/// A test that makes the whole suite slow: the full gates then cost far more than the failing
/// test alone.
fn with_a_slow_test(work: &Path) {
    wrong_mean(work);
    std::fs::write(
        work.join("tests/test_slow.py"),
        "import time\n\n\ndef test_slow():\n    time.sleep(16)\n",
    )
    .unwrap();
    git(work, &["add", "-A"]);
}

/// On a suite much slower than its failing tests, a change is first checked by its failing tests
/// alone in the worktree: a fix that does not work costs no full run (the persistent failure is
/// still seen), and one that works goes on to the full gates on its pristine checkout.
#[test]
fn on_a_slow_suite_the_failing_test_runs_first_and_a_wrong_fix_costs_no_full_run() {
    let (dir, work) = example_with(with_a_slow_test);
    let wrong = task_file(
        dir.path(),
        "title: Fix mean\nedits:\n  - summary: reword the docstring\n    changes:\n      - replace: {path: calc.py, search: 'A tiny calculator', replace: 'A small calculator'}\n  - summary: reword it again\n    changes:\n      - replace: {path: calc.py, search: 'A small calculator', replace: 'A little calculator'}\n",
    );
    let (code, events, outcome) = run_json(&work, &["run", "--task", &wrong]);
    assert_eq!(code, 4, "{outcome:#}");
    let decided: Vec<&str> = events_named(&events, "decided")
        .iter()
        .map(|e| e["decision"].as_str().unwrap())
        .collect();
    assert_eq!(decided, ["continue", "continue", "await_guidance"]);
    let runs = tests_gate_runs(&work, &outcome);
    let quick = runs
        .iter()
        .filter(|(c, _)| c.ends_with("::test_mean"))
        .count();
    assert_eq!(
        (runs.len() - quick, quick),
        (1, 3),
        "the baseline whole; its flaky check and each act's check of the failing test alone: \
         {runs:#?}"
    );
    let (dir, work) = example_with(with_a_slow_test);
    let (_events, outcome) = committed_in_one_iteration(&work, dir.path(), TRUE_DIVISION);
    let runs = tests_gate_runs(&work, &outcome);
    let places: Vec<(bool, bool)> = runs
        .iter()
        .map(|(c, cwd)| {
            (
                c.ends_with("::test_mean"),
                cwd.contains("meta-agent-pristine-"),
            )
        })
        .collect();
    assert_eq!(
        places,
        [(false, false), (true, false), (true, false), (false, true)],
        "baseline, flaky check, the failing test after the fix, the full gates on the pristine \
         checkout: {runs:#?}"
    );
}

/// The flaky check runs only when the verdict hangs on it: failures a task does not ask about
/// are pre-existing (flaky or not, they neither block the change nor are fixed), so the baseline
/// does not re-run them, and the change's full gates run once, on its pristine checkout.
#[test]
fn failures_the_task_does_not_ask_about_are_not_rerun_for_flakiness() {
    let (dir, work) = example_with(wrong_mean);
    let (_events, outcome) = committed_in_one_iteration(
        &work,
        dir.path(),
        "title: Describe the calculator better\nedits:\n  - summary: say what the calculator does\n    changes:\n      - replace: {path: calc.py, search: 'A tiny calculator', replace: 'A tiny four-function calculator'}\n",
    );
    let runs = tests_gate_runs(&work, &outcome);
    assert_eq!(
        runs.iter()
            .map(|(c, _)| c.contains("::"))
            .collect::<Vec<_>>(),
        [false, false],
        "the baseline and the pristine checkout, no re-run: {runs:#?}"
    );
    let message = crate::common::branch_message(&work, &outcome);
    assert!(
        message.contains("test_mean"),
        "the pre-existing failure is named: {message}"
    );
}
