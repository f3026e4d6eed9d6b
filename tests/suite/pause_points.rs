//! End to end: pause points (`pause:` in `.meta-agent.yml`, `--pause-at`) through the real
//! binary, the loopback mock LLM and the real gates of the example repository. Each location
//! pauses where its condition holds (exit 5, the work and the session kept, a `paused` event) and
//! `debug context` holds what the location promises; conditions that do not hold never pause;
//! hit counts pick the hit; `resume --guidance` goes on from the pause with the guidance in the
//! next prompt, `resume --step` stops at the next arrival at the same location.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::engine::{events_named, example_with, run_json_with_model, wrong_mean};
use crate::common::mock_llm::{MockLlm, Reply, streamed_tool_call};
use crate::common::{git, meta_agent};

/// The model's fix of `wrong_mean`.
fn fix() -> Reply {
    streamed_tool_call(
        "call_fix",
        "edit_file",
        json!({"path": "calc.py", "old_string": "sum(values) // len(values)",
               "new_string": "sum(values) / len(values)"}),
    )
}

/// An edit whose text is not in the file: the tool fails.
fn bad_edit() -> Reply {
    streamed_tool_call(
        "call_bad",
        "edit_file",
        json!({"path": "calc.py", "old_string": "no such text", "new_string": "x"}),
    )
}

fn read(path: &str) -> Reply {
    streamed_tool_call("call_read", "read_file", json!({ "path": path }))
}

fn finish() -> Reply {
    streamed_tool_call("call_done", "finish", json!({"summary": "true division"}))
}

/// The example with the wrong mean, no requirements review, and `pause` (YAML, the value of
/// `pause:`); `more` runs on the worktree before the commit.
fn repo_pausing(pause: &str, more: impl FnOnce(&Path)) -> (tempfile::TempDir, PathBuf) {
    example_with(|work| {
        wrong_mean(work);
        let config = work.join(".meta-agent.yml");
        let mut text = std::fs::read_to_string(&config).unwrap();
        text.push_str(&format!("llm: {{reflect: false}}\npause: {pause}\n"));
        std::fs::write(&config, text).unwrap();
        more(work);
    })
}

/// A paused run as a test sees it.
struct Paused {
    work: PathBuf,
    session: String,
    branch: String,
    /// The `paused` events of the run.
    paused: Vec<Value>,
    /// `debug context --json`.
    context: Value,
}

/// Runs `meta-agent ARGS` (with the model at `url`) on `work` off the async runtime; it must
/// pause (exit 5, outcome `interrupted`).
async fn run_paused(work: PathBuf, url: &str, args: &[&str]) -> Paused {
    let url = url.to_owned();
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, events, outcome) = run_json_with_model(&work, &url, &args);
        assert_eq!(code, 5, "a pause exits 5: {outcome:#}");
        assert_eq!(outcome["outcome"], "interrupted", "{outcome:#}");
        let session = outcome["session"].as_str().unwrap().to_owned();
        let branch = outcome["branch"].as_str().unwrap().to_owned();
        let paused = events_named(&events, "paused")
            .into_iter()
            .cloned()
            .collect();
        let context = debug_context(&work, &session);
        Paused {
            work,
            session,
            branch,
            paused,
            context,
        }
    })
    .await
    .unwrap()
}

