//! The LLM wire references in `shared/llmwire/` as a check on every request the mock LLM
//! receives, so the mock refuses what the real APIs refuse.
//!
//! - OpenAI: the published Chat Completions request schema (validated with `jsonschema`, OpenAPI's
//!   `nullable` read as JSON Schema's `null` type), plus what the reference states in words and
//!   the API enforces: unknown parameters are refused; deprecated ones (`max_tokens`) are refused
//!   by OpenAI itself (not by the compatible servers that still read them); o-series models refuse
//!   `max_tokens` and a `temperature`/`top_p` other than 1; only reasoning models take
//!   `reasoning_effort`; tool messages answer the calls of the assistant message before them.
//! - Anthropic: rules derived from the requests the SDK recorded against the live API: the keys,
//!   block types and block fields the accepted requests use (plus `system` and `temperature`,
//!   documented and used by the bot), and what the API refuses: an empty message (but an optional
//!   final assistant one), an empty text block, a `tool_use` input that is not an object, a
//!   `tool_result` without its `tool_use` in the message before (the recorded 400), a `tool_use`
//!   left unanswered, text before the tool results.
//!
//! The files are read at test time and never copied into the repository. When the directory is
//! absent the check is skipped, and that is said loudly on stderr.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use serde_json::{Map, Value, json};

/// Which API a request is meant for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// OpenAI's own Chat Completions.
    OpenAi,
    /// An OpenAI-compatible server (vLLM, Ollama): the same schema, deprecated parameters read.
    OpenAiCompatible,
    Anthropic,
}

/// The loaded references.
pub struct Reference {
    openai: jsonschema::Validator,
    /// The request's parameters and whether each is deprecated.
    openai_params: BTreeMap<String, bool>,
    anthropic: AnthropicRules,
}

/// What the recorded, accepted Anthropic requests use.
#[derive(Debug, Default)]
pub struct AnthropicRules {
    top_keys: BTreeSet<String>,
    tool_keys: BTreeSet<String>,
    block_keys: BTreeMap<String, BTreeSet<String>>,
}

/// The references, loaded once per process; `None` (said loudly) when `shared/llmwire` is absent.
pub fn reference() -> Option<&'static Reference> {
    static LOADED: OnceLock<Option<Reference>> = OnceLock::new();
    LOADED
        .get_or_init(|| {
            let Some(dir) = super::shared_dir("llmwire") else {
                eprintln!(
                    "\n!!! LLM WIRE CONFORMANCE CHECK SKIPPED: no shared/llmwire/ beside the \
                     checkout or its ancestors (CI has it); requests to the mock LLM are NOT \
                     checked against the providers' references !!!\n"
                );
                return None;
            };
            let read = |name: &str| -> Value {
                let text = std::fs::read_to_string(dir.join(name))
                    .unwrap_or_else(|err| panic!("{}/{name}: {err}", dir.display()));
                serde_json::from_str(&text).unwrap_or_else(|err| panic!("{name}: {err}"))
            };
            Some(Reference::new(
                &read("openai-chat-schemas.json"),
                &read("anthropic-recorded-requests.json"),
            ))
        })
        .as_ref()
}

/// The recorded Anthropic requests (`shared/llmwire/anthropic-recorded-requests.json`).
pub fn anthropic_recordings() -> Option<Vec<Value>> {
    let dir = super::shared_dir("llmwire")?;
    let text = std::fs::read_to_string(dir.join("anthropic-recorded-requests.json")).ok()?;
    let value: Value = serde_json::from_str(&text).ok()?;
    value["requests"].as_array().cloned()
}

