//! The human review queue as a GitHub comment: when an evaluation runs in GitHub Actions on an
//! issue or a pull request (`GITHUB_ACTIONS=true` and an event whose payload names one), the
//! Markdown checklist of `review.md` is posted as one comment of the bot, found by a hidden
//! marker naming the suite and edited in place by a re-run or `eval grade` (never duplicated),
//! redacted and neutralised like every outbound text, and cut to GitHub's 65,536 characters.
//! Elsewhere nothing is posted. Grades stay `pending` until `eval grade`; the comment only shows
//! the queue.

use std::time::{Duration, Instant};

use crate::eval::summary::Summary;
use crate::github::api::RepoId;
use crate::github::context::ActionsContext;
use crate::github::rate::RatePolicy;
use crate::github::rest::{RestClient, RestSettings};
use crate::github::status::StatusComment;
use crate::session::github::DEFAULT_BOT_LOGIN;
use crate::session::{Environment, SessionError};

pub use crate::render::eval::review_marker as marker;

/// Where the review comment goes.
pub(super) struct Target {
    actions: ActionsContext,
    issue: u64,
    bot_login: String,
}

/// The issue or pull request an event is about: `issue.number` (issues, issue comments),
/// `pull_request.number` (pull requests, reviews), or a `workflow_dispatch` input `issue`.
pub fn thread_of(payload: &serde_json::Value) -> Option<u64> {
    let number = |value: &serde_json::Value| {
        value
            .as_u64()
            .or_else(|| value.as_str().and_then(|text| text.trim().parse().ok()))
    };
    number(&payload["issue"]["number"])
        .or_else(|| number(&payload["pull_request"]["number"]))
        .or_else(|| number(&payload["inputs"]["issue"]))
        .filter(|n| *n > 0)
}

/// The comment's target when running in GitHub Actions on an issue or pull request; `None`
/// elsewhere (said in the log when on Actions without one). A broken Actions context is a usage
/// error.
pub(super) fn target(env: &Environment) -> Result<Option<Target>, SessionError> {
    if env.get("GITHUB_ACTIONS") != Some("true") {
        return Ok(None);
    }
    let actions = ActionsContext::from_lookup(|name| env.get(name).map(str::to_owned))
        .map_err(|err| SessionError::Usage(format!("the review comment: {err}")))?;
    let payload = std::fs::read(&actions.event_path)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .unwrap_or_default();
    let Some(issue) = thread_of(&payload) else {
        tracing::info!(
            "the `{}` event names no issue or pull request: the review queue stays in review.md",
            actions.event_name
        );
        return Ok(None);
    };
    let bot_login = env
        .get("META_AGENT_BOT_LOGIN")
        .filter(|login| !login.trim().is_empty())
        .unwrap_or(DEFAULT_BOT_LOGIN)
        .to_owned();
    Ok(Some(Target {
        actions,
        issue,
        bot_login,
    }))
}

/// The comment's body (written by [`crate::render::eval::review_comment`]), its text redacted
/// and neutralised like every outbound text before it is cut to fit.
pub fn body(suite: &str, queue: &str, env: &Environment, run_url: Option<&str>) -> String {
    crate::render::eval::review_comment(suite, queue, run_url, |text| {
        crate::redact::outbound_markdown(&env.redactor, text, &["github.com"])
    })
}

/// Posts or updates the review comment when there is a target; creates none when nothing awaits
/// review. A GitHub failure is logged, never fatal: the queue is in `review.md` either way.
pub(super) async fn publish(env: &Environment, summary: &Summary, queue: &str) {
    let target = match target(env) {
        Ok(Some(target)) => target,
        Ok(None) => return,
        Err(err) => {
            tracing::warn!("{err}");
            return;
        }
    };
    if let Err(err) = post(&target, env, summary, queue).await {
        tracing::warn!("the review comment on #{}: {err}", target.issue);
    }
}

async fn post(
    target: &Target,
    env: &Environment,
    summary: &Summary,
    queue: &str,
) -> Result<(), crate::github::api::GitHubError> {
    let actions = &target.actions;
    let api = RestClient::new(RestSettings {
        api_url: actions.api_url.clone(),
        token: actions.token.clone(),
        user_agent: format!("meta-agent/{}", env!("CARGO_PKG_VERSION")),
        deadline: Some(Instant::now() + Duration::from_secs(120)),
        rate: RatePolicy::default(),
    })?;
    let repo: RepoId = actions.repository.clone();
    let mut comment = StatusComment::with_marker(
        repo,
        target.issue,
        target.bot_login.clone(),
        &marker(&summary.suite),
    );
    if summary.pending == 0 && comment.existing(&api).await?.is_none() {
        return Ok(());
    }
    let body = body(&summary.suite, queue, env, actions.run_url().as_deref());
    comment.post(&api, &body).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_thread_comes_from_the_issue_the_pull_request_or_a_dispatch_input() {
        assert_eq!(thread_of(&json!({"issue": {"number": 7}})), Some(7));
        assert_eq!(
            thread_of(&json!({"number": 9, "pull_request": {"number": 9}})),
            Some(9)
        );
        assert_eq!(thread_of(&json!({"inputs": {"issue": "12"}})), Some(12));
        assert_eq!(thread_of(&json!({"ref": "refs/heads/main"})), None);
        assert_eq!(thread_of(&json!({"inputs": {"issue": "x"}})), None);
    }

    #[test]
    fn a_huge_queue_is_cut_under_githubs_limit_and_keeps_its_marker() {
        let env = Environment::new(Vec::new());
        let queue = "- [ ] check this line of the change carefully\n".repeat(5_000);
        let text = body("bundled", &queue, &env, None);
        assert!(text.starts_with(&marker("bundled")), "{}", &text[..80]);
        assert!(text.chars().count() <= crate::render::fit::MAX_BODY_CHARS);
        assert!(
            text.contains("review.md"),
            "the cut says where the whole queue is"
        );
    }
}
