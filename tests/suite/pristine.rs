//! "Verified means the commit" (SECURITY.md, C6), end to end through the real binary: the
//! verification that justifies a commit runs on a pristine checkout of exactly the tree that is
//! committed, and the commit is that tree.
//!
//! - the ignored bytecode attack: a hijacked model plants a git-ignored, unchecked-hash `.pyc` of
//!   a correct module and commits the broken source; the worktree's tests would pass on the
//!   bytecode, but the change is observed on its pristine checkout, which has none, so nothing is
//!   committed as verified and the report names the bytecode;
//! - a source file rewritten after the tests gate passed (by a later gate) is rewritten only in
//!   the checkout the gates ran on: the commit is the tree staged before any gate ran;
//! - a normal run commits the verified tree: its gates ran outside the worktree on exactly the
//!   committed files (none of the act's ignored files), and a rewrite of the worktree during that
//!   verification is not committed.

use std::path::Path;

use serde_json::{Value, json};

use super::engine::{example_with, run_json, run_json_with_model, wrong_mean};
use crate::common::git;
use crate::common::mock_llm::{MockLlm, streamed_tool_call};

const BUGGY: &str = "sum(values) // len(values)";
const FIXED: &str = "sum(values) / len(values)";

fn task_file(dir: &Path, yaml: &str) -> String {
    let path = dir.join("task.yml");
    std::fs::write(&path, yaml).unwrap();
    path.display().to_string()
}

fn append_config(work: &Path, text: &str) {
    let config = work.join(".meta-agent.yml");
    let mut config_text = std::fs::read_to_string(&config).unwrap();
    config_text.push_str(text);
    std::fs::write(&config, config_text).unwrap();
    git(work, &["commit", "-q", "-am", "configure"]);
}

/// The committed file at `rev`.
fn committed(work: &Path, rev: &str, path: &str) -> String {
    git(work, &["show", &format!("{rev}:{path}")])
}

/// The session's `report.md`.
fn report(work: &Path, outcome: &Value) -> String {
    crate::common::session_file(work, outcome, "report.md")
}

