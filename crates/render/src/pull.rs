//! The pull request's body: what was verified, the result, the commit message with its
//! trailers, the issue it fixes or the pull request it is stacked on. Pure; the session layer
//! appends the session record.

use super::job;
use meta_agent_protocol::state::LoopState;
use meta_agent_protocol::task::TaskSource;

/// The pull request's body: what was done, the gates, the trailers, the issue it fixes.
pub fn pull_body(state: &LoopState, commit_message: Option<&str>) -> String {
    let mut body = String::from("Verified by the repository's gates before it was pushed.\n\n");
    body.push_str(&job::markdown_result(state));
    if let Some(message) = commit_message {
        body.push_str("\n<details><summary>Commit message and trailers</summary>\n\n```text\n");
        body.push_str(&message.replace("```", "'''"));
        body.push_str("\n```\n</details>\n");
    }
    if let Some(issue) = state.task.issue {
        body.push_str(&format!("\nFixes #{issue}\n"));
    }
    if let TaskSource::PullRequest {
        number, head_ref, ..
    } = &state.task.source
    {
        body.push_str(&format!(
            "\nStacked on #{number}: merging this pull request puts the fix on `{head_ref}`, the \
             branch of #{number}.\n"
        ));
    }
    body
}
