//! Snapshots of the pause line and of `debug context`'s text form: a pause inside an act (the
//! messages as sent, the pending tool call) and one after the gates (no conversation).

use super::*;
use meta_agent_protocol::chat::ToolCall;
use meta_agent_protocol::event::LoopPhase;
use meta_agent_protocol::pause::Field;
use meta_agent_protocol::pause::context::{ModelSettings, StepLine};
use meta_agent_protocol::records::{Plan, ResolutionTried, Usage};
use meta_agent_protocol::task::Task;

fn hit(at: Location, values: Values) -> PauseHit {
    PauseHit {
        at,
        values,
        cause: Cause::Rule {
            rule: format!("{} when tool == \"edit_file\"", at.as_str()),
            hit: 1,
        },
        arrival: 3,
        replay: Default::default(),
    }
}

fn context_at(hit: PauseHit, inside_act: bool) -> PauseContext {
    let mut task = Task::from_text("Fix the mean\nmean() of an empty list must be 0").unwrap();
    task.guidance.push("keep the public API".into());
    let call = ToolCall {
        id: "c1".into(),
        name: "edit_file".into(),
        arguments: serde_json::json!({"path": "calc.py", "old": "x", "new": "y"}),
    };
    let gates = serde_json::from_value(serde_json::json!([
        {"name": "tests", "kind": "tests", "result": "failed", "duration_ms": 10, "reasons": [],
         "tests_passed": 4, "tests_total": 5, "failing_tests": ["tests/test_calc.py::test_mean"],
         "coverage": null, "coverage_threshold": null, "findings": null}
    ]))
    .unwrap();
    PauseContext {
        session: "abc-1".into(),
        why: why(&hit),
        hit,
        phase: LoopPhase::Acting,
        iteration: 1,
        max_iterations: 3,
        task,
        plan: Some(Plan::AgentFix {
            different_approach: false,
        }),
        sub_plan: None,
        progress: vec![StepLine {
            phase: "baseline".into(),
            iteration: 0,
            outcome: "1 of 1 gates failed".into(),
            files_changed: vec![],
        }],
        usage: Usage::default(),
        model: ModelSettings {
            role: if inside_act {
                "builder".into()
            } else {
                String::new()
            },
            provider: "openai".into(),
            model: "gpt-test".into(),
            max_tokens: inside_act.then_some(4096),
            temperature: None,
        },
        messages: if inside_act {
            vec![
                Message::system("You are a coding agent."),
                Message::user("# The task\nFix the mean"),
                Message::Assistant {
                    text: "I will edit calc.py".into(),
                    tool_calls: vec![call.clone()],
                },
            ]
        } else {
            vec![]
        },
        tool_call: inside_act.then_some(call),
        tool_result: None,
        gates,
        signatures: vec![],
        hindsight: vec![ResolutionTried {
            signature: "5f0c2a9e".into(),
            resolution: "py-unused-import".into(),
            description: "remove the unused import".into(),
            cured: Some(false),
        }],
        memory: vec![
            "A pytest assertion failed: the report shows the compared values.\nDo not weaken \
             the assertion."
                .into(),
        ],
        instructions: vec!["AGENTS.md".into()],
    }
}

#[test]
fn the_pause_line_says_where_and_why() {
    let values = Values::default()
        .number_of(Field::Iteration, 1)
        .text_of(Field::Tool, "edit_file");
    insta::assert_snapshot!(why(&hit(Location::OnToolCall, values)), @r#"paused at `on_tool_call` (iteration=1, tool=edit_file): pause point `on_tool_call when tool == "edit_file"`, hit 1"#);
}

#[test]
fn context_inside_an_act() {
    let values = Values::default().text_of(Field::Tool, "edit_file");
    insta::assert_snapshot!(
        "pause_context_on_tool_call",
        context(&context_at(hit(Location::OnToolCall, values), true))
    );
}

#[test]
fn context_after_the_gates() {
    let values = Values::default().text_of(Field::Gate, "tests");
    insta::assert_snapshot!(
        "pause_context_after_gates",
        context(&context_at(hit(Location::AfterGates, values), false))
    );
}

/// A plan to approve: the agent's sub-tasks, in order, with their dependencies.
fn sub_plan() -> meta_agent_protocol::subplan::TaskPlan {
    use meta_agent_protocol::subplan::{SubTask, TaskPlan};
    let sub = |id: &str, description: &str, after: &[&str]| SubTask {
        id: id.into(),
        description: description.into(),
        depends_on: after.iter().map(|id| (*id).to_owned()).collect(),
        estimated_iterations: 2,
    };
    TaskPlan {
        subtasks: vec![
            sub("divide", "use true division in calc.mean", &[]),
            sub("check", "check the integer API of add", &["divide"]),
        ],
        explore: true,
    }
}

#[test]
fn context_at_the_agents_plan() {
    let values = Values::default()
        .number_of(Field::Iteration, 1)
        .text_of(Field::Plan, "subtasks");
    let mut ctx = context_at(hit(Location::AfterPlan, values), false);
    ctx.plan = Some(Plan::Build);
    ctx.sub_plan = Some(sub_plan());
    insta::assert_snapshot!("pause_context_after_plan_subtasks", context(&ctx));
}

#[test]
fn the_status_comment_shows_the_agents_plan() {
    let mut state = meta_agent_protocol::state::LoopState::new(
        "abc-1".into(),
        Task::from_text("Fix the mean").unwrap(),
        "meta-agent/fix-the-mean".into(),
        "0123456789abcdef0123456789abcdef01234567".into(),
        3,
    );
    state.iteration = 1;
    state.plan = Some(Plan::Build);
    state.sub_plan = Some(sub_plan());
    insta::assert_snapshot!("status_plan_with_subtasks", plan_and_progress(&state));
}

#[test]
fn a_long_message_is_clipped_in_the_text_form() {
    let long = "x".repeat(MESSAGE_CHARS + 5);
    assert!(clipped(&long).ends_with("[... 5 more characters: --json holds them all]"));
}