impl Reference {
    fn new(openai: &Value, anthropic: &Value) -> Self {
        let mut components = openai["components"].clone();
        nullable_to_null(&mut components);
        let root = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$ref": "#/components/schemas/CreateChatCompletionRequest",
            "components": components,
        });
        let validator = jsonschema::validator_for(&root).expect("the OpenAI schema compiles");
        let mut openai_params = BTreeMap::new();
        let schemas = &openai["components"]["schemas"];
        collect_params(
            schemas,
            &schemas["CreateChatCompletionRequest"],
            &mut openai_params,
        );
        Reference {
            openai: validator,
            openai_params,
            anthropic: AnthropicRules::derive(anthropic),
        }
    }

    /// Whether `body` would be accepted by the API `wire` names; the error is the API's kind of
    /// message.
    pub fn check(&self, wire: Wire, body: &Value) -> Result<(), String> {
        match wire {
            Wire::OpenAi | Wire::OpenAiCompatible => self.check_openai(wire, body),
            Wire::Anthropic => self.anthropic.check(body),
        }
    }

    fn check_openai(&self, wire: Wire, body: &Value) -> Result<(), String> {
        let errors: Vec<String> = self
            .openai
            .iter_errors(body)
            .map(|error| format!("{}: {error}", error.instance_path()))
            .collect();
        if !errors.is_empty() {
            return Err(format!("invalid request: {}", errors.join("; ")));
        }
        let object = body.as_object().ok_or("the body is not an object")?;
        for key in object.keys() {
            match self.openai_params.get(key) {
                None => return Err(format!("Unrecognized request argument supplied: {key}")),
                Some(true) if wire == Wire::OpenAi => {
                    return Err(format!(
                        "'{key}' is deprecated in the reference and not sent to OpenAI"
                    ));
                }
                Some(_) => {}
            }
        }
        openai_model_rules(object)?;
        openai_tool_pairing(object)
    }
}

/// OpenAPI 3.0's `nullable: true` as JSON Schema's `null` type, everywhere in `schema`.
fn nullable_to_null(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            map.values_mut().for_each(nullable_to_null);
            if map.remove("nullable") != Some(Value::Bool(true)) {
                return;
            }
            if let Some(Value::String(kind)) = map.get("type").cloned() {
                map.insert("type".into(), json!([kind, "null"]));
                if let Some(Value::Array(values)) = map.get_mut("enum") {
                    values.push(Value::Null);
                }
            } else {
                let inner = Value::Object(std::mem::take(map));
                map.insert("anyOf".into(), json!([inner, {"type": "null"}]));
            }
        }
        Value::Array(items) => items.iter_mut().for_each(nullable_to_null),
        _ => {}
    }
}

/// The properties of `schema` (through `allOf` and `$ref`), each with its `deprecated` flag.
fn collect_params(schemas: &Value, schema: &Value, out: &mut BTreeMap<String, bool>) {
    if let Some(reference) = schema["$ref"].as_str() {
        let name = reference.rsplit('/').next().unwrap_or_default();
        collect_params(schemas, &schemas[name], out);
    }
    for part in schema["allOf"].as_array().into_iter().flatten() {
        collect_params(schemas, part, out);
    }
    for (name, property) in schema["properties"].as_object().into_iter().flatten() {
        let deprecated = property["deprecated"] == true
            || property["anyOf"]
                .as_array()
                .is_some_and(|parts| parts.iter().any(|part| part["deprecated"] == true));
        out.insert(name.clone(), deprecated);
    }
}

/// OpenAI's o-series and gpt-5 reasoning models.
fn is_reasoning(model: &str) -> bool {
    let name = model.rsplit('/').next().unwrap_or(model);
    let o_series = name
        .strip_prefix('o')
        .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()));
    o_series || (name.starts_with("gpt-5") && !name.contains("-chat"))
}

/// What the reference says of o-series models (`max_tokens` "not compatible with o-series
/// models"), what reasoning models refuse (a sampling temperature), and that only they take
/// `reasoning_effort`.
fn openai_model_rules(body: &Map<String, Value>) -> Result<(), String> {
    let model = body["model"].as_str().unwrap_or_default();
    if !is_reasoning(model) {
        if body.contains_key("reasoning_effort") {
            return Err(format!(
                "Unsupported parameter: 'reasoning_effort' is not supported with this model ({model})."
            ));
        }
        return Ok(());
    }
    if body.contains_key("max_tokens") {
        return Err(
            "Unsupported parameter: 'max_tokens' is not supported with this model. Use \
             'max_completion_tokens' instead."
                .into(),
        );
    }
    for key in ["temperature", "top_p"] {
        if body
            .get(key)
            .is_some_and(|value| value.as_f64() != Some(1.0))
        {
            return Err(format!(
                "Unsupported value: '{key}' does not support {} with this model. Only the \
                 default (1) value is supported.",
                body[key]
            ));
        }
    }
    Ok(())
}

