//! Planning, exploring and reflecting against the loopback mock LLM (OpenAI wire format): the
//! plan is asked of the fast model and the code of the primary one; sub-tasks run in dependency
//! order; a refused plan is asked for once more, then falls back; replanning stops after three
//! revisions; the explorer sees only read-only tools; and a reflection claiming 10/10 never
//! commits while the gates fail; through the real binary, `--fast-model` takes planning and the
//! requirements review (all calls go to `--model` without it), and the review's verdict is acted
//! on: an unmet requirement sends the loop back to act, a met one lets the green gates commit.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::mock_llm::{MockLlm, Recorded, Reply, streamed_tool_call};
use crate::common::{example, git, meta_agent, scratch_repo};
use meta_agent::agent::{AgentBuilder, AgentParts, AgentSettings, CommandSettings};
use meta_agent::config::LlmSettings;
use meta_agent::config::raw::LlmProvider;
use meta_agent::exec::Executor;
use meta_agent::llm::{AnyProvider, BudgetCaps, LlmConfig, LlmEnv, RetryPolicy, connect};
use meta_agent::protocol::builder::{
    ActReport, ActRequest, Builder, FailureContext, ReviewRequest,
};
use meta_agent::protocol::event::{Event, Recorder};
use meta_agent::protocol::records::Plan;
use meta_agent::protocol::task::Task;

const KEY: &str = "sk-canary-planning-51c2";

fn calls(calls: &[(&str, &str, Value)]) -> Reply {
    let wire: Vec<Value> = calls
        .iter()
        .map(|(id, name, args)| {
            json!({"id": id, "type": "function",
                "function": {"name": name, "arguments": args.to_string()}})
        })
        .collect();
    Reply::ok(json!({
        "id": "chatcmpl-p", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "finish_reason": "tool_calls",
            "message": {"role": "assistant", "content": "", "tool_calls": wire}}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 12, "total_tokens": 132}
    }))
}

fn call(id: &str, name: &str, args: Value) -> Reply {
    calls(&[(id, name, args)])
}

fn finish(summary: &str) -> Reply {
    call("call_f", "finish", json!({ "summary": summary }))
}

fn plan(subtasks: Value) -> Reply {
    call("call_p", "plan", json!({ "subtasks": subtasks }))
}

