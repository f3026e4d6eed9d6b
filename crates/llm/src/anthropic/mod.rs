//! The Anthropic Messages API (`POST {base}/v1/messages`).
//!
//! The request body keeps to the rules the API enforces ([`request`]); the answer, whole or
//! streamed (`message_start` ... `message_stop`), is read by [`answer`]. HTTP and retries are
//! [`Transport`]'s; this module holds the provider and its headers.

mod answer;
mod request;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use super::transport::{Post, Transport, secret_header};
use super::{ApiKey, ChatRequest, Completion, LlmError, Provider};

pub use request::request_body;

/// The API version this module speaks.
pub const API_VERSION: &str = "2023-06-01";

/// A Messages API service.
#[derive(Debug)]
pub struct Anthropic {
    transport: Transport,
    api_key: ApiKey,
}

impl Anthropic {
    pub fn new(transport: Transport, api_key: ApiKey) -> Self {
        Self { transport, api_key }
    }

    fn headers(&self) -> Result<HeaderMap, LlmError> {
        let (name, value) = secret_header("x-api-key", self.api_key.expose())?;
        let mut headers = HeaderMap::new();
        headers.insert(name, value);
        let version = HeaderValue::from_static(API_VERSION);
        headers.insert(HeaderName::from_static("anthropic-version"), version);
        Ok(headers)
    }
}

impl Provider for Anthropic {
    async fn chat(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        let body = request_body(request)?;
        let post = Post {
            path: "/v1/messages",
            headers: self.headers()?,
            body: &body,
            stream: request.stream,
        };
        let draft = self.transport.send(&post, answer::read_answer).await?;
        Ok(draft.priced(&request.model))
    }

    fn name(&self) -> &str {
        "anthropic"
    }
}
