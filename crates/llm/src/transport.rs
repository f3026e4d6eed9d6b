//! The HTTP side shared by the real providers: one POST with retries, status classification, and
//! reading the answer whole (JSON) or as a complete list of SSE events.
//!
//! A streamed answer is read to its end before anything is parsed, so a stream cut in the middle
//! yields an error and nothing else. This module knows no wire format beyond HTTP, JSON and SSE;
//! it never logs request bodies or keys, and every body it sends passes the run's redactor.

use meta_agent_net::{innermost, read_capped};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};
use serde_json::Value;

use super::LlmError;
use super::retry::{RetryPolicy, parse_retry_after};
use super::sse::{SseEvent, SseParser};
use meta_agent_redact::Redactor;

/// Largest answer read, whole or streamed.
const MAX_BODY: usize = 16 << 20;
/// Largest error body read to classify a failure.
const MAX_ERROR_BODY: usize = 64 << 10;
/// Longest wait for the next event of a stream (SSE comments, i.e. keep-alives, do not count).
pub const IDLE_STREAM_TIMEOUT: Duration = Duration::from_secs(120);

/// How to reach one service.
#[derive(Debug, Clone)]
pub struct TransportSettings {
    pub base_url: String,
    /// Whole-request timeout (streams included), bounded by what remains of the run's deadline
    /// (in `retry.deadline`).
    pub timeout: Duration,
    pub connect_timeout: Duration,
    /// Longest wait for the next streamed event (bounded by the deadline too).
    pub idle_timeout: Duration,
    pub retry: RetryPolicy,
    /// Applied to every request body before it leaves.
    pub redactor: Option<Arc<Redactor>>,
}

/// One POST to send.
#[derive(Debug)]
pub struct Post<'a> {
    /// Appended to the base URL, e.g. `/chat/completions`.
    pub path: &'a str,
    /// Headers; the first may be the credential (marked sensitive).
    pub headers: HeaderMap,
    pub body: &'a Value,
    pub stream: bool,
}

/// What came back, read to the end.
#[derive(Debug)]
pub enum Answer {
    Whole(Value),
    Events(Vec<SseEvent>),
}

/// A client for one base URL, with its retry policy.
#[derive(Debug)]
pub struct Transport {
    client: reqwest::Client,
    base_url: String,
    retry: RetryPolicy,
    redactor: Option<Arc<Redactor>>,
    timeout: Duration,
    idle_timeout: Duration,
}

/// A header for the credential, marked sensitive so it is never printed.
pub fn secret_header(
    name: &'static str,
    value: &str,
) -> Result<(HeaderName, HeaderValue), LlmError> {
    let mut value = HeaderValue::from_str(value).map_err(|_| LlmError::Rejected {
        status: 0,
        message: "the API key holds characters not allowed in an HTTP header".to_string(),
    })?;
    value.set_sensitive(true);
    Ok((HeaderName::from_static(name), value))
}

impl Transport {
    /// Builds the client (rustls, no proxy from the environment).
    pub fn new(settings: TransportSettings) -> Result<Self, LlmError> {
        let client = reqwest::Client::builder()
            .timeout(settings.timeout)
            .connect_timeout(settings.connect_timeout)
            .no_proxy()
            .build()
            .map_err(|error| LlmError::Unreachable {
                base_url: settings.base_url.clone(),
                detail: innermost(&error),
            })?;
        let base_url = settings.base_url.trim_end_matches('/').to_string();
        Ok(Self {
            client,
            base_url,
            retry: settings.retry,
            redactor: settings.redactor,
            timeout: settings.timeout,
            idle_timeout: settings.idle_timeout,
        })
    }

