//! What `meta-agent config check` prints: where the configuration came from, the preset, the
//! model and how requests go on the wire, then each gate with its command, the setup commands
//! and the pause points. The session reads the resolved configuration into a [`ConfigCheck`]
//! (the wire settings into a [`Wire`]); the words are written here.

use std::fmt::Write as _;

use meta_agent_protocol::kinds::GateKind;
use meta_agent_protocol::pause::{Location, Rule};

/// The resolved configuration, as `config check` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigCheck<'a> {
    /// The configuration file, or `None` when there is none (defaults).
    pub source: Option<String>,
    pub preset: Option<&'a str>,
    /// Why that preset (or none) applies.
    pub preset_reason: &'a str,
    pub provider: String,
    pub model: Option<&'a str>,
    pub base_url: Option<&'a str>,
    /// How the model is spoken to (streaming, compatibility, reasoning effort).
    pub wire: Wire,
    pub gates: Vec<GateLine<'a>>,
    /// The setup commands, in order.
    pub setup: Vec<String>,
    pub pause: &'a [Rule],
}

/// How requests go on the wire, as the LLM settings resolve it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wire {
    /// Answers come streamed (`llm.stream`).
    pub streamed: bool,
    pub dialect: Dialect,
}

/// What the provider makes of the wire settings besides streaming.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dialect {
    /// `provider: openai`: the compatibility profile (`llm.compat`), the request field that
    /// carries the output cap, and the reasoning effort sent to reasoning models, if set.
    Openai {
        compat: String,
        cap_field: &'static str,
        reasoning_effort: Option<String>,
    },
    /// `provider: anthropic` with `llm.compat` or `llm.reasoning_effort` set, which it ignores.
    AnthropicIgnoring,
    /// Nothing more to say (anthropic as configured, no provider, a replay).
    Plain,
}

/// One configured gate.
#[derive(Debug, Clone, PartialEq)]
pub struct GateLine<'a> {
    pub name: &'a str,
    pub kind: GateKind,
    pub command: String,
    /// The gate runs with the network on (`network: on`).
    pub network_on: bool,
}

/// The text of `meta-agent config check`.
pub fn check(check: &ConfigCheck) -> String {
    let source = check
        .source
        .as_deref()
        .unwrap_or("no configuration file (defaults)");
    let mut out = format!(
        "configuration OK: {source}\npreset: {} ({})\nllm: {}, {}, {}\n{}\ngates:\n",
        check.preset.unwrap_or("none"),
        check.preset_reason,
        check.provider,
        check.model.unwrap_or("default model"),
        check.base_url.unwrap_or("default URL"),
        wire_line(&check.wire)
    );
    if check.gates.is_empty() {
        out.push_str("  none: add `gates:` to .meta-agent.yml, or a `preset:`\n");
    }
    for gate in &check.gates {
        let network = if gate.network_on {
            " [network: on — runs model-written code online]"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "  - {} ({}): {}{network}",
            gate.name,
            super::gates::kind_word(gate.kind),
            gate.command
        );
    }
    if !check.setup.is_empty() {
        out.push_str("setup (once per run, before the build, network on):\n");
        for command in &check.setup {
            let _ = writeln!(out, "  - {command}");
        }
    }
    if !check.pause.is_empty() {
        out.push_str("pause points:\n");
        for rule in check.pause {
            let only = if rule.at == Location::BeforePush {
                " (GitHub runs that push only: a local run never pushes)"
            } else {
                ""
            };
            let _ = writeln!(out, "  - {}{only}", rule.describe());
        }
    }
    out
}

/// One line on how requests go on the wire: streamed or whole answers, and for `provider:
/// openai` the output-cap field (`llm.compat`) and the reasoning effort.
pub fn wire_line(wire: &Wire) -> String {
    let answers = if wire.streamed {
        "streamed answers"
    } else {
        "whole answers (llm.stream: false)"
    };
    match &wire.dialect {
        Dialect::Openai {
            compat,
            cap_field,
            reasoning_effort,
        } => {
            let effort = reasoning_effort.as_ref().map_or(String::new(), |effort| {
                format!(", reasoning_effort {effort} to reasoning models")
            });
            format!("llm wire: {answers}; compat {compat} (output cap as {cap_field}){effort}")
        }
        Dialect::AnthropicIgnoring => format!(
            "llm wire: {answers}; llm.compat and llm.reasoning_effort are ignored by anthropic"
        ),
        Dialect::Plain => format!("llm wire: {answers}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_check_as_people_read_it() {
        let rules = [
            Rule::new(Location::BeforeLlmCall, None, 1, 2).unwrap(),
            Rule::new(Location::BeforePush, None, 0, 1).unwrap(),
        ];
        let gates = vec![
            GateLine {
                name: "tests",
                kind: GateKind::Tests,
                command: "python -m pytest --junitxml={report_dir}/junit.xml".into(),
                network_on: false,
            },
            GateLine {
                name: "e2e",
                kind: GateKind::Custom,
                command: "npm run e2e".into(),
                network_on: true,
            },
        ];
        let with_file = ConfigCheck {
            source: Some(".meta-agent.yml".into()),
            preset: Some("python"),
            preset_reason: "pyproject.toml found",
            provider: "anthropic".into(),
            model: Some("claude-sonnet-4"),
            base_url: None,
            wire: Wire {
                streamed: true,
                dialect: Dialect::Plain,
            },
            gates,
            setup: vec!["pip install -e .".into()],
            pause: &rules,
        };
        let defaults = ConfigCheck {
            source: None,
            preset: None,
            preset_reason: "no project file recognised",
            provider: "openai".into(),
            model: None,
            base_url: Some("http://127.0.0.1:8080/v1"),
            wire: Wire {
                streamed: false,
                dialect: Dialect::Openai {
                    compat: "vllm".into(),
                    cap_field: "max_tokens",
                    reasoning_effort: None,
                },
            },
            gates: Vec::new(),
            setup: Vec::new(),
            pause: &[],
        };
        insta::assert_snapshot!(
            "config_check",
            [check(&with_file), check(&defaults)].join("---\n")
        );
    }

    #[test]
    fn wire_lines_as_people_read_them() {
        let openai = Dialect::Openai {
            compat: "openai".into(),
            cap_field: "max_completion_tokens",
            reasoning_effort: Some("high".into()),
        };
        let ollama = Dialect::Openai {
            compat: "ollama".into(),
            cap_field: "max_tokens",
            reasoning_effort: None,
        };
        let lines: Vec<String> = [
            (true, openai),
            (false, ollama),
            (true, Dialect::AnthropicIgnoring),
            (false, Dialect::Plain),
        ]
        .into_iter()
        .map(|(streamed, dialect)| wire_line(&Wire { streamed, dialect }))
        .collect();
        insta::assert_snapshot!("wire_lines", lines.join("\n"));
    }
}
