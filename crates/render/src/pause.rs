//! What a person reads about a pause point: the line that says where and why the run paused,
//! and the context at the pause as `meta-agent debug context` prints it (the `--json` form is the
//! [`PauseContext`] itself). Pure functions; every text is untrusted where it came from the task,
//! the model or the tools, and is shown as it is (the caller redacted it before it was saved).

use std::fmt::Write;

use meta_agent_protocol::chat::Message;
use meta_agent_protocol::pause::context::PauseContext;
use meta_agent_protocol::pause::{Cause, Location, PauseHit, Values};
use meta_agent_protocol::records::Plan;

/// The characters of one message shown in the text form (the JSON form holds them whole).
const MESSAGE_CHARS: usize = 2000;

/// "paused at `on_tool_call` (tool=edit_file, path=src/a.rs): pause point `on_tool_call when
/// tool == "edit_file"`, hit 1".
pub fn why(hit: &PauseHit) -> String {
    let cause = match &hit.cause {
        Cause::Rule { rule, hit } => format!("pause point `{rule}`, hit {hit}"),
        Cause::Step => "a step from the previous pause".to_owned(),
    };
    format!(
        "paused at `{}`{}: {cause}",
        hit.at.as_str(),
        values_line(&hit.values)
    )
}

/// How to go on from a pause, locally and on GitHub.
pub fn how_to_continue(session: &str, at: Location) -> String {
    format!(
        "continue: `meta-agent resume {session} [--guidance TEXT]`, or `--step` to the next \
         `{}`; on GitHub: `/agent continue [guidance]`, `/agent step`, `/agent stop`",
        at.as_str()
    )
}

fn values_line(values: &Values) -> String {
    let parts: Vec<String> = values
        .numbers
        .iter()
        .map(|(name, value)| format!("{name}={value}"))
        .chain(
            values
                .texts
                .iter()
                .map(|(name, value)| format!("{name}={value}")),
        )
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    }
}

/// The context at a pause, as text.
pub fn context(ctx: &PauseContext) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Session {}: {}", ctx.session, ctx.why);
    let _ = writeln!(out, "{}", how_to_continue(&ctx.session, ctx.hit.at));
    task_section(&mut out, ctx);
    progress_section(&mut out, ctx);
    model_section(&mut out, ctx);
    messages_section(&mut out, &ctx.messages);
    tool_section(&mut out, ctx);
    gates_section(&mut out, ctx);
    memory_section(&mut out, ctx);
    out
}

fn task_section(out: &mut String, ctx: &PauseContext) {
    let _ = writeln!(out, "\n## Task\n{}", ctx.task.title);
    if !ctx.task.requirements.is_empty() {
        let _ = writeln!(out, "{}", ctx.task.requirements.trim_end());
    }
    for guidance in &ctx.task.guidance {
        let _ = writeln!(out, "guidance: {guidance}");
    }
}

/// The plan in words.
fn plan_words(plan: Option<&Plan>) -> &'static str {
    match plan {
        Some(Plan::Build) => "build from the requirements",
        Some(Plan::Hindsight) => "apply known resolutions (hindsight)",
        Some(Plan::AgentFix {
            different_approach: false,
        }) => "ask the agent for a fix",
        Some(Plan::AgentFix {
            different_approach: true,
        }) => "ask the agent for a fix, a different approach",
        None => "none yet",
    }
}

/// The agent planner's sub-tasks, one line each under a heading line, each line after `indent`:
/// what a maintainer approves by letting the run go on.
fn sub_plan_lines(plan: &meta_agent_protocol::subplan::TaskPlan, indent: &str) -> String {
    let explore = if plan.explore {
        ", after a survey of the codebase"
    } else {
        ""
    };
    let mut out = format!(
        "{}the agent's plan, {} sub-tasks in this order{explore} (going on without guidance runs \
         it as it is; guidance asks for a new one):\n",
        if indent.is_empty() { "" } else { "- " },
        plan.subtasks.len()
    );
    for line in plan.outline().lines() {
        let _ = writeln!(out, "{indent}{line}");
    }
    out
}

/// The plan and the steps so far, as the status comment of a paused run shows them (Markdown).
pub fn plan_and_progress(state: &meta_agent_protocol::state::LoopState) -> String {
    let mut out = format!(
        "- plan: {} (iteration {} of {})\n",
        plan_words(state.plan.as_ref()),
        state.iteration,
        state.max_iterations
    );
    if let Some(plan) = &state.sub_plan {
        out.push_str(&sub_plan_lines(plan, "  "));
    }
    for step in &state.history {
        let _ = writeln!(
            out,
            "- {} (iteration {}): {}",
            step.phase.as_str(),
            step.iteration,
            step.outcome.lines().next().unwrap_or_default()
        );
    }
    out.trim_end().to_owned()
}