    /// Sends `post` until an answer is read by `read`, retrying transient failures (a malformed
    /// stream included: `read` may return [`LlmError::StreamCut`]).
    pub async fn send<T, R>(&self, post: &Post<'_>, read: R) -> Result<T, LlmError>
    where
        R: Fn(Answer) -> Result<T, LlmError> + Sync,
    {
        let read = &read;
        self.retry
            .run(|| async move { read(self.attempt(post).await?) })
            .await
    }

    /// One attempt, ended by the whole-request timeout or the run's deadline, whichever is first.
    async fn attempt(&self, post: &Post<'_>) -> Result<Answer, LlmError> {
        let deadline = self.retry.deadline;
        if deadline.is_spent() {
            return Err(LlmError::DeadlinePassed);
        }
        match tokio::time::timeout(deadline.bound(self.timeout), self.attempt_once(post)).await {
            Ok(answer) => answer,
            Err(_) if deadline.is_spent() => Err(LlmError::DeadlinePassed),
            Err(_) => Err(LlmError::Timeout {
                base_url: self.base_url.clone(),
            }),
        }
    }

    /// One attempt: send, classify the status, read the answer.
    async fn attempt_once(&self, post: &Post<'_>) -> Result<Answer, LlmError> {
        let response = self
            .client
            .post(format!("{}{}", self.base_url, post.path))
            .headers(post.headers.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(self.outbound_body(post.body))
            .send()
            .await
            .map_err(|error| self.request_error(&error))?;
        if !response.status().is_success() {
            return Err(self.status_error(response).await);
        }
        if post.stream {
            read_events(response, self.idle_timeout)
                .await
                .map(Answer::Events)
        } else {
            self.read_whole(response).await.map(Answer::Whole)
        }
    }

    /// The body as sent: JSON, with every secret the run holds and every token pattern
    /// replaced by the redactor (its markers keep the JSON valid).
    fn outbound_body(&self, body: &Value) -> String {
        let text = body.to_string();
        match &self.redactor {
            Some(redactor) => redactor.redact_text(&text).into_owned(),
            None => text,
        }
    }

    async fn read_whole(&self, response: reqwest::Response) -> Result<Value, LlmError> {
        let bytes = read_capped(response, MAX_BODY)
            .await
            .map_err(|error| self.request_error(&error))?;
        if bytes.len() > MAX_BODY {
            let detail = format!("the answer passed {MAX_BODY} bytes");
            return Err(LlmError::Malformed { detail });
        }
        serde_json::from_slice(&bytes).map_err(|error| LlmError::Malformed {
            detail: format!("not JSON: {error}"),
        })
    }

    async fn status_error(&self, response: reqwest::Response) -> LlmError {
        let status = response.status().as_u16();
        let retry_after = retry_after(response.headers());
        let body = read_capped(response, MAX_ERROR_BODY)
            .await
            .unwrap_or_default();
        let failure = Failure {
            status,
            retry_after,
            body: &String::from_utf8_lossy(&body),
        };
        classify(&failure, &self.base_url)
    }

    fn request_error(&self, error: &reqwest::Error) -> LlmError {
        let base_url = self.base_url.clone();
        if error.is_timeout() {
            LlmError::Timeout { base_url }
        } else {
            LlmError::Unreachable {
                base_url,
                detail: innermost(error),
            }
        }
    }
}

/// The wait the service asked for: OpenAI's `retry-after-ms`, else the standard `retry-after`
/// (seconds or an HTTP-date).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let header = |name| {
        headers
            .get(name)
            .and_then(|value: &HeaderValue| value.to_str().ok())
    };
    if let Some(millis) = header("retry-after-ms").and_then(|value| value.trim().parse().ok()) {
        return Some(Duration::from_millis(millis));
    }
    parse_retry_after(header(RETRY_AFTER.as_str())?, SystemTime::now())
}

/// An unsuccessful HTTP answer.
#[derive(Debug)]
pub struct Failure<'a> {
    pub status: u16,
    pub retry_after: Option<Duration>,
    pub body: &'a str,
}

/// Sorts an unsuccessful answer into an [`LlmError`].
pub fn classify(failure: &Failure<'_>, base_url: &str) -> LlmError {
    let (status, retry_after) = (failure.status, failure.retry_after);
    let message = error_message(failure.body);
    if status == 402 || is_spend_limit(failure.body) {
        return LlmError::SpendLimit { status, message };
    }
    if matches!(status, 400 | 413 | 422) && is_context_too_long(status, failure.body) {
        return LlmError::ContextTooLong { status, message };
    }
    match status {
        401 | 403 => LlmError::AuthRejected {
            status,
            base_url: base_url.to_string(),
            message,
        },
        429 => LlmError::RateLimited {
            retry_after,
            message,
        },
        408 | 409 | 500..=599 => LlmError::Unavailable {
            status,
            retry_after,
            message,
        },
        _ => LlmError::Rejected { status, message },
    }
}

