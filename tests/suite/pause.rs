//! End to end: interruption is a clean pause. A SIGTERM to a local run while a slow gate runs
//! stops that gate's whole process tree, commits the work in progress (the session's checkpoint),
//! saves the session as `interrupted` and exits 5; `resume` then finishes the job on top of the
//! checkpoint. A second SIGTERM while the pause is still stopping a gate that ignores SIGTERM
//! exits 5 at once, and no process of the run outlives it. The GitHub side (the WIP pushed, the status comment's interrupted view, `/agent
//! fix` continuing) is in `github.rs`.

use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::engine::{example_with, run_json, trailer, trailers, unused_import};
use super::github::stable;
use crate::common::git;

/// A token in the slow gate's command line: no process may carry it after the pause.
pub(super) const SLOW_TOKEN: &str = "meta-agent-pause-test-slow-gate";

/// A gate that is slow (five minutes) once `calc.py`'s unused import is gone (hindsight's fix),
/// until the file `fast` exists.
pub(super) fn slow_gate(fast: &Path) -> impl FnOnce(&Path) {
    let fast = fast.display().to_string();
    move |work: &Path| {
        add_slow_gate(
            work,
            &format!("test -e {fast} || sleep 300 # {SLOW_TOKEN}"),
            "",
        );
    }
}

/// Adds the gate `slow` to the configuration: it passes while `calc.py` imports `math` and runs
/// `when_fixed` (a shell command) once hindsight's fix removed the import; `more` is appended to
/// the configuration after it (top-level keys).
pub(super) fn add_slow_gate(work: &Path, when_fixed: &str, more: &str) {
    let config = work.join(".meta-agent.yml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "  - name: slow\n    kind: custom\n    run: \"grep -q 'import math' calc.py || {when_fixed}\"\n{more}"
    ));
    std::fs::write(&config, text).unwrap();
}

/// A gate that, once the unused import is fixed (after the first act), writes a token-shaped
/// secret (assembled by the shell: the configuration itself holds none) into `leaked.txt` where
/// it runs, then sleeps (its command line carries `token`). The change is observed in the
/// worktree (`verify.pristine: false`), so the secret lands in the run's worktree after the
/// baseline: the change's, not the environment's (what the baseline gates wrote is never part
/// of the change).
pub(super) fn add_leaking_gate(work: &Path, token: &str) {
    let config = work.join(".meta-agent.yml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "  - name: slow\n    kind: custom\n    run: \"grep -q 'import math' calc.py || {{ printf 'key gh%s_%s\\\\n' p 0123456789abcdefghijABCDEF > leaked.txt; sleep 300; }} # {token}\"\n\
         verify:\n  pristine: false\n"
    ));
    std::fs::write(&config, text).unwrap();
}

/// Starts `meta-agent ARGS --json` in `work`, its stdout piped.
fn spawn(work: &Path, args: &[&str]) -> Child {
    crate::common::meta_agent_process(env!("CARGO_BIN_EXE_meta-agent").as_ref())
        .arg("--repo")
        .arg(work)
        .args(args)
        .arg("--json")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Reads the event stream (on a thread, to its end) until the slow gate starts after an act;
/// returns the rest of the lines to come.
fn until_slow_gate_runs(child: &mut Child) -> std::sync::mpsc::Receiver<Value> {
    let stdout = child.stdout.take().unwrap();
    let (lines, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let Ok(event) = serde_json::from_str::<Value>(&line) else {
                break;
            };
            if lines.send(event).is_err() {
                break;
            }
        }
    });
    let mut acted = false;
    while let Ok(event) = receiver.recv_timeout(Duration::from_secs(120)) {
        acted |= event["event"] == "resolution_applied";
        if acted && event["event"] == "gate_started" && event["gate"] == "slow" {
            return receiver;
        }
    }
    panic!("the slow gate never started after an act");
}

/// Starts `run` in `work` and returns once its `slow` gate (whose command line carries
/// `token`) runs after an act, with the rest of the event stream.
pub(super) fn run_until_slow_gate(
    work: &Path,
    token: &str,
) -> (Child, std::sync::mpsc::Receiver<Value>) {
    let mut child = spawn(work, &["run", "--text", "Make the gates pass"]);
    let rest = until_slow_gate_runs(&mut child);
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        !processes_with(token).is_empty(),
        "the slow gate runs when the signal comes"
    );
    (child, rest)
}

/// SIGTERM to a running `run` (from [`run_until_slow_gate`]): it exits 5 with the outcome
/// `interrupted`, which is returned.
pub(super) fn interrupt(child: Child, rest: &std::sync::mpsc::Receiver<Value>) -> Value {
    send(&child, nix::sys::signal::Signal::SIGTERM);
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(5),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let outcome = rest.iter().last().expect("the outcome line");
    assert_eq!(outcome["outcome"], "interrupted", "{outcome:#}");
    outcome
}

/// Sends `signal` to the process.
pub(super) fn send(child: &Child, signal: nix::sys::signal::Signal) {
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    nix::sys::signal::kill(pid, signal).unwrap();
}

