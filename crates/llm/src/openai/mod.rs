//! The OpenAI-compatible Chat Completions API (`POST {base}/chat/completions`): OpenAI, Azure-style
//! deployments, OpenRouter, Gemini's OpenAI endpoint, Ollama, vLLM, llama.cpp.
//!
//! The request body follows OpenAI's current reference ([`request`], shaped per server by a
//! [`WireProfile`]); the answer, whole or streamed as SSE chunks, is read by [`answer`]. HTTP and
//! retries are [`Transport`]'s; this module holds the provider: headers, Azure's paths.

mod answer;
mod request;

use reqwest::header::HeaderMap;

use super::transport::{Post, Transport, secret_header};
use super::{ApiKey, Azure, ChatRequest, Completion, LlmError, Provider};

pub use request::{WireProfile, is_reasoning_model, request_body, token_field};

/// A Chat Completions service.
#[derive(Debug)]
pub struct OpenAi {
    transport: Transport,
    api_key: Option<ApiKey>,
    azure: Option<AzureShape>,
    profile: WireProfile,
}

/// Azure's shape of the same API.
#[derive(Debug)]
struct AzureShape {
    api_version: String,
    /// The base URL already ends in `/openai/deployments/{name}`; otherwise the model names the
    /// deployment.
    deployment_in_base: bool,
}

impl OpenAi {
    /// A provider over `transport`; without a key no `authorization` header is sent (local
    /// servers).
    pub fn new(transport: Transport, api_key: Option<ApiKey>) -> Self {
        Self {
            transport,
            api_key,
            azure: None,
            profile: WireProfile::default(),
        }
    }

    /// Requests shaped for this server (`llm.compat`, `llm.reasoning_effort`).
    pub fn with_profile(self, profile: WireProfile) -> Self {
        Self { profile, ..self }
    }

    /// Azure OpenAI: the deployment path, the `api-version` query parameter and the key in an
    /// `api-key` header. `base_url` is the transport's.
    pub fn azure(self, azure: &Azure, base_url: &str) -> Self {
        Self {
            azure: Some(AzureShape {
                api_version: azure.api_version.clone(),
                deployment_in_base: base_url.contains("/openai/deployments/"),
            }),
            ..self
        }
    }

    fn headers(&self) -> Result<HeaderMap, LlmError> {
        let mut headers = HeaderMap::new();
        if let Some(key) = &self.api_key {
            let (name, value) = match &self.azure {
                Some(_) => secret_header("api-key", key.expose())?,
                None => secret_header("authorization", &format!("Bearer {}", key.expose()))?,
            };
            headers.insert(name, value);
        }
        Ok(headers)
    }

    /// `/chat/completions`, or Azure's deployment path with its `api-version`.
    fn path(&self, model: &str) -> String {
        match &self.azure {
            None => "/chat/completions".to_owned(),
            Some(azure) if azure.deployment_in_base => {
                format!("/chat/completions?api-version={}", azure.api_version)
            }
            Some(azure) => format!(
                "/openai/deployments/{model}/chat/completions?api-version={}",
                azure.api_version
            ),
        }
    }
}

impl Provider for OpenAi {
    async fn chat(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        let body = request_body(request, &self.profile);
        let path = self.path(&request.model);
        let post = Post {
            path: &path,
            headers: self.headers()?,
            body: &body,
            stream: request.stream,
        };
        let draft = self.transport.send(&post, answer::read_answer).await?;
        Ok(draft.priced(&request.model))
    }

    fn name(&self) -> &str {
        "openai"
    }
}
