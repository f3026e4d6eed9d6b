//! The LLM wire formats as the providers define them. First the references themselves
//! (`shared/llmwire/`): the checks derived from them accept what the real APIs accepted and refuse
//! what they refused, and the mock LLM answers a refused request with the API's 400. Then what the
//! bot sends, end to end through the real binary against the mock (which checks every request):
//! o-series requests, an Anthropic refusal and an empty answer, tool calls cut by the output
//! limit on either provider, whole (non-streamed) answers, and provider refusals that end the run
//! as an escalation with the provider's reason and the work kept.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::agent::{KEY, example_with, run_json};
use crate::common::llmwire::{self, AnthropicRules, Wire};
use crate::common::mock_llm::{
    MockLlm, Recorded, Reply, anthropic_answer, anthropic_stream, openai_answer, streamed_tool_call,
};
use crate::common::{git, session_file};

/// The fix of the example's `//` bug, as edit_file arguments.
fn fix() -> Value {
    json!({"path": "calc.py", "old_string": "sum(values) // len(values)",
        "new_string": "sum(values) / len(values)"})
}

fn messages(request: &Recorded) -> Vec<Value> {
    request.json()["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Runs the example in the blocking pool (the mock serves on this runtime meanwhile).
async fn run(work: PathBuf) -> (i32, Value, PathBuf) {
    tokio::task::spawn_blocking(move || {
        let (code, outcome) = run_json(&work, &["run", "--text", "Fix mean of floats"]);
        (code, outcome, work)
    })
    .await
    .unwrap()
}

/// Whether the run's branch holds the fix.
fn fixed(work: &Path, outcome: &Value) -> bool {
    crate::common::file_on_branch(work, outcome, "calc.py").contains("sum(values) / len(values)")
}

/// Runs the example with this `llm:` line; asserts the run committed the fix.
async fn committed(llm: String) -> (tempfile::TempDir, Value, PathBuf) {
    let (dir, work) = example_with(&llm);
    let (code, outcome, work) = run(work).await;
    assert_eq!(
        (code, outcome["outcome"].as_str()),
        (0, Some("committed")),
        "{llm}{outcome:#}"
    );
    assert!(fixed(&work, &outcome), "{llm}");
    (dir, outcome, work)
}

/// The `llm:` line for Anthropic at `base_url`, without reflection.
fn anthropic_llm(base_url: &str) -> String {
    format!(
        "llm: {{provider: anthropic, base_url: \"{base_url}\", model: claude-sonnet-4-5, reflect: false}}\n"
    )
}

/// Streamed Anthropic answers: the fix, then `finish`.
fn anthropic_fix_and_finish() -> [Reply; 2] {
    let fix = fix().to_string();
    [
        anthropic_stream("", Some(("t_fix", "edit_file", &fix)), "tool_use"),
        anthropic_stream(
            "",
            Some(("t_end", "finish", r#"{"summary": "ok"}"#)),
            "tool_use",
        ),
    ]
}

// ---- the references ----

#[test]
fn anthropic_rules_accept_the_recorded_accepted_requests_and_refuse_the_refused_one() {
    let Some(recordings) = llmwire::anthropic_recordings() else {
        eprintln!("SKIPPED: shared/llmwire/ is absent (CI has it beside the checkout)");
        return;
    };
    let rules = AnthropicRules::derive(&json!({ "requests": recordings }));
    let (mut accepted, mut refused) = (0, 0);
    for recording in &recordings {
        let verdict = rules.check(&recording["body"]);
        match recording["status"].as_u64() {
            Some(200) => {
                assert!(verdict.is_ok(), "{}: {verdict:?}", recording["source"]);
                accepted += 1;
            }
            Some(400) => {
                let reason = verdict.expect_err("the API refused it");
                assert!(reason.contains("unexpected `tool_use_id`"), "{reason}");
                refused += 1;
            }
            _ => {}
        }
    }
    assert!(
        accepted >= 20 && refused == 1,
        "{accepted} accepted, {refused} refused"
    );
}

#[test]
fn anthropic_rules_refuse_empty_content_string_inputs_and_text_before_results() {
    let Some(reference) = llmwire::reference() else {
        return; // said loudly by llmwire::reference()
    };
    let ask = |messages: Value| {
        reference.check(
            Wire::Anthropic,
            &json!({"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": messages}),
        )
    };
    let question = json!({"role": "user", "content": [{"type": "text", "text": "Fix it."}]});
    let use_ = |input: Value| {
        json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "read_file", "input": input}]})
    };
    let result = json!({"type": "tool_result", "tool_use_id": "t1", "content": "x = 1"});
    let note = json!({"type": "text", "text": "go on"});
    assert_eq!(
        ask(
            json!([question, use_(json!({"path": "a"})), {"role": "user", "content": [result, note]}])
        ),
        Ok(())
    );
    let empty = ask(
        json!([question, {"role": "assistant", "content": []}, {"role": "user", "content": "go on"}]),
    );
    assert!(empty.unwrap_err().contains("non-empty content"));
    assert_eq!(
        ask(json!([question, {"role": "assistant", "content": []}])),
        Ok(()),
        "an empty final assistant message is allowed"
    );
    let string_input = ask(
        json!([question, use_(json!("{\"path\": \"a")), {"role": "user", "content": [result]}]),
    );
    assert!(string_input.unwrap_err().contains("valid dictionary"));
    let text_first =
        ask(json!([question, use_(json!({})), {"role": "user", "content": [note, result]}]));
    assert!(text_first.unwrap_err().contains("must come first"));
    let unanswered = ask(json!([question, use_(json!({})), {"role": "user", "content": "go on"}]));
    assert!(unanswered.unwrap_err().contains("without `tool_result`"));
    let empty_text = ask(json!([{"role": "user", "content": [{"type": "text", "text": ""}]}]));
    assert!(empty_text.unwrap_err().contains("non-empty"));
}