fn progress_section(out: &mut String, ctx: &PauseContext) {
    let _ = writeln!(
        out,
        "\n## Plan and progress\nphase {}, iteration {} of {}, plan {}",
        ctx.phase.as_str(),
        ctx.iteration,
        ctx.max_iterations,
        plan_words(ctx.plan.as_ref())
    );
    if let Some(plan) = &ctx.sub_plan {
        out.push_str(&sub_plan_lines(plan, ""));
    }
    for step in &ctx.progress {
        let files = if step.files_changed.is_empty() {
            String::new()
        } else {
            format!(" [{}]", step.files_changed.join(", "))
        };
        let _ = writeln!(
            out,
            "- {} (iteration {}): {}{files}",
            step.phase, step.iteration, step.outcome
        );
    }
    let _ = writeln!(
        out,
        "spent: {} model calls, {} tokens in, {} out",
        ctx.usage.llm_calls, ctx.usage.input_tokens, ctx.usage.output_tokens
    );
}

fn model_section(out: &mut String, ctx: &PauseContext) {
    let model = &ctx.model;
    let or_default = |value: Option<String>| value.unwrap_or_else(|| "default".to_owned());
    let _ = writeln!(
        out,
        "\n## Model\nprovider {}, model {}{}, max_tokens {}, temperature {}",
        if model.provider.is_empty() {
            "none"
        } else {
            &model.provider
        },
        if model.model.is_empty() {
            "default"
        } else {
            &model.model
        },
        if model.role.is_empty() {
            String::new()
        } else {
            format!(" (the {})", model.role)
        },
        or_default(model.max_tokens.map(|n| n.to_string())),
        or_default(model.temperature.map(|t| t.to_string())),
    );
}

fn messages_section(out: &mut String, messages: &[Message]) {
    if messages.is_empty() {
        let _ = writeln!(
            out,
            "\n## Messages\nnone (the pause is outside a model's act)"
        );
        return;
    }
    let _ = writeln!(out, "\n## Messages ({}, as sent)", messages.len());
    for (index, message) in messages.iter().enumerate() {
        let (role, text) = match message {
            Message::System { text } => ("system", text.clone()),
            Message::User { text } => ("user", text.clone()),
            Message::Assistant { text, tool_calls } => {
                let calls: Vec<String> = tool_calls
                    .iter()
                    .map(|call| format!("-> {}({})", call.name, call.arguments))
                    .collect();
                (
                    "assistant",
                    [text.clone()]
                        .into_iter()
                        .chain(calls)
                        .collect::<Vec<_>>()
                        .join("\n"),
                )
            }
            Message::Tool(result) => ("tool", result.content.clone()),
        };
        let _ = writeln!(out, "### {} {role}\n{}", index + 1, clipped(&text));
    }
}

fn clipped(text: &str) -> String {
    let count = text.chars().count();
    if count <= MESSAGE_CHARS {
        return text.trim_end().to_owned();
    }
    let kept: String = text.chars().take(MESSAGE_CHARS).collect();
    format!(
        "{}\n[... {} more characters: --json holds them all]",
        kept.trim_end(),
        count - MESSAGE_CHARS
    )
}

fn tool_section(out: &mut String, ctx: &PauseContext) {
    let Some(call) = &ctx.tool_call else {
        return;
    };
    let _ = writeln!(out, "\n## Tool call\n{}({})", call.name, call.arguments);
    if let Some(result) = &ctx.tool_result {
        let _ = writeln!(out, "result:\n{}", clipped(result));
    }
}

fn gates_section(out: &mut String, ctx: &PauseContext) {
    let _ = writeln!(out, "\n## Gates so far");
    if ctx.gates.is_empty() {
        let _ = writeln!(out, "none ran yet");
    }
    for gate in &ctx.gates {
        let _ = writeln!(out, "- {}: {}", gate.name, gate.result.short());
    }
    for signature in &ctx.signatures {
        let _ = writeln!(
            out,
            "  failure {} ({}): {}",
            signature.id, signature.gate, signature.template
        );
    }
}

fn memory_section(out: &mut String, ctx: &PauseContext) {
    let _ = writeln!(out, "\n## Hindsight and memory consulted");
    if ctx.hindsight.is_empty() && ctx.memory.is_empty() && ctx.instructions.is_empty() {
        let _ = writeln!(out, "none");
    }
    for tried in &ctx.hindsight {
        let cured = match tried.cured {
            Some(true) => "cured",
            Some(false) => "not cured",
            None => "not observed yet",
        };
        let _ = writeln!(
            out,
            "- hindsight {} for {}: {} ({cured})",
            tried.resolution, tried.signature, tried.description
        );
    }
    for text in &ctx.memory {
        let _ = writeln!(out, "- memory: {}", text.trim().replace('\n', "\n  "));
    }
    for path in &ctx.instructions {
        let _ = writeln!(out, "- instructions: {path}");
    }
}

#[cfg(test)]
mod tests;
