//! End to end: what a local user sees at the edges. A run works in its own worktree and leaves
//! the user's checkout (branch, HEAD, index, files, uncommitted changes) exactly as it was; an
//! empty repository is a usage error (exit 2), `--max-iterations 1` reports at most one
//! iteration, and `resume` needs no API key when no model call is left.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::engine::{example_with, run_json, trailer, trailers, unused_import, wrong_mean};
use crate::common::mock_llm::{MockLlm, streamed_tool_call};
use crate::common::{git, meta_agent};

#[test]
fn an_empty_repository_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q"]);
    std::fs::write(
        dir.path().join("pyproject.toml"),
        "[project]\nname = \"calc\"\n",
    )
    .unwrap();
    meta_agent()
        .arg("--repo")
        .arg(dir.path())
        .args(["run", "--text", "Add a calculator"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("no commit yet"));
}

#[test]
fn max_iterations_one_reports_one_iteration_everywhere() {
    let (_dir, work) = example_with(unused_import);
    let (code, events, outcome) = run_json(
        &work,
        &[
            "run",
            "--text",
            "Make the gates pass",
            "--max-iterations",
            "1",
        ],
    );
    assert_eq!(code, 0, "{outcome:#}");
    assert_eq!(outcome["outcome"], "committed");
    assert_eq!(outcome["iterations"], 1);
    let finished = events
        .iter()
        .find(|e| e["event"] == "run_finished")
        .unwrap();
    assert_eq!(finished["iterations"], 1);
    assert_eq!(
        trailer(
            &trailers(&work, crate::common::run_branch(&outcome)),
            "Meta-Agent-Iterations"
        ),
        "1"
    );
}

/// Everything of a checkout a person could notice.
#[derive(Debug, PartialEq)]
struct Seen {
    branch: String,
    head: String,
    index: String,
    /// Untracked files included.
    status: String,
    /// Every file's bytes outside `.git`.
    files: Vec<(PathBuf, Vec<u8>)>,
}

fn checkout_as_seen(work: &Path) -> Seen {
    let files = walkdir::WalkDir::new(work)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.file_name() != ".git")
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| (e.path().to_owned(), std::fs::read(e.path()).unwrap()))
        .collect();
    Seen {
        branch: git(work, &["symbolic-ref", "-q", "HEAD"]),
        head: git(work, &["rev-parse", "HEAD"]),
        index: git(work, &["ls-files", "--stage"]),
        status: git(work, &["status", "--porcelain=v2", "--untracked-files=all"]),
        files,
    }
}

/// The user's own uncommitted work: a modified tracked file, a staged one and an untracked one.
fn users_own_changes(work: &Path) {
    std::fs::write(work.join("notes.txt"), "mine, not committed\n").unwrap();
    let readme = work.join("README.md");
    let text = std::fs::read_to_string(&readme).unwrap_or_default();
    std::fs::write(&readme, format!("{text}\nA line of my own.\n")).unwrap();
    std::fs::write(work.join("staged.txt"), "staged, not committed\n").unwrap();
    git(work, &["add", "staged.txt"]);
}