#[test]
fn openai_schema_and_rules_refuse_what_the_reference_refuses() {
    let Some(reference) = llmwire::reference() else {
        return; // said loudly by llmwire::reference()
    };
    let check = |wire: Wire, body: Value| reference.check(wire, &body);
    let base = |model: &str| {
        json!({"model": model, "messages": [{"role": "user", "content": "Fix it."}],
            "max_completion_tokens": 64})
    };
    assert_eq!(check(Wire::OpenAi, base("gpt-4.1")), Ok(()));
    let mut deprecated = base("gpt-4.1");
    deprecated["max_tokens"] = json!(64);
    assert!(
        check(Wire::OpenAi, deprecated.clone())
            .unwrap_err()
            .contains("deprecated")
    );
    assert_eq!(
        check(Wire::OpenAiCompatible, deprecated),
        Ok(()),
        "compatible servers still read max_tokens"
    );
    let mut o_series = base("o4-mini");
    o_series["max_tokens"] = json!(64);
    assert!(
        check(Wire::OpenAiCompatible, o_series)
            .unwrap_err()
            .contains("'max_tokens' is not supported with this model")
    );
    let mut sampled = base("o3");
    sampled["temperature"] = json!(0.0);
    assert!(
        check(Wire::OpenAi, sampled)
            .unwrap_err()
            .contains("'temperature'")
    );
    let mut effort = base("gpt-4.1");
    effort["reasoning_effort"] = json!("high");
    assert!(
        check(Wire::OpenAi, effort)
            .unwrap_err()
            .contains("reasoning_effort")
    );
    let mut unknown = base("gpt-4.1");
    unknown["max_output"] = json!(1);
    assert!(
        check(Wire::OpenAi, unknown)
            .unwrap_err()
            .contains("Unrecognized")
    );
    let mut wrong_type = base("gpt-4.1");
    wrong_type["messages"][0]["content"] = json!(7);
    assert!(
        check(Wire::OpenAi, wrong_type)
            .unwrap_err()
            .starts_with("invalid request")
    );
    let mut orphan = base("gpt-4.1");
    orphan["messages"]
        .as_array_mut()
        .unwrap()
        .push(json!({"role": "tool", "tool_call_id": "c1", "content": "x"}));
    assert!(
        check(Wire::OpenAi, orphan)
            .unwrap_err()
            .contains("role 'tool'")
    );
}

#[tokio::test]
async fn the_mock_answers_a_refused_request_with_the_apis_400_and_records_it() {
    if llmwire::reference().is_none() {
        return; // said loudly by llmwire::reference()
    }
    let mock = MockLlm::start(vec![openai_answer("never", &[], "stop")]).await;
    let body = json!({"model": "o4-mini", "max_tokens": 16,
        "messages": [{"role": "user", "content": "hi"}]});
    let response = reqwest::Client::new()
        .post(format!("{}/chat/completions", mock.base_url))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 400);
    let answer: Value = response.json().await.unwrap();
    assert_eq!(answer["error"]["type"], "invalid_request_error");
    let refused = mock.take_refused();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(
        refused[0].starts_with("POST /chat/completions: "),
        "{refused:?}"
    );
}