/// Every tool message answers a call of the assistant message before the run of tool messages it
/// is in, and every call is answered.
fn openai_tool_pairing(body: &Map<String, Value>) -> Result<(), String> {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let mut open: Vec<String> = Vec::new();
    for message in &messages {
        let role = message["role"].as_str().unwrap_or_default();
        if role == "tool" {
            let id = message["tool_call_id"].as_str().unwrap_or_default();
            let Some(at) = open.iter().position(|call| call == id) else {
                return Err(
                    "Invalid parameter: messages with role 'tool' must be a response to \
                            a preceeding message with 'tool_calls'."
                        .into(),
                );
            };
            open.remove(at);
            continue;
        }
        if !open.is_empty() {
            return Err(format!(
                "An assistant message with 'tool_calls' must be followed by tool messages \
                 responding to each 'tool_call_id'. The following tool_call_ids did not have \
                 response messages: {}",
                open.join(", ")
            ));
        }
        open = message["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|call| call["id"].as_str().map(str::to_owned))
            .collect();
    }
    Ok(())
}

impl AnthropicRules {
    /// The keys, tool fields and block fields of the accepted (status 200) recordings, with the
    /// documented top-level fields the bot uses that no recording happens to.
    pub fn derive(recorded: &Value) -> Self {
        let mut rules = AnthropicRules::default();
        rules
            .top_keys
            .extend(["system", "temperature"].map(String::from));
        let accepted = recorded["requests"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|request| request["status"] == 200);
        for request in accepted {
            rules.learn(&request["body"]);
        }
        rules
    }

    fn learn(&mut self, body: &Value) {
        let keys = |value: &Value| -> Vec<String> {
            value
                .as_object()
                .map(|map| map.keys().cloned().collect())
                .unwrap_or_default()
        };
        self.top_keys.extend(keys(body));
        for tool in body["tools"].as_array().into_iter().flatten() {
            self.tool_keys.extend(keys(tool));
        }
        for message in body["messages"].as_array().into_iter().flatten() {
            for block in message["content"].as_array().into_iter().flatten() {
                let kind = block["type"].as_str().unwrap_or_default().to_owned();
                self.block_keys.entry(kind).or_default().extend(keys(block));
            }
        }
    }

    /// Whether the Messages API would accept `body`.
    pub fn check(&self, body: &Value) -> Result<(), String> {
        let object = body.as_object().ok_or("the body is not an object")?;
        if let Some(key) = object.keys().find(|key| !self.top_keys.contains(*key)) {
            return Err(format!("{key}: Extra inputs are not permitted"));
        }
        if !body["model"].is_string() {
            return Err("model: Field required".into());
        }
        if body["max_tokens"].as_u64().is_none_or(|cap| cap == 0) {
            return Err("max_tokens: a positive integer is required".into());
        }
        if let Some(system) = object.get("system")
            && system.as_str().is_none_or(str::is_empty)
            && !system.is_array()
        {
            return Err("system: must be a non-empty string or a list of text blocks".into());
        }
        self.check_tools(body)?;
        let messages = body["messages"]
            .as_array()
            .filter(|messages| !messages.is_empty())
            .ok_or("messages: at least one message is required")?;
        for (index, message) in messages.iter().enumerate() {
            let last = index + 1 == messages.len();
            self.check_message(index, message, last)?;
        }
        anthropic_tool_pairing(messages)
    }

    fn check_tools(&self, body: &Value) -> Result<(), String> {
        for (index, tool) in body["tools"].as_array().into_iter().flatten().enumerate() {
            let map = tool
                .as_object()
                .ok_or(format!("tools.{index}: not an object"))?;
            if let Some(key) = map.keys().find(|key| !self.tool_keys.contains(*key)) {
                return Err(format!(
                    "tools.{index}.{key}: Extra inputs are not permitted"
                ));
            }
            if !tool["name"].is_string() {
                return Err(format!("tools.{index}.name: Field required"));
            }
            let custom = !map.contains_key("type") || tool["type"] == "custom";
            if custom && tool["input_schema"]["type"] != "object" {
                return Err(format!(
                    "tools.{index}.input_schema: an object schema (type: object) is required"
                ));
            }
        }
        Ok(())
    }

    fn check_message(&self, index: usize, message: &Value, last: bool) -> Result<(), String> {
        let role = message["role"].as_str().unwrap_or_default();
        if role != "user" && role != "assistant" {
            return Err(format!("messages.{index}.role: must be user or assistant"));
        }
        let empty = match &message["content"] {
            Value::String(text) => text.is_empty(),
            Value::Array(blocks) => blocks.is_empty(),
            _ => return Err(format!("messages.{index}.content: Field required")),
        };
        if empty && !(last && role == "assistant") {
            return Err(format!(
                "messages.{index}: all messages must have non-empty content except for the \
                 optional final assistant message"
            ));
        }
        let blocks = message["content"].as_array().cloned().unwrap_or_default();
        let mut seen_other = false;
        for (at, block) in blocks.iter().enumerate() {
            let path = format!("messages.{index}.content.{at}");
            self.check_block(&path, block)?;
            if block["type"] == "tool_result" && seen_other {
                return Err(format!(
                    "{path}: tool_result blocks must come first in the content, before any text"
                ));
            }
            seen_other |= block["type"] != "tool_result";
        }
        Ok(())
    }

    fn check_block(&self, path: &str, block: &Value) -> Result<(), String> {
        let kind = block["type"].as_str().unwrap_or_default();
        let Some(known) = self.block_keys.get(kind) else {
            return Err(format!(
                "{path}.type: Input tag '{kind}' is not a known block type"
            ));
        };
        let map = block.as_object().ok_or(format!("{path}: not an object"))?;
        if let Some(key) = map.keys().find(|key| !known.contains(*key)) {
            return Err(format!("{path}.{key}: Extra inputs are not permitted"));
        }
        match kind {
            "text" if block["text"].as_str().is_none_or(str::is_empty) => {
                Err(format!("{path}: text content blocks must be non-empty"))
            }
            "tool_use" | "server_tool_use" if !block["input"].is_object() => {
                Err(format!("{path}.input: Input should be a valid dictionary"))
            }
            "tool_use" | "server_tool_use" if !block["id"].is_string() => {
                Err(format!("{path}.id: Field required"))
            }
            "tool_result" if !block["tool_use_id"].is_string() => {
                Err(format!("{path}.tool_use_id: Field required"))
            }
            "tool_result"
                if map
                    .get("content")
                    .is_some_and(|content| !content.is_string() && !content.is_array()) =>
            {
                Err(format!(
                    "{path}.content: must be a string or a list of blocks"
                ))
            }
            _ => Ok(()),
        }
    }
}

/// The ids of the blocks of `kind` in `message`, under `field`.
fn block_ids(message: &Value, kind: &str, field: &str) -> Vec<String> {
    message["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|block| block["type"] == kind)
        .filter_map(|block| block[field].as_str().map(str::to_owned))
        .collect()
}

/// Every `tool_result` answers a `tool_use` of the message before; every `tool_use` is answered
/// in the message after (unless it is the last).
fn anthropic_tool_pairing(messages: &[Value]) -> Result<(), String> {
    for (index, message) in messages.iter().enumerate() {
        let previous = index
            .checked_sub(1)
            .map_or_else(Vec::new, |at| block_ids(&messages[at], "tool_use", "id"));
        for id in block_ids(message, "tool_result", "tool_use_id") {
            if !previous.contains(&id) {
                return Err(format!(
                    "messages.{index}.content: unexpected `tool_use_id` found in `tool_result` \
                     blocks: {id}. Each `tool_result` block must have a corresponding \
                     `tool_use` block in the previous message."
                ));
            }
        }
        let Some(next) = messages.get(index + 1) else {
            continue;
        };
        let answered = block_ids(next, "tool_result", "tool_use_id");
        let open: Vec<String> = block_ids(message, "tool_use", "id")
            .into_iter()
            .filter(|id| !answered.contains(id))
            .collect();
        if !open.is_empty() {
            return Err(format!(
                "messages.{index}: `tool_use` ids were found without `tool_result` blocks \
                 immediately after: {}",
                open.join(", ")
            ));
        }
    }
    Ok(())
}
