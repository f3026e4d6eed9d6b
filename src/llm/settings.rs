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
use crate::config::LlmSettings;
use crate::config::raw::LlmProvider;

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
    /// Ask for streamed answers.
    pub stream: bool,
    pub timeout: Duration,
    pub connect_timeout: Duration,
    /// Attempts per call, the first included.
    pub max_attempts: u32,
    /// Per-run caps.
    pub budget: BudgetCaps,
    /// For `replay`: the transcript to replay (`llm.base_url` names it).
    pub transcript: Option<PathBuf>,
}

impl LlmConfig {
    /// Resolves `settings` with `env`: `llm.base_url` over `OPENAI_BASE_URL` over the default;
    /// the key from `llm.api_key_env` over the provider's usual variable.
    pub fn from_settings(settings: &LlmSettings, env: &LlmEnv) -> Self {
        let (models, base_url, key) = match settings.provider {
            LlmProvider::Openai => (
                ("gpt-4.1", "gpt-4.1-mini"),
                env.openai_base_url
                    .clone()
                    .unwrap_or_else(|| OPENAI_BASE_URL.to_string()),
                env.openai_api_key.clone(),
            ),
            LlmProvider::Anthropic => (
                ("claude-sonnet-4-5", "claude-haiku-4-5"),
                ANTHROPIC_BASE_URL.to_string(),
                env.anthropic_api_key.clone(),
            ),
            LlmProvider::None | LlmProvider::Replay => (("", ""), String::new(), None),
        };
        let model = settings
            .model
            .clone()
            .unwrap_or_else(|| models.0.to_string());
        Self {
            provider: settings.provider,
            fast_model: settings
                .fast_model
                .clone()
                .unwrap_or_else(|| models.1.to_string()),
            model,
            base_url: settings.base_url.clone().unwrap_or(base_url),
            api_key: env.configured_key.clone().or(key),
            max_output_tokens: DEFAULT_MAX_OUTPUT_TOKENS,
            temperature: None,
            stream: true,
            timeout: DEFAULT_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            budget: BudgetCaps::from_settings(settings),
            transcript: (settings.provider == LlmProvider::Replay)
                .then(|| settings.base_url.clone().map(PathBuf::from))
                .flatten(),
        }
    }
}
