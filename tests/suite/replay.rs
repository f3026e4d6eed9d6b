//! End to end: a run recorded with the mock model, read back. `trace show` prints its timeline
//! from the session's id, its directory and the artifact's zip alike; `trace replay` without a
//! terminal plays through to the `--until` location and ends there; the player's timing on that
//! recorded trace, at 1× and 4×, checked with a fake clock.

use std::cell::Cell;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use meta_agent::protocol::event::Event;
use meta_agent::render::timeline;
use meta_agent::replay::{
    self, Devices, Ending, Key, Keyboard, Location, Play, ReplayClock, Screen, Speed,
};
use meta_agent::telemetry::{TraceEntry, Traced};
use serde_json::Value;

use super::local::{fixing_model_saying, no_reflection, with_model};
use crate::common::meta_agent;

/// A committed run of the example with the mock model: its checkout and outcome object.
async fn recorded_run() -> (tempfile::TempDir, PathBuf, Value) {
    recorded_run_of("Fix mean", "true division").await
}

/// A committed run of `task` (the mock model fixes `mean`, closing with `summary`).
pub(super) async fn recorded_run_of(
    task: &str,
    summary: &str,
) -> (tempfile::TempDir, PathBuf, Value) {
    let (dir, work) = super::engine::example_with(no_reflection);
    let mock = fixing_model_saying(summary).await;
    let url = mock.base_url.clone();
    let (place, task) = (work.clone(), task.to_owned());
    let (code, lines) = tokio::task::spawn_blocking(move || {
        with_model(&place, &url, true, None, &["run", "--text", &task])
    })
    .await
    .unwrap();
    let outcome = lines.last().cloned().unwrap_or(Value::Null);
    assert_eq!(code, Some(0), "{outcome:#}");
    assert_eq!(outcome["outcome"], "committed");
    (dir, work, outcome)
}

fn session_dir(work: &Path, outcome: &Value) -> PathBuf {
    work.join(".git/meta-agent/sessions")
        .join(outcome["session"].as_str().unwrap())
}

/// The run's files zipped as GitHub serves an artifact (the files at the root).
fn artifact_zip(dir: &Path, into: &Path) -> PathBuf {
    let path = into.join("meta-agent-results.zip");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    for name in ["report.md", "outcome.json", "trace.jsonl", "audit.jsonl"] {
        zip.start_file(name, zip::write::SimpleFileOptions::default())
            .unwrap();
        zip.write_all(&std::fs::read(dir.join(name)).unwrap())
            .unwrap();
    }
    zip.finish().unwrap();
    path
}

