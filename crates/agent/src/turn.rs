//! The ReAct loop of one act, in layers: [`run`] repeats turns up to the step cap; `turn` asks
//! the model once and carries out its tool calls; `ask_fitting` sends the request, once more on
//! a smaller conversation ([`super::compact`]) when the model refused it as too long.
//!
//! The loop ends when the model calls `finish`, at the step cap, after three malformed turns in
//! a row, when the model declines to go on (a refusal), or when the LLM budget runs out — each
//! reported honestly in the act report. What goes back into the conversation is what
//! [`super::answer`] sorted: never an empty message, never a cut or malformed call. Only an LLM
//! fault ends the loop with an error: transient (the engine may retry the act), a refusal by the
//! provider (the run escalates), or internal. No prompt text and no tool logic here.

use super::answer::{self, Sorted};
use super::compact;
use super::tools::{Observation, ToolBox, ToolOutcome};
use meta_agent_exec::CommandRunner;
use meta_agent_llm::ToolCall;
use meta_agent_llm::{
    ChatRequest, Completion, LlmError, Message, Provider, StopReason, ToolResult, ToolSpec,
};
use meta_agent_protocol::builder::{ActReport, BuildError, ModelRefusal, Progress};
use meta_agent_protocol::pause::{AgentView, Arrival, Field, Location, Values};
use meta_agent_protocol::records::Usage;

/// Malformed turns re-prompted in a row before the act ends.
pub const MAX_REPROMPTS: u32 = 2;

/// The same call (tool and arguments) this many times: the model is told it is going round.
pub const STUCK_NUDGE_AT: u32 = 3;
/// The same call this many times: the act ends, saying so.
pub const STUCK_STOP_AT: u32 = 5;

/// Said to the model when it answers without calling a tool.
const NUDGE: &str =
    "Continue with the tools. When the change is done, call `finish` with a summary.";

/// What a request needs besides the conversation.
pub struct RequestShape<'a> {
    pub model: &'a str,
    pub tools: &'a [ToolSpec],
    pub max_tokens: u32,
    pub temperature: Option<f32>,
    pub stream: bool,
}

/// Everything one act works with.
pub struct Session<'a, P: Provider, R: CommandRunner> {
    pub provider: &'a P,
    pub shape: RequestShape<'a>,
    pub tools: ToolBox<'a, R>,
    pub max_steps: u32,
    /// Where each tool call is reported as it ends, and where the act arrives at pause points.
    pub progress: Progress<'a>,
    /// Who asks (`builder`, `explorer`) and in which iteration, for pause points' conditions.
    pub role: &'static str,
    pub iteration: u32,
}

/// The conversation and what was recorded so far.
#[derive(Default)]
struct Transcript {
    messages: Vec<Message>,
    observations: Vec<Observation>,
    usage: Usage,
    malformed_streak: u32,
    /// How often each call (tool and arguments) was asked for in this act.
    repeats: std::collections::HashMap<String, u32>,
    /// What the loop did besides tool calls (a conversation shortened to fit), for the report.
    notes: Vec<String>,
}

/// How a turn ended.
enum TurnEnd {
    Continue,
    Finished(String),
    /// The act stops early, for this reason.
    Stopped(String),
    /// The model declined to go on.
    Refused(ModelRefusal),
}

/// Runs turns until `finish`, a stop or the step cap.
pub async fn run<P: Provider, R: CommandRunner>(
    session: &Session<'_, P, R>,
    opening: Vec<Message>,
) -> Result<ActReport, BuildError> {
    let mut progress = Transcript {
        messages: opening,
        ..Transcript::default()
    };
    for _ in 0..session.max_steps {
        match turn(session, &mut progress).await? {
            TurnEnd::Continue => {}
            TurnEnd::Finished(summary) => return Ok(report(progress, summary, None)),
            TurnEnd::Stopped(reason) => return Ok(report(progress, reason.clone(), Some(reason))),
            TurnEnd::Refused(refusal) => {
                let reason = answer::refusal_line(&refusal);
                let mut done = report(progress, reason.clone(), Some(reason));
                done.refusal = Some(refusal);
                return Ok(done);
            }
        }
    }
    let reason = format!(
        "the step cap ({}) was reached before the model called finish; the work may be incomplete",
        session.max_steps
    );
    Ok(report(progress, reason.clone(), Some(reason)))
}

