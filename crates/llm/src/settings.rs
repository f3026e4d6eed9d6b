//! [`LlmConfig`]: everything needed to reach a model, resolved from the configuration file's
//! [`LlmSettings`] and environment values the caller passes in ([`LlmEnv`]).
//!
//! This module never reads the process environment itself: the caller hands over a lookup, so
//! tests pass their own values and nothing here depends on global state. The key is kept in an
//! [`ApiKey`] whose `Debug` never shows it.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use super::budget::BudgetCaps;
use super::retry::DEFAULT_MAX_ATTEMPTS;
use meta_agent_config::LlmSettings;
use meta_agent_config::raw::{LlmCompat, LlmProvider, ReasoningEffort};

/// Default OpenAI base URL (the `/v1` prefix included, as `OPENAI_BASE_URL` has it).
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
/// Default Anthropic base URL.
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";
/// Default output cap of one call.
pub const DEFAULT_MAX_OUTPUT_TOKENS: u32 = 4096;
/// Default whole-request timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);
/// Default connect timeout.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A secret API key. `Debug` prints `ApiKey(***)`.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key itself, for the one header that carries it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(***)")
    }
}

/// The environment values the LLM layer uses, gathered by the caller.
#[derive(Debug, Clone, Default)]
pub struct LlmEnv {
    pub openai_api_key: Option<ApiKey>,
    pub openai_base_url: Option<String>,
    pub anthropic_api_key: Option<ApiKey>,
    /// The value of the variable named by `llm.api_key_env`, when set.
    pub configured_key: Option<ApiKey>,
}

impl LlmEnv {
    /// Gathers the values through `lookup` (the caller passes `|name| std::env::var(name).ok()`).
    pub fn from_lookup(settings: &LlmSettings, lookup: impl Fn(&str) -> Option<String>) -> Self {
        let key = |name: &str| lookup(name).filter(|value| !value.is_empty()).map(ApiKey);
        Self {
            openai_api_key: key("OPENAI_API_KEY"),
            openai_base_url: lookup("OPENAI_BASE_URL").filter(|value| !value.is_empty()),
            anthropic_api_key: key("ANTHROPIC_API_KEY"),
            configured_key: settings.api_key_env.as_deref().and_then(key),
        }
    }
}

/// How to reach the model, resolved.
#[derive(Debug, Clone)]
pub struct LlmConfig {
    pub provider: LlmProvider,
    /// The primary model (writing code, the final summary).
    pub model: String,
    /// The fast model (classification, planning, reflection).
    pub fast_model: String,
    pub base_url: String,
    pub api_key: Option<ApiKey>,
    /// Output cap of one call.
    pub max_output_tokens: u32,
    pub temperature: Option<f32>,
    /// Ask for streamed answers (`llm.stream`).
    pub stream: bool,
    /// The wire profile of an OpenAI-compatible server (`llm.compat`).
    pub compat: LlmCompat,
    /// Sent to reasoning models (`llm.reasoning_effort`).
    pub reasoning_effort: Option<ReasoningEffort>,
    pub timeout: Duration,
    pub connect_timeout: Duration,
    /// Attempts per call, the first included.
    pub max_attempts: u32,
    /// Per-run caps.
    pub budget: BudgetCaps,
    /// For `replay`: the transcript to replay (`llm.replay`; `llm.base_url` is still read for
    /// older configurations).
    pub transcript: Option<PathBuf>,
    /// Where to record the transcript of the run (`llm.record`).
    pub record: Option<PathBuf>,
    /// Azure OpenAI's request shape, when the base URL or `llm.api_version` says Azure.
    pub azure: Option<Azure>,
    /// Token budget of the agent's opening context.
    pub context_tokens: u32,
    /// Ask the fast model to reflect after each attempt.
    pub reflect: bool,
    /// The run's redactor: every request body and recorded transcript passes it (prompts quote
    /// task text, tool results and the model's own words, any of which may hold a secret).
    pub redactor: Option<std::sync::Arc<meta_agent_redact::Redactor>>,
}

/// Azure OpenAI deployments: `{endpoint}/openai/deployments/{deployment}/chat/completions
/// ?api-version=…` with the key in an `api-key` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Azure {
    pub api_version: String,
}

