//! What the model answered, sorted into what can be carried out and sent back, and what the model
//! must be told instead.
//!
//! A call the output limit cut short ([`Completion::cut_call`]) and a call whose arguments are not
//! a JSON object are never carried out and never go back as calls (the Messages API refuses a
//! non-object `tool_use` input; re-encoding them would put words in the model's mouth): they are
//! left out of the echoed assistant message and the model is told, with the text it actually
//! sent. An answer with neither text nor usable calls is not echoed at all (the Messages API
//! refuses empty messages). Pure: used by the coding loop and the planner alike.

use super::tools::truncate;
use meta_agent_llm::{Completion, Message, StopReason, ToolCall};
use meta_agent_protocol::builder::ModelRefusal;

/// Bytes of the model's own unusable text quoted back to it.
const QUOTE_CAP: usize = 16 * 1024;

/// An answer, sorted.
#[derive(Debug, Clone, PartialEq)]
pub struct Sorted {
    /// The assistant message for the conversation: the text and the usable calls; `None` when
    /// there is nothing of either.
    pub echo: Option<Message>,
    /// The calls to carry out (whole, with object arguments), in order.
    pub calls: Vec<ToolCall>,
    /// What to tell the model about the calls that were not carried out, when any.
    pub note: Option<String>,
    /// How many calls were malformed (arguments not a JSON object; a cut call is not malformed).
    pub malformed: usize,
}

/// Sorts `completion`.
pub fn sort(completion: &Completion) -> Sorted {
    let (calls, malformed): (Vec<ToolCall>, Vec<ToolCall>) = completion
        .tool_calls
        .iter()
        .cloned()
        .partition(|call| call.arguments.is_object());
    let mut notes: Vec<String> = malformed.iter().map(malformed_note).collect();
    if let Some(cut) = &completion.cut_call {
        notes.push(cut_note(&cut.name, &cut.partial_arguments));
    }
    let echo = (!completion.text.is_empty() || !calls.is_empty()).then(|| Message::Assistant {
        text: completion.text.clone(),
        tool_calls: calls.clone(),
    });
    Sorted {
        echo,
        calls,
        note: (!notes.is_empty()).then(|| notes.join("\n\n")),
        malformed: malformed.len(),
    }
}

/// What to say to a model that answered without calling a tool.
pub fn nudge(completion: &Completion, nudge: &str) -> String {
    if completion.text.is_empty() {
        format!("Your answer was empty. {nudge}")
    } else if completion.stop_reason == StopReason::MaxTokens {
        format!("Your answer was cut off at the output limit. {nudge}")
    } else {
        nudge.to_owned()
    }
}

/// Bytes of the model's refusal kept as its words.
const REFUSAL_WORDS_CAP: usize = 300;

/// The model's refusal, in its words (on one line, bounded) when it gave some.
pub fn refusal(completion: &Completion) -> ModelRefusal {
    let said = completion
        .text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    ModelRefusal {
        words: (!said.is_empty()).then(|| truncate(&said, REFUSAL_WORDS_CAP)),
    }
}

/// Why an act stopped on a refusal, for the act's report.
pub fn refusal_line(refusal: &ModelRefusal) -> String {
    match &refusal.words {
        Some(words) => format!("the model declined to continue (a refusal): {words}"),
        None => "the model declined to continue (a refusal, with no text)".to_owned(),
    }
}

fn quoted(text: &str) -> String {
    format!("<<<\n{}\n>>>", truncate(text, QUOTE_CAP))
}

fn cut_note(name: &str, partial: &str) -> String {
    format!(
        "Your answer was cut off at the output limit while you were writing a call to `{name}`, \
         so that call was not carried out. What you had sent of its arguments, verbatim:\n{}\n\
         Send the call again, complete. For a large change, make several smaller edits.",
        quoted(partial)
    )
}

fn malformed_note(call: &ToolCall) -> String {
    let sent = match &call.arguments {
        serde_json::Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    format!(
        "Your call to `{}` was not carried out: malformed arguments for `{}` (not a JSON object). \
         What you sent, verbatim:\n{}\nCall it again with a JSON object of arguments.",
        call.name,
        call.name,
        quoted(&sent)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use meta_agent_llm::{CutCall, Usage};
    use serde_json::json;

    fn completion(text: &str, calls: Vec<ToolCall>, cut: Option<CutCall>) -> Completion {
        Completion {
            text: text.into(),
            tool_calls: calls,
            usage: Usage::default(),
            cost_usd: 0.0,
            stop_reason: if cut.is_some() {
                StopReason::MaxTokens
            } else {
                StopReason::ToolUse
            },
            cut_call: cut,
        }
    }

    fn call(id: &str, arguments: serde_json::Value) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "edit_file".into(),
            arguments,
        }
    }

    #[test]
    fn a_cut_call_is_left_out_and_the_model_told_with_its_own_text() {
        let partial = r#"{"path": "calc.py", "old_string": "sum(va"#;
        let cut = CutCall {
            id: "c2".into(),
            name: "edit_file".into(),
            partial_arguments: partial.into(),
        };
        let whole = call("c1", json!({"path": "a"}));
        let sorted = sort(&completion("Two edits.", vec![whole.clone()], Some(cut)));
        assert_eq!(sorted.calls, std::slice::from_ref(&whole));
        assert_eq!(
            sorted.echo,
            Some(Message::Assistant {
                text: "Two edits.".into(),
                tool_calls: vec![whole],
            })
        );
        let note = sorted.note.unwrap();
        assert!(note.contains("cut off at the output limit"), "{note}");
        assert!(note.contains(&format!("<<<\n{partial}\n>>>")), "{note}");
        assert_eq!(sorted.malformed, 0);
    }

    #[test]
    fn malformed_calls_are_not_echoed_and_an_empty_answer_echoes_nothing() {
        let sorted = sort(&completion("", vec![call("c1", json!("{not json"))], None));
        assert_eq!(sorted.echo, None);
        assert!(sorted.calls.is_empty());
        assert_eq!(sorted.malformed, 1);
        let note = sorted.note.unwrap();
        assert!(
            note.contains("malformed arguments for `edit_file`"),
            "{note}"
        );
        assert!(note.contains("<<<\n{not json\n>>>"), "{note}");
        let empty = sort(&completion("", Vec::new(), None));
        assert_eq!((empty.echo, empty.note), (None, None));
    }

    #[test]
    fn nudges_and_refusals_say_what_happened() {
        let empty = completion("", Vec::new(), None);
        assert!(nudge(&empty, "Go on.").starts_with("Your answer was empty."));
        assert_eq!(
            nudge(&completion("hm", Vec::new(), None), "Go on."),
            "Go on."
        );
        assert_eq!(refusal(&empty), ModelRefusal { words: None });
        assert!(refusal_line(&refusal(&empty)).contains("with no text"));
        let said = completion("I can't\n  help with that.", Vec::new(), None);
        assert_eq!(
            refusal(&said).words.as_deref(),
            Some("I can't help with that.")
        );
        assert!(refusal_line(&refusal(&said)).ends_with("I can't help with that."));
    }
}
