//! The report says why the run really stopped (issue #29, point 5):
//! - a refusal of the evidence check quotes what it refused, never an empty quote (the issue's
//!   route: a blank line removed from a test file; ours: a blank line changed into code);
//! - the model's refusal is "Why it stopped", in its words (OpenAI's `refusal`, as the issue
//!   names it; ours: Anthropic's `stop_reason: "refusal"` with no words, and a refusal in an
//!   improve step after a build that did something);
//! - a call cut by the output limit at the same place every time is a repeated call: nudged,
//!   then ended (the issue's route: an OpenAI tool call cut by `length`; ours: an Anthropic text
//!   answer cut by `max_tokens`).

use serde_json::json;

use super::{KEY, broken_example, call, finish, fix, openai_llm, run};
use crate::common::mock_llm::{MockLlm, Reply, anthropic_answer, openai_answer};

/// One act only: the run ends after it (the mock has answers for one act).
const ONE_ACT: &str = "loop: {max_iterations: 1}\n";

/// An OpenAI answer refusing in `words`.
fn openai_refusal(words: &str) -> Reply {
    Reply::ok(json!({
        "id": "chatcmpl-r", "object": "chat.completion", "created": 0, "model": "gpt-4.1",
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": null,
            "message": {"role": "assistant", "content": null, "refusal": words}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
    }))
}

/// The "Why it stopped" line of an escalation report.
fn why_it_stopped(report: &str) -> &str {
    report
        .lines()
        .find(|line| line.starts_with("**Why it stopped:**"))
        .unwrap_or_else(|| panic!("no reason in the report: {report}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_blank_line_is_named_never_quoted_as_nothing() {
    let removed = json!({"path": "tests/test_calc.py",
        "old_string": "import pytest\n\nimport calc", "new_string": "import pytest\nimport calc"});
    let mock = MockLlm::start(vec![
        call("c_fix", "edit_file", &fix()),
        call("c_blank", "edit_file", &removed),
        finish("mean divides exactly"),
    ])
    .await;
    let (_dir, work) = broken_example(&openai_llm(&mock.base_url), |_| {});
    let ran = run(&work, &["run", "--text", "Fix mean"]).await;
    assert_eq!(ran.outcome["outcome"], "committed", "{}", ran.stdout);
    let report = ran.session_file(&work, "report.md");
    let line = "tests/test_calc.py: removes existing test code: a blank line (line 2)";
    assert!(report.contains(line), "{report}");
    for text in [&report, &ran.stdout] {
        assert!(!text.contains("``"), "an empty quote: {text}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_blank_line_turned_into_code_is_named_too() {
    let filled = json!({"path": "tests/test_calc.py",
        "old_string": "import pytest\n\nimport calc", "new_string": "import pytest\ncalc = None\nimport calc"});
    let mock = MockLlm::start(vec![
        call("c_fix", "edit_file", &fix()),
        call("c_fill", "edit_file", &filled),
        finish("mean divides exactly"),
    ])
    .await;
    let (_dir, work) = broken_example(&openai_llm(&mock.base_url), |_| {});
    let ran = run(&work, &["run", "--text", "Fix mean"]).await;
    let report = ran.session_file(&work, "report.md");
    assert!(
        report.contains("changes existing test code: a blank line (line 2) became `calc = None`"),
        "{report}"
    );
    assert!(!report.contains("``"), "{report}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_openai_refusal_is_why_the_run_stopped_in_the_models_words() {
    let words = "I can't help with modifying this test harness.";
    let mock = MockLlm::start(vec![openai_refusal(words)]).await;
    let (_dir, work) = broken_example(&openai_llm(&mock.base_url), |_| {});
    let ran = run(&work, &["run", "--text", "Fix mean"]).await;
    assert_eq!(ran.code, 4, "escalated: {}", ran.stderr);
    assert_eq!(mock.requests().len(), 1, "the model is not asked again");
    let report = ran.session_file(&work, "report.md");
    assert_eq!(
        why_it_stopped(&report),
        format!("**Why it stopped:** the model refused to go on, saying: \"{words}\".")
    );
    assert!(!report.contains("persistent failure"), "{report}");
    let state = ran.session_file(&work, "state.json");
    let state: serde_json::Value = serde_json::from_str(&state).unwrap();
    assert_eq!(
        state["escalation"],
        json!({"kind": "model_refused", "words": words}),
        "{state:#}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_anthropic_refusal_without_words_after_a_first_attempt_is_the_reason_too() {
    // The build changes something that does not fix the bug; the improve step's answer is a
    // refusal without text.
    let wrong = json!({"path": "calc.py", "old_string": "def add", "new_string": "def add"});
    let mock = MockLlm::start(vec![
        anthropic_answer("", Some(("t1", "edit_file", wrong)), "tool_use"),
        anthropic_answer(
            "",
            Some(("t2", "finish", json!({"summary": "done"}))),
            "tool_use",
        ),
        anthropic_answer("", None, "refusal"),
    ])
    .await;
    let llm = format!(
        "llm: {{provider: anthropic, base_url: \"{}\", model: claude-sonnet-4-5, reflect: false, stream: false}}\n",
        mock.base_url
    );
    let (_dir, work) = broken_example(&llm, |_| {});
    let ran = run(&work, &["run", "--text", "Fix mean"]).await;
    assert_eq!(ran.code, 4, "{}", ran.stderr);
    assert_eq!(mock.requests().len(), 3);
    let report = ran.session_file(&work, "report.md");
    assert_eq!(
        why_it_stopped(&report),
        "**Why it stopped:** the model refused to go on (it gave no reason)."
    );
    assert!(!ran.stdout.contains(KEY));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_openai_call_cut_at_the_same_place_is_nudged_then_ends_the_act() {
    let partial = r#"{"path": "calc.py", "old_string": "sum(values) // len(valu"#;
    let cut = || openai_answer("", &[("c1", "edit_file", partial)], "length");
    let mock = MockLlm::start((0..5).map(|_| cut()).collect()).await;
    let config = format!("{}{ONE_ACT}", openai_llm(&mock.base_url));
    let (_dir, work) = broken_example(&config, |_| {});
    let ran = run(&work, &["run", "--text", "Fix mean"]).await;
    let requests = mock.requests();
    assert_eq!(
        requests.len(),
        5,
        "ended at the fifth identical cut, not the step cap (15): {}",
        ran.stdout
    );
    let last = requests[4].body.clone();
    assert!(
        last.contains("cut off at the output limit at the same place 4 times"),
        "nudged: {last}"
    );
    let report = ran.session_file(&work, "report.md");
    assert!(
        report.contains("the model's answer was cut by the output limit at the same place 5 times"),
        "{report}"
    );
    assert!(!report.contains("step cap"), "{report}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_anthropic_text_cut_at_the_same_place_is_a_repeat_too() {
    let text = "Here is the whole new calc.py, rewritten from the top: def add(a, b): return a +";
    let mock = MockLlm::start(
        (0..5)
            .map(|_| anthropic_answer(text, None, "max_tokens"))
            .collect(),
    )
    .await;
    let llm = format!(
        "llm: {{provider: anthropic, base_url: \"{}\", model: claude-sonnet-4-5, reflect: false, stream: false}}\n{ONE_ACT}",
        mock.base_url
    );
    let (_dir, work) = broken_example(&llm, |_| {});
    let ran = run(&work, &["run", "--text", "Fix mean"]).await;
    assert_eq!(mock.requests().len(), 5, "{}", ran.stdout);
    let report = ran.session_file(&work, "report.md");
    assert!(
        report.contains("cut by the output limit at the same place 5 times"),
        "{report}"
    );
}
