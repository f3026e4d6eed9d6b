//! How the REST client words a failure: a non-2xx status as the [`GitHubError`] variant it
//! means with GitHub's own `message` (clipped), and a transport failure with its cause in plain
//! words ("connection refused"). Nothing here sees the token or a request's headers, so no
//! error text can carry it.

use reqwest::{StatusCode, Url};
use serde_json::Value;

use crate::api::GitHubError;

/// The longest GitHub `message` kept in an error.
const MESSAGE_CAP: usize = 500;

/// An error for a non-2xx, non-rate-limit status, with GitHub's `message`.
pub(super) fn status_error(status: StatusCode, what: &str, body: &str) -> GitHubError {
    let message = github_message(body);
    match status.as_u16() {
        code @ (401 | 403) => GitHubError::Unauthorized {
            status: code,
            what: what.to_owned(),
            message,
        },
        404 => GitHubError::NotFound {
            what: what.to_owned(),
        },
        code => GitHubError::Http {
            status: code,
            what: what.to_owned(),
            message,
        },
    }
}

/// `message`, then each `errors[].message` (or `code` of `field`), as GitHub words them.
pub(super) fn github_message(body: &str) -> String {
    let Ok(value) = serde_json::from_str::<Value>(body) else {
        let text = body.trim();
        return if text.is_empty() {
            "no message".to_owned()
        } else {
            clip(text)
        };
    };
    let mut parts: Vec<String> = value
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .into_iter()
        .collect();
    let details = value.get("errors").and_then(Value::as_array);
    parts.extend(details.into_iter().flatten().filter_map(error_detail));
    if parts.is_empty() {
        return "no message".to_owned();
    }
    clip(&parts.join(": "))
}

fn error_detail(detail: &Value) -> Option<String> {
    if let Some(message) = detail.get("message").and_then(Value::as_str) {
        return Some(message.to_owned());
    }
    let code = detail.get("code").and_then(Value::as_str)?;
    let field = detail.get("field").and_then(Value::as_str).unwrap_or("?");
    Some(format!("{field} {code}"))
}

fn clip(text: &str) -> String {
    match text.char_indices().nth(MESSAGE_CAP) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// A transport failure, with its cause in plain words.
pub(super) fn unreachable(url: &Url, error: &reqwest::Error) -> GitHubError {
    GitHubError::Unreachable {
        url: url.to_string(),
        message: plain_cause(error),
    }
}

fn plain_cause(error: &reqwest::Error) -> String {
    if error.is_timeout() {
        return "timed out".to_owned();
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    let mut innermost = error.to_string();
    while let Some(current) = source {
        if let Some(io) = current.downcast_ref::<std::io::Error>() {
            return io_words(io);
        }
        innermost = current.to_string();
        source = current.source();
    }
    innermost
}

fn io_words(error: &std::io::Error) -> String {
    use std::io::ErrorKind;
    match error.kind() {
        ErrorKind::ConnectionRefused => "connection refused".to_owned(),
        ErrorKind::ConnectionReset => "connection reset".to_owned(),
        ErrorKind::ConnectionAborted => "connection aborted".to_owned(),
        ErrorKind::TimedOut => "timed out".to_owned(),
        ErrorKind::UnexpectedEof => "the connection closed mid-answer".to_owned(),
        _ => error.to_string(),
    }
}

pub(super) fn body_error(what: &str, error: &reqwest::Error) -> GitHubError {
    GitHubError::Unreachable {
        url: error.url().map(Url::to_string).unwrap_or_default(),
        message: format!("reading {what}: {}", plain_cause(error)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn github_messages_carry_the_validation_details() {
        let body = r#"{"message":"Validation Failed","errors":[{"resource":"PullRequest","code":"custom","message":"A pull request already exists for o:b."}],"documentation_url":"https://docs.github.com/rest"}"#;
        assert_eq!(
            github_message(body),
            "Validation Failed: A pull request already exists for o:b."
        );
        let body = r#"{"message":"Validation Failed","errors":[{"resource":"Issue","code":"missing_field","field":"body"}]}"#;
        assert_eq!(
            github_message(body),
            "Validation Failed: body missing_field"
        );
        assert_eq!(github_message(""), "no message");
    }
}