/// Processes whose command line carries `token`.
pub(super) fn processes_with(token: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline"))
            && String::from_utf8_lossy(&cmdline).contains(token)
        {
            found.push(String::from_utf8_lossy(&cmdline).replace('\0', " "));
        }
    }
    found
}

/// Waits (up to two minutes) until the slow gate has been sleeping for a second.
pub(super) fn wait_for_the_slow_gate() {
    wait_for_gate(SLOW_TOKEN);
}

/// Waits (up to two minutes) until a process carrying `token` has run for a second.
pub(super) fn wait_for_gate(token: &str) {
    let started = Instant::now();
    let mut seen_before = false;
    while started.elapsed() < Duration::from_secs(120) {
        let running = !processes_with(token).is_empty();
        if running && seen_before {
            return;
        }
        seen_before = running;
        std::thread::sleep(Duration::from_millis(1000));
    }
    panic!("the slow gate never ran");
}

fn state_json(work: &Path, session: &str) -> Value {
    let path = work.join(format!(".git/meta-agent/sessions/{session}/state.json"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn sigterm_during_a_slow_gate_pauses_with_the_work_committed_and_resume_finishes() {
    let flags = tempfile::tempdir().unwrap();
    let fast = flags.path().join("fast");
    let (_dir, work) = example_with(|work| {
        unused_import(work);
        slow_gate(&fast)(work);
    });
    let base = git(&work, &["rev-parse", "HEAD"]).trim().to_owned();
    let (child, rest) = run_until_slow_gate(&work, SLOW_TOKEN);
    let signalled = Instant::now();
    send(&child, nix::sys::signal::Signal::SIGTERM);
    let out = child.wait_with_output().unwrap();
    let events: Vec<Value> = rest.iter().collect();
    let paused_in = signalled.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "exit 5 (interrupted): {stderr}");
    assert!(
        paused_in < Duration::from_secs(30),
        "paused at once, not after the gate: {paused_in:?}"
    );
    assert!(stderr.contains("SIGTERM"), "{stderr}");
    assert!(
        processes_with(SLOW_TOKEN).is_empty(),
        "the gate's process tree is gone: {:?}",
        processes_with(SLOW_TOKEN)
    );
    let outcome = events.last().cloned().expect("the outcome line");
    assert_eq!(outcome["outcome"], "interrupted", "{outcome:#}");
    assert!(outcome["interrupted"].as_str().unwrap().contains("SIGTERM"));
    let session = outcome["session"].as_str().unwrap().to_owned();
    let branch = outcome["branch"].as_str().unwrap().to_owned();
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "git_operation" && e["operation"] == "commit"),
        "the WIP commit is an event: {events:#?}"
    );

    // The work in progress is committed, the worktree clean, the state saved to redo the gates.
    let wip = git(&work, &["log", "-1", "--format=%s", &branch]);
    assert!(wip.starts_with("WIP: meta-agent:"), "{wip}");
    assert_eq!(
        trailer(&trailers(&work, &branch), "Meta-Agent-Session"),
        session
    );
    assert!(
        !git(&work, &["show", &format!("{branch}:calc.py")]).contains("import math"),
        "the act's change is in the WIP commit"
    );
    let place = crate::common::session_worktree(&work, &outcome);
    assert_eq!(git(&place, &["status", "--porcelain"]).trim(), "");
    assert_eq!(
        git(&work, &["rev-parse", "HEAD"]).trim(),
        base,
        "the user's checkout stays"
    );
    let state = state_json(&work, &session);
    assert_eq!(state["outcome"], "interrupted");
    assert_eq!(state["phase"], "observing", "the stopped step is redone");
    let report =
        std::fs::read_to_string(work.join(format!(".git/meta-agent/sessions/{session}/report.md")))
            .unwrap();
    let paused = &report[report
        .find("--- interrupted ---")
        .expect("the pause is reported")..];
    let worktrees = crate::common::worktrees_of(&work);
    let paused = paused.replace(worktrees.to_str().unwrap(), "[worktrees]");
    insta::assert_snapshot!("local_interrupted_report", stable(&paused));

    // Resumed with the gate fast again: verified and committed on top of the checkpoint.
    std::fs::write(&fast, "").unwrap();
    let (code, resumed_events, resumed) = run_json(&work, &["resume"]);
    assert_eq!(code, 0, "{resumed:#}\n{resumed_events:#?}");
    assert_eq!(resumed["outcome"], "committed");
    assert_eq!(resumed["session"], session.as_str());
    let commits: Vec<String> = git(&work, &["log", "--format=%s", &format!("{base}..{branch}")])
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(
        commits.len(),
        2,
        "the checkpoint and the verified commit: {commits:?}"
    );
    assert!(commits[1].starts_with("WIP: "), "{commits:?}");
    assert!(!commits[0].starts_with("WIP: "), "{commits:?}");
    assert!(
        trailer(&trailers(&work, &branch), "Meta-Agent-Gates").contains("slow=pass"),
        "{:?}",
        trailers(&work, &branch)
    );
    assert_eq!(
        resumed["commit"],
        git(&work, &["rev-parse", &branch]).trim()
    );
}

