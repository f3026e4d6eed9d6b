//! Reflection after an attempt: the fast model scores completeness and quality (0-10) and names
//! what is missing, through a `reflect` tool call (or a JSON object in its text).
//!
//! The result is advice only. It is recorded as an observation and in the act report's actions
//! (so the next attempt's context carries it); it never decides that the work is complete — the
//! gates do, in the engine. No tool execution here.

use serde::Deserialize;
use serde_json::{Value, json};

use super::plan::json_in_text;
use meta_agent_llm::{ChatRequest, LlmError, Message, Provider, ToolSpec};
use meta_agent_protocol::builder::ActReport;
use meta_agent_protocol::task::Task;
use meta_agent_protocol::untrusted::fenced;

/// Missing items kept at most.
const MAX_MISSING: usize = 8;
/// Characters of one missing item kept.
const MISSING_CHARS: usize = 200;
/// Actions of the attempt shown to the reflector at most (the latest).
const MAX_ACTIONS: usize = 40;

/// The fast model's view of an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reflection {
    /// 0-10: how much of the task the attempt covers.
    pub completeness: u8,
    /// 0-10: how good the change looks.
    pub quality: u8,
    /// What is still missing or wrong.
    pub missing: Vec<String>,
}

impl Reflection {
    /// The line kept in the act report (and so in the next attempt's history).
    pub fn line(&self) -> String {
        let missing = if self.missing.is_empty() {
            "nothing named".to_owned()
        } else {
            self.missing.join("; ")
        };
        format!(
            "reflection: completeness {}/10, quality {}/10; missing: {missing}",
            self.completeness, self.quality
        )
    }
}

#[derive(Deserialize)]
struct Wire {
    completeness: f64,
    quality: f64,
    #[serde(default)]
    missing: Vec<String>,
}

/// Reads a reflection; scores are rounded and clamped to 0-10.
pub fn parse_reflection(value: &Value) -> Result<Reflection, serde_json::Error> {
    let wire = Wire::deserialize(value)?;
    let score = |x: f64| x.round().clamp(0.0, 10.0) as u8;
    Ok(Reflection {
        completeness: score(wire.completeness),
        quality: score(wire.quality),
        missing: wire
            .missing
            .into_iter()
            .filter(|item| !item.trim().is_empty())
            .take(MAX_MISSING)
            .map(|item| item.chars().take(MISSING_CHARS).collect())
            .collect(),
    })
}

/// The `reflect` tool.
pub fn reflect_tool() -> ToolSpec {
    ToolSpec {
        name: "reflect".into(),
        description: "Score the attempt and name what is missing.".into(),
        parameters: json!({"type": "object", "required": ["completeness", "quality", "missing"],
        "properties": {
            "completeness": {"type": "integer", "minimum": 0, "maximum": 10},
            "quality": {"type": "integer", "minimum": 0, "maximum": 10},
            "missing": {"type": "array", "items": {"type": "string"}}
        }}),
    }
}

/// What the reflector is shown.
pub struct Attempt<'a> {
    pub task: &'a Task,
    pub report: &'a ActReport,
}

/// How the reflection request is shaped.
pub struct Reflector<'a, P: Provider> {
    pub provider: &'a P,
    /// The fast model.
    pub model: &'a str,
    pub max_tokens: u32,
    pub stream: bool,
}

impl<P: Provider> Reflector<'_, P> {
    /// Asks for a reflection on `attempt`. An answer without a usable reflection is an
    /// [`LlmError::Malformed`].
    pub async fn reflect(&self, attempt: &Attempt<'_>) -> Result<Reflection, LlmError> {
        let request = ChatRequest {
            model: self.model.to_owned(),
            messages: vec![Message::system(system()), Message::user(brief(attempt))],
            tools: vec![reflect_tool()],
            max_tokens: self.max_tokens,
            temperature: None,
            stream: self.stream,
        };
        let completion = self.provider.chat(&request).await?;
        let value = completion
            .tool_calls
            .iter()
            .find(|call| call.name == "reflect")
            .map(|call| call.arguments.clone())
            .or_else(|| json_in_text(&completion.text));
        let value = value.ok_or_else(|| LlmError::Malformed {
            detail: "the reflection had no `reflect` call".into(),
        })?;
        parse_reflection(&value).map_err(|err| LlmError::Malformed {
            detail: format!("reflection: {err}"),
        })
    }
}

fn system() -> String {
    format!(
        "You review a coding agent's attempt at a task. Score completeness (how much of the task \
     is done) and quality (correctness, tests, style) from 0 to 10 and list concretely what is \
     missing or wrong, by calling the `reflect` tool. Your scores are advice: the project's \
     gates decide whether the work is complete. {}",
        meta_agent_protocol::untrusted::FENCE_RULE
    )
}

fn brief(attempt: &Attempt<'_>) -> String {
    let task = attempt.task.brief();
    let actions = &attempt.report.actions;
    let recent = &actions[actions.len().saturating_sub(MAX_ACTIONS)..];
    let mut summary = format!("Summary: {}\n", attempt.report.summary);
    if let Some(reason) = &attempt.report.gave_up {
        summary.push_str(&format!("Stopped early: {reason}\n"));
    }
    summary.push_str("Actions:\n");
    for action in recent {
        summary.push_str(&format!("- {action}\n"));
    }
    format!(
        "# The task\n{}\n# The attempt\n{}",
        fenced("untrusted-task", &task),
        fenced("untrusted-attempt", &summary)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_are_clamped_and_missing_items_capped() {
        let value = json!({"completeness": 12, "quality": -1.4, "missing": ["tests", " ", "docs"]});
        let reflection = parse_reflection(&value).unwrap();
        assert_eq!(
            reflection,
            Reflection {
                completeness: 10,
                quality: 0,
                missing: vec!["tests".into(), "docs".into()]
            }
        );
        assert_eq!(
            reflection.line(),
            "reflection: completeness 10/10, quality 0/10; missing: tests; docs"
        );
        assert!(parse_reflection(&json!({"quality": 3})).is_err());
    }
}
