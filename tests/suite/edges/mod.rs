//! Issue #29, "honest edges": what a hostile change can still do to "verified" and to the record,
//! each property proven end to end through the real binary, by the route the issue names and by
//! a second route of our own (SECURITY.md, containment properties 7, 8 and 9):
//!
//! - `fence`: untrusted text cannot close its fence (random per-fence ids);
//! - `hostile_tree`: hostile repository content is an outcome, never an internal error;
//! - `record`: the session record cannot be forged by quoted text;
//! - `secrets`: outputs carry no secret in a simple reversible form;
//! - `stop_reason`: the report says why the run really stopped (a refusal quotes what it refused,
//!   the model's own refusal is the reason, a call cut in the same place is a repeated call).

mod fence;
mod hostile_tree;
mod record;
mod secrets;
mod stop_reason;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::mock_llm::{Reply, openai_answer};
use crate::common::{break_mean, example, git, meta_agent, outcome_line, scratch_repo};

/// The OpenAI key the runs hold (a secret the redactor knows).
pub(super) const KEY: &str = "sk-edges-canary-4e7d0b9a61";

/// The fix of the example's `//` bug, as `edit_file` arguments.
pub(super) fn fix() -> Value {
    json!({"path": "calc.py", "old_string": "sum(values) // len(values)",
        "new_string": "sum(values) / len(values)"})
}

/// An OpenAI answer calling one tool with these arguments.
pub(super) fn call(id: &str, name: &str, args: &Value) -> Reply {
    openai_answer("", &[(id, name, &args.to_string())], "tool_calls")
}

/// An OpenAI answer calling `finish`.
pub(super) fn finish(summary: &str) -> Reply {
    call("c_end", "finish", &json!({ "summary": summary }))
}

/// The `llm:` line for OpenAI at `base_url`, without reflection or streaming.
pub(super) fn openai_llm(base_url: &str) -> String {
    format!(
        "llm: {{provider: openai, base_url: \"{base_url}\", model: gpt-4.1, reflect: false, stream: false}}\n"
    )
}

/// The example with the `//` bug in `mean`, `more` appended to its configuration and `change`
/// made to its files, committed.
pub(super) fn broken_example(
    more: &str,
    change: impl FnOnce(&Path),
) -> (tempfile::TempDir, PathBuf) {
    let (dir, work) = scratch_repo(&example());
    break_mean(&work);
    let config = work.join(".meta-agent.yml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(more);
    std::fs::write(&config, text).unwrap();
    change(&work);
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "break it"]);
    (dir, work)
}

/// What one run of the binary left: exit code, stdout, stderr and the outcome line.
pub(super) struct Ran {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub outcome: Value,
}

impl Ran {
    /// A file of the run's session directory.
    pub fn session_file(&self, work: &Path, name: &str) -> String {
        crate::common::session_file(work, &self.outcome, name)
    }
}

/// `meta-agent --repo WORK ARGS --json` with the key set, on a blocking thread.
pub(super) async fn run(work: &Path, args: &[&str]) -> Ran {
    let work = work.to_owned();
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    tokio::task::spawn_blocking(move || {
        let out = meta_agent()
            .env("OPENAI_API_KEY", KEY)
            .env("ANTHROPIC_API_KEY", KEY)
            .arg("--repo")
            .arg(&work)
            .args(&args)
            .arg("--json")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let outcome = outcome_line(&stdout);
        assert!(
            outcome.get("outcome").is_some(),
            "no outcome line (exit {:?}); stdout: {stdout}\nstderr: {stderr}",
            out.status.code()
        );
        Ran {
            code: out.status.code().unwrap_or(-1),
            stdout,
            stderr,
            outcome,
        }
    })
    .await
    .unwrap()
}