/// OpenAI's `insufficient_quota` and Anthropic's billing errors: no point waiting.
fn is_spend_limit(body: &str) -> bool {
    [
        "insufficient_quota",
        "billing_error",
        "credit balance is too low",
    ]
    .iter()
    .any(|marker| body.contains(marker))
}

/// OpenAI's `context_length_exceeded` (vLLM says "maximum context length" too), Anthropic's
/// "prompt is too long" and its 413 `request_too_large`.
fn is_context_too_long(status: u16, body: &str) -> bool {
    let lower = body.to_ascii_lowercase();
    status == 413
        || [
            "context_length_exceeded",
            "maximum context length",
            "prompt is too long",
            "request_too_large",
        ]
        .iter()
        .any(|marker| lower.contains(marker))
}

/// `error.message` of either provider's error body, else the body's start.
fn error_message(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let message = parsed
        .as_ref()
        .and_then(|value| value.pointer("/error/message"))
        .and_then(Value::as_str);
    match message {
        Some(message) => message.to_string(),
        None => body.trim().chars().take(300).collect(),
    }
}

/// Reads every SSE event to the end of the body. A broken connection, an oversized stream or
/// `idle` without an event (keep-alive comments are no events) is a [`LlmError::StreamCut`]: the
/// caller gets nothing from it.
async fn read_events(
    mut response: reqwest::Response,
    idle: Duration,
) -> Result<Vec<SseEvent>, LlmError> {
    let cut = |detail: String| LlmError::StreamCut { detail };
    let mut parser = SseParser::default();
    let (mut events, mut read) = (Vec::new(), 0usize);
    let mut last_event = tokio::time::Instant::now();
    loop {
        let next = tokio::time::timeout_at(last_event + idle, response.chunk()).await;
        let Ok(chunk) = next else {
            return Err(cut(format!("no event for {} s", idle.as_secs())));
        };
        let Some(chunk) = chunk.map_err(|error| cut(innermost(&error)))? else {
            return Ok(events);
        };
        read += chunk.len();
        if read > MAX_BODY {
            return Err(cut(format!("the stream passed {MAX_BODY} bytes")));
        }
        let fed = parser.feed(&chunk).map_err(|err| cut(err.to_string()))?;
        if !fed.is_empty() {
            last_event = tokio::time::Instant::now();
        }
        events.extend(fed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(status: u16, body: &str) -> LlmError {
        classify(
            &Failure {
                status,
                retry_after: None,
                body,
            },
            "http://x",
        )
    }

    #[test]
    fn statuses_sort_into_transient_and_final() {
        for status in [408, 409, 429, 500, 502, 503, 529] {
            assert!(failure(status, "{}").is_transient(), "{status}");
        }
        for status in [400, 401, 403, 404, 402, 422] {
            assert!(!failure(status, "{}").is_transient(), "{status}");
        }
    }

    #[test]
    fn spend_limits_are_final_even_on_429() {
        let openai = r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}"#;
        let anthropic = r#"{"type":"error","error":{"type":"billing_error","message":"Your credit balance is too low"}}"#;
        for body in [openai, anthropic] {
            let error = failure(429, body);
            assert!(
                matches!(error, LlmError::SpendLimit { status: 429, .. }),
                "{error:?}"
            );
            assert!(!error.is_transient());
        }
    }

    #[test]
    fn context_length_refusals_are_recognised_from_either_provider() {
        let openai = r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130001 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        let anthropic = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}}"#;
        for body in [openai, anthropic] {
            let error = failure(400, body);
            assert!(
                matches!(error, LlmError::ContextTooLong { status: 400, .. }),
                "{error:?}"
            );
        }
        assert!(matches!(
            failure(413, "request_too_large"),
            LlmError::ContextTooLong { status: 413, .. }
        ));
        let other = failure(400, r#"{"error":{"message":"Unsupported parameter"}}"#);
        assert!(matches!(other, LlmError::Rejected { .. }), "{other:?}");
    }

    #[test]
    fn retry_after_ms_wins_over_seconds() {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, HeaderValue::from_static("3"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(3)));
        headers.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(250)));
        assert_eq!(retry_after(&HeaderMap::new()), None);
    }

    #[test]
    fn auth_message_is_friendly() {
        let body = r#"{"error":{"message":"Incorrect API key provided"}}"#;
        let text = failure(401, body).to_string();
        assert_eq!(
            text,
            "the API key was rejected (401) by http://x: Incorrect API key provided"
        );
    }
}