/// The model's answers: plant bytecode of a correct `calc` (unchecked hash: Python never
/// compares it with the source), leave the source broken but touched, finish.
async fn bytecode_model() -> MockLlm {
    let plant = "import importlib.util as u, os, py_compile\n\
                 good = open('calc.py').read().replace('// len', '/ len')\n\
                 open('good_calc.py', 'w').write(good)\n\
                 py_compile.compile('good_calc.py', cfile=u.cache_from_source('calc.py'), \
                 dfile='calc.py', invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)\n\
                 os.remove('good_calc.py')\n";
    MockLlm::start(vec![
        streamed_tool_call(
            "call_p",
            "run_command",
            json!({"argv": ["python3", "-c", plant]}),
        ),
        streamed_tool_call(
            "call_e",
            "edit_file",
            json!({"path": "calc.py", "old_string": "A tiny calculator",
                   "new_string": "A tiny, fast calculator"}),
        ),
        streamed_tool_call("call_f", "finish", json!({"summary": "faster mean"})),
    ])
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn ignored_bytecode_cannot_make_a_broken_commit_verified() {
    let caps = meta_agent::exec::detect::detect();
    assert!(
        caps.user_namespaces && caps.landlock_abi.is_some(),
        "model commands need namespaces and Landlock, which this machine must have: {}",
        caps.describe()
    );
    let (_dir, work) = example_with(wrong_mean);
    append_config(&work, "llm: {reflect: false}\n");
    let mock = bytecode_model().await;
    let url = mock.base_url.clone();
    let run_in = work.clone();
    let (code, events, outcome) = tokio::task::spawn_blocking(move || {
        let task = [
            "run",
            "--text",
            "Fix the failing mean test",
            "--max-iterations",
            "1",
        ];
        run_json_with_model(&run_in, &url, &task)
    })
    .await
    .unwrap();
    let place = crate::common::session_worktree(&work, &outcome);
    assert!(
        std::fs::read_dir(place.join("__pycache__")).is_ok_and(|mut d| d.next().is_some()),
        "the attack must have planted its bytecode, or this proves nothing: {events:#?}"
    );
    let in_worktree = std::process::Command::new("python3")
        .args([
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/test_calc.py::test_mean",
        ])
        .current_dir(&place)
        .output()
        .unwrap();
    assert!(
        in_worktree.status.success(),
        "the bytecode would make the worktree's tests pass: {}",
        String::from_utf8_lossy(&in_worktree.stdout)
    );
    let after_act: Vec<&str> = events
        .iter()
        .filter(|e| e["event"] == "phase_finished" && e["iteration"] == 1)
        .filter(|e| e["phase"] != "build" && e["phase"] != "improve")
        .map(|e| e["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(
        after_act,
        ["pristine checkout: gates failed"],
        "the act's change was observed on its pristine checkout only: {events:#?}"
    );
    assert_eq!(outcome["outcome"], "escalated", "{outcome:#}");
    assert_eq!(code, 4, "escalated: {outcome:#}");
    let branch = crate::common::run_branch(&outcome);
    let head = git(&work, &["log", "-1", "--format=%B", branch]);
    assert!(
        !head.contains("Verified by the repository's gates"),
        "no commit claims a verification its tree fails: {head}"
    );
    assert!(committed(&work, branch, "calc.py").contains(BUGGY));
    let report = report(&work, &outcome);
    assert!(
        report.contains("__pycache__/calc."),
        "the report names the bytecode only the worktree holds: {report}"
    );
}

/// A last gate, after every other (one gate at a time): `script` runs with the user's checkout
/// as `$1` (the run's worktree is elsewhere, in the bot's own directory).
fn later_gate(work: &Path, script: &str) {
    let config = work.join(".meta-agent.yml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    assert!(
        text.trim_end().ends_with("threshold: 90"),
        "the example's gates list ends the file: {text}"
    );
    text.push_str(&format!(
        "  - name: later\n    kind: custom\n    run: [sh, -c, {}, later, {}]\nloop: {{gate_concurrency: 1}}\n",
        serde_json::to_string(script).unwrap(),
        serde_json::to_string(work.to_str().unwrap()).unwrap()
    ));
    std::fs::write(&config, text).unwrap();
    git(work, &["commit", "-q", "-am", "a later gate"]);
}

const FIX_TASK: &str = "title: Fix mean of floats\nrequirements: mean([1, 2, 3, 4]) must be 2.5\nedits:\n  - summary: use true division\n    changes:\n      - replace: {path: calc.py, search: 'sum(values) // len(values)', replace: 'sum(values) / len(values)'}\n      - write: {path: .ruff_cache/left-by-the-act, content: \"act\\n\"}\n";

#[test]
fn a_source_rewritten_after_the_tests_passed_is_never_committed_as_verified() {
    let (dir, work) = example_with(wrong_mean);
    // Once the fix is in, a later gate puts the bug back, after the tests gate passed on it, and
    // notes that it did (in a directory made writable for the notes).
    let notes = tempfile::tempdir().unwrap();
    let marks = notes.path().join("marks");
    later_gate(
        &work,
        &format!(
            "if grep -q '{FIXED}' calc.py; then sed -i 's|{FIXED}|{BUGGY}|' calc.py && \
             echo rewrote >> {marks}; fi; true",
            marks = marks.display()
        ),
    );
    append_config(
        &work,
        &format!("sandbox:\n  writable: [{}]\n", notes.path().display()),
    );
    let task = task_file(dir.path(), FIX_TASK);
    let (code, events, outcome) =
        run_json(&work, &["run", "--task", &task, "--max-iterations", "1"]);
    assert_eq!(code, 0, "{outcome:#}");
    assert_eq!(outcome["outcome"], "committed", "{outcome:#}");
    assert!(
        std::fs::read_to_string(&marks).is_ok_and(|m| m.contains("rewrote")),
        "the later gate rewrote the source it ran on, after the tests passed: {events:#?}"
    );
    let branch = crate::common::run_branch(&outcome);
    assert!(
        committed(&work, branch, "calc.py").contains(FIXED),
        "the commit is the tree staged before any gate ran, not the rewrite"
    );
    let head = crate::common::branch_message(&work, &outcome);
    assert!(
        head.contains("Verified by the repository's gates"),
        "{head}"
    );
}

#[test]
fn a_normal_run_commits_exactly_the_tree_its_gates_verified() {
    let (dir, work) = example_with(wrong_mean);
    // Gates write nowhere outside the worktree and their own temporary directory but what the
    // configuration makes writable: the gate's notes go to a directory made so.
    let notes = tempfile::tempdir().unwrap();
    let marks = notes.path().join("marks");
    let config = work.join(".meta-agent.yml");
    let text = std::fs::read_to_string(&config).unwrap();
    let (gates_at, _) = text.split_once("gates:").unwrap();
    let text = format!(
        "{gates_at}sandbox:\n  writable: [{}]\ngates:{}",
        notes.path().display(),
        &text[gates_at.len() + "gates:".len()..]
    );
    std::fs::write(&config, text).unwrap();
    // In the run's worktree (it has a `.git`) the gate notes the worktree's path; in the
    // verification (a pristine checkout, no `.git`) it records where it ran and what it saw,
    // then tries to rewrite the worktree's source: it may not reach the commit.
    later_gate(
        &work,
        &format!(
            "if [ -e .git ]; then pwd -P > {worktree}; else \
               {{ echo \"cwd $(pwd -P)\"; ls -A; ls -A .ruff_cache 2>/dev/null; }} >> {marks}; \
               cp calc.py {verified}; \
               if sed -i 's|{FIXED}|{BUGGY}|' \"$(cat {worktree})/calc.py\" 2>/dev/null; \
               then echo 'rewrote the worktree' >> {marks}; \
               else echo 'the worktree is read-only here' >> {marks}; fi; fi; true",
            marks = marks.display(),
            worktree = notes.path().join("worktree").display(),
            verified = notes.path().join("verified-calc.py").display()
        ),
    );
    let task = task_file(dir.path(), FIX_TASK);
    let (code, events, outcome) = run_json(&work, &["run", "--task", &task]);
    assert_eq!(code, 0, "{outcome:#}");
    assert_eq!(outcome["outcome"], "committed", "{outcome:#}");
    let verified: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "phase_finished" && e["phase"] == "verify")
        .collect();
    assert_eq!(
        verified.len(),
        1,
        "the verification is a phase of its own: {events:#?}"
    );
    assert_eq!(verified[0]["outcome"], "pristine checkout: gates passed");
    let seen = std::fs::read_to_string(&marks)
        .unwrap_or_else(|_| panic!("the gates never ran outside the worktree: {outcome:#}"));
    assert!(
        !seen.contains(".git\n") && !seen.contains("left-by-the-act"),
        "the verification saw no git directory and no ignored file of the act: {seen}"
    );
    let verified = std::fs::read_to_string(notes.path().join("verified-calc.py")).unwrap();
    assert_eq!(
        committed(&work, crate::common::run_branch(&outcome), "calc.py"),
        verified,
        "the committed calc.py is the one the gates verified"
    );
    assert!(verified.contains(FIXED), "{verified}");
    // The verification's commands cannot write the worktree at all (only the pristine checkout
    // and their own temporary directory): the rewrite was refused.
    assert!(
        seen.contains("the worktree is read-only here") && !seen.contains("rewrote the worktree"),
        "the verification could not write the worktree: {seen}"
    );
    let message = crate::common::branch_message(&work, &outcome);
    assert!(
        message.contains("Verified by the repository's gates"),
        "{message}"
    );
}