/// `meta-agent debug context SESSION --json`.
fn debug_context(work: &Path, session: &str) -> Value {
    let out = meta_agent()
        .arg("--repo")
        .arg(work)
        .args(["debug", "context", session, "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `meta-agent resume SESSION ARGS` with the model at `url`: the exit code, events and outcome.
async fn resume(work: &Path, url: &str, session: &str, args: &[&str]) -> (i32, Vec<Value>, Value) {
    let work = work.to_owned();
    let url = url.to_owned();
    let mut all: Vec<String> = vec!["resume".into(), session.to_owned()];
    all.extend(args.iter().map(|a| (*a).to_owned()));
    tokio::task::spawn_blocking(move || {
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        run_json_with_model(&work, &url, &all)
    })
    .await
    .unwrap()
}

/// Runs the example pausing at `pause` with the model answering `replies`; the run pauses once,
/// at `at`, after `requests` model requests.
async fn pauses_at(
    pause: &str,
    at: &str,
    replies: Vec<Reply>,
    requests: usize,
) -> (tempfile::TempDir, Paused, MockLlm) {
    let (dir, work) = repo_pausing(pause, |_| {});
    let mock = MockLlm::start(replies).await;
    let paused = run_paused(work, &mock.base_url, &["run", "--text", "Fix mean"]).await;
    check_paused(&paused, at);
    assert_eq!(
        mock.requests().len(),
        requests,
        "model requests before the pause"
    );
    (dir, paused, mock)
}

/// One `paused` event at `at`, and the context's hit there.
fn check_paused(paused: &Paused, at: &str) {
    assert_eq!(paused.paused.len(), 1, "{:#?}", paused.paused);
    assert_eq!(paused.paused[0]["location"], at);
    assert_eq!(paused.context["hit"]["at"], at, "{:#}", paused.context);
    assert_eq!(paused.context["task"]["title"], "Fix mean");
}

/// The structure of a JSON value: every leaf replaced by its type, an array by its first
/// element's structure (the schema the `--json` form keeps).
fn shape(value: &Value) -> Value {
    match value {
        Value::Null => json!("null"),
        Value::Bool(_) => json!("bool"),
        Value::Number(_) => json!("number"),
        Value::String(_) => json!("string"),
        Value::Array(items) => json!([items.first().map_or(json!("empty"), shape)]),
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(key, field)| (key.clone(), shape(field)))
                .collect(),
        ),
    }
}

fn messages(context: &Value) -> &Vec<Value> {
    context["messages"].as_array().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn after_plan_pauses_with_the_plan_and_no_conversation() {
    let (_dir, paused, _mock) = pauses_at(
        r#"[{at: after_plan, when: 'plan == "build" && iteration == 1'}]"#,
        "after_plan",
        vec![],
        0,
    )
    .await;
    assert_eq!(paused.context["plan"]["kind"], "build");
    assert_eq!(paused.context["hit"]["values"]["texts"]["plan"], "build");
    assert!(messages(&paused.context).is_empty());
    let gates = paused.context["gates"].as_array().unwrap();
    assert!(gates.iter().any(|g| g["result"] == "failed"), "{gates:#?}");
}

/// A task the agent plans in sub-tasks (three requirement items: not simple).
const PLANNED_TASK: &str = "Fix mean\n- the mean of integers is a float\n- keep the integer API \
                            of add\n- add no dependency";

/// A plan approval: `after_plan` inside the build act pauses once the planner made its sub-task
/// plan (`plan == "subtasks"`), before any sub-task runs; the context and the terminal show the
/// plan. Going on without guidance runs that plan as it is (no second planning call, the model
/// told the plan that was shown).
#[tokio::test(flavor = "multi_thread")]
async fn after_plan_inside_the_act_shows_the_agents_plan_and_going_on_runs_it_as_it_is() {
    let (_dir, work) = repo_pausing(r#"[{at: after_plan, when: 'plan == "subtasks"'}]"#, |_| {});
    let plan = streamed_tool_call(
        "call_plan",
        "plan",
        json!({"subtasks": [
            {"id": "divide", "description": "use true division in calc.mean"},
            {"id": "check", "description": "check the integer API of add", "depends_on": ["divide"]}
        ]}),
    );
    let mock = MockLlm::start(vec![plan, fix(), finish(), finish()]).await;
    let paused = run_paused(work, &mock.base_url, &["run", "--text", PLANNED_TASK]).await;
    check_paused(&paused, "after_plan");
    assert_eq!(mock.requests().len(), 1, "the planner's call only");
    let context = &paused.context;
    assert_eq!(context["hit"]["values"]["texts"]["plan"], "subtasks");
    assert_eq!(context["model"]["role"], "planner");
    let subtasks = context["sub_plan"]["subtasks"].as_array().unwrap();
    let ids: Vec<&str> = subtasks.iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["divide", "check"]);
    let text = meta_agent()
        .arg("--repo")
        .arg(&paused.work)
        .args(["debug", "context", &paused.session])
        .output()
        .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.contains("1. [divide] use true division in calc.mean\n2. [check] check the integer API of add (after divide)"),
        "{text}"
    );
    let (code, _, outcome) = resume(&paused.work, &mock.base_url, &paused.session, &[]).await;
    assert_eq!(code, 0, "{outcome:#}");
    assert_eq!(outcome["outcome"], "committed");
    let requests = mock.requests();
    assert_eq!(requests.len(), 4, "no second planning call");
    assert!(
        requests[1]
            .body
            .contains("[divide] use true division in calc.mean"),
        "the approved plan is the one run: {}",
        requests[1].body
    );
}

/// Guidance at the agent's plan is a word against it: the act plans again with the guidance,
/// and the new plan pauses for approval again.
#[tokio::test(flavor = "multi_thread")]
async fn guidance_at_the_agents_plan_asks_for_a_new_one() {
    let (_dir, work) = repo_pausing(r#"[{at: after_plan, when: 'plan == "subtasks"'}]"#, |_| {});
    let plan = |id: &str| {
        streamed_tool_call(
            "call_plan",
            "plan",
            json!({"subtasks": [{"id": id, "description": "fix calc.mean"}]}),
        )
    };
    let mock = MockLlm::start(vec![plan("first"), plan("second")]).await;
    let paused = run_paused(work, &mock.base_url, &["run", "--text", PLANNED_TASK]).await;
    check_paused(&paused, "after_plan");
    let guidance = ["--guidance", "one sub-task per requirement"];
    let (code, events, outcome) =
        resume(&paused.work, &mock.base_url, &paused.session, &guidance).await;
    assert_eq!(code, 5, "paused again at the new plan: {outcome:#}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "planned again");
    assert!(
        requests[1].body.contains("one sub-task per requirement"),
        "{}",
        requests[1].body
    );
    assert_eq!(events_named(&events, "paused").len(), 1);
    let context = debug_context(&paused.work, &paused.session);
    assert_eq!(context["sub_plan"]["subtasks"][0]["id"], "second");
}

#[tokio::test(flavor = "multi_thread")]
async fn before_llm_call_pauses_with_the_messages_about_to_be_sent() {
    let (_dir, paused, _mock) = pauses_at(
        r#"[{at: before_llm_call, when: 'call == 1 && role == "builder" && model ~ "test-*"'}]"#,
        "before_llm_call",
        vec![],
        0,
    )
    .await;
    let context = &paused.context;
    assert_eq!(context["model"]["model"], "test-model");
    assert_eq!(context["model"]["provider"], "openai");
    assert_eq!(context["model"]["role"], "builder");
    let sent = messages(context);
    assert_eq!(sent[0]["role"], "system");
    assert!(
        sent[1]["text"].as_str().unwrap().contains("Fix mean"),
        "{sent:#?}"
    );
    assert!(context["tool_call"].is_null());
    // The memory consulted for the baseline's failure: the bundled catalog's guidance for a
    // pytest assertion, as the prompt gets it.
    let memory = context["memory"].as_array().unwrap();
    assert!(
        memory
            .iter()
            .any(|text| text.as_str().unwrap().contains("A pytest assertion failed")),
        "{memory:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn after_llm_answer_pauses_with_the_answer() {
    let (_dir, paused, _mock) = pauses_at(
        "[{at: after_llm_answer, when: 'call == 1'}]",
        "after_llm_answer",
        vec![fix()],
        1,
    )
    .await;
    let last = messages(&paused.context).last().unwrap().clone();
    assert_eq!(last["role"], "assistant", "{last:#}");
    assert_eq!(last["tool_calls"][0]["name"], "edit_file");
}

#[tokio::test(flavor = "multi_thread")]
async fn on_tool_call_pauses_before_the_edit_and_resume_goes_on_with_the_guidance() {
    let (_dir, paused, mock) = pauses_at(
        r#"[{at: on_tool_call, when: 'tool == "edit_file" && path ~ "*.py"'}]"#,
        "on_tool_call",
        vec![fix(), fix(), finish()],
        1,
    )
    .await;
    let context = &paused.context;
    assert_eq!(context["tool_call"]["name"], "edit_file");
    assert!(context["tool_result"].is_null(), "the call has not run");
    insta::assert_json_snapshot!("debug_context_json_shape", shape(context));
    let head = git(
        &paused.work,
        &["show", &format!("{}:calc.py", paused.branch)],
    );
    assert!(head.contains("// len"), "nothing edited before the pause");
    let (code, _events, outcome) = resume(
        &paused.work,
        &mock.base_url,
        &paused.session,
        &["--guidance", "keep the integer API"],
    )
    .await;
    assert_eq!(code, 0, "{outcome:#}");
    assert_eq!(outcome["outcome"], "committed");
    let requests = mock.requests();
    assert_eq!(
        requests.len(),
        3,
        "the act redone: its edit replayed, then finish"
    );
    assert!(
        requests[1].body.contains("keep the integer API"),
        "the guidance reaches the next prompt: {}",
        requests[1].body
    );
    assert!(!requests[0].body.contains("keep the integer API"));
    let fixed = git(
        &paused.work,
        &["show", &format!("{}:calc.py", paused.branch)],
    );
    assert!(fixed.contains("sum(values) / len(values)"), "{fixed}");
}

#[tokio::test(flavor = "multi_thread")]
async fn after_tool_call_pauses_with_the_result_and_keeps_the_edit() {
    let (_dir, paused, _mock) = pauses_at(
        r#"[{at: after_tool_call, when: 'tool == "edit_file"'}]"#,
        "after_tool_call",
        vec![fix()],
        1,
    )
    .await;
    assert_eq!(paused.context["tool_call"]["name"], "edit_file");
    assert!(
        paused.context["tool_result"].is_string(),
        "{:#}",
        paused.context
    );
    let kept = git(
        &paused.work,
        &["show", &format!("{}:calc.py", paused.branch)],
    );
    assert!(
        kept.contains("sum(values) / len(values)"),
        "the work is kept: {kept}"
    );
    let message = git(&paused.work, &["log", "-1", "--format=%B", &paused.branch]);
    assert!(message.starts_with("WIP: meta-agent"), "{message}");
    assert!(message.contains(&paused.session), "{message}");
    let report = std::fs::read_to_string(
        paused
            .work
            .join(".git/meta-agent/sessions")
            .join(&paused.session)
            .join("report.md"),
    )
    .unwrap();
    assert!(
        report.contains("--- paused ---\nStopped: paused at `after_tool_call`"),
        "{report}"
    );
    assert!(
        report.contains(&format!("`meta-agent debug context {}`", paused.session)),
        "{report}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn on_tool_error_pauses_with_the_error() {
    let (_dir, paused, _mock) = pauses_at(
        r#"[{at: on_tool_error, when: 'tool == "edit_file"'}]"#,
        "on_tool_error",
        vec![bad_edit()],
        1,
    )
    .await;
    let result = paused.context["tool_result"].as_str().unwrap();
    assert!(
        result.contains("no such text") || result.contains("not found"),
        "{result}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn after_gates_pauses_with_the_gates() {
    let (_dir, paused, _mock) = pauses_at(
        r#"[{at: after_gates, when: 'gate == "tests" && result == "failed" && iteration == 0'}]"#,
        "after_gates",
        vec![],
        0,
    )
    .await;
    let gates = paused.context["gates"].as_array().unwrap();
    assert!(
        gates
            .iter()
            .any(|g| g["name"] == "tests" && g["result"] == "failed"),
        "{gates:#?}"
    );
    assert!(!paused.context["signatures"].as_array().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn before_commit_pauses_with_the_change_kept_and_resume_commits_it() {
    let (_dir, paused, mock) = pauses_at(
        r#"[{at: before_commit, when: 'path ~ "calc.py" && files == 1'}]"#,
        "before_commit",
        vec![fix(), finish()],
        2,
    )
    .await;
    let gates = paused.context["gates"].as_array().unwrap();
    assert!(gates.iter().all(|g| g["result"] != "failed"), "{gates:#?}");
    let kept = git(
        &paused.work,
        &["show", &format!("{}:calc.py", paused.branch)],
    );
    assert!(kept.contains("sum(values) / len(values)"), "{kept}");
    let (code, _events, outcome) = resume(&paused.work, &mock.base_url, &paused.session, &[]).await;
    assert_eq!(code, 0, "{outcome:#}");
    assert_eq!(outcome["outcome"], "committed");
    assert_eq!(mock.requests().len(), 2, "the commit needs no model call");
}

#[tokio::test(flavor = "multi_thread")]
async fn on_delegate_pauses_before_the_explorer_with_its_opening() {
    let (_dir, work) = repo_pausing(
        r#"[{at: on_delegate, when: 'role == "explorer"'}]"#,
        |work| {
            let docs = work.join("docs");
            std::fs::create_dir_all(&docs).unwrap();
            for n in 0..410 {
                std::fs::write(docs.join(format!("note{n}.txt")), format!("note {n}\n")).unwrap();
            }
            git(work, &["add", "docs"]);
        },
    );
    let mock = MockLlm::start(vec![]).await;
    let paused = run_paused(work, &mock.base_url, &["run", "--text", "Fix mean"]).await;
    check_paused(&paused, "on_delegate");
    assert_eq!(mock.requests().len(), 0);
    assert_eq!(paused.context["model"]["role"], "explorer");
    assert_eq!(messages(&paused.context).len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn conditions_that_do_not_hold_never_pause() {
    let never: Vec<String> = [
        "after_plan",
        "before_llm_call",
        "after_llm_answer",
        "on_tool_call",
        "after_tool_call",
        "on_tool_error",
        "after_gates",
        "before_commit",
        "on_delegate",
    ]
    .iter()
    .map(|at| format!("{{at: {at}, when: 'iteration == 99'}}"))
    .collect();
    let (_dir, work) = repo_pausing(&format!("[{}]", never.join(", ")), |_| {});
    let mock = MockLlm::start(vec![fix(), finish()]).await;
    let url = mock.base_url.clone();
    let (code, events, outcome) = tokio::task::spawn_blocking(move || {
        run_json_with_model(&work, &url, &["run", "--text", "Fix mean"])
    })
    .await
    .unwrap();
    assert_eq!(code, 0, "{outcome:#}");
    assert_eq!(outcome["outcome"], "committed");
    assert!(events_named(&events, "paused").is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hit_count_pauses_at_the_chosen_hit() {
    // after 1, every 2: hits 1 and 2 go on, hit 3 pauses.
    let (_dir, paused, _mock) = pauses_at(
        "[{at: before_llm_call, after: 1, every: 2}]",
        "before_llm_call",
        vec![read("calc.py"), read("tests/test_calc.py")],
        2,
    )
    .await;
    assert_eq!(paused.context["hit"]["arrival"], 3);
    assert_eq!(paused.context["hit"]["cause"]["rule"]["hit"], 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn pause_at_on_the_command_line_then_step_then_guidance() {
    let (_dir, work) = repo_pausing("[]", |_| {});
    let mock = MockLlm::start(vec![fix(), bad_edit(), finish()]).await;
    let url = mock.base_url.clone();
    let first = run_paused(
        work,
        &url,
        &[
            "--pause-at",
            "before_llm_call:call == 1",
            "run",
            "--text",
            "Fix mean",
        ],
    )
    .await;
    check_paused(&first, "before_llm_call");
    assert_eq!(mock.requests().len(), 0);
    // --step: the act is redone, its first call replayed; the next call pauses.
    let (code, events, outcome) = resume(&first.work, &url, &first.session, &["--step"]).await;
    assert_eq!(code, 5, "{outcome:#}");
    let stepped = events_named(&events, "paused");
    assert_eq!(stepped.len(), 1);
    assert_eq!(stepped[0]["location"], "before_llm_call");
    let context = debug_context(&first.work, &first.session);
    assert_eq!(context["hit"]["cause"], "step", "{context:#}");
    assert_eq!(context["hit"]["arrival"], 2);
    assert_eq!(mock.requests().len(), 1);
    let (code, _events, outcome) = resume(
        &first.work,
        &url,
        &first.session,
        &["--guidance", "mind empty lists"],
    )
    .await;
    assert_eq!(code, 0, "{outcome:#}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    assert!(
        requests[1].body.contains("mind empty lists"),
        "{}",
        requests[1].body
    );
}

#[test]
fn config_check_names_the_column_of_a_bad_condition() {
    let (_dir, work) = repo_pausing(
        r#"[{at: on_tool_call, when: 'tool == "x" && gate == "y"'}]"#,
        |_| {},
    );
    let out = meta_agent()
        .arg("--repo")
        .arg(&work)
        .args(["config", "check"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("pause[0].when"), "{stderr}");
    assert!(
        stderr.contains("column 16: `gate` is not a field of `on_tool_call`"),
        "{stderr}"
    );
    let (_dir, good) = repo_pausing(
        r#"[after_plan, {at: after_gates, when: 'result == "failed"', every: 2}, before_push]"#,
        |_| {},
    );
    let out = meta_agent()
        .arg("--repo")
        .arg(&good)
        .args(["config", "check"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(
            "pause points:\n  - after_plan\n  - after_gates when result == \"failed\", every 2\n  \
             - before_push (GitHub runs that push only: a local run never pushes)"
        ),
        "{stdout}"
    );
}

#[test]
fn pause_at_names_an_unknown_location_and_a_bad_condition() {
    let (_dir, work) = repo_pausing("[]", |_| {});
    for (flag, says) in [
        ("before_lunch", "unknown location `before_lunch`"),
        ("on_tool_call:tool ==", "column 8"),
        ("before_push", "a local run never pushes"),
    ] {
        let out = meta_agent()
            .arg("--repo")
            .arg(&work)
            .args(["--pause-at", flag, "config", "check"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{stderr}");
    }
}

/// On GitHub: a pause point pauses the job (exit 5) with the work pushed; the status comment
/// says where and why, shows the plan and the steps so far and how to go on; the context is in
/// the run's artifact; `/agent continue GUIDANCE` on another runner goes on from the pause with
/// the guidance in the next prompt, and commits.
#[tokio::test(flavor = "multi_thread")]
async fn on_github_a_pause_shows_the_plan_and_agent_continue_goes_on_with_the_guidance() {
    use super::github::{comment_event, labeled, llm_env, with_env};
    let mut fixture = on_github_pausing(r#"[{at: on_tool_call, when: 'tool == "edit_file"'}]"#);
    let mock = MockLlm::start(vec![fix(), fix(), finish()]).await;
    let env = llm_env(&mock);
    let (fixture, first, second) = tokio::task::spawn_blocking(move || {
        let first = fixture.step("issues", &labeled("alice"), &with_env(&env));
        let event = comment_event(&fixture, "alice", "/agent continue keep the integer API");
        fixture.new_runner("after-pause");
        let second = fixture.step("issue_comment", &event, &with_env(&env));
        (fixture, first, second)
    })
    .await
    .unwrap();
    assert_eq!(first.code, 5, "{}\n{}", first.stdout, first.stderr);
    assert_eq!(first.output("outcome"), "interrupted");
    assert!(
        first.out.iter().any(|(name, _)| name == "context.json"),
        "the context is in the artifact: {:?}",
        first.out.iter().map(|(name, _)| name).collect::<Vec<_>>()
    );
    assert_eq!(second.code, 0, "{}\n{}", second.stdout, second.stderr);
    assert_eq!(second.output("outcome"), "committed");
    let requests = mock.requests();
    assert_eq!(
        requests.len(),
        3,
        "the act redone: its edit replayed, then finish"
    );
    assert!(
        requests[1].body.contains("keep the integer API"),
        "{}",
        requests[1].body
    );
    let comments = fixture.bot_comments();
    assert_eq!(comments.len(), 1, "edited in place");
    assert_eq!(fixture.github.pulls().len(), 1);
}

/// `/agent continue` on a runner whose checkout is shallow (actions/checkout's default depth of
/// 1) of a default branch that moved since the pause: the session's branch fetched from the
/// remote carries the work kept at the pause, the check before the push stops at that branch's
/// remote tip (the old default tip below it is not taken for a stranger's commit), and the run
/// commits and opens its pull request.
#[tokio::test(flavor = "multi_thread")]
async fn on_github_continue_on_a_shallow_checkout_of_a_moved_branch_commits() {
    use super::github::{comment_event, labeled, llm_env, with_env};
    let fixture = on_github_pausing(r#"[{at: on_tool_call, when: 'tool == "edit_file"'}]"#);
    let mock = MockLlm::start(vec![fix(), fix(), finish()]).await;
    let env = llm_env(&mock);
    let (fixture, first, second) = tokio::task::spawn_blocking(move || {
        let mut fixture = fixture;
        let first = fixture.step("issues", &labeled("alice"), &with_env(&env));
        fixture.advance_default_branch();
        fixture.new_shallow_runner("shallow");
        let event = comment_event(&fixture, "alice", "/agent continue");
        let second = fixture.step("issue_comment", &event, &with_env(&env));
        (fixture, first, second)
    })
    .await
    .unwrap();
    assert_eq!(first.code, 5, "{}\n{}", first.stdout, first.stderr);
    assert_eq!(second.code, 0, "{}\n{}", second.stdout, second.stderr);
    assert_eq!(second.output("outcome"), "committed");
    assert_eq!(fixture.github.pulls().len(), 1);
}

/// The status comment of a paused job (kept apart: the comment above is edited in place).
#[tokio::test(flavor = "multi_thread")]
async fn on_github_the_paused_comment_says_where_why_and_how_to_go_on() {
    use super::github::{labeled, llm_env, stable, with_env};
    let fixture = on_github_pausing(r#"[after_plan]"#);
    let mock = MockLlm::start(vec![]).await;
    let env = llm_env(&mock);
    let (fixture, first) = tokio::task::spawn_blocking(move || {
        let first = fixture.step("issues", &labeled("alice"), &with_env(&env));
        (fixture, first)
    })
    .await
    .unwrap();
    assert_eq!(first.code, 5, "{}\n{}", first.stdout, first.stderr);
    assert!(mock.requests().is_empty(), "paused before any model call");
    let comments = fixture.bot_comments();
    let body = &comments[0].body;
    assert!(
        body.contains("### meta-agent paused: paused at `after_plan`"),
        "{body}"
    );
    assert!(
        body.contains("- plan: build from the requirements (iteration 1 of 3)"),
        "{body}"
    );
    assert!(
        body.contains("`/agent step` to go on to the next `after_plan`"),
        "{body}"
    );
    let record = meta_agent::github::status::SessionRecord::decode(body).unwrap();
    assert_eq!(record.outcome, "interrupted");
    insta::assert_snapshot!("github_paused_comment", stable(body));
}

/// The context at a pause passes the one redactor: a token-shaped secret in the code the model
/// is shown (assembled here, so no file of this repository holds one) is redacted in
/// `context.json`, in both forms of `debug context`.
#[tokio::test(flavor = "multi_thread")]
async fn the_context_at_a_pause_passes_the_redactor() {
    let secret = format!("ghp_{}", "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6");
    let planted = secret.clone();
    let (_dir, work) = repo_pausing("[{at: before_llm_call, when: 'call == 1'}]", move |work| {
        super::engine::edit(
            &work.join("calc.py"),
            "sum(values) // len(values)",
            &format!("sum(values) // len(values)  # deploy key {planted}"),
        );
    });
    let mock = MockLlm::start(vec![]).await;
    let paused = run_paused(work, &mock.base_url, &["run", "--text", "Fix mean"]).await;
    check_paused(&paused, "before_llm_call");
    let json = paused.context.to_string();
    assert!(!json.contains(&secret), "{json}");
    assert!(
        json.contains("deploy key [REDACTED:"),
        "the code is shown, redacted: {json}"
    );
    let text = meta_agent()
        .arg("--repo")
        .arg(&paused.work)
        .args(["debug", "context", &paused.session])
        .output()
        .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("## Messages ("), "{text}");
    assert!(!text.contains(&secret), "{text}");
}

/// The example with the wrong mean on GitHub, with `pause` (YAML, the value of `pause:`).
fn on_github_pausing(pause: &str) -> super::github::Fixture {
    use super::github::{Fixture, examples, wrong_mean as broken};
    Fixture::new(&examples("python-calc"), |work| {
        broken(work);
        let config = work.join(".meta-agent.yml");
        let mut text = std::fs::read_to_string(&config).unwrap();
        text.push_str(&format!("pause: {pause}\n"));
        std::fs::write(&config, text).unwrap();
    })
}

/// The example on GitHub pausing at `before_push` (a condition that holds), its first job run
/// (it must pause there with nothing pushed and no pull request), and the status comment's
/// record.
fn held_on_github(
    llm: &[(&'static str, String)],
) -> (
    super::github::Fixture,
    super::github::Step,
    meta_agent::github::status::SessionRecord,
) {
    use super::github::{labeled, with_env};
    let fixture = on_github_pausing(r#"[{at: before_push, when: 'path ~ "*.py" && files == 1'}]"#);
    let first = fixture.step("issues", &labeled("alice"), &with_env(llm));
    assert_eq!(first.code, 5, "{}\n{}", first.stdout, first.stderr);
    assert_eq!(first.output("outcome"), "interrupted");
    assert!(
        fixture.pushes().is_empty(),
        "nothing pushed before the word"
    );
    assert!(fixture.github.pulls().is_empty());
    let body = fixture.bot_comments()[0].body.clone();
    assert!(
        body.contains("### meta-agent paused before its push: paused at `before_push`"),
        "{body}"
    );
    assert!(
        body.contains("git fetch verified.bundle refs/heads/"),
        "{body}"
    );
    let record = meta_agent::github::status::SessionRecord::decode(&body).unwrap();
    let held = record
        .held
        .clone()
        .expect("the record says where the commit is");
    assert!(body.contains(&held.commit[..12]), "{body}");
    (fixture, first, record)
}

/// Serves `files` as run 4242's artifact `name` (what the Action uploaded).
fn serve_artifact(fixture: &super::github::Fixture, name: &str, files: Vec<(String, Vec<u8>)>) {
    fixture.github.add_workflow_run(
        4242,
        Vec::new(),
        vec![crate::common::mock_github::MockArtifact {
            id: 31,
            name: name.to_owned(),
            files,
        }],
    );
}

/// `/agent continue` on GitHub, from a runner of run 4243.
fn continue_on_github(
    fixture: &super::github::Fixture,
    llm: &[(&'static str, String)],
) -> super::github::Step {
    use super::github::{comment_event, with_env};
    let event = comment_event(fixture, "alice", "/agent continue");
    let mut env = with_env(llm);
    env.push(("GITHUB_RUN_ID", "4243"));
    fixture.step("issue_comment", &event, &env)
}

/// `before_push` on GitHub: the job ends paused (exit 5) with the verified commit made but not
/// pushed, held as a bundle in the run's artifact beside the context; the status comment says
/// where it is and how to look at it. `/agent continue` on a new runner (a shallow checkout of a
/// default branch that moved meanwhile, so the bundle's base is fetched first) reads it back
/// from that artifact and pushes exactly that commit, opening the pull request, with no model
/// call.
#[tokio::test(flavor = "multi_thread")]
async fn on_github_before_push_holds_the_verified_commit_and_continue_pushes_exactly_it() {
    let mock = MockLlm::start(vec![fix(), finish()]).await;
    let model = super::github::llm_env(&mock);
    let (fixture, first, record, second) = tokio::task::spawn_blocking(move || {
        let (mut fixture, first, record) = held_on_github(&model);
        let held = record
            .held
            .clone()
            .expect("the record says where the commit is");
        serve_artifact(&fixture, &held.artifact, first.artifact.clone());
        fixture.advance_default_branch();
        fixture.new_shallow_runner("after-pause");
        let second = continue_on_github(&fixture, &model);
        (fixture, first, record, second)
    })
    .await
    .unwrap();
    let held = record.held.clone().unwrap();
    assert_eq!(held.artifact, "meta-agent-4242-1");
    let names: Vec<&str> = first.artifact.iter().map(|(n, _)| n.as_str()).collect();
    assert!(names.contains(&"verified.bundle"), "{names:?}");
    let context: Value = serde_json::from_str(
        &first
            .out
            .iter()
            .find(|(name, _)| name == "context.json")
            .expect("the context is in the artifact")
            .1,
    )
    .unwrap();
    assert_eq!(context["hit"]["at"], "before_push", "{context}");
    let comments = fixture.bot_comments();
    assert_eq!(second.code, 0, "{}\n{}", second.stdout, second.stderr);
    assert_eq!(second.output("outcome"), "committed");
    let posts = fixture
        .pushes()
        .into_iter()
        .filter(|push| push.method == "POST")
        .count();
    assert_eq!(posts, 1, "one push, on the word");
    let tip = git(
        &fixture.bare(),
        &["rev-parse", &format!("refs/heads/{}", record.branch)],
    );
    assert_eq!(tip.trim(), held.commit, "exactly the commit that was held");
    assert_eq!(fixture.github.pulls().len(), 1);
    assert_eq!(mock.requests().len(), 2, "no model call after the pause");
    let record = meta_agent::github::status::SessionRecord::decode(&comments[0].body).unwrap();
    assert_eq!(record.outcome, "committed");
    assert_eq!(record.held, None);
}

/// A held commit is pushed only as the status comment recorded it: with no artifact to read it
/// from, `/agent continue` says so and keeps the session; with a bundle that names another
/// commit for the session's branch (an artifact is a file like any other), nothing is pushed.
#[tokio::test(flavor = "multi_thread")]
async fn on_github_a_held_commit_is_pushed_only_as_the_record_names_it() {
    let mock = MockLlm::start(vec![fix(), finish()]).await;
    let model = super::github::llm_env(&mock);
    let (fixture, missing, forged, record) = tokio::task::spawn_blocking(move || {
        let (mut fixture, first, record) = held_on_github(&model);
        let held = record.held.clone().unwrap();
        fixture.new_runner("after-pause");
        fixture
            .github
            .add_workflow_run(4242, Vec::new(), Vec::new());
        let missing = continue_on_github(&fixture, &model);
        // Another commit on the session's branch, bundled as the held one was.
        let forger = fixture.scratch().join("forger");
        let url = format!("file://{}", fixture.bare().display());
        git(
            fixture.scratch(),
            &["clone", "-q", &url, forger.to_str().unwrap()],
        );
        git(
            &forger,
            &["checkout", "-q", "-b", &record.branch, &held.base],
        );
        std::fs::write(forger.join("calc.py"), "def mean(values):\n    return 0\n").unwrap();
        git(&forger, &["commit", "-q", "-am", "not the verified one"]);
        let bundle = forger.join("forged.bundle");
        git(
            &forger,
            &[
                "bundle",
                "create",
                "-q",
                bundle.to_str().unwrap(),
                &format!("refs/heads/{}", record.branch),
                &format!("^{}", held.base),
            ],
        );
        let mut files = first.artifact.clone();
        for (name, bytes) in &mut files {
            if name == "verified.bundle" {
                *bytes = std::fs::read(&bundle).unwrap();
            }
        }
        serve_artifact(&fixture, &held.artifact, files);
        let forged = continue_on_github(&fixture, &model);
        (fixture, missing, forged, record)
    })
    .await
    .unwrap();
    assert_ne!(missing.code, 0, "{}", missing.stdout);
    assert_ne!(forged.code, 0, "{}", forged.stdout);
    let posts = fixture
        .pushes()
        .into_iter()
        .filter(|push| push.method == "POST")
        .count();
    assert_eq!(
        posts, 0,
        "nothing pushed: {}\n{}\n{}",
        missing.stderr, forged.stdout, forged.stderr
    );
    assert!(fixture.github.pulls().is_empty());
    let body = &fixture.bot_comments()[0].body;
    assert!(
        body.contains("not the verified commit")
            && body.contains(&record.held.clone().unwrap().commit),
        "{body}"
    );
    let kept = meta_agent::github::status::SessionRecord::decode(body).unwrap();
    assert_eq!(
        kept.held, record.held,
        "the session is kept for another try"
    );
    assert!(
        missing
            .stderr
            .contains("run 4242 has no artifact `meta-agent-4242-1`"),
        "the missing artifact is named: {}",
        missing.stderr
    );
}

/// `before_push` rules that do not hold (a condition false, a hit count not reached) never
/// hold the commit back: the job pushes and opens the pull request as always.
#[tokio::test(flavor = "multi_thread")]
async fn on_github_before_push_whose_condition_or_count_does_not_hold_pushes_as_always() {
    use super::github::{labeled, with_env};
    let mock = MockLlm::start(vec![fix(), finish()]).await;
    let llm = super::github::llm_env(&mock);
    let (fixture, step) = tokio::task::spawn_blocking(move || {
        let fixture = on_github_pausing(
            r#"[{at: before_push, when: 'files > 1 || path ~ "tests/**"'}, {at: before_push, after: 1}]"#,
        );
        let step = fixture.step("issues", &labeled("alice"), &with_env(&llm));
        (fixture, step)
    })
    .await
    .unwrap();
    assert_eq!(step.code, 0, "{}\n{}", step.stdout, step.stderr);
    assert_eq!(step.output("outcome"), "committed");
    assert!(
        !step
            .artifact
            .iter()
            .any(|(name, _)| name == "verified.bundle"),
        "nothing held"
    );
    assert_eq!(fixture.github.pulls().len(), 1);
    let record =
        meta_agent::github::status::SessionRecord::decode(&fixture.bot_comments()[0].body).unwrap();
    assert_eq!(record.held, None);
}
