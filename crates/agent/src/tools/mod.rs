//! The agent's tools: what the model is offered ([`specs`]) and how one call is carried out
//! ([`ToolBox::dispatch`]).
//!
//! Every failure the model can act on (bad arguments, unknown tool, rejected path, no match, a
//! command that failed) becomes a failed tool result; nothing here ends the act. The turn loop
//! decides what a malformed call means. No LLM calls and no prompt text here.

mod command;
mod files;
pub mod paths;
mod search;

use std::path::Path;
use std::time::Instant;

use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use meta_agent_exec::CommandRunner;
use meta_agent_llm::{ToolCall, ToolSpec};
use meta_agent_policy::Policy;

pub use command::CommandSettings;
pub use files::walk;

/// Bytes of any tool result shown to the model.
pub const RESULT_CAP: usize = 16 * 1024;

/// Why a tool call failed (shown to the model as a failed tool result).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The arguments are not JSON or do not match the tool's schema.
    #[error("malformed arguments for `{tool}`: {detail}; send a JSON object matching the schema")]
    Malformed { tool: String, detail: String },
    #[error("unknown tool `{0}`; use one of the tools offered")]
    UnknownTool(String),
    #[error("path `{path}` rejected: {reason}")]
    PathRejected {
        path: String,
        reason: meta_agent_policy::PolicyError,
    },
    #[error("`old_string` was not found in {path}; read the file and copy the text exactly")]
    NoMatch { path: String },
    #[error(
        "`old_string` occurs {count} times in {path}; include more surrounding lines so it is unique"
    )]
    SeveralMatches { path: String, count: usize },
    #[error("{0}")]
    Io(String),
    #[error("invalid regular expression: {0}")]
    Regex(String),
    #[error("the command failed: {0}")]
    CommandFailed(String),
}

/// What one tool call produced.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutcome {
    /// The model called `finish` with this summary.
    Finished(String),
    /// A result for the model: its text, and whether it is a failure.
    Answered { content: String, is_error: bool },
    /// The arguments did not parse: a failed result, counted towards the re-prompt limit.
    Malformed(String),
}

/// Characters of a failure's first line kept in its observation.
const DETAIL_CHARS: usize = 120;

/// One call as recorded: tool, short input, success, duration, and why it failed.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    pub tool: String,
    pub input: String,
    pub success: bool,
    /// When the call started, in milliseconds since the Unix epoch.
    pub started_unix_ms: u64,
    pub duration_ms: u64,
    /// The first line of a failure, trimmed (empty on success).
    pub detail: String,
}

impl Observation {
    /// The `ToolCalled` event reporting this call.
    pub fn event(&self) -> meta_agent_protocol::event::Event {
        meta_agent_protocol::event::Event::ToolCalled {
            tool: self.tool.clone(),
            input: self.input.clone(),
            success: self.success,
            started_unix_ms: self.started_unix_ms,
            duration_ms: self.duration_ms,
        }
    }

    /// The line kept in the act report (and shown to later attempts).
    pub fn line(&self) -> String {
        let status = if self.success {
            "ok".to_owned()
        } else {
            format!("failed: {}", self.detail)
        };
        format!(
            "{} {} -> {status} ({} ms)",
            self.tool, self.input, self.duration_ms
        )
    }
}

/// The tools bound to one worktree.
pub struct ToolBox<'a, R: CommandRunner> {
    pub root: &'a Path,
    /// Paths the file tools refuse to write.
    pub policy: &'a Policy,
    pub runner: &'a R,
    pub command: &'a CommandSettings,
    /// The parent's environment; filtered by `child_env` for each command.
    pub parent_env: &'a [(String, String)],
    /// Only the read-only tools (the explorer): writes and commands are unknown tools.
    pub read_only: bool,
}

/// The tools an explorer may use.
pub const READ_ONLY: [&str; 4] = ["list_files", "read_file", "search", "finish"];

impl<R: CommandRunner> ToolBox<'_, R> {
    /// Carries out one call; returns its outcome and its observation.
    pub async fn dispatch(&self, call: &ToolCall) -> (ToolOutcome, Observation) {
        let started = Instant::now();
        let started_unix_ms = meta_agent_protocol::clock::now_ms();
        let outcome = match self.route(call).await {
            Ok(outcome) => outcome,
            Err(err @ ToolError::Malformed { .. }) => ToolOutcome::Malformed(err.to_string()),
            Err(err) => ToolOutcome::Answered {
                content: err.to_string(),
                is_error: true,
            },
        };
        let failure = match &outcome {
            ToolOutcome::Finished(_)
            | ToolOutcome::Answered {
                is_error: false, ..
            } => None,
            ToolOutcome::Answered { content, .. } | ToolOutcome::Malformed(content) => {
                Some(content)
            }
        };
        let detail = failure.map_or(String::new(), |text| {
            let first = text.lines().next().unwrap_or_default();
            first.chars().take(DETAIL_CHARS).collect()
        });
        let observation = Observation {
            tool: call.name.clone(),
            input: short_input(&call.arguments),
            success: failure.is_none(),
            started_unix_ms,
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            detail,
        };
        (outcome, observation)
    }

    async fn route(&self, call: &ToolCall) -> Result<ToolOutcome, ToolError> {
        let args = &call.arguments;
        if self.read_only && !READ_ONLY.contains(&call.name.as_str()) {
            return Err(ToolError::UnknownTool(call.name.clone()));
        }
        let text = match call.name.as_str() {
            "list_files" => files::list_files(self.root, parse(&call.name, args)?)?,
            "read_file" => files::read_file(self.root, parse(&call.name, args)?)?,
            "search" => search::search(self.root, parse(&call.name, args)?)?,
            "edit_file" => files::edit_file(self.root, self.policy, parse(&call.name, args)?)?,
            "write_file" => files::write_file(self.root, self.policy, parse(&call.name, args)?)?,
            "run_command" => return Ok(self.run_command(parse(&call.name, args)?).await),
            "finish" => {
                let finish: FinishArgs = parse(&call.name, args)?;
                return Ok(ToolOutcome::Finished(finish.summary));
            }
            other => return Err(ToolError::UnknownTool(other.to_owned())),
        };
        Ok(ToolOutcome::Answered {
            content: cap(&text),
            is_error: false,
        })
    }

    async fn run_command(&self, args: command::RunArgs) -> ToolOutcome {
        let ctx = command::CommandContext {
            root: self.root,
            runner: self.runner,
            settings: self.command,
            parent_env: self.parent_env,
        };
        match command::run(&ctx, args).await {
            Ok((text, success)) => ToolOutcome::Answered {
                content: cap(&text),
                is_error: !success,
            },
            Err(err) => ToolOutcome::Answered {
                content: cap(&err.to_string()),
                is_error: true,
            },
        }
    }
}

