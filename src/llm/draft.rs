//! A completion being built from a provider's answer, before it is priced; shared by the wire
//! formats. No I/O and no wire format here.

use serde_json::{Value, json};

use super::{Completion, StopReason, ToolCall, Usage, price};

/// A completion before pricing.
#[derive(Debug, Default)]
pub struct Draft {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
    pub stop_reason: Option<StopReason>,
}

impl Draft {
    pub fn priced(self, model: &str) -> Completion {
        Completion {
            cost_usd: price::cost_usd(model, self.usage),
            text: self.text,
            tool_calls: self.tool_calls,
            usage: self.usage,
            stop_reason: self.stop_reason.unwrap_or(StopReason::EndTurn),
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

    #[test]
    fn arguments_that_are_not_json_are_kept_as_text() {
        assert_eq!(parse_arguments("{oops"), json!("{oops"));
        assert_eq!(parse_arguments(" "), json!({}));
        assert_eq!(parse_arguments(r#"{"a":1}"#), json!({"a": 1}));
    }
}
