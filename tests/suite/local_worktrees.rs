//! End to end: where local runs keep their worktrees, and `meta-agent worktrees list|prune`. A
//! run's worktree lives in the bot's own directory, never inside the checkout; kept worktrees are
//! listed with their session, branch, state and age; `prune` removes those whose session ended,
//! never one in use (a run holds its session's lock), and keeps a paused one for `resume`; a
//! worktree made where older versions made them (`.git/meta-agent/worktrees/`) is still listed
//! and resumed.

use std::path::Path;

use serde_json::Value;

use super::engine::{example_with, run_json, unused_import, wrong_mean};
use super::pause::{SLOW_TOKEN, interrupt, run_until_slow_gate, slow_gate};
use crate::common::{git, meta_agent};

/// `meta-agent worktrees ARGS` in `work`: exit code and stdout.
fn worktrees(work: &Path, args: &[&str]) -> (i32, String) {
    let out = meta_agent()
        .arg("--repo")
        .arg(work)
        .arg("worktrees")
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let code = out.status.code().unwrap_or(-1);
    assert_eq!(code, 0, "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    (code, stdout)
}

fn listed(work: &Path) -> Vec<Value> {
    let (_, stdout) = worktrees(work, &["list", "--json"]);
    serde_json::from_str::<Vec<Value>>(&stdout).unwrap_or_else(|err| panic!("{err}: {stdout}"))
}

fn row<'a>(rows: &'a [Value], session: &Value) -> &'a Value {
    rows.iter()
        .find(|row| row["session"] == *session)
        .unwrap_or_else(|| panic!("{session} not listed: {rows:#?}"))
}

#[test]
fn kept_worktrees_are_listed_and_pruned_once_their_session_ended_never_one_in_use() {
    let flags = tempfile::tempdir().unwrap();
    let fast = flags.path().join("fast");
    let (dir, work) = example_with(|work| {
        unused_import(work);
        slow_gate(&fast)(work);
    });
    // An escalated run: its scripted change breaks `mean`, and one iteration is not enough.
    std::fs::write(&fast, "").unwrap();
    let task = dir.path().join("task.yml");
    std::fs::write(
        &task,
        "title: Rewrite mean\nedits:\n  - summary: floor division\n    changes:\n      - replace: \
         {path: calc.py, search: 'sum(values) / len(values)', replace: 'sum(values) // len(values)'}\n",
    )
    .unwrap();
    let task = task.display().to_string();
    let (code, _, escalated) = run_json(&work, &["run", "--task", &task, "--max-iterations", "1"]);
    assert_eq!(code, 4, "{escalated:#}");
    let kept = crate::common::session_worktree(&work, &escalated);
    assert!(kept.is_dir(), "an escalated run keeps its worktree");
    assert!(
        !kept.starts_with(&work),
        "the worktree is outside the checkout: {}",
        kept.display()
    );
    let rows = listed(&work);
    let escalated_row = row(&rows, &escalated["session"]);
    assert_eq!(escalated_row["state"], "escalated", "{rows:#?}");
    assert_eq!(escalated_row["branch"], escalated["branch"]);
    assert_eq!(escalated_row["path"], kept.display().to_string());
    assert_eq!(escalated_row["in_use"], false);
    let (_, table) = worktrees(&work, &["list"]);
    assert!(
        table.starts_with("SESSION") && table.contains(escalated["session"].as_str().unwrap()),
        "{table}"
    );

    // A run in use: its slow gate runs until `fast` exists.
    std::fs::remove_file(&fast).unwrap();
    let (child, rest) = run_until_slow_gate(&work, SLOW_TOKEN);
    let rows = listed(&work);
    let running = rows
        .iter()
        .find(|row| row["in_use"] == true)
        .unwrap_or_else(|| panic!("the running session is in use: {rows:#?}"))
        .clone();
    assert_eq!(running["state"], "in use");
    let (_, pruned) = worktrees(&work, &["prune"]);
    assert!(
        pruned.contains(&format!(
            "{}: its session ended (escalated)",
            escalated["session"].as_str().unwrap()
        )) && pruned.contains("in use by a running meta-agent"),
        "{pruned}"
    );
    assert!(!kept.exists(), "the ended session's worktree is removed");
    let in_use = Path::new(running["path"].as_str().unwrap());
    assert!(in_use.is_dir(), "the worktree in use is never pruned");
    assert!(
        !git(&work, &["worktree", "list", "--porcelain"]).contains(&kept.display().to_string()),
        "git forgot the pruned worktree"
    );
    assert!(
        git(
            &work,
            &["branch", "--list", escalated["branch"].as_str().unwrap()]
        )
        .contains("meta-agent/"),
        "its branch and work in progress stay"
    );

    // Paused: kept for `resume`, even by `prune`.
    let paused = interrupt(child, &rest);
    let (_, pruned) = worktrees(&work, &["prune"]);
    assert!(
        pruned.starts_with("nothing to prune") && pruned.contains("`meta-agent resume"),
        "{pruned}"
    );
    assert!(in_use.is_dir());
    assert!(
        row(&listed(&work), &paused["session"])["state"]
            .as_str()
            .unwrap()
            .starts_with("paused")
    );
}