#[derive(serde::Deserialize)]
struct FinishArgs {
    summary: String,
}

/// The arguments as the tool's type; a failure is a malformed call.
fn parse<T: DeserializeOwned>(tool: &str, args: &Value) -> Result<T, ToolError> {
    let malformed = |detail: String| ToolError::Malformed {
        tool: tool.to_owned(),
        detail,
    };
    if !args.is_object() {
        return Err(malformed("the arguments are not a JSON object".into()));
    }
    serde_json::from_value(args.clone()).map_err(|err| malformed(err.to_string()))
}

/// The input as one short line (path, argv or the raw arguments).
fn short_input(args: &Value) -> String {
    let text = match (args.get("path"), args.get("argv"), args.get("pattern")) {
        (_, Some(argv), _) => argv.to_string(),
        (_, _, Some(pattern)) => pattern.to_string(),
        (Some(Value::String(path)), _, _) => path.clone(),
        _ => args.to_string(),
    };
    truncate(&text, 80)
}

/// At most `max` bytes of `text`, cut on a character boundary, with a marker when cut.
pub fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} bytes cut]", &text[..end], text.len() - end)
}

fn cap(text: &str) -> String {
    truncate(text, RESULT_CAP)
}

/// The read-only tools, for the explorer.
pub fn read_only_specs() -> Vec<ToolSpec> {
    specs()
        .into_iter()
        .filter(|spec| READ_ONLY.contains(&spec.name.as_str()))
        .collect()
}

/// The tools offered to the model, with JSON Schema parameters.
pub fn specs() -> Vec<ToolSpec> {
    vec![
        spec(
            "list_files",
            "List the files of the repository (honours .gitignore), optionally under a directory.",
            json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "A directory relative to the repository root; omit for all."}
            }}),
        ),
        spec(
            "read_file",
            "Read a text file, with line numbers; optionally only lines start_line..=end_line (1-based).",
            json!({"type": "object", "required": ["path"], "properties": {
                "path": {"type": "string"},
                "start_line": {"type": "integer", "minimum": 1},
                "end_line": {"type": "integer", "minimum": 1}
            }}),
        ),
        spec(
            "search",
            "Search the repository (honours .gitignore) for a regular expression; returns path:line: text.",
            json!({"type": "object", "required": ["pattern"], "properties": {
                "pattern": {"type": "string", "description": "A Rust regular expression."},
                "path": {"type": "string", "description": "A directory to search under; omit for all."}
            }}),
        ),
        spec(
            "edit_file",
            "Replace the one exact occurrence of old_string in a file with new_string.",
            json!({"type": "object", "required": ["path", "old_string", "new_string"], "properties": {
                "path": {"type": "string"},
                "old_string": {"type": "string", "description": "Exact text, occurring exactly once."},
                "new_string": {"type": "string"}
            }}),
        ),
        spec(
            "write_file",
            "Create or overwrite a file with the given content.",
            json!({"type": "object", "required": ["path", "content"], "properties": {
                "path": {"type": "string"},
                "content": {"type": "string"}
            }}),
        ),
        spec(
            "run_command",
            "Run a program (no shell) in the repository root, e.g. [\"python3\", \"-m\", \"pytest\", \"-q\"]. Output is capped; there is a timeout and no network.",
            json!({"type": "object", "required": ["argv"], "properties": {
                "argv": {"type": "array", "items": {"type": "string"}, "minItems": 1}
            }}),
        ),
        spec(
            "finish",
            "End the work. First line of summary: the commit subject (imperative, <= 72 chars).",
            json!({"type": "object", "required": ["summary"], "properties": {
                "summary": {"type": "string"}
            }}),
        ),
    ]
}

fn spec(name: &str, description: &str, parameters: Value) -> ToolSpec {
    ToolSpec {
        name: name.to_owned(),
        description: description.to_owned(),
        parameters,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_keeps_char_boundaries() {
        assert_eq!(truncate("abc", 5), "abc");
        let cut = truncate("ééé", 3);
        assert!(cut.starts_with('é') && cut.contains("bytes cut"), "{cut}");
    }

    #[test]
    fn non_objects_and_missing_fields_are_malformed() {
        let err = parse::<FinishArgs>("finish", &json!("not json")).err();
        assert!(matches!(err, Some(ToolError::Malformed { .. })));
        let err = parse::<FinishArgs>("finish", &json!({"sumary": "x"})).err();
        assert!(matches!(err, Some(ToolError::Malformed { .. })));
        assert!(parse::<FinishArgs>("finish", &json!({"summary": "x"})).is_ok());
    }
}
