//! End to end: `loop.wall_clock` bounds the model's requests. A model whose stream stays open
//! and sends only keep-alives ends the run escalated ("the time budget is spent") once the
//! wall clock is spent, instead of holding it for the whole-request timeout and its retries; the
//! work in progress is kept on the bot's branch.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::engine::{edit, example_with};
use crate::common::mock_llm::{MockLlm, Reply};
use crate::common::{git, meta_agent};

#[tokio::test(flavor = "multi_thread")]
async fn a_model_that_never_answers_is_bounded_by_the_wall_clock() {
    let (_dir, work) = example_with(|work| {
        edit(
            &work.join("calc.py"),
            "sum(values) / len(values)",
            "sum(values) // len(values)",
        );
        let config = work.join(".meta-agent.yml");
        let mut text = std::fs::read_to_string(&config).unwrap();
        text.push_str("loop: {wall_clock: 20s}\nllm: {reflect: false, stream: true}\n");
        std::fs::write(&config, text).unwrap();
    });
    let mock = MockLlm::start(vec![Reply::KeepAlive, Reply::KeepAlive, Reply::KeepAlive]).await;
    let base_url = mock.base_url.clone();
    let started = Instant::now();
    let (work, code, outcome, stdout) = tokio::task::spawn_blocking(move || {
        let out = meta_agent()
            .env("OPENAI_API_KEY", "sk-test-deadline-0000")
            .arg("--repo")
            .arg(&work)
            .args(["--llm-provider", "openai", "--llm-base-url", &base_url])
            .args([
                "--model",
                "test-model",
                "run",
                "--text",
                "Fix mean",
                "--json",
            ])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let last: Value = stdout
            .lines()
            .last()
            .and_then(|line| serde_json::from_str(line).ok())
            .unwrap_or_else(|| panic!("{}", String::from_utf8_lossy(&out.stderr)));
        (work, out.status.code().unwrap(), last, stdout)
    })
    .await
    .unwrap();
    let took = started.elapsed();
    assert_eq!(code, 4, "{outcome:#}");
    assert_eq!(outcome["outcome"], "escalated", "{outcome:#}");
    assert!(
        stdout.contains("the time budget is spent"),
        "the escalation names the time budget: {stdout}"
    );
    assert!(
        took < Duration::from_secs(120),
        "the 20 s wall clock ended the run, not the 300 s request timeout: {took:?}"
    );
    assert!(
        !mock.requests().is_empty(),
        "the model was asked (and never answered)"
    );
    let branch = outcome["branch"].as_str().unwrap();
    assert!(
        git(&work, &["log", "-1", "--format=%s", branch]).starts_with("WIP: meta-agent:"),
        "the work in progress is kept on the branch"
    );
}