/// A worktree where older versions made them, inside the checkout's `.git`: listed, and `resume`
/// continues there.
#[test]
fn a_worktree_made_by_an_older_version_is_listed_and_resumed_where_it_is() {
    let (_dir, work) = example_with(wrong_mean);
    let (code, _events, outcome) = run_json(&work, &["run", "--text", "Fix mean"]);
    assert_eq!(code, 4, "{outcome:#}");
    let place = crate::common::session_worktree(&work, &outcome);
    let session = outcome["session"].as_str().unwrap();
    let legacy = work.join(".git/meta-agent/worktrees").join(session);
    std::fs::create_dir_all(legacy.parent().unwrap()).unwrap();
    git(
        &work,
        &[
            "worktree",
            "move",
            place.to_str().unwrap(),
            legacy.to_str().unwrap(),
        ],
    );
    let legacy = legacy.canonicalize().unwrap();
    assert_eq!(
        row(&listed(&work), &outcome["session"])["path"],
        legacy.display().to_string()
    );
    let (code, _events, resumed) = run_json(
        &work,
        &["resume", "--guidance", "use true division in mean"],
    );
    assert_eq!(
        code, 4,
        "no model, no known fix: escalates again: {resumed:#}"
    );
    assert_eq!(resumed["session"], outcome["session"]);
    assert_eq!(
        resumed["worktree"],
        legacy.display().to_string(),
        "resumed in the worktree where it was"
    );
    assert!(!place.exists(), "no second worktree was made");
}

/// Without `--worktrees-dir`, worktrees live in the user's state directory, keyed by repository;
/// a directory inside the checkout is refused, saying why and what to set.
#[test]
fn worktrees_live_in_the_users_state_directory_and_never_inside_the_checkout() {
    let (_dir, work) = example_with(wrong_mean);
    let state = tempfile::tempdir().unwrap();
    let out = meta_agent()
        .env_remove(meta_agent::session::places::WORKTREES_VAR)
        .env("XDG_STATE_HOME", state.path())
        .arg("--repo")
        .arg(&work)
        .args(["run", "--text", "Fix mean", "--json"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let outcome: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(out.status.code(), Some(4), "{outcome:#}");
    let checkout = work.canonicalize().unwrap();
    let name = meta_agent::session::places::repository_name(&checkout, &checkout.join(".git"));
    let expected = state
        .path()
        .join("meta-agent/worktrees")
        .join(name)
        .join(outcome["session"].as_str().unwrap());
    assert_eq!(outcome["worktree"], expected.display().to_string());
    assert!(expected.join("calc.py").is_file());

    let inside = work.join("worktrees");
    let out = meta_agent()
        .arg("--repo")
        .arg(&work)
        .arg("--worktrees-dir")
        .arg(&inside)
        .args(["run", "--text", "Fix mean"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("cannot be used: it is inside the checkout")
            && stderr.contains("META_AGENT_WORKTREES_DIR"),
        "{stderr}"
    );
    assert!(!inside.exists(), "nothing was made there");
}
