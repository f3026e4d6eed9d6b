//! GitHub's published webhook examples, from the npm package `@octokit/webhooks-examples` (MIT,
//! the octokit/webhooks repository's `payload-examples/`), which `scripts/test.sh` installs under
//! `target/test-tools/npm/` and names in `META_AGENT_TEST_WEBHOOK_EXAMPLES`.
//!
//! Where that variable names a directory, it must hold the package: a test that needs the
//! examples fails when they are missing (as under `scripts/test.sh`). Without the variable, the
//! examples are looked for where `scripts/test.sh` puts them, and a test finding none skips,
//! saying so on stderr: a fresh clone's `cargo nextest run` passes without anything only this
//! team has.

use std::path::PathBuf;

use serde_json::Value;

/// The package version `scripts/test.sh` installs.
pub const PACKAGE: &str = "@octokit/webhooks-examples@7.6.1";

/// Every example payload of the public API (`api.github.com/index.json`), by event name.
pub struct WebhookExamples {
    events: Vec<(String, Vec<Value>)>,
}

impl WebhookExamples {
    /// The examples, or `None` (after saying so on stderr) when they are not installed and no
    /// one asked for them; panics when `META_AGENT_TEST_WEBHOOK_EXAMPLES` names a directory
    /// without them.
    pub fn load(test: &str) -> Option<WebhookExamples> {
        let required = std::env::var_os("META_AGENT_TEST_WEBHOOK_EXAMPLES").map(PathBuf::from);
        let dir = required.clone().unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("target/test-tools/npm/node_modules/@octokit/webhooks-examples")
        });
        let index = dir.join("api.github.com/index.json");
        let Ok(text) = std::fs::read_to_string(&index) else {
            assert!(
                required.is_none(),
                "{test}: META_AGENT_TEST_WEBHOOK_EXAMPLES names {}, which holds no {PACKAGE} \
                 (scripts/test.sh installs it with npm)",
                dir.display()
            );
            eprintln!(
                "SKIPPED {test}: GitHub's webhook examples are not installed ({PACKAGE} under \
                 {}; scripts/test.sh installs it)",
                dir.display()
            );
            return None;
        };
        let parsed: Value =
            serde_json::from_str(&text).unwrap_or_else(|err| panic!("{}: {err}", index.display()));
        let events = parsed
            .as_array()
            .unwrap_or_else(|| panic!("{}: not a list of events", index.display()))
            .iter()
            .map(|event| {
                let name = event["name"].as_str().unwrap_or_default().to_owned();
                let examples = event["examples"].as_array().cloned().unwrap_or_default();
                (name, examples)
            })
            .collect();
        Some(WebhookExamples { events })
    }

    /// The examples of one event (`issues`, `workflow_run`, ...), in the package's order.
    pub fn of(&self, event: &str) -> &[Value] {
        self.events
            .iter()
            .find(|(name, _)| name == event)
            .map_or(&[], |(_, examples)| examples.as_slice())
    }

    /// Every example, with its event name.
    pub fn all(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.events
            .iter()
            .flat_map(|(name, examples)| examples.iter().map(move |e| (name.as_str(), e)))
    }

    /// The first example of `event` that `wanted` accepts; panics naming what was looked for.
    pub fn first(&self, event: &str, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        self.of(event)
            .iter()
            .find(|example| wanted(example))
            .cloned()
            .unwrap_or_else(|| panic!("{PACKAGE} has no `{event}` example {what}"))
    }
}