/// Azure's `api-version` used when `llm.api_version` is not set.
pub const AZURE_API_VERSION: &str = "2024-10-21";

/// Azure when `api_version` is set or the base URL looks like an Azure OpenAI endpoint.
pub fn detect_azure(base_url: &str, api_version: Option<&str>) -> Option<Azure> {
    let host = base_url
        .split("://")
        .nth(1)
        .unwrap_or(base_url)
        .split(['/', '?'])
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    let host = host.split(':').next().unwrap_or_default();
    let looks_azure =
        host.ends_with(".openai.azure.com") || base_url.contains("/openai/deployments/");
    (looks_azure || api_version.is_some()).then(|| Azure {
        api_version: api_version.unwrap_or(AZURE_API_VERSION).to_owned(),
    })
}

/// The transcript to replay: `llm.replay`, else (older configurations) `llm.base_url` when the
/// provider is `replay`.
fn transcript(settings: &LlmSettings) -> Option<PathBuf> {
    if settings.provider != LlmProvider::Replay {
        return None;
    }
    settings
        .replay
        .clone()
        .or_else(|| settings.base_url.clone())
        .map(PathBuf::from)
}

impl LlmConfig {
    /// Resolves `settings` with `env`: `llm.base_url` over `OPENAI_BASE_URL` over the default;
    /// the key from `llm.api_key_env` over the provider's usual variable.
    pub fn from_settings(settings: &LlmSettings, env: &LlmEnv) -> Self {
        let (default_model, base_url, key) = match settings.provider {
            LlmProvider::Openai => (
                "gpt-4.1",
                env.openai_base_url
                    .clone()
                    .unwrap_or_else(|| OPENAI_BASE_URL.to_string()),
                env.openai_api_key.clone(),
            ),
            LlmProvider::Anthropic => (
                "claude-sonnet-4-5",
                ANTHROPIC_BASE_URL.to_string(),
                env.anthropic_api_key.clone(),
            ),
            LlmProvider::None | LlmProvider::Replay => ("", String::new(), None),
        };
        let base = settings.base_url.clone().unwrap_or(base_url);
        let model = settings
            .model
            .clone()
            .unwrap_or_else(|| default_model.to_string());
        Self {
            provider: settings.provider,
            // One model unless told otherwise: a server with one model answers every call.
            fast_model: settings.fast_model.clone().unwrap_or_else(|| model.clone()),
            model,
            base_url: base.clone(),
            api_key: env.configured_key.clone().or(key),
            max_output_tokens: DEFAULT_MAX_OUTPUT_TOKENS,
            temperature: None,
            stream: settings.stream,
            compat: settings.compat,
            reasoning_effort: settings.reasoning_effort,
            timeout: DEFAULT_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            budget: BudgetCaps::from_settings(settings),
            transcript: transcript(settings),
            record: settings.record.clone().map(PathBuf::from),
            azure: (settings.provider == LlmProvider::Openai)
                .then(|| detect_azure(&base, settings.api_version.as_deref()))
                .flatten(),
            context_tokens: settings.context_tokens,
            reflect: settings.reflect,
            redactor: None,
        }
    }

    /// The same configuration, redacting what it sends with `redactor`.
    pub fn with_redactor(self, redactor: std::sync::Arc<meta_agent_redact::Redactor>) -> Self {
        Self {
            redactor: Some(redactor),
            ..self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn azure_is_detected_from_the_host_the_path_or_the_api_version() {
        let found = detect_azure("https://contoso.openai.azure.com", None);
        assert_eq!(
            found.map(|a| a.api_version),
            Some(AZURE_API_VERSION.to_owned())
        );
        assert!(detect_azure("http://127.0.0.1:9/openai/deployments/gpt4o", None).is_some());
        assert!(detect_azure("https://api.openai.com/v1", None).is_none());
        assert!(detect_azure("https://openai.azure.com.evil.example/v1", None).is_none());
        let pinned = detect_azure("http://localhost:8080", Some("2025-01-01-preview"));
        assert_eq!(
            pinned.map(|a| a.api_version),
            Some("2025-01-01-preview".to_owned())
        );
    }
}
