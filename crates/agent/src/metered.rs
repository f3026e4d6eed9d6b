//! [`Metered`]: the provider as one act sees it: every call (model, tokens, cost, duration) is
//! reported on the run's event stream as an `LlmCall` event the moment it answers or fails, and
//! summed up so the act can report its usage; an answered call is followed by its
//! `ModelExchange` (what the model was shown since its previous answer, what it answered).
//!
//! A thin wrapper: it neither retries nor refuses; a call the budget refused before sending is
//! not a call and is neither reported nor counted.

use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use meta_agent_llm::{ChatRequest, Completion, LlmError, Message, Provider};
use meta_agent_protocol::builder::Progress;
use meta_agent_protocol::event::{EXCHANGE_CHARS, Event};
use meta_agent_protocol::records::Usage;

/// Reports and counts the calls made through it.
pub struct Metered<'a, P: Provider> {
    inner: &'a P,
    progress: Progress<'a>,
    usage: Mutex<Usage>,
}

impl<'a, P: Provider> Metered<'a, P> {
    pub fn new(inner: &'a P, progress: Progress<'a>) -> Self {
        Metered {
            inner,
            progress,
            usage: Mutex::new(Usage::default()),
        }
    }

    /// What the calls so far used.
    pub fn usage(&self) -> Usage {
        self.usage
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn record(&self, call: &Event) {
        if let Event::LlmCall {
            input_tokens,
            output_tokens,
            cost_usd,
            ..
        } = call
        {
            let mut usage = self.usage.lock().unwrap_or_else(PoisonError::into_inner);
            usage.llm_calls += 1;
            usage.input_tokens += input_tokens;
            usage.output_tokens += output_tokens;
            usage.cost_usd += cost_usd;
        }
        self.progress.emit(call);
    }
}

impl<P: Provider> Provider for Metered<'_, P> {
    async fn chat(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        let started = Instant::now();
        let started_unix_ms = meta_agent_protocol::clock::now_ms();
        let result = self.inner.chat(request).await;
        let (input_tokens, output_tokens, cost_usd) = match &result {
            Ok(completion) => (
                completion.usage.input_tokens,
                completion.usage.output_tokens,
                completion.cost_usd,
            ),
            Err(LlmError::BudgetExceeded { .. } | LlmError::NotConfigured) => return result,
            Err(_) => (0, 0, 0.0),
        };
        self.record(&Event::LlmCall {
            provider: self.inner.name().to_owned(),
            model: request.model.clone(),
            input_tokens,
            output_tokens,
            cost_usd,
            started_unix_ms,
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        });
        if let Ok(completion) = &result {
            self.progress.emit(&exchange(request, completion));
        }
        result
    }

    fn name(&self) -> &str {
        self.inner.name()
    }
}

/// The call's [`Event::ModelExchange`]: the messages since the model's previous answer (all of
/// them on a first call), and its answer with its tool calls.
fn exchange(request: &ChatRequest, completion: &Completion) -> Event {
    let since = request
        .messages
        .iter()
        .rposition(|message| matches!(message, Message::Assistant { .. }))
        .map_or(0, |last| last + 1);
    let prompt: Vec<String> = request.messages[since..].iter().map(shown).collect();
    let mut answer = completion.text.clone();
    for call in &completion.tool_calls {
        answer.push_str(&format!("\n→ {}({})", call.name, call.arguments));
    }
    Event::ModelExchange {
        model: request.model.clone(),
        prompt: cut(&prompt.join("\n\n")),
        answer: cut(answer.trim_start()),
    }
}

/// One message as the exchange shows it: its role, then its text.
fn shown(message: &Message) -> String {
    match message {
        Message::System { text } => format!("[system]\n{text}"),
        Message::User { text } => format!("[user]\n{text}"),
        Message::Assistant { text, .. } => format!("[assistant]\n{text}"),
        Message::Tool(result) => {
            let failed = if result.is_error { ", failed" } else { "" };
            format!("[tool result{failed}]\n{}", result.content)
        }
    }
}