/// One turn: ask, record the answer, carry out its tool calls.
async fn turn<P: Provider, R: CommandRunner>(
    session: &Session<'_, P, R>,
    progress: &mut Transcript,
) -> Result<TurnEnd, BuildError> {
    let call = u64::from(progress.usage.llm_calls) + 1;
    arrive(session, progress, Location::BeforeLlmCall, call, None)?;
    let completion = match ask_fitting(session, progress).await {
        Ok(completion) => completion,
        Err(LlmError::BudgetExceeded { what }) => {
            return Ok(TurnEnd::Stopped(format!("the LLM budget ran out: {what}")));
        }
        Err(err) => return Err(err.into()),
    };
    count(&mut progress.usage, &completion);
    if completion.stop_reason == StopReason::Refusal {
        return Ok(TurnEnd::Refused(answer::refusal(&completion)));
    }
    let cut_again = match cut_repeat(&mut progress.repeats, &completion) {
        Repeat::New => None,
        Repeat::Nudge(times) => Some(cut_nudge(times)),
        Repeat::Stop(times) => {
            return Ok(TurnEnd::Stopped(format!(
                "the model's answer was cut by the output limit at the same place {times} \
                 times; the act ends without progress"
            )));
        }
    };
    let mut sorted = answer::sort(&completion);
    progress.messages.extend(sorted.echo.clone());
    arrive(session, progress, Location::AfterLlmAnswer, call, None)?;
    if sorted.calls.is_empty() && sorted.note.is_none() {
        let nudge = answer::nudge(&completion, NUDGE);
        let text = cut_again.map_or(nudge.clone(), |stuck| format!("{nudge}\n{stuck}"));
        progress.messages.push(Message::user(text));
        return Ok(TurnEnd::Continue);
    }
    if let Some(stuck) = cut_again {
        sorted.note = Some(
            sorted
                .note
                .map_or(stuck.clone(), |note| format!("{note}\n\n{stuck}")),
        );
    }
    carry_out(session, progress, sorted).await
}

/// Counts an answer the output limit cut (the cut call as far as it got, or the text of an
/// answer that called nothing): the same cut again and again is going round like a repeated
/// call, nudged, then ended.
fn cut_repeat(
    repeats: &mut std::collections::HashMap<String, u32>,
    completion: &Completion,
) -> Repeat {
    let key = match (
        &completion.cut_call,
        completion.stop_reason == StopReason::MaxTokens,
    ) {
        (Some(cut), _) => format!("cut\u{0}{}\u{0}{}", cut.name, cut.partial_arguments),
        (None, true) if completion.tool_calls.is_empty() => {
            format!("cut\u{0}\u{0}{}", completion.text)
        }
        (None, _) => return Repeat::New,
    };
    count_repeat(repeats, key)
}

fn cut_nudge(times: u32) -> String {
    format!(
        "Your answer has been cut off at the output limit at the same place {times} times; \
         sending it again the same way will not work. Make a smaller change (several small edits \
         instead of one large one), or call `finish`. At {STUCK_STOP_AT} identical cuts the \
         attempt ends."
    )
}

/// Carries out the usable calls of one answer, in order, answering each; then tells the model
/// about the calls that were not carried out.
async fn carry_out<P: Provider, R: CommandRunner>(
    session: &Session<'_, P, R>,
    progress: &mut Transcript,
    sorted: Sorted,
) -> Result<TurnEnd, BuildError> {
    let mut malformed = sorted.malformed;
    let mut stuck_note = None;
    for call in &sorted.calls {
        match repeated(&mut progress.repeats, call) {
            Repeat::New => {}
            Repeat::Nudge(times) => stuck_note = Some(stuck_nudge(&call.name, times)),
            Repeat::Stop(times) => {
                return Ok(TurnEnd::Stopped(format!(
                    "the model made the same `{}` call with the same arguments {times} times; \
                     the act ends without progress",
                    call.name
                )));
            }
        }
        let number = u64::from(progress.usage.llm_calls);
        arrive(
            session,
            progress,
            Location::OnToolCall,
            number,
            Some((call, None)),
        )?;
        let (outcome, observation) = session.tools.dispatch(call).await;
        session.progress.emit(&observation.event());
        let after = match &outcome {
            ToolOutcome::Answered { is_error: true, .. } | ToolOutcome::Malformed(_) => {
                Location::OnToolError
            }
            ToolOutcome::Answered {
                is_error: false, ..
            }
            | ToolOutcome::Finished(_) => Location::AfterToolCall,
        };
        let result = outcome_text(&outcome);
        arrive(session, progress, after, number, Some((call, Some(result))))?;
        progress.observations.push(observation);
        let (content, is_error) = match outcome {
            ToolOutcome::Finished(summary) => return Ok(TurnEnd::Finished(summary)),
            ToolOutcome::Answered { content, is_error } => (content, is_error),
            ToolOutcome::Malformed(content) => {
                malformed += 1;
                (content, true)
            }
        };
        let content = if is_error {
            format!("error: {content}")
        } else {
            content
        };
        progress.messages.push(Message::Tool(ToolResult {
            call_id: call.id.clone(),
            content,
            is_error,
        }));
    }
    let notes: Vec<String> = sorted.note.into_iter().chain(stuck_note).collect();
    if !notes.is_empty() {
        progress.messages.push(Message::user(notes.join("\n")));
    }
    let all_malformed = malformed > 0 && malformed == sorted.calls.len() + sorted.malformed;
    progress.malformed_streak = if all_malformed {
        progress.malformed_streak + 1
    } else {
        0
    };
    if progress.malformed_streak > MAX_REPROMPTS {
        return Ok(TurnEnd::Stopped(format!(
            "the model sent malformed tool calls {} times in a row",
            progress.malformed_streak
        )));
    }
    Ok(TurnEnd::Continue)
}