fn model(request: &Recorded) -> String {
    request.json()["model"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn tool_names(request: &Recorded) -> Vec<String> {
    request.json()["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter_map(|tool| tool["function"]["name"].as_str().map(str::to_owned))
        .collect()
}

fn user_text(request: &Recorded) -> String {
    request.json()["messages"][1]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

struct Knobs {
    reflect: bool,
    explore_min_files: usize,
}

fn agent(base_url: &str, knobs: Knobs) -> AgentBuilder<AnyProvider, Executor> {
    let settings = LlmSettings {
        provider: LlmProvider::Openai,
        model: Some("primary-model".into()),
        fast_model: Some("fast-model".into()),
        base_url: Some(base_url.into()),
        reflect: knobs.reflect,
        ..LlmSettings::default()
    };
    let env = LlmEnv::from_lookup(&settings, |name| {
        (name == "OPENAI_API_KEY").then(|| KEY.to_string())
    });
    let mut llm = LlmConfig::from_settings(&settings, &env);
    llm.max_attempts = 1;
    llm.stream = false;
    llm.timeout = Duration::from_secs(10);
    let retry = RetryPolicy {
        max_attempts: 1,
        ..RetryPolicy::default()
    };
    AgentBuilder::new(AgentParts {
        provider: connect(&llm, retry).unwrap(),
        caps: BudgetCaps::default(),
        runner: Executor::new(env!("CARGO_BIN_EXE_meta-agent").into()),
        parent_env: vec![("PATH".into(), std::env::var("PATH").unwrap_or_default())],
        settings: AgentSettings {
            explore_min_files: knobs.explore_min_files,
            ..AgentSettings::from_llm(&llm, CommandSettings::default())
        },
    })
}

/// A task with several criteria over several files: complex enough to plan.
fn complex_task() -> Task {
    let mut task = Task::from_text("Add a report command").unwrap();
    task.requirements = "Add a `report` command.\n- parse options in src/cli.py\n- render in \
                         src/report.py\n- document it in README.md\n- test it in tests/test_report.py\n"
        .into();
    task.acceptance = vec!["`report --json` prints JSON".into()];
    task
}

fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/cli.py"), "def main():\n    pass\n").unwrap();
    std::fs::write(dir.path().join("README.md"), "# tool\n").unwrap();
    dir
}

async fn build(agent: &AgentBuilder<AnyProvider, Executor>, root: &Path, task: &Task) -> ActReport {
    build_watched(agent, root, task, &Recorder::default()).await
}

/// [`build`], reporting the act's tool and model calls to `events`.
async fn build_watched(
    agent: &AgentBuilder<AnyProvider, Executor>,
    root: &Path,
    task: &Task,
    events: &Recorder,
) -> ActReport {
    let request = ActRequest {
        task,
        plan: &Plan::Build,
        iteration: 0,
        call_index: 0,
        repo_root: root,
        context: FailureContext::default(),
        max_steps: 6,
        progress: meta_agent::protocol::builder::Progress::to(events),
        approved_plan: None,
    };
    agent.act(request).await.unwrap()
}

#[tokio::test]
async fn the_fast_model_plans_and_sub_tasks_run_in_dependency_order() {
    let mock = MockLlm::start(vec![
        plan(json!([
            {"id": "docs", "description": "document the command", "depends_on": ["render"],
             "estimated_iterations": 1},
            {"id": "render", "description": "render the report", "estimated_iterations": 2},
        ])),
        finish("rendered"),
        finish("documented"),
    ])
    .await;
    let repo = repo();
    let agent = agent(
        &mock.base_url,
        Knobs {
            reflect: true,
            explore_min_files: 1000,
        },
    );
    let events = Recorder::default();
    let report = build_watched(&agent, repo.path(), &complex_task(), &events).await;
    assert_eq!(report.gave_up, None, "{report:?}");
    assert_eq!(report.summary, "[render] rendered; [docs] documented");
    let requests = mock.requests();
    let models: Vec<String> = requests.iter().map(model).collect();
    assert_eq!(
        models,
        ["fast-model", "primary-model", "primary-model"],
        "an act never reflects, reviews on or not: the review is the engine's, after green gates"
    );
    assert_eq!(tool_names(&requests[0]), ["plan"]);
    assert!(user_text(&requests[0]).contains("Plan this task in at most 8 sub-tasks"));
    assert!(user_text(&requests[0]).contains("src/cli.py (named in the task)"));
    let first = user_text(&requests[1]);
    let second = user_text(&requests[2]);
    assert!(
        first.contains("# Your sub-task now\n[render] render the report"),
        "{first}"
    );
    assert!(
        second.contains("# Your sub-task now\n[docs] document the command"),
        "{second}"
    );
    assert!(
        first.contains(
            "1. [render] render the report\n2. [docs] document the command (after render)"
        )
    );
    assert!(tool_names(&requests[1]).contains(&"edit_file".to_owned()));
    assert!(report.actions[0].starts_with("plan: 2 sub-tasks (render → docs)"));
    let recorded: Vec<(String, u64)> = events
        .events()
        .into_iter()
        .filter_map(|event| match event {
            Event::LlmCall {
                model,
                input_tokens,
                ..
            } => Some((model, input_tokens)),
            _ => None,
        })
        .collect();
    assert_eq!(
        recorded,
        [
            ("fast-model".to_owned(), 120),
            ("primary-model".to_owned(), 120),
            ("primary-model".to_owned(), 120),
        ],
        "every call is metered for the LlmCall events"
    );
    assert_eq!(report.usage.llm_calls, 3);
    assert_eq!(report.usage.input_tokens, 360);
    for request in &requests {
        assert!(!request.body.contains(KEY));
    }
}

#[tokio::test]
async fn the_requirements_review_names_what_is_missing_on_the_fast_model_and_only_when_on() {
    let mock = MockLlm::start(vec![call(
        "call_r",
        "reflect",
        json!({"completeness": 6, "quality": 8, "missing": ["the --json flag is not documented"]}),
    )])
    .await;
    let task = complex_task();
    let review = || ReviewRequest {
        task: &task,
        diff: "diff --git a/src/cli.py b/src/cli.py\n+def render(): ...\n",
        progress: meta_agent::protocol::builder::Progress::nowhere(),
    };
    let off = agent(
        &mock.base_url,
        Knobs {
            reflect: false,
            explore_min_files: 1000,
        },
    );
    assert_eq!(off.review(review()).await.unwrap(), None);
    assert!(mock.requests().is_empty(), "reviews off: no call");
    let on = agent(
        &mock.base_url,
        Knobs {
            reflect: true,
            explore_min_files: 1000,
        },
    );
    let report = on.review(review()).await.unwrap().expect("a review");
    assert_eq!(report.missing, ["the --json flag is not documented"]);
    assert_eq!(report.usage.llm_calls, 1);
    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(model(&requests[0]), "fast-model");
    assert_eq!(tool_names(&requests[0]), ["reflect"]);
    assert!(user_text(&requests[0]).contains("+def render()"));
}

#[tokio::test]
async fn a_cyclic_plan_is_asked_for_again_then_falls_back_to_one_sub_task() {
    let cyclic = json!([
        {"id": "a", "description": "x", "depends_on": ["b"]},
        {"id": "b", "description": "y", "depends_on": ["a"]},
    ]);
    let unknown = json!([{"id": "a", "description": "x", "depends_on": ["nope"]}]);
    let mock = MockLlm::start(vec![plan(cyclic), plan(unknown), finish("did it all")]).await;
    let repo = repo();
    let agent = agent(
        &mock.base_url,
        Knobs {
            reflect: false,
            explore_min_files: 1000,
        },
    );
    let report = build(&agent, repo.path(), &complex_task()).await;
    assert_eq!(report.gave_up, None);
    assert_eq!(report.summary, "[task] did it all");
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    let retry = requests[1].json();
    let refusal = retry["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned();
    assert!(refusal.contains("cycle through: a, b"), "{refusal}");
    assert_eq!(model(&requests[1]), "fast-model");
    assert!(
        report
            .actions
            .iter()
            .any(|a| a.contains("refused twice") && a.contains("`nope`")),
        "{:?}",
        report.actions
    );
    assert!(user_text(&requests[2]).contains("[task] Add a report command"));
}

#[tokio::test]
async fn replanning_stops_after_three_revisions() {
    let one = || plan(json!([{"id": "s", "description": "step", "estimated_iterations": 1}]));
    let wander = || call("call_l", "list_files", json!({}));
    let mut replies = Vec::new();
    for _ in 0..4 {
        replies.push(one());
        replies.extend([wander(), wander(), wander()]);
    }
    let mock = MockLlm::start(replies).await;
    let repo = repo();
    let agent = agent(
        &mock.base_url,
        Knobs {
            reflect: false,
            explore_min_files: 1000,
        },
    );
    let report = build(&agent, repo.path(), &complex_task()).await;
    let gave_up = report.gave_up.clone().unwrap_or_default();
    assert!(gave_up.contains("failed after 3 replans"), "{gave_up}");
    assert!(gave_up.contains("step cap (3)"), "{gave_up}");
    let requests = mock.requests();
    let plans = requests.iter().filter(|r| model(r) == "fast-model").count();
    assert_eq!(plans, 4, "one plan and three revisions");
    assert_eq!(requests.len(), 16);
    let revision = user_text(&requests[4]);
    assert!(
        revision.contains("# Failed\n[s] step: the step cap (3)"),
        "{revision}"
    );
    let replans: Vec<&String> = report
        .actions
        .iter()
        .filter(|a| a.starts_with("replan"))
        .collect();
    assert_eq!(replans.len(), 3, "{replans:?}");
}

#[tokio::test]
async fn the_explorer_summarises_with_read_only_tools_on_the_fast_model() {
    let mock = MockLlm::start(vec![
        calls(&[
            (
                "call_w",
                "write_file",
                json!({"path": "x.py", "content": "boom"}),
            ),
            ("call_s", "search", json!({"pattern": "def main"})),
        ]),
        finish("src/cli.py holds main(); README.md documents usage."),
        finish("done"),
    ])
    .await;
    let repo = repo();
    let agent = agent(
        &mock.base_url,
        Knobs {
            reflect: false,
            explore_min_files: 1,
        },
    );
    let task = Task::from_text("Fix main").unwrap();
    let report = build(&agent, repo.path(), &task).await;
    assert_eq!(report.summary, "done");
    assert!(
        !repo.path().join("x.py").exists(),
        "the explorer cannot write"
    );
    let requests = mock.requests();
    assert_eq!(model(&requests[0]), "fast-model");
    let mut offered = tool_names(&requests[0]);
    offered.sort();
    assert_eq!(offered, ["finish", "list_files", "read_file", "search"]);
    let refused = requests[1].json()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["tool_call_id"] == "call_w")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned();
    assert!(refused.contains("unknown tool `write_file`"), "{refused}");
    assert_eq!(model(&requests[2]), "primary-model");
    let coding = meta_agent::protocol::untrusted::plain_ids(&user_text(&requests[2]));
    assert!(
        coding.contains(
            "# Codebase summary (from the explorer)\n<untrusted-summary id=\"ID\">\nsrc/cli.py holds main()"
        ),
        "{coding}"
    );
    assert!(report.actions[0].starts_with("explore: write_file x.py -> failed"));
}

// ---- through the binary: the gates outrank the model's opinion ----

#[tokio::test(flavor = "multi_thread")]
async fn a_perfect_score_from_the_model_does_not_commit_failing_gates() {
    let mock = MockLlm::start(vec![
        streamed_tool_call("call_f", "finish", json!({"summary": "all done, trust me"})),
        streamed_tool_call(
            "call_g",
            "finish",
            json!({"summary": "really done, trust me"}),
        ),
    ])
    .await;
    let (_dir, work) = scratch_repo(&example());
    let calc = work.join("calc.py");
    let text = std::fs::read_to_string(&calc).unwrap();
    std::fs::write(
        &calc,
        text.replacen("sum(values) / len(values)", "sum(values) // len(values)", 1),
    )
    .unwrap();
    let config = work.join(".meta-agent.yml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "llm: {{provider: openai, base_url: \"{}\", model: primary-model, fast_model: fast-model, max_calls: 2}}\n",
        mock.base_url
    ));
    std::fs::write(&config, text).unwrap();
    git(&work, &["commit", "-q", "-am", "break it"]);
    let base = git(&work, &["rev-parse", "HEAD"]);
    let base_branch = git(&work, &["rev-parse", "--abbrev-ref", "HEAD"]);
    let run_dir = work.clone();
    let out = tokio::task::spawn_blocking(move || {
        meta_agent()
            .env("OPENAI_API_KEY", KEY)
            .arg("--repo")
            .arg(&run_dir)
            .args(["run", "--text", "Fix mean of floats", "--json"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let outcome: Value = stdout
        .lines()
        .last()
        .and_then(|line| serde_json::from_str(line).ok())
        .unwrap_or(Value::Null);
    assert_eq!(outcome["outcome"], "escalated", "{stdout}");
    assert_ne!(out.status.code(), Some(0));
    let gates = outcome["gates"].as_str().unwrap_or_default();
    assert!(gates.contains("tests=fail"), "{outcome:#}");
    let requests = mock.requests();
    assert_eq!(
        requests.len(),
        2,
        "the budget (2 calls) stops the agent after its second word"
    );
    assert_eq!(model(&requests[1]), "primary-model");
    let default_branch = git(&work, &["rev-parse", base_branch.trim()]);
    assert_eq!(default_branch, base, "nothing reached the base branch");
}

// ---- through the binary: which model each call goes to, and the review's verdict acted on ----

/// The example (gates green) with an `llm:` section on the mock, reviews on, committed.
fn green_example(base_url: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let (dir, work) = scratch_repo(&example());
    let config = work.join(".meta-agent.yml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "llm: {{provider: openai, base_url: \"{base_url}\", stream: false, reflect: true}}\n"
    ));
    std::fs::write(&config, text).unwrap();
    git(&work, &["commit", "-q", "-am", "use the mock model"]);
    (dir, work)
}

/// A task file beside the checkout (never part of the change).
fn task_file(dir: &Path, yaml: &str) -> std::path::PathBuf {
    let path = dir.join("task.yml");
    std::fs::write(&path, yaml).unwrap();
    path
}

fn run_task(work: &Path, task: &Path, models: &[&str]) -> (i32, Value) {
    let mut args = vec!["run", "--task", task.to_str().unwrap()];
    args.extend_from_slice(models);
    crate::suite::agent::run_json(work, &args)
}

const MEDIAN: &str = "def median(values: list[float]) -> float:\n    ordered = sorted(values)\n    \
                      middle = len(ordered) // 2\n    if len(ordered) % 2:\n        return \
                      ordered[middle]\n    return (ordered[middle - 1] + ordered[middle]) / 2\n";

const MEDIAN_TEST: &str = "import calc\n\n\ndef test_median():\n    assert calc.median([3, 1, 2]) == 2\n    assert calc.median([4, 1, 3, 2]) == 2.5\n";

/// The change a feature task asks for: `median` and its test (the coverage gate wants both).
fn add_median() -> Reply {
    let text = std::fs::read_to_string(example().join("calc.py")).unwrap();
    calls(&[
        (
            "call_w",
            "write_file",
            json!({"path": "calc.py", "content": format!("{text}\n\n{MEDIAN}")}),
        ),
        (
            "call_t",
            "write_file",
            json!({"path": "tests/test_median.py", "content": MEDIAN_TEST}),
        ),
        ("call_f", "finish", json!({"summary": "add median"})),
    ])
}

fn review(missing: &[&str]) -> Reply {
    call(
        "call_r",
        "reflect",
        json!({"completeness": if missing.is_empty() { 10 } else { 6 }, "quality": 9,
            "missing": missing}),
    )
}

const MEDIAN_TASK: &str = "title: Add a median function\nrequirements: |\n  Add \
    calc.median(values), the middle value of the sorted values.\nacceptance:\n  - \
    calc.median has a docstring saying what it returns\n";

/// Planning and the requirements review go to `--fast-model`, coding to `--model`; without
/// `--fast-model` every call goes to `--model`.
#[tokio::test(flavor = "multi_thread")]
async fn the_fast_model_flag_takes_planning_and_review_and_model_the_coding() {
    let complex = "title: Add a median function\nrequirements: |\n  Add a median.\n  - add \
        median to calc.py\n  - export it in README.md\n  - test it in tests/test_calc.py\n  - \
        mention it in CHANGELOG.md\nacceptance:\n  - calc.median is documented\n";
    for (flags, expected) in [
        (
            &["--model", "main-m", "--fast-model", "quick-m"][..],
            ["quick-m", "main-m", "quick-m"],
        ),
        (&["--model", "main-m"][..], ["main-m", "main-m", "main-m"]),
    ] {
        let mock = MockLlm::start(vec![
            plan(json!([{"id": "median", "description": "add median", "estimated_iterations": 1}])),
            add_median(),
            review(&[]),
        ])
        .await;
        let (dir, work) = green_example(&mock.base_url);
        let task = task_file(dir.path(), complex);
        let flags: Vec<&'static str> = flags.to_vec();
        let (code, outcome) = tokio::task::spawn_blocking(move || run_task(&work, &task, &flags))
            .await
            .unwrap();
        drop(dir);
        assert_eq!(code, 0, "{outcome:#}");
        assert_eq!(outcome["outcome"], "committed", "{outcome:#}");
        let requests = mock.requests();
        let models: Vec<String> = requests.iter().map(model).collect();
        assert_eq!(models, expected, "plan, code, review");
        assert_eq!(tool_names(&requests[0]), ["plan"]);
        assert_eq!(tool_names(&requests[2]), ["reflect"]);
    }
}

/// After green gates, a review that finds a stated requirement unmet sends the loop back to act
/// with that as its observation; the commit comes only after the next act's green gates.
#[tokio::test(flavor = "multi_thread")]
async fn an_unmet_requirement_found_by_the_review_is_acted_on_before_any_commit() {
    let with_docstring = json!({"path": "calc.py",
        "old_string": "def median(values: list[float]) -> float:\n",
        "new_string": "def median(values: list[float]) -> float:\n    \"\"\"The middle value of the sorted values.\"\"\"\n"});
    let mock = MockLlm::start(vec![
        add_median(),
        review(&["calc.median has no docstring"]),
        calls(&[
            ("call_e", "edit_file", with_docstring),
            ("call_f", "finish", json!({"summary": "document median"})),
        ]),
    ])
    .await;
    let (dir, work) = green_example(&mock.base_url);
    let task = task_file(dir.path(), MEDIAN_TASK);
    let run_dir = work.clone();
    let (code, outcome) = tokio::task::spawn_blocking(move || {
        run_task(
            &run_dir,
            &task,
            &["--model", "main-m", "--fast-model", "quick-m"],
        )
    })
    .await
    .unwrap();
    assert_eq!(code, 0, "{outcome:#}");
    assert_eq!(outcome["outcome"], "committed", "{outcome:#}");
    let requests = mock.requests();
    let models: Vec<String> = requests.iter().map(model).collect();
    assert_eq!(
        models,
        ["main-m", "quick-m", "main-m"],
        "act, review, act again: one review per run, so the second green commits"
    );
    let again = user_text(&requests[2]);
    assert!(
        again.contains("- requirement not met yet: calc.median has no docstring"),
        "the verdict is the next act's observation: {again}"
    );
    let commit = outcome["commit"].as_str().expect("a commit");
    let committed = git(&work, &["show", &format!("{commit}:calc.py")]);
    assert!(
        committed.contains("\"\"\"The middle value of the sorted values.\"\"\""),
        "the commit holds the second act's work: {committed}"
    );
    let commits = git(&work, &["rev-list", "--count", &format!("main..{commit}")]);
    assert_eq!(commits.trim(), "1", "one commit, after the second act");
}

/// A review that finds every requirement met lets the green gates commit the first act.
#[tokio::test(flavor = "multi_thread")]
async fn a_met_review_commits_the_first_green_act() {
    let mock = MockLlm::start(vec![add_median(), review(&[])]).await;
    let (dir, work) = green_example(&mock.base_url);
    let task = task_file(dir.path(), MEDIAN_TASK);
    let run_dir = work.clone();
    let (code, outcome) =
        tokio::task::spawn_blocking(move || run_task(&run_dir, &task, &["--model", "main-m"]))
            .await
            .unwrap();
    assert_eq!(code, 0, "{outcome:#}");
    assert_eq!(outcome["outcome"], "committed", "{outcome:#}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "act, review");
    assert_eq!(tool_names(&requests[1]), ["reflect"]);
    let commit = outcome["commit"].as_str().expect("a commit");
    let committed = git(&work, &["show", &format!("{commit}:calc.py")]);
    assert!(committed.contains("def median"), "{committed}");
}
