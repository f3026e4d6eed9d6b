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
    let started: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("uncommitted"))
        .collect();
    assert_eq!(started.len(), 1, "one line about the user's work: {stderr}");
    assert!(
        started[0].contains("starting from your uncommitted work")
            && started[0].contains("3 paths: README.md, notes.txt, staged.txt"),
        "the line names the paths taken: {stderr}"
    );
    assert_eq!(checkout_as_seen(&work), before, "the checkout is untouched");

    let branch = crate::common::run_branch(&outcome);
    assert_eq!(branch, "meta-agent/make-the-gates-pass");
    assert_eq!(
        git(&work, &["rev-parse", branch]).trim(),
        outcome["commit"].as_str().unwrap()
    );
    let snapshot = git(&work, &["rev-parse", &format!("{branch}^")]);
    assert_eq!(
        outcome["user_changes"]["snapshot"].as_str(),
        Some(snapshot.trim()),
        "{outcome:#}"
    );
    assert_eq!(
        git(&work, &["rev-parse", &format!("{branch}^^")]),
        base,
        "the user's work sits on their HEAD, the bot's commit on it"
    );
    let files = git(&work, &["show", "--name-only", "--format=", branch]);
    for theirs in ["notes.txt", "staged.txt", "README.md"] {
        assert!(!files.contains(theirs), "{theirs} is the user's: {files}");
    }
    assert_eq!(outcome["bot_changes"], serde_json::json!(["calc.py"]));
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
    fixing_model_saying("true division").await
}

/// [`fixing_model`] whose closing summary is `summary`.
pub(super) async fn fixing_model_saying(summary: &str) -> MockLlm {
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
            serde_json::json!({ "summary": summary }),
        ),
    ])
    .await
}

/// How a test runs `meta-agent ... --json`: with the mock model at `base_url` (and a key when
/// `key`), killed at the `kill_at`-th event.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Invocation<'a> {
    pub base_url: Option<&'a str>,
    pub key: bool,
    pub kill_at: Option<usize>,
    /// Variables of the user's shell the run sees.
    pub env: &'a [(&'a str, String)],
}

/// Runs `args` in `work` as `how` says, with `--json`; the exit code, the JSON lines and stderr.
pub(super) fn invoke(
    work: &Path,
    how: Invocation<'_>,
    args: &[&str],
) -> (Option<i32>, Vec<Value>, String) {
    let mut cmd = meta_agent();
    cmd.env_remove("OPENAI_API_KEY");
    if how.key {
        cmd.env("OPENAI_API_KEY", "sk-test-local-0000");
    }
    if let Some(n) = how.kill_at {
        cmd.env("META_AGENT_TEST_KILL_AT_EVENT", n.to_string());
    }
    for (name, value) in how.env {
        cmd.env(name, value);
    }
    if let Some(url) = how.base_url {
        cmd.args(["--llm-provider", "openai", "--llm-base-url", url])
            .args(["--model", "test-model"]);
    }
    let out = cmd
        .arg("--repo")
        .arg(work)
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    let lines = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code(), lines, stderr)
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
    let how = Invocation {
        base_url: Some(base_url),
        key,
        kill_at,
        env: &[],
    };
    let (code, lines, _) = invoke(work, how, args);
    (code, lines)
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

/// Locally the repository's instructions come from the run's base commit: with `--from-head`
/// that is `HEAD`, so the committed `AGENTS.md` reaches the first prompt (fenced as the
/// repository's) and an uncommitted edit of it does not; without it the run starts from the
/// user's uncommitted work, their edit included.
#[tokio::test(flavor = "multi_thread")]
async fn a_local_run_shows_the_agents_md_of_its_base_commit() {
    let committed = "COMMITTED-RULE: keep calc.py free of imports.";
    let (_dir, work) = example_with(|work| {
        no_reflection(work);
        std::fs::write(work.join("AGENTS.md"), format!("{committed}\n")).unwrap();
        git(work, &["add", "AGENTS.md"]);
    });
    std::fs::write(
        work.join("AGENTS.md"),
        format!("{committed}\nUNCOMMITTED-RULE: name things plainly.\n"),
    )
    .unwrap();
    for (from_head, shown) in [(true, false), (false, true)] {
        let mock = fixing_model().await;
        let url = mock.base_url.clone();
        let at = work.clone();
        let (code, events) = tokio::task::spawn_blocking(move || {
            let mut run = vec!["run", "--text", "Fix mean"];
            if from_head {
                run.push("--from-head");
            }
            with_model(&at, &url, true, None, &run)
        })
        .await
        .unwrap();
        assert_eq!(code, Some(0), "{events:?}");
        let first = &mock.requests()[0].body;
        assert!(first.contains(committed), "{first}");
        assert!(
            first.contains("untrusted-repository-instructions"),
            "{first}"
        );
        assert_eq!(
            first.contains("UNCOMMITTED-RULE"),
            shown,
            "--from-head {from_head}: {first}"
        );
    }
}

