//! A completion being built from a provider's answer, before it is priced; shared by the wire
//! formats. Knows which tool call the output limit cut short: the last one, when the answer
//! stopped at `max_tokens` / `length` before its arguments made a whole JSON object. No I/O and no
//! wire format here.

use serde_json::{Value, json};

use super::transport::Answer;
use super::{Completion, LlmError, StopReason, ToolCall, Usage, price};
use meta_agent_protocol::chat::CutCall;

/// A streamed answer being folded into a [`Draft`], one event's data at a time.
pub trait Assembly: Default {
    fn push(&mut self, data: &str) -> Result<(), LlmError>;
    /// The draft, once every event is in; an error when the stream did not end properly.
    fn finish(self) -> Result<Draft, LlmError>;
}

/// The answer as a draft: a whole one read by `whole`, a streamed one folded by `A`.
pub fn read<A: Assembly>(
    answer: Answer,
    whole: impl FnOnce(Value) -> Result<Draft, LlmError>,
) -> Result<Draft, LlmError> {
    match answer {
        Answer::Whole(value) => whole(value),
        Answer::Events(events) => {
            let mut stream = A::default();
            events
                .iter()
                .try_for_each(|event| stream.push(&event.data))?;
            stream.finish()
        }
    }
}

/// A completion before pricing.
#[derive(Debug, Default)]
pub struct Draft {
    pub text: String,
    pub tool_calls: Vec<DraftCall>,
    pub usage: Usage,
    pub stop_reason: Option<StopReason>,
}

/// A tool call as the wire gave it.
#[derive(Debug, Clone, PartialEq)]
pub struct DraftCall {
    pub id: String,
    pub name: String,
    pub arguments: RawArguments,
}

/// Tool arguments as they came: the text the model streamed (OpenAI always, Anthropic's
/// `input_json_delta` pieces), or a value the service had already parsed (Anthropic's whole
/// answers).
#[derive(Debug, Clone, PartialEq)]
pub enum RawArguments {
    Text(String),
    Parsed(Value),
}

impl RawArguments {
    /// Whether the arguments are one whole JSON object.
    fn is_whole_object(&self) -> bool {
        match self {
            Self::Text(text) => {
                serde_json::from_str::<Value>(text).is_ok_and(|value| value.is_object())
            }
            Self::Parsed(value) => value.is_object(),
        }
    }

    /// The text the model sent.
    fn text(&self) -> String {
        match self {
            Self::Text(text) => text.clone(),
            Self::Parsed(value) => value.to_string(),
        }
    }

    fn value(self) -> Value {
        match self {
            Self::Text(text) => parse_arguments(&text),
            Self::Parsed(value) => value,
        }
    }
}

impl DraftCall {
    fn into_call(self) -> ToolCall {
        ToolCall {
            id: self.id,
            name: self.name,
            arguments: self.arguments.value(),
        }
    }
}

impl Draft {
    pub fn priced(mut self, model: &str) -> Completion {
        let stop_reason = self.stop_reason.unwrap_or(StopReason::EndTurn);
        let cut_call = if stop_reason == StopReason::MaxTokens {
            self.tool_calls
                .pop_if(|call| !call.arguments.is_whole_object())
                .map(|call| CutCall {
                    partial_arguments: call.arguments.text(),
                    id: call.id,
                    name: call.name,
                })
        } else {
            None
        };
        Completion {
            cost_usd: price::cost_usd(model, self.usage),
            text: self.text,
            tool_calls: self
                .tool_calls
                .into_iter()
                .map(DraftCall::into_call)
                .collect(),
            usage: self.usage,
            stop_reason,
            cut_call,
        }
    }
}

/// Tool arguments as JSON; empty means `{}`; text that is not JSON is kept as a JSON string.
pub fn parse_arguments(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return json!({});
    }
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str, arguments: RawArguments) -> DraftCall {
        DraftCall {
            id: id.into(),
            name: "edit_file".into(),
            arguments,
        }
    }

    fn draft(stop: StopReason, calls: Vec<DraftCall>) -> Completion {
        Draft {
            text: "Editing.".into(),
            tool_calls: calls,
            stop_reason: Some(stop),
            ..Draft::default()
        }
        .priced("m")
    }

    #[test]
    fn arguments_that_are_not_json_are_kept_as_text() {
        assert_eq!(parse_arguments("{oops"), json!("{oops"));
        assert_eq!(parse_arguments(" "), json!({}));
        assert_eq!(parse_arguments(r#"{"a":1}"#), json!({"a": 1}));
    }

    #[test]
    fn the_last_call_cut_by_the_output_limit_is_set_apart_verbatim() {
        let whole = call("a", RawArguments::Text(r#"{"path": "x"}"#.into()));
        let partial = r#"{"path": "calc.py", "old_string": "sum(va"#;
        let cut = draft(
            StopReason::MaxTokens,
            vec![whole, call("b", RawArguments::Text(partial.into()))],
        );
        assert_eq!(cut.tool_calls.len(), 1);
        assert_eq!(cut.tool_calls[0].arguments, json!({"path": "x"}));
        let cut_call = cut.cut_call.expect("the cut call");
        assert_eq!(
            (cut_call.id.as_str(), cut_call.name.as_str()),
            ("b", "edit_file")
        );
        assert_eq!(cut_call.partial_arguments, partial);
        let unstarted = draft(
            StopReason::MaxTokens,
            vec![call("c", RawArguments::Text(String::new()))],
        );
        assert!(
            unstarted.tool_calls.is_empty(),
            "no arguments yet is not a call"
        );
        assert_eq!(
            unstarted.cut_call.map(|c| c.partial_arguments),
            Some(String::new())
        );
    }

    #[test]
    fn a_whole_last_call_or_another_stop_reason_cuts_nothing() {
        let finished = draft(
            StopReason::MaxTokens,
            vec![call("a", RawArguments::Parsed(json!({"path": "x"})))],
        );
        assert_eq!((finished.tool_calls.len(), finished.cut_call), (1, None));
        let malformed = draft(
            StopReason::ToolUse,
            vec![call("a", RawArguments::Text("{not json".into()))],
        );
        assert_eq!(malformed.cut_call, None);
        assert_eq!(malformed.tool_calls[0].arguments, json!("{not json"));
    }
}