/// How often a call was seen, as the loop acts on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Repeat {
    New,
    Nudge(u32),
    Stop(u32),
}

/// Counts `call` (its tool and arguments) and says what the count means.
fn repeated(
    repeats: &mut std::collections::HashMap<String, u32>,
    call: &meta_agent_llm::ToolCall,
) -> Repeat {
    count_repeat(repeats, format!("{}\u{0}{}", call.name, call.arguments))
}

/// Counts one more `key` and says what the count means.
fn count_repeat(repeats: &mut std::collections::HashMap<String, u32>, key: String) -> Repeat {
    let times = repeats.entry(key).or_insert(0);
    *times += 1;
    match *times {
        n if n >= STUCK_STOP_AT => Repeat::Stop(n),
        n if n >= STUCK_NUDGE_AT => Repeat::Nudge(n),
        _ => Repeat::New,
    }
}

fn stuck_nudge(tool: &str, times: u32) -> String {
    format!(
        "You have made the same `{tool}` call with the same arguments {times} times; its result \
         will not change. Use what you already have: edit the code, try something different, or \
         call `finish`. At {STUCK_STOP_AT} identical calls the attempt ends."
    )
}

/// Asks; when the model refuses the conversation as too long for its context window, asks once
/// more on a smaller one, if one can be built (the smaller one then stays).
async fn ask_fitting<P: Provider, R: CommandRunner>(
    session: &Session<'_, P, R>,
    progress: &mut Transcript,
) -> Result<Completion, LlmError> {
    let refused = match ask(session, &progress.messages).await {
        Err(refused @ LlmError::ContextTooLong { .. }) => refused,
        other => return other,
    };
    let Some(smaller) = compact::smaller(&progress.messages) else {
        return Err(refused);
    };
    let note = format!(
        "the conversation was shortened to fit the model's context window ({} -> {} bytes)",
        compact::size(&progress.messages),
        compact::size(&smaller)
    );
    tracing::info!("{note}");
    progress.notes.push(note);
    progress.messages = smaller;
    ask(session, &progress.messages).await
}

/// Sends the conversation with the tools.
async fn ask<P: Provider, R: CommandRunner>(
    session: &Session<'_, P, R>,
    messages: &[Message],
) -> Result<Completion, LlmError> {
    let shape = &session.shape;
    let request = ChatRequest {
        model: shape.model.to_owned(),
        messages: messages.to_vec(),
        tools: shape.tools.to_vec(),
        max_tokens: shape.max_tokens,
        temperature: shape.temperature,
        stream: shape.stream,
    };
    session.provider.chat(&request).await
}

/// Arrives at a pause point of the act (`tool`: the call and, after it ran, its result); the act
/// stops with [`BuildError::Paused`] when the run pauses there.
fn arrive<P: Provider, R: CommandRunner>(
    session: &Session<'_, P, R>,
    progress: &Transcript,
    at: Location,
    call: u64,
    tool: Option<(&ToolCall, Option<String>)>,
) -> Result<(), BuildError> {
    if !session.progress.watched() {
        return Ok(());
    }
    let mut values = Values::default()
        .number_of(Field::Iteration, u64::from(session.iteration))
        .number_of(Field::Call, call)
        .text_of(Field::Role, session.role)
        .text_of(Field::Model, session.shape.model);
    if let Some((tool_call, _)) = &tool {
        values = values
            .text_of(Field::Tool, tool_call.name.as_str())
            .text_of(
                Field::Path,
                tool_call.arguments["path"].as_str().unwrap_or_default(),
            );
    }
    let arrival = Arrival::one(at, values);
    let view = || {
        let (tool_call, tool_result) = tool
            .clone()
            .map_or((None, None), |(c, r)| (Some(c.clone()), r));
        Some(AgentView {
            role: session.role.to_owned(),
            model: session.shape.model.to_owned(),
            max_tokens: session.shape.max_tokens,
            temperature: session.shape.temperature,
            messages: progress.messages.clone(),
            tool_call,
            tool_result,
            sub_plan: None,
        })
    };
    if session.progress.arrive(&arrival, view) {
        return Err(BuildError::Paused);
    }
    Ok(())
}

/// What a tool call answered, as the model is told it.
fn outcome_text(outcome: &ToolOutcome) -> String {
    match outcome {
        ToolOutcome::Finished(summary) => summary.clone(),
        ToolOutcome::Answered { content, .. } | ToolOutcome::Malformed(content) => content.clone(),
    }
}

fn count(usage: &mut Usage, completion: &Completion) {
    usage.llm_calls += 1;
    usage.input_tokens += completion.usage.input_tokens;
    usage.output_tokens += completion.usage.output_tokens;
    usage.cost_usd += completion.cost_usd;
}

fn report(progress: Transcript, summary: String, gave_up: Option<String>) -> ActReport {
    ActReport {
        summary,
        actions: progress
            .observations
            .iter()
            .map(Observation::line)
            .chain(progress.notes)
            .collect(),
        usage: progress.usage,
        gave_up,
        refusal: None,
        instructions: Vec::new(),
    }
}