/// The user's change in progress, uncommitted: a `median` with a bug in `calc.py`, and its test,
/// a new file.
fn users_median_in_progress(work: &Path) {
    let calc = work.join("calc.py");
    let mut text = std::fs::read_to_string(&calc).unwrap();
    text.push_str(
        "\n\ndef median(values: list[float]) -> float:\n    ordered = values\n    middle = \
         len(ordered) // 2\n    if len(ordered) % 2:\n        return ordered[middle]\n    return \
         (ordered[middle - 1] + ordered[middle]) / 2\n",
    );
    std::fs::write(&calc, text).unwrap();
    std::fs::write(
        work.join("tests/test_median.py"),
        "from calc import median\n\n\ndef test_median_of_an_odd_count():\n    assert \
         median([3, 1, 2]) == 2\n\n\ndef test_median_of_an_even_count():\n    assert \
         median([4, 1, 3, 2]) == 2.5\n",
    )
    .unwrap();
}

/// "Make my change pass the tests" on a dirty checkout: the run starts from HEAD plus the user's
/// uncommitted work (a snapshot commit labelled as theirs), fixes it, verifies and commits on top,
/// the commit saying which changes were whose; the checkout stays byte for byte as it was. The
/// same request with `--from-head` sees HEAD, whose gates pass: nothing to do, and no branch
/// left behind.
#[tokio::test(flavor = "multi_thread")]
async fn a_dirty_checkout_whose_change_breaks_a_test_is_fixed_from_where_the_user_is() {
    let (_dir, work) = crate::common::scratch_repo(&crate::common::example());
    let head = git(&work, &["rev-parse", "HEAD"]);
    users_median_in_progress(&work);
    let before = checkout_as_seen(&work);
    let mock = MockLlm::start(vec![
        streamed_tool_call(
            "call_m",
            "edit_file",
            serde_json::json!({"path": "calc.py", "old_string": "ordered = values",
                   "new_string": "ordered = sorted(values)"}),
        ),
        streamed_tool_call(
            "call_f",
            "finish",
            serde_json::json!({"summary": "median sorts its values first"}),
        ),
    ])
    .await;
    let url = mock.base_url.clone();
    let task = ["run", "--text", "Make my change pass the tests"];
    let at = work.clone();
    let (code, lines, stderr) = tokio::task::spawn_blocking(move || {
        let how = Invocation {
            base_url: Some(&url),
            key: true,
            kill_at: None,
            env: &[],
        };
        invoke(&at, how, &task)
    })
    .await
    .unwrap();
    let outcome = lines.last().cloned().unwrap_or(Value::Null);
    assert_eq!(code, Some(0), "{outcome:#}\n{stderr}");
    assert_eq!(outcome["outcome"], "committed", "{outcome:#}");
    assert_eq!(
        checkout_as_seen(&work),
        before,
        "the checkout is byte for byte as it was"
    );
    assert!(
        stderr.contains(
            "starting from your uncommitted work on HEAD {} (2 paths: calc.py, tests/test_median.py)"
                .replace("{}", &head[..12])
                .as_str()
        ),
        "{stderr}"
    );
    let branch = crate::common::run_branch(&outcome);
    let snapshot = git(&work, &["rev-parse", &format!("{branch}^")]);
    assert_eq!(git(&work, &["rev-parse", &format!("{branch}^^")]), head);
    let labelled = git(&work, &["log", "-1", "--format=%B", snapshot.trim()]);
    assert!(
        labelled.starts_with("meta-agent snapshot: your uncommitted changes (not meta-agent's)")
            && labelled.contains("Meta-Agent-Snapshot: user-changes"),
        "{labelled}"
    );
    assert_eq!(
        git(
            &work,
            &["show", &format!("{}:tests/test_median.py", snapshot.trim())]
        ),
        std::fs::read_to_string(work.join("tests/test_median.py")).unwrap(),
        "the snapshot holds the user's untracked test"
    );
    let bots = git(&work, &["show", "--name-only", "--format=", branch]);
    let bots: Vec<&str> = bots
        .lines()
        .filter(|path| !path.starts_with(".meta-agent/hindsight/"))
        .collect();
    assert_eq!(
        bots,
        ["calc.py"],
        "the bot's commit holds its own change (and what it learned) only"
    );
    assert!(crate::common::file_on_branch(&work, &outcome, "calc.py").contains("sorted(values)"));
    let trailers = trailers(&work, branch);
    assert_eq!(
        trailer(&trailers, "Meta-Agent-User-Changes"),
        format!(
            "calc.py, tests/test_median.py (snapshot {})",
            &snapshot[..12]
        )
    );
    assert_eq!(trailer(&trailers, "Meta-Agent-Bot-Changes"), "calc.py");
    assert!(
        crate::common::branch_message(&work, &outcome)
            .contains("Verified by the repository's gates")
    );
    assert_eq!(
        outcome["user_changes"]["paths"],
        serde_json::json!(["calc.py", "tests/test_median.py"])
    );
    assert_eq!(outcome["bot_changes"], serde_json::json!(["calc.py"]));
    let report = crate::common::session_file(&work, &outcome, "report.md");
    assert!(
        report.contains("your changes (uncommitted when the run started")
            && report.contains("meta-agent's changes: calc.py"),
        "{report}"
    );

    let at = work.clone();
    let (code, lines, stderr) = tokio::task::spawn_blocking(move || {
        invoke(
            &at,
            Invocation::default(),
            &[
                "run",
                "--text",
                "Make my change pass the tests",
                "--from-head",
            ],
        )
    })
    .await
    .unwrap();
    let outcome = lines.last().cloned().unwrap_or(Value::Null);
    assert_eq!(code, Some(0), "{outcome:#}\n{stderr}");
    assert_eq!(
        outcome["outcome"], "nothing_to_do",
        "HEAD's gates pass: {outcome:#}"
    );
    assert!(outcome["user_changes"].is_null(), "{outcome:#}");
    assert!(
        stderr
            .contains("(--from-head): 2 uncommitted paths left out: calc.py, tests/test_median.py"),
        "{stderr}"
    );
    assert_eq!(
        git(
            &work,
            &[
                "branch",
                "--list",
                "meta-agent/*",
                "--format=%(refname:short)"
            ]
        )
        .trim(),
        branch,
        "the run with nothing to do left no branch behind"
    );
    assert_eq!(checkout_as_seen(&work), before, "still as it was");
}

