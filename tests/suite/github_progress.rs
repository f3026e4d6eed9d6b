//! The status comment as a live checklist, end to end: the real binary, the loopback GitHub,
//! the git remote and a scripted model whose act makes several tool calls.

use std::time::{Duration, Instant};

use serde_json::json;

use super::github::{Fixture, examples, labeled, llm_env, with_env, wrong_mean};
use crate::common::mock_llm::{MockLlm, streamed_tool_call as tool_call};
use meta_agent::github::status::SessionRecord;

/// The least time between two content-creating writes in this test; progress edits are ten
/// of them apart (short, so that a run of two or three seconds on an idle machine still makes
/// several progress edits).
const WRITE_SPACING_MS: &str = "25";
const PROGRESS_SPACING: Duration = Duration::from_millis(250);

#[tokio::test(flavor = "multi_thread")]
async fn the_status_comment_is_a_live_checklist_edited_per_step_within_the_rate_policy() {
    let fixture = Fixture::new(&examples("python-calc"), wrong_mean);
    let mock = MockLlm::start(vec![
        tool_call("call_r", "read_file", json!({"path": "calc.py"})),
        tool_call(
            "call_e",
            "edit_file",
            json!({"path": "calc.py", "old_string": "sum(values) // len(values)",
                   "new_string": "sum(values) / len(values)"}),
        ),
        tool_call(
            "call_f",
            "finish",
            json!({"summary": "mean divides with / again"}),
        ),
    ])
    .await;
    let mut env = llm_env(&mock);
    env.push((
        "META_AGENT_GITHUB_WRITE_SPACING_MS",
        WRITE_SPACING_MS.into(),
    ));
    let (fixture, step) = tokio::task::spawn_blocking(move || {
        let step = fixture.step("issues", &labeled("alice"), &with_env(&env));
        (fixture, step)
    })
    .await
    .unwrap();
    assert_eq!(step.code, 0, "{}\n{}", step.stdout, step.stderr);
    assert_eq!(step.output("outcome"), "committed");
    let writes: Vec<(Instant, String)> = fixture
        .github
        .requests()
        .into_iter()
        .filter(|r| r.path.contains("/comments") && matches!(r.method.as_str(), "POST" | "PATCH"))
        .filter(|r| !r.path.ends_with("/reactions"))
        .map(|r| {
            (
                r.at,
                r.json()["body"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let progress: Vec<&(Instant, String)> = writes
        .iter()
        .filter(|(_, body)| body.contains("- [ ] Result"))
        .collect();
    let bodies: Vec<&str> = progress.iter().map(|(_, body)| body.as_str()).collect();
    assert!(progress.len() >= 3, "edited per step: {bodies:#?}");
    for pair in progress.windows(2) {
        let gap = pair[1].0.duration_since(pair[0].0);
        assert!(
            gap >= PROGRESS_SPACING - Duration::from_millis(20),
            "progress edits {gap:?} apart: {bodies:#?}"
        );
    }
    for body in &bodies {
        let record = SessionRecord::decode(body).expect("every edit carries the session record");
        assert_eq!(record.session, step.output("session"));
        assert!(record.state.is_some(), "resumable from every edit");
    }
    assert!(
        bodies
            .iter()
            .any(|b| b.contains("- [x] **Baseline**: ") && b.contains("tests ✗")),
        "the baseline and what failed: {bodies:#?}"
    );
    assert!(
        bodies
            .iter()
            .any(|b| b.contains("  - read `calc.py`\n") || b.contains("  - edited `calc.py`\n")),
        "the act's tool calls: {bodies:#?}"
    );
    let last = &writes.last().expect("the comment was written").1;
    assert!(last.contains("gates pass, pull request ready"), "{last}");
    let record = SessionRecord::decode(last).expect("the final record");
    assert_eq!(record.outcome, "committed");
    let comments = fixture.bot_comments();
    assert_eq!(comments.len(), 1, "one comment, edited");
    assert_eq!(&comments[0].body, last);
}