/// `text` cut at [`EXCHANGE_CHARS`], saying how much was left out.
fn cut(text: &str) -> String {
    let total = text.chars().count();
    if total <= EXCHANGE_CHARS {
        return text.to_owned();
    }
    let kept: String = text.chars().take(EXCHANGE_CHARS).collect();
    format!("{kept}\n[… {} more characters]", total - EXCHANGE_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use meta_agent_llm::{StopReason, Usage as TokenUsage};

    /// Answers, then fails, then refuses for the budget.
    struct Scripted(Mutex<u32>);

    impl Provider for Scripted {
        async fn chat(&self, _request: &ChatRequest) -> Result<Completion, LlmError> {
            let mut calls = self.0.lock().unwrap();
            *calls += 1;
            match *calls {
                1 => Ok(Completion {
                    text: "ok".into(),
                    tool_calls: Vec::new(),
                    usage: TokenUsage {
                        input_tokens: 30,
                        output_tokens: 4,
                    },
                    cost_usd: 0.5,
                    stop_reason: StopReason::EndTurn,
                    cut_call: None,
                }),
                2 => Err(LlmError::Unavailable {
                    status: 503,
                    retry_after: None,
                    message: "down".into(),
                }),
                _ => Err(LlmError::BudgetExceeded {
                    what: "1 of 1 LLM calls made".into(),
                }),
            }
        }

        fn name(&self) -> &str {
            "scripted"
        }
    }

    #[test]
    fn an_exchange_holds_the_messages_since_the_last_answer_and_the_answer_cut() {
        use meta_agent_llm::{StopReason, ToolCall, ToolResult};
        let request = ChatRequest {
            model: "m".into(),
            messages: vec![
                Message::system("rules"),
                Message::user("the task"),
                Message::Assistant {
                    text: "looking".into(),
                    tool_calls: Vec::new(),
                },
                Message::Tool(ToolResult {
                    call_id: "c1".into(),
                    content: "file text".into(),
                    is_error: true,
                }),
            ],
            tools: Vec::new(),
            max_tokens: 10,
            temperature: None,
            stream: false,
        };
        let completion = Completion {
            text: "x".repeat(EXCHANGE_CHARS + 5),
            tool_calls: vec![ToolCall {
                id: "c2".into(),
                name: "finish".into(),
                arguments: serde_json::json!({"summary": "done"}),
            }],
            usage: TokenUsage::default(),
            cost_usd: 0.0,
            stop_reason: StopReason::EndTurn,
            cut_call: None,
        };
        let Event::ModelExchange { prompt, answer, .. } = exchange(&request, &completion) else {
            panic!("an exchange");
        };
        assert_eq!(prompt, "[tool result, failed]\nfile text");
        let whole = format!(
            "{}\n→ finish({{\"summary\":\"done\"}})",
            "x".repeat(EXCHANGE_CHARS + 5)
        );
        let left = whole.chars().count() - EXCHANGE_CHARS;
        assert_eq!(
            answer,
            format!("{}\n[… {left} more characters]", "x".repeat(EXCHANGE_CHARS))
        );
        let mut first = request.clone();
        first.messages.truncate(2);
        let Event::ModelExchange { prompt, .. } = exchange(&first, &completion) else {
            panic!("an exchange");
        };
        assert_eq!(prompt, "[system]\nrules\n\n[user]\nthe task");
    }

    #[tokio::test]
    async fn answered_and_failed_calls_are_recorded_refused_ones_are_not() {
        let inner = Scripted(Mutex::new(0));
        let events = meta_agent_protocol::event::Recorder::default();
        let metered = Metered::new(&inner, Progress::to(&events));
        let request = ChatRequest {
            model: "fast".into(),
            messages: Vec::new(),
            tools: Vec::new(),
            max_tokens: 10,
            temperature: None,
            stream: false,
        };
        for _ in 0..3 {
            let _ = metered.chat(&request).await;
        }
        let (exchanges, calls): (Vec<Event>, Vec<Event>) = events
            .events()
            .into_iter()
            .partition(|event| matches!(event, Event::ModelExchange { .. }));
        assert_eq!(calls.len(), 2, "{calls:?}");
        assert_eq!(
            exchanges,
            vec![Event::ModelExchange {
                model: "fast".into(),
                prompt: String::new(),
                answer: "ok".into(),
            }],
            "only the answered call has an exchange"
        );
        let Event::LlmCall {
            provider,
            model,
            input_tokens,
            output_tokens,
            ..
        } = &calls[0]
        else {
            panic!("{calls:?}");
        };
        assert_eq!((provider.as_str(), model.as_str()), ("scripted", "fast"));
        assert_eq!((*input_tokens, *output_tokens), (30, 4));
        assert!(matches!(
            &calls[1],
            Event::LlmCall {
                input_tokens: 0,
                ..
            }
        ));
        let usage = metered.usage();
        assert_eq!((usage.llm_calls, usage.input_tokens), (2, 30));
        assert!((usage.cost_usd - 0.5).abs() < 1e-9);
    }
}