/// A configuration error names the user's file (in the checkout), never the worktree's copy.
#[test]
fn a_configuration_error_names_the_file_in_the_users_checkout() {
    let (_dir, work) = example_with(|work| {
        let config = work.join(".meta-agent.yml");
        let text = std::fs::read_to_string(&config).unwrap();
        std::fs::write(&config, format!("{text}loop: {{max_iterations: many}}\n")).unwrap();
    });
    let out = meta_agent()
        .arg("--repo")
        .arg(&work)
        .args(["run", "--text", "Make the gates pass"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let named = format!(
        "{}:",
        work.canonicalize()
            .unwrap()
            .join(".meta-agent.yml")
            .display()
    );
    assert!(stderr.contains(&named), "names {named}: {stderr}");
    let worktrees = crate::common::worktrees_root().display().to_string();
    assert!(
        !stderr.contains(&worktrees),
        "never the worktree's copy: {stderr}"
    );
}

/// `--model` or `--llm-base-url` without a provider would change nothing: a usage error saying
/// what to add, not a silent provider `none`.
#[test]
fn a_model_or_base_url_without_a_provider_is_a_usage_error() {
    let (_dir, work) = example_with(unused_import);
    for (flag, value) in [
        ("--model", "gpt-x"),
        ("--llm-base-url", "http://127.0.0.1:9"),
    ] {
        let out = meta_agent()
            .env_remove("META_AGENT_LLM_PROVIDER")
            .arg("--repo")
            .arg(&work)
            .args([flag, value])
            .args(["run", "--text", "Make the gates pass"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag}: {stderr}");
        assert!(
            stderr.contains(&format!("{flag} is given but no LLM provider is set"))
                && stderr.contains("add --llm-provider openai"),
            "{stderr}"
        );
    }
    assert_eq!(
        git(&work, &["branch", "--list", "meta-agent/*"]),
        "",
        "nothing ran"
    );
}
