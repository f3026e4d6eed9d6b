//! A smaller conversation, for a model that refused the last one as too long for its context
//! window: the latest exchange (the last answer and what followed it) is kept whole, older tool
//! outputs are replaced by a short marker (the model may call the tool again), older long answers
//! are cut, and the opening message is cut to half (its sections come in priority order, so the
//! lowest-priority ones go first). Every tool call keeps its result, so the conversation stays
//! well-formed for either wire format.
//!
//! Pure. `None` when nothing could be made smaller: the refusal then stands.

use super::tools::truncate;
use meta_agent_llm::{Message, ToolResult};

/// Said instead of an older tool output.
pub const OMITTED: &str =
    "[output omitted to fit the model's context window; call the tool again if you need it]";
/// Older tool outputs longer than this are omitted.
const KEEP_OUTPUT: usize = 200;
/// Older answers longer than this are cut to it.
const KEEP_ANSWER: usize = 1_000;
/// An opening shorter than this is not cut.
const MIN_OPENING: usize = 1_000;

/// The conversation made smaller, or `None` when it cannot be.
pub fn smaller(messages: &[Message]) -> Option<Vec<Message>> {
    let latest = messages
        .iter()
        .rposition(|message| matches!(message, Message::Assistant { .. }))
        .unwrap_or(messages.len());
    let opening = messages
        .iter()
        .position(|message| matches!(message, Message::User { .. }));
    let shrunk: Vec<Message> = messages
        .iter()
        .enumerate()
        .map(|(index, message)| match index {
            _ if index >= latest => message.clone(),
            _ if Some(index) == opening => halved(message),
            _ => shortened(message),
        })
        .collect();
    (size(&shrunk) < size(messages)).then_some(shrunk)
}

/// Bytes of text in the conversation.
pub fn size(messages: &[Message]) -> usize {
    messages
        .iter()
        .map(|message| match message {
            Message::System { text } | Message::User { text } => text.len(),
            Message::Assistant { text, tool_calls } => {
                text.len()
                    + tool_calls
                        .iter()
                        .map(|call| call.arguments.to_string().len())
                        .sum::<usize>()
            }
            Message::Tool(result) => result.content.len(),
        })
        .sum()
}

fn halved(message: &Message) -> Message {
    match message {
        Message::User { text } if text.len() >= MIN_OPENING => Message::User {
            text: truncate(text, text.len() / 2),
        },
        other => other.clone(),
    }
}

fn shortened(message: &Message) -> Message {
    match message {
        Message::Tool(result) if result.content.len() > KEEP_OUTPUT => Message::Tool(ToolResult {
            content: OMITTED.to_owned(),
            ..result.clone()
        }),
        Message::Assistant { text, tool_calls } if text.len() > KEEP_ANSWER => Message::Assistant {
            text: truncate(text, KEEP_ANSWER),
            tool_calls: tool_calls.clone(),
        },
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use meta_agent_llm::ToolCall;
    use serde_json::json;

    fn result(id: &str, content: &str) -> Message {
        Message::Tool(ToolResult {
            call_id: id.into(),
            content: content.into(),
            is_error: false,
        })
    }

    fn answer(id: &str) -> Message {
        Message::Assistant {
            text: String::new(),
            tool_calls: vec![ToolCall {
                id: id.into(),
                name: "read_file".into(),
                arguments: json!({"path": "big.py"}),
            }],
        }
    }

    #[test]
    fn older_outputs_go_the_opening_halves_and_the_latest_exchange_stays() {
        let big = "x".repeat(10_000);
        let messages = vec![
            Message::system("rules"),
            Message::user("o".repeat(4_000)),
            answer("a"),
            result("a", &big),
            answer("b"),
            result("b", &big),
        ];
        let shrunk = smaller(&messages).expect("smaller");
        assert_eq!(shrunk.len(), messages.len());
        assert_eq!(shrunk[0], messages[0]);
        let Message::User { text } = &shrunk[1] else {
            panic!("{:?}", shrunk[1])
        };
        assert!(text.len() < 2_100 && text.contains("bytes cut]"), "{text}");
        assert_eq!(shrunk[3], result("a", OMITTED), "the call keeps its result");
        assert_eq!(shrunk[4..], messages[4..], "the latest exchange is whole");
        assert!(
            size(&shrunk) + 11_000 < size(&messages),
            "the older output and half the opening are gone"
        );
    }

    #[test]
    fn a_conversation_with_nothing_to_cut_cannot_be_made_smaller() {
        let messages = vec![Message::system("rules"), Message::user("short task")];
        assert_eq!(smaller(&messages), None);
    }
}
