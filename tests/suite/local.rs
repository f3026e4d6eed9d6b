//! End to end: what a local user sees at the edges. An empty repository is a usage error (exit
//! 2), `--max-iterations 1` reports at most one iteration, and `resume` needs no API key when no
//! model call is left.

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
        trailer(&trailers(&work, "HEAD"), "Meta-Agent-Iterations"),
        "1"
    );
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