fn trace_cmd(work: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out = meta_agent()
        .arg("--repo")
        .arg(work)
        .arg("trace")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn trace_show_prints_the_timeline_of_a_recorded_run_from_its_session_directory_and_zip() {
    let (_dir, work, outcome) = recorded_run().await;
    let session = outcome["session"].as_str().unwrap().to_owned();
    let (code, by_session, stderr) = trace_cmd(&work, &["show", &session]);
    assert_eq!(code, Some(0), "{stderr}");
    for expected in [
        "timeline: ",
        "run      started ",
        "model    openai/test-model: ",
        " tokens in, ",
        "tool     edit_file ok in ",
        "gate     tests running ",
        "decision complete (iteration 1)",
        "outcome  committed ",
        "outcome  finished: committed after 1 iteration(s), 2 model call(s)",
    ] {
        assert!(
            by_session.contains(expected),
            "{expected:?} in:\n{by_session}"
        );
    }
    assert!(
        !by_session.contains(" event "),
        "every event of the run reads back as itself:\n{by_session}"
    );
    assert!(
        by_session.contains(" !gate     tests FAILED"),
        "the baseline's failure is marked:\n{by_session}"
    );
    let dir = session_dir(&work, &outcome);
    let (_, by_dir, _) = trace_cmd(&work, &["show", dir.to_str().unwrap()]);
    let scratch = tempfile::tempdir().unwrap();
    let zip = artifact_zip(&dir, scratch.path());
    let (code, by_zip, stderr) = trace_cmd(&work, &["show", zip.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(by_dir, by_session);
    assert_eq!(by_zip, by_session, "the artifact's zip reads the same");

    let (code, _, stderr) = trace_cmd(&work, &["show", "no-such-session"]);
    assert_eq!(code, Some(2), "a usage error");
    assert!(
        stderr.contains("no-such-session: not a file, a directory or a session"),
        "{stderr}"
    );
    let (code, _, stderr) = trace_cmd(&work, &["replay", "--until", "before_lunch", &session]);
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("`before_lunch` is not a pause-point location"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn trace_replay_without_a_terminal_plays_to_the_until_location_and_ends_there() {
    let (_dir, work, outcome) = recorded_run().await;
    let session = outcome["session"].as_str().unwrap().to_owned();
    let (code, stdout, stderr) = trace_cmd(
        &work,
        &[
            "replay",
            "--speed",
            "4",
            "--until",
            "after_llm_answer",
            &session,
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.starts_with("replay at 4×: "), "{stdout}");
    let last_row = stdout.lines().rfind(|line| line.starts_with('+')).unwrap();
    assert!(
        last_row.contains("model    openai/test-model"),
        "stops at the first answer: {stdout}"
    );
    assert!(
        !stdout.contains("committed"),
        "and shows nothing after it: {stdout}"
    );
    assert!(stdout.ends_with("no keyboard to go on\n"), "{stdout}");
    assert!(
        stdout.contains("replay stopped at after_llm_answer (trace line "),
        "{stdout}"
    );
}

/// Time that passes only when the player sleeps.
#[derive(Default)]
struct FakeClock(Cell<Duration>);

impl ReplayClock for FakeClock {
    fn now(&self) -> Duration {
        self.0.get()
    }
    fn sleep(&self, duration: Duration) {
        self.0.set(self.0.get() + duration);
    }
}

/// A keyboard nobody touches (interactive or not).
struct Untouched(bool);

impl Keyboard for Untouched {
    fn poll(&mut self) -> Option<Key> {
        None
    }
    fn interactive(&self) -> bool {
        self.0
    }
}

/// The fake clock's reading at each row shown.
struct Stamps<'a> {
    clock: &'a FakeClock,
    rows: Vec<Duration>,
}

impl Screen for Stamps<'_> {
    fn show(&mut self, text: &str) {
        if text.starts_with('+') {
            self.rows.push(self.clock.now());
        }
    }
}

fn played(
    entries: &[TraceEntry],
    speed: Speed,
    until: Vec<Location>,
    interactive: bool,
) -> (Vec<Duration>, Ending) {
    let clock = FakeClock::default();
    let mut screen = Stamps {
        clock: &clock,
        rows: Vec::new(),
    };
    let ending = replay::play(
        entries,
        &Play { speed, until },
        Devices {
            clock: &clock,
            keys: &mut Untouched(interactive),
            screen: &mut screen,
        },
    );
    (screen.rows, ending)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_replay_of_a_recorded_run_keeps_its_rhythm_at_1x_and_4x_on_a_fake_clock() {
    let (_dir, work, outcome) = recorded_run().await;
    let entries = replay::source::load(&session_dir(&work, &outcome)).unwrap();
    let offsets: Vec<Duration> = timeline::rows(&entries).iter().map(|row| row.at).collect();
    assert!(
        offsets.last().unwrap() > &Duration::from_millis(100),
        "a run that takes time: {offsets:?}"
    );
    let (at_1x, ending) = played(&entries, Speed::X1, Vec::new(), true);
    assert_eq!(ending, Ending::Finished);
    assert_eq!(at_1x, offsets, "each row at its own time");
    let (at_4x, _) = played(&entries, Speed::X4, Vec::new(), true);
    let quartered: Vec<Duration> = offsets.iter().map(|at| *at / 4).collect();
    assert_eq!(at_4x, quartered, "four times sooner");

    let (rows, ending) = played(&entries, Speed::X4, vec![Location::OnToolCall], false);
    let Ending::StoppedAt { location, seq } = ending else {
        panic!("{ending:?}");
    };
    assert_eq!(location, Location::OnToolCall);
    let stop = entries.iter().find(|entry| entry.seq == seq).unwrap();
    assert!(
        matches!(&stop.event, Traced::Known(Event::ToolCalled { tool, .. }) if tool == "edit_file"),
        "{stop:?}"
    );
    assert_eq!(
        rows.last(),
        Some(
            &(timeline::rows(&entries)
                .iter()
                .find(|row| row.seq == seq)
                .unwrap()
                .at
                / 4)
        )
    );
}