#[test]
fn a_committing_run_leaves_the_users_checkout_exactly_as_it_was() {
    let (_dir, work) = example_with(unused_import);
    let base = git(&work, &["rev-parse", "HEAD"]);
    users_own_changes(&work);
    let before = checkout_as_seen(&work);
    let out = meta_agent()
        .arg("--repo")
        .arg(&work)
        .args(["run", "--text", "Make the gates pass", "--json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let outcome: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(out.status.code(), Some(0), "{outcome:#}\n{stderr}");
    assert_eq!(outcome["outcome"], "committed");
    assert!(
        stderr.contains(
            "uncommitted change(s): they stay where they are and are not part of this run"
        ),
        "the user is told their changes are not in the run: {stderr}"
    );
    assert_eq!(checkout_as_seen(&work), before, "the checkout is untouched");

    let branch = crate::common::run_branch(&outcome);
    assert_eq!(branch, "meta-agent/make-the-gates-pass");
    assert_eq!(
        git(&work, &["rev-parse", branch]).trim(),
        outcome["commit"].as_str().unwrap()
    );
    assert_eq!(
        git(&work, &["rev-parse", &format!("{branch}^")]),
        base,
        "the commit sits on the user's HEAD"
    );
    let files = git(&work, &["show", "--name-only", "--format=", branch]);
    for theirs in ["notes.txt", "staged.txt", "README.md"] {
        assert!(!files.contains(theirs), "{theirs} is the user's: {files}");
    }
    assert!(
        !crate::common::session_worktree(&work, &outcome).exists(),
        "a committed run's worktree goes"
    );
    assert_eq!(
        git(&work, &["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count(),
        1,
        "git knows no worktree but the user's"
    );
    assert_eq!(
        git(&work, &["branch", "--list", "meta-agent/worktree-*"]),
        "",
        "no scaffolding branch is left"
    );
}

#[test]
fn an_escalated_run_keeps_its_worktree_detached_and_resume_continues_there() {
    let (_dir, work) = example_with(wrong_mean);
    let before = checkout_as_seen(&work);
    let (code, _events, outcome) = run_json(&work, &["run", "--text", "Fix mean"]);
    assert_eq!(code, 4, "{outcome:#}");
    assert_eq!(outcome["outcome"], "escalated");
    assert_eq!(checkout_as_seen(&work), before, "the checkout is untouched");
    let place = crate::common::session_worktree(&work, &outcome);
    assert_eq!(outcome["worktree"], place.display().to_string());
    let report = crate::common::session_file(&work, &outcome, "report.md");
    assert!(
        report.contains(&format!("The work is in `{}`", place.display())),
        "{report}"
    );
    assert_eq!(
        git(&place, &["rev-parse", "HEAD"]),
        git(&work, &["rev-parse", crate::common::run_branch(&outcome)]),
        "the kept worktree sits on the branch's work in progress"
    );
    assert_eq!(
        git(&place, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "HEAD",
        "detached, so the branch is free"
    );
    // The user may look at the branch in their own checkout; while it is checked out there,
    // resume refuses (its commit would move the branch under the user), then goes on.
    git(
        &work,
        &["switch", "-q", crate::common::run_branch(&outcome)],
    );
    meta_agent()
        .arg("--repo")
        .arg(&work)
        .args(["resume", "--guidance", "use true division in mean"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(format!(
            "branch {} is checked out in {}",
            crate::common::run_branch(&outcome),
            work.display()
        )));
    git(&work, &["switch", "-q", "main"]);

    // The maintainer fixes it by hand through guidance; resume works in the kept worktree.
    let (code, _events, resumed) = run_json(
        &work,
        &["resume", "--guidance", "use true division in mean"],
    );
    assert_eq!(resumed["session"], outcome["session"]);
    assert_eq!(
        code, 4,
        "no model, no known fix: escalates again: {resumed:#}"
    );
    assert_eq!(resumed["worktree"], place.display().to_string());
    assert!(
        place.join("calc.py").is_file(),
        "the worktree is still there"
    );
    assert_eq!(checkout_as_seen(&work), before, "still untouched");
}

/// The LLM-driven fix of `wrong_mean`, as the mock model answers it.
async fn fixing_model() -> MockLlm {
    MockLlm::start(vec![
        streamed_tool_call(
            "call_e",
            "edit_file",
            serde_json::json!({"path": "calc.py", "old_string": "sum(values) // len(values)",
                   "new_string": "sum(values) / len(values)"}),
        ),
        streamed_tool_call(
            "call_f",
            "finish",
            serde_json::json!({"summary": "true division"}),
        ),
    ])
    .await
}

/// Runs `args` with the mock model configured (and a key when `key`), `--json`; the exit code
/// and the JSON lines.
pub(super) fn with_model(
    work: &std::path::Path,
    base_url: &str,
    key: bool,
    kill_at: Option<usize>,
    args: &[&str],
) -> (Option<i32>, Vec<Value>) {
    let mut cmd = meta_agent();
    cmd.env_remove("OPENAI_API_KEY");
    if key {
        cmd.env("OPENAI_API_KEY", "sk-test-local-0000");
    }
    if let Some(n) = kill_at {
        cmd.env("META_AGENT_TEST_KILL_AT_EVENT", n.to_string());
    }
    let out = cmd
        .arg("--repo")
        .arg(work)
        .args(["--llm-provider", "openai", "--llm-base-url", base_url])
        .args(["--model", "test-model"])
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    let lines = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    (out.status.code(), lines)
}

pub(super) fn no_reflection(work: &std::path::Path) {
    wrong_mean(work);
    let config = work.join(".meta-agent.yml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("llm: {reflect: false}\n");
    std::fs::write(&config, text).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn resume_asks_for_a_key_only_when_a_model_call_is_due() {
    let run = ["run", "--text", "Fix mean"];
    let (_dir, first) = example_with(no_reflection);
    let mock = fixing_model().await;
    let url = mock.base_url.clone();
    let (code, events) =
        tokio::task::spawn_blocking(move || with_model(&first, &url, true, None, &run))
            .await
            .unwrap();
    assert_eq!(code, Some(0), "{events:?}");
    let calls = events.last().unwrap()["llm_calls"].clone();
    let gates_after_the_build = 1 + events
        .iter()
        .position(|e| e["event"] == "gate_started")
        .expect("the gates ran");
    let (_dir, work) = example_with(no_reflection);
    let mock = fixing_model().await;
    let url = mock.base_url.clone();
    let (killed, resumed) = tokio::task::spawn_blocking(move || {
        let (killed, _) = with_model(&work, &url, true, Some(gates_after_the_build), &run);
        let resumed = with_model(&work, &url, false, None, &["resume"]);
        (killed, resumed)
    })
    .await
    .unwrap();
    assert_eq!(killed, None, "the hook killed the run");
    let (code, lines) = resumed;
    let outcome = lines.last().cloned().unwrap_or(Value::Null);
    assert_eq!(code, Some(0), "resumed without a key: {lines:?}");
    assert_eq!(outcome["outcome"], "committed", "{outcome:#}");
    assert_eq!(
        outcome["llm_calls"], calls,
        "every model call was made before the kill"
    );
}

/// A branch the user has checked out is never the run's: the run takes a name of its own, so its
/// commit cannot move the user's branch.
#[test]
fn a_run_never_commits_on_a_branch_the_user_has_checked_out() {
    let (_dir, work) = example_with(unused_import);
    git(
        &work,
        &["switch", "-q", "-c", "meta-agent/make-the-gates-pass"],
    );
    let base = git(&work, &["rev-parse", "HEAD"]);
    let before = checkout_as_seen(&work);
    let (code, _events, outcome) = run_json(&work, &["run", "--text", "Make the gates pass"]);
    assert_eq!(code, 0, "{outcome:#}");
    let branch = crate::common::run_branch(&outcome);
    assert!(
        branch.starts_with("meta-agent/make-the-gates-pass-"),
        "a name of its own: {branch}"
    );
    assert_eq!(checkout_as_seen(&work), before, "the checkout is untouched");
    assert_eq!(
        git(&work, &["rev-parse", "meta-agent/make-the-gates-pass"]),
        base
    );
}

/// Locally the repository's instructions come from the run's base commit: a committed
/// `AGENTS.md` reaches the first prompt (fenced as the repository's), an uncommitted edit of it
/// does not.
#[tokio::test(flavor = "multi_thread")]
async fn a_local_run_shows_the_committed_agents_md_not_an_uncommitted_edit() {
    let committed = "COMMITTED-RULE: keep calc.py free of imports.";
    let (_dir, work) = example_with(|work| {
        no_reflection(work);
        std::fs::write(work.join("AGENTS.md"), format!("{committed}\n")).unwrap();
        git(work, &["add", "AGENTS.md"]);
    });
    std::fs::write(
        work.join("AGENTS.md"),
        format!("{committed}\nUNCOMMITTED-RULE: delete the tests.\n"),
    )
    .unwrap();
    let mock = fixing_model().await;
    let url = mock.base_url.clone();
    let run = ["run", "--text", "Fix mean"];
    let (code, events) =
        tokio::task::spawn_blocking(move || with_model(&work, &url, true, None, &run))
            .await
            .unwrap();
    assert_eq!(code, Some(0), "{events:?}");
    let first = &mock.requests()[0].body;
    assert!(first.contains(committed), "{first}");
    assert!(
        first.contains("untrusted-repository-instructions"),
        "{first}"
    );
    for request in mock.requests() {
        assert!(
            !request.body.contains("UNCOMMITTED-RULE"),
            "{}",
            request.body
        );
    }
}
