//! The code under test in the first prompt, end to end through the real binary and real gates
//! on one small repository per language and a real library (`fixtures/under-test/`): for each
//! first-seen single-function bug whose test asserts a wrong value (a function the package
//! re-exports, a method of a class, a helper's callee two calls away; humanize's #250 reverted),
//! a model that can only edit lines it was shown (the mock's oracle) fixes it in one call,
//! within the scenario's prompt budget, tool schemas included.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::mock_llm::{MockLlm, Reply, openai_answer};
use crate::common::{git, scratch_repo};
use crate::suite::observe::{first_user_message, prompt_text, run};
use meta_agent::agent::tokens::TokenCounter;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/under-test")
}

/// The scenarios of one repository, and the task every run is given.
fn scenarios(repo: &str) -> (String, Vec<Value>) {
    let text = std::fs::read_to_string(fixtures().join("scenarios.json")).unwrap();
    let all: Value = serde_json::from_str(&text).unwrap();
    let task = all["task"].as_str().unwrap().to_owned();
    let chosen = all["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["repo"] == repo)
        .cloned()
        .collect();
    (task, chosen)
}

fn field<'a>(scenario: &'a Value, name: &str) -> &'a str {
    scenario[name].as_str().unwrap_or_default()
}

/// The edit back to the fixed line, and `finish`.
fn fix(scenario: &Value) -> Reply {
    let edit = json!({"path": field(scenario, "file"), "old_string": field(scenario, "bug"),
        "new_string": field(scenario, "fixed")})
    .to_string();
    let finish =
        json!({"summary": format!("Correct the {} bug", field(scenario, "shape"))}).to_string();
    openai_answer(
        "",
        &[
            ("call_e", "edit_file", &edit),
            ("call_f", "finish", &finish),
        ],
        "tool_calls",
    )
}

/// The fix when the prompt shows the faulty line, else a read of its file first.
fn oracle(scenario: &Value) -> Reply {
    let read = json!({"path": field(scenario, "file")}).to_string();
    Reply::Oracle {
        shown: field(scenario, "bug").to_owned(),
        then: Box::new(fix(scenario)),
        otherwise: Box::new(openai_answer(
            "",
            &[("call_r", "read_file", &read)],
            "tool_calls",
        )),
    }
}

/// The scenario's repository with its bug committed, its model the mock.
fn broken(scenario: &Value, base_url: &str) -> (tempfile::TempDir, PathBuf) {
    let (dir, work) = scratch_repo(&fixtures().join(field(scenario, "repo")));
    let config = work.join(".meta-agent.yml");
    let mut text = std::fs::read_to_string(&config).unwrap_or_else(|_| "version: 1\n".into());
    text.push_str(&format!(
        "llm: {{provider: openai, base_url: \"{base_url}\", model: test-model, stream: false}}\n"
    ));
    std::fs::write(&config, text).unwrap();
    let file = work.join(field(scenario, "file"));
    let source = std::fs::read_to_string(&file).unwrap();
    assert!(source.contains(field(scenario, "fixed")), "{scenario}");
    std::fs::write(
        &file,
        source.replacen(field(scenario, "fixed"), field(scenario, "bug"), 1),
    )
    .unwrap();
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "the bug"]);
    (dir, work)
}

/// Every scenario of `repo`: committed after one call whose prompt fits its budget.
async fn one_call_each(repo: &str, expected: usize) {
    let (task, scenarios) = scenarios(repo);
    assert_eq!(scenarios.len(), expected, "{repo}'s scenarios");
    let counter = TokenCounter::for_model("gpt-4.1");
    for scenario in &scenarios {
        let mock = MockLlm::start(vec![oracle(scenario), fix(scenario)]).await;
        let (_dir, work) = broken(scenario, &mock.base_url);
        let (code, outcome) = run(&work, &["run", "--text", &task]).await;
        assert_eq!(code, 0, "{scenario}: {outcome:#}");
        assert_eq!(outcome["outcome"], "committed", "{scenario}: {outcome:#}");
        let requests = mock.requests();
        let opening = first_user_message(&requests[0]);
        assert_eq!(
            requests.len(),
            1,
            "{scenario}: the first prompt shows the faulty line: {opening}"
        );
        let tokens = counter.count(&prompt_text(&requests[0]));
        let budget = scenario["budget"].as_u64().unwrap_or(0) as usize;
        assert!(
            tokens <= budget,
            "{scenario}: {tokens} prompt tokens > {budget}: {opening}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn python_first_seen_bugs_take_one_call_each() {
    one_call_each("python", 3).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn typescript_first_seen_bugs_take_one_call_each() {
    if std::process::Command::new("npm")
        .arg("--version")
        .output()
        .is_err()
    {
        panic!("`npm` is not on PATH: this test runs vitest through npm (scripts/test.sh)");
    }
    one_call_each("typescript", 3).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn rust_first_seen_bugs_take_one_call_each() {
    one_call_each("rust", 3).await;
}

/// humanize 4.12.3 with the fix of its #250 reverted: `naturalsize` is re-exported by the
/// package, 72 lines long with its docstring, the bug near its end.
#[tokio::test(flavor = "multi_thread")]
async fn a_real_librarys_historical_bug_takes_one_call() {
    one_call_each("humanize", 1).await;
}
