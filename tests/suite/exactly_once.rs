//! End to end: a run killed at every event boundary (the `META_AGENT_TEST_KILL_AT_EVENT` hook
//! aborts the process right after the Nth event, as a SIGKILL would) and resumed ends with the
//! session's commit made exactly once: never a second commit, never "nothing to commit".

use std::path::Path;

use serde_json::Value;

use super::engine::{events_named, example_with, run_json, trailer, trailers, unused_import};
use crate::common::{git, meta_agent};

/// Runs with the kill hook at event `n`; true when the hook fired (the process died by signal).
fn run_killed_at(work: &Path, n: usize) -> bool {
    let out = meta_agent()
        .arg("--repo")
        .arg(work)
        .args(["run", "--text", "Make the gates pass", "--json"])
        .env("META_AGENT_TEST_KILL_AT_EVENT", n.to_string())
        .output()
        .unwrap();
    out.status.code().is_none()
}

/// The commits on the bot's branch since the base.
fn commits_since_base(work: &Path, base: &str, branch: &str) -> Vec<String> {
    git(work, &["rev-list", &format!("{base}..{branch}")])
        .lines()
        .map(str::to_owned)
        .collect()
}

fn state_phase(work: &Path) -> String {
    let sessions = work.join(".git/meta-agent/sessions");
    let latest = std::fs::read_to_string(sessions.join("latest")).unwrap();
    let state = std::fs::read_to_string(sessions.join(latest.trim()).join("state.json")).unwrap();
    let state: Value = serde_json::from_str(&state).unwrap();
    state["phase"].as_str().unwrap().to_owned()
}

#[test]
fn a_run_killed_at_any_event_and_resumed_commits_exactly_once() {
    let (_dir, work) = example_with(unused_import);
    let (code, events, outcome) = run_json(&work, &["run", "--text", "Make the gates pass"]);
    assert_eq!(code, 0, "{outcome:#}");
    let total = events.len();
    let branch = outcome["branch"].as_str().unwrap().to_owned();
    let expected_gates = trailer(&trailers(&work, &branch), "Meta-Agent-Gates").to_owned();
    println!("an uninterrupted run emits {total} events; killing at each of them");
    let next = std::sync::atomic::AtomicUsize::new(1);
    std::thread::scope(|scope| {
        for _ in 0..3 {
            scope.spawn(|| {
                loop {
                    let n = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    if n > total {
                        break;
                    }
                    killed_at_and_resumed(n, &branch, &expected_gates);
                }
            });
        }
    });
}

/// One case: killed right after event `n`, resumed, one commit with the uninterrupted run's gates.
fn killed_at_and_resumed(n: usize, branch: &str, expected_gates: &str) {
    {
        let (_dir, work) = example_with(unused_import);
        let base = git(&work, &["rev-parse", "HEAD"]).trim().to_owned();
        assert!(run_killed_at(&work, n), "event {n}: the hook did not fire");
        let phase = state_phase(&work);
        let resumed = meta_agent()
            .arg("--repo")
            .arg(&work)
            .args(["resume", "--json"])
            .output()
            .unwrap();
        let code = resumed.status.code();
        let stderr = String::from_utf8_lossy(&resumed.stderr);
        if phase == "complete" {
            assert_eq!(code, Some(2), "event {n}: an ended session: {stderr}");
            assert!(stderr.contains("already ended"), "event {n}: {stderr}");
        } else {
            let stdout = String::from_utf8_lossy(&resumed.stdout);
            let last: Value = serde_json::from_str(stdout.lines().last().unwrap_or("null"))
                .unwrap_or(Value::Null);
            assert_eq!(
                code,
                Some(0),
                "event {n} (state {phase}): {stderr}\n{stdout}"
            );
            assert_eq!(last["outcome"], "committed", "event {n}: {last:#}");
            let head = git(&work, &["rev-parse", branch]).trim().to_owned();
            assert_eq!(
                last["commit"],
                head.as_str(),
                "event {n}: the commit reported is the branch's head"
            );
            let lines: Vec<Value> = stdout
                .lines()
                .filter_map(|line| serde_json::from_str(line).ok())
                .collect();
            assert_eq!(events_named(&lines, "committed").len(), 1, "event {n}");
        }
        let commits = commits_since_base(&work, &base, branch);
        assert_eq!(commits.len(), 1, "event {n} (state {phase}): {commits:?}");
        assert_eq!(
            trailer(&trailers(&work, branch), "Meta-Agent-Gates"),
            expected_gates,
            "event {n}"
        );
        assert_eq!(
            git(&work, &["worktree", "list", "--porcelain"])
                .matches("worktree ")
                .count(),
            1,
            "event {n}: everything was committed, the run's worktree went"
        );
        assert_eq!(
            git(&work, &["rev-parse", "HEAD"]).trim(),
            base,
            "event {n}: the user's checkout stays where it was"
        );
        assert_eq!(
            git(&work, &["status", "--porcelain"]).trim(),
            "",
            "event {n}"
        );
    }
}

/// The GitHub session's publishing steps (the session recorded, the branch pushed, the pull
/// request opened, the status posted) count as events too: a step killed right after each, then
/// run again on a fresh runner, ends with one branch of the bot, one pull request and one status
/// comment: a push already made and a pull request already opened are found and adopted.
#[test]
fn a_github_step_killed_at_every_publishing_event_publishes_exactly_once() {
    use super::github::{Fixture, examples, labeled, remote_branches};
    // Counted among the publishing steps alone: the run's own events vary with the gate plan its
    // measured costs choose (a loaded machine may observe a change differently).
    const PUBLISHING_EVENTS: usize = 4;
    for n in 1..=PUBLISHING_EVENTS {
        let mut fixture = Fixture::new(&examples("broken-calc"), |_| {});
        let kill = format!("published:{n}");
        let killed = fixture.step(
            "issues",
            &labeled("alice"),
            &[("META_AGENT_TEST_KILL_AT_EVENT", kill.as_str())],
        );
        assert_eq!(
            killed.code, -1,
            "event {n}: the hook fired: {}",
            killed.stderr
        );
        fixture.new_runner(&format!("rerun-{n}"));
        let again = fixture.step("issues", &labeled("alice"), &[]);
        assert_eq!(
            again.code, 0,
            "event {n}: {}\n{}",
            again.stdout, again.stderr
        );
        assert_eq!(again.output("outcome"), "committed", "event {n}");
        let branches: Vec<String> = remote_branches(&fixture)
            .into_iter()
            .filter(|b| b.starts_with("meta-agent/"))
            .collect();
        assert_eq!(branches.len(), 1, "event {n}: one branch: {branches:?}");
        let pulls = fixture.github.pulls();
        assert_eq!(pulls.len(), 1, "event {n}: one pull request");
        assert_eq!(pulls[0].head, branches[0], "event {n}");
        assert_eq!(
            fixture.bot_comments().len(),
            1,
            "event {n}: one status comment"
        );
        let pushed = git(&fixture.bare(), &["log", "-1", "--format=%B", &branches[0]]);
        assert!(
            pushed.contains(&format!("Meta-Agent-Session: {}", again.output("session"))),
            "event {n}: the branch is the published session's: {pushed}"
        );
    }
}