/// A token in the stubborn gate's command line: no process may carry it after the exit.
const STUBBORN_TOKEN: &str = "meta-agent-pause-test-stubborn-gate";

/// A gate that, once `calc.py`'s unused import is gone (hindsight's fix), sleeps five minutes
/// ignoring SIGTERM, with a two-minute grace before SIGKILL: stopping it keeps the pause busy
/// for as long as meta-agent waits for its supervisor (5 s).
fn stubborn_gate(work: &Path) {
    add_slow_gate(
        work,
        &format!("{{ trap '' TERM; sleep 300; }} # {STUBBORN_TOKEN}"),
        "sandbox:\n  kill_grace: 120s\n",
    );
}

/// Waits up to `limit` for `child` to exit; `None` if it is still running then.
fn exit_within(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let started = Instant::now();
    while started.elapsed() < limit {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// The first SIGTERM starts the pause, which is still stopping a gate that ignores SIGTERM when
/// a second SIGTERM comes: the process exits at once with code 5 (long before the pause could
/// have finished: meta-agent alone waits 5 s for the gate's supervisor), the session is not
/// reported as paused, and no process of the run outlives it (the gate's supervisor, whose
/// parent is gone, kills the tree without waiting out the grace).
#[test]
fn a_second_sigterm_while_the_pause_stops_a_stubborn_gate_exits_at_once_leaving_no_process() {
    let (_dir, work) = example_with(|work| {
        unused_import(work);
        stubborn_gate(work);
    });
    let (mut child, rest) = run_until_slow_gate(&work, STUBBORN_TOKEN);
    send(&child, nix::sys::signal::Signal::SIGTERM);
    assert!(
        exit_within(&mut child, Duration::from_millis(1500)).is_none(),
        "the pause is still stopping the gate (it ignores SIGTERM)"
    );
    let second = Instant::now();
    send(&child, nix::sys::signal::Signal::SIGTERM);
    let status = exit_within(&mut child, Duration::from_secs(3))
        .expect("exited at once on the second signal, not after the pause");
    let exited_in = second.elapsed();
    assert_eq!(status.code(), Some(5), "exit 5 (interrupted)");
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(
        stderr.contains(
            "received SIGTERM (the job was cancelled or timed out) again while pausing: exiting now"
        ),
        "{stderr}"
    );
    let events: Vec<Value> = rest.iter().collect();
    assert!(
        events.iter().all(|event| event.get("outcome").is_none()),
        "no outcome: the pause did not finish ({exited_in:?}): {events:#?}"
    );
    // No process of the run is left: the gate's supervisor saw its parent go and killed the tree.
    let started = Instant::now();
    while !processes_with(STUBBORN_TOKEN).is_empty() && started.elapsed() < Duration::from_secs(20)
    {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        processes_with(STUBBORN_TOKEN).is_empty(),
        "processes of the run outlived it: {:?}",
        processes_with(STUBBORN_TOKEN)
    );
}

/// A token in the leaking gate's command line.
const LEAKING_TOKEN: &str = "meta-agent-pause-test-leaking-gate";

/// A paused run whose work in progress holds a file the patch gate refuses (a token-shaped
/// secret a gate wrote): the file is put back (removed), the rest committed as the checkpoint,
/// and the report says so under a heading of its own: a pause is not an escalation.
#[test]
fn a_pause_whose_work_the_patch_gate_refuses_in_part_is_not_reported_as_an_escalation() {
    let (_dir, work) = example_with(|work| {
        unused_import(work);
        add_leaking_gate(work, LEAKING_TOKEN);
    });
    let (child, rest) = run_until_slow_gate(&work, LEAKING_TOKEN);
    // The gate writes in the run's worktree (the session's id is not known yet).
    let leaked = || {
        std::fs::read_dir(crate::common::worktrees_of(&work))
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| entry.path().join("leaked.txt"))
            .find(|path| path.exists())
    };
    let started = Instant::now();
    while leaked().is_none() && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(leaked().is_some(), "the gate wrote its file");
    let outcome = interrupt(child, &rest);
    let session = outcome["session"].as_str().unwrap();
    let branch = outcome["branch"].as_str().unwrap();
    let place = crate::common::session_worktree(&work, &outcome);
    assert!(
        place.is_dir() && !place.join("leaked.txt").exists(),
        "the refused file was put back"
    );
    let files = git(&work, &["show", "--name-only", "--format=", branch]);
    assert_eq!(files.trim(), "calc.py", "the rest is the checkpoint");
    let report =
        std::fs::read_to_string(work.join(format!(".git/meta-agent/sessions/{session}/report.md")))
            .unwrap();
    assert!(!report.contains("escalation"), "{report}");
    let paused = &report[report.find("--- interrupted ---").expect("the pause")..];
    let worktrees = crate::common::worktrees_of(&work);
    let paused = paused.replace(worktrees.to_str().unwrap(), "[worktrees]");
    insta::assert_snapshot!("local_interrupted_refused_report", stable(&paused));
}