// ---- what the bot sends, end to end ----

#[tokio::test(flavor = "multi_thread")]
async fn o_series_models_get_max_completion_tokens_the_effort_and_no_max_tokens() {
    let mock = MockLlm::start(vec![
        streamed_tool_call("c1", "finish", json!({"summary": "nothing yet"})),
        streamed_tool_call("c2", "edit_file", fix()),
        streamed_tool_call("c3", "finish", json!({"summary": "true division"})),
    ])
    .await;
    committed(format!(
        "llm: {{provider: openai, base_url: \"{}\", model: o4-mini, fast_model: gpt-4.1-mini, \
         reasoning_effort: high}}\n",
        mock.base_url
    ))
    .await;
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    for request in &requests {
        let body = request.json();
        assert_eq!(body["max_completion_tokens"], 4096, "{body}");
        assert_eq!(
            body.get("max_tokens"),
            None,
            "deprecated, refused by o-series"
        );
        assert_eq!(body.get("temperature"), None);
        let effort = body.get("reasoning_effort").cloned();
        match body["model"].as_str() {
            Some("o4-mini") => assert_eq!(effort, Some(json!("high"))),
            Some("gpt-4.1-mini") => assert_eq!(effort, None, "not a reasoning model"),
            other => panic!("unexpected model {other:?}"),
        }
    }
    assert!(mock.refused().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_anthropic_refusal_and_an_empty_answer_never_send_an_empty_message() {
    let mock = MockLlm::start(vec![
        anthropic_stream("", None, "end_turn"),
        anthropic_stream("", None, "refusal"),
    ])
    .await;
    let (_dir, work) = example_with(&anthropic_llm(&mock.base_url));
    let (code, outcome, _work) = run(work).await;
    assert_eq!(
        (code, outcome["outcome"].as_str()),
        (4, Some("escalated")),
        "{outcome:#}"
    );
    assert_eq!(
        outcome["escalation"]["kind"], "model_refused",
        "the refusal is why the run stopped: {outcome:#}"
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "no call after the refusal");
    let after_empty = messages(&requests[1]);
    assert_eq!(
        after_empty.len(),
        1,
        "no empty assistant turn: {after_empty:?}"
    );
    let said: Vec<&str> = after_empty[0]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|block| block["text"].as_str())
        .collect();
    assert!(said[1].starts_with("Your answer was empty."), "{said:?}");
    assert!(mock.refused().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_anthropic_tool_call_cut_by_max_tokens_is_dropped_and_the_model_told() {
    let partial = r#"{"path": "calc.py", "old_string": "sum(values) // len(val"#;
    let cut = anthropic_stream(
        "I'll fix mean.",
        Some(("t1", "edit_file", partial)),
        "max_tokens",
    );
    let mut replies = vec![cut];
    replies.extend(anthropic_fix_and_finish());
    let mock = MockLlm::start(replies).await;
    committed(anthropic_llm(&mock.base_url)).await;
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    let sent = messages(&requests[1]);
    assert_eq!(
        sent[1],
        json!({"role": "assistant", "content": [{"type": "text", "text": "I'll fix mean."}]}),
        "the cut call is not sent back"
    );
    let note = sent[2]["content"][0]["text"].as_str().unwrap();
    assert!(note.contains("cut off at the output limit"), "{note}");
    assert!(
        note.contains(&format!("<<<\n{partial}\n>>>")),
        "its own text: {note}"
    );
    assert!(mock.refused().is_empty());
}

/// OpenAI whole answers: the fix, then `finish`.
fn openai_fix_and_finish() -> [Reply; 2] {
    [
        openai_answer(
            "Fixing.",
            &[("c_fix", "edit_file", &fix().to_string())],
            "tool_calls",
        ),
        openai_answer(
            "",
            &[("c_end", "finish", r#"{"summary": "ok"}"#)],
            "tool_calls",
        ),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn an_openai_call_cut_by_length_is_dropped_not_re_encoded_with_whole_answers() {
    let partial = r#"{"path": "calc.py", "old_str"#;
    let mut replies = vec![openai_answer("", &[("c1", "edit_file", partial)], "length")];
    replies.extend(openai_fix_and_finish());
    let mock = MockLlm::start(replies).await;
    committed(format!(
        "llm: {{provider: openai, base_url: \"{}\", model: gpt-4.1, reflect: false, stream: false}}\n",
        mock.base_url
    ))
    .await;
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    let sent = messages(&requests[1]);
    assert!(
        sent.iter().all(|m| m["tool_calls"].is_null()),
        "the cut call is not sent back: {sent:?}"
    );
    let note = sent.last().unwrap()["content"].as_str().unwrap();
    assert!(note.contains(&format!("<<<\n{partial}\n>>>")), "{note}");
    assert!(mock.refused().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn with_llm_stream_false_both_providers_are_asked_for_whole_answers() {
    for provider in ["openai", "anthropic"] {
        let replies = if provider == "openai" {
            openai_fix_and_finish().to_vec()
        } else {
            vec![
                anthropic_answer("Fixing.", Some(("t1", "edit_file", fix())), "tool_use"),
                anthropic_answer(
                    "",
                    Some(("t2", "finish", json!({"summary": "ok"}))),
                    "tool_use",
                ),
            ]
        };
        let mock = MockLlm::start(replies).await;
        committed(format!(
            "llm: {{provider: {provider}, base_url: \"{}\", reflect: false, stream: false}}\n",
            mock.base_url
        ))
        .await;
        let requests = mock.requests();
        assert_eq!(requests.len(), 2, "{provider}");
        for request in &requests {
            let body = request.json();
            assert_eq!(body.get("stream"), None, "{provider}: {body}");
            assert_eq!(body.get("stream_options"), None, "{provider}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_context_length_refusal_is_retried_smaller_then_escalates_with_the_reason() {
    let too_long = || {
        Reply::status(
            400,
            json!({"error": {
            "message": "This model's maximum context length is 8192 tokens. However, your messages resulted in 9100 tokens.",
            "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}),
        )
    };
    let mock = MockLlm::start(vec![
        openai_answer(
            "",
            &[("c0", "read_file", r#"{"path": "calc.py"}"#)],
            "tool_calls",
        ),
        openai_answer("", &[("c1", "edit_file", &fix().to_string())], "tool_calls"),
        too_long(),
        too_long(),
    ])
    .await;
    let (_dir, work) = example_with(&format!(
        "llm: {{provider: openai, base_url: \"{}\", model: gpt-4.1, reflect: false, stream: false}}\n",
        mock.base_url
    ));
    let base = git(&work, &["rev-parse", "HEAD"]);
    let (code, outcome, work) = run(work).await;
    assert_eq!(code, 4, "escalated, not an internal error: {outcome:#}");
    assert_eq!(outcome["outcome"], "escalated");
    let requests = mock.requests();
    assert_eq!(
        requests.len(),
        4,
        "one retry, smaller, then the refusal stands"
    );
    assert!(
        requests[3].body.len() < requests[2].body.len(),
        "the retry is smaller: {} then {}",
        requests[2].body.len(),
        requests[3].body.len()
    );
    let retried = requests[3].body.clone();
    assert!(retried.contains("output omitted to fit the model's context window"));
    assert!(
        retried.contains("\"tool_call_id\":\"c0\""),
        "the call keeps its result"
    );
    let report = session_file(&work, &outcome, "report.md");
    assert!(
        report.contains("the LLM provider refused the request")
            && report.contains("maximum context length is 8192 tokens"),
        "{report}"
    );
    let commit = outcome["commit"]
        .as_str()
        .expect("the work in progress is committed");
    let kept = git(&work, &["show", &format!("{commit}:calc.py")]);
    assert!(
        kept.contains("sum(values) / len(values)"),
        "the WIP keeps the edit"
    );
    assert_ne!(commit, base.trim());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_model_that_does_not_exist_ends_the_run_escalated_with_the_providers_words() {
    let missing = Reply::status(
        404,
        json!({"type": "error",
        "error": {"type": "not_found_error", "message": "model: claude-nope"}}),
    );
    let mock = MockLlm::start(vec![missing]).await;
    let (_dir, work) = example_with(&format!(
        "llm: {{provider: anthropic, base_url: \"{}\", model: claude-nope, reflect: false}}\n",
        mock.base_url
    ));
    let (code, outcome, work) = run(work).await;
    assert_eq!(code, 4, "{outcome:#}");
    assert_eq!(outcome["outcome"], "escalated");
    assert_eq!(mock.requests().len(), 1, "a refusal is not retried");
    let report = session_file(&work, &outcome, "report.md");
    assert!(report.contains("(404): model: claude-nope"), "{report}");
    assert!(!report.contains(KEY));
}
