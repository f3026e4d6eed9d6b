//! Choosing the provider from an [`LlmConfig`]: [`connect`] returns an [`AnyProvider`] (recorded
//! to a transcript when `llm.record` says so), and the offline [`Offline`] provider for `none`.
//!
//! The only place that maps configuration to an implementation; the rest of the program sees the
//! [`Provider`] trait. No environment reads here.

use super::anthropic::Anthropic;
use super::openai::{OpenAi, WireProfile};
use super::replay::{Recorder, Replay};
use super::retry::RetryPolicy;
use super::settings::OPENAI_BASE_URL;
use super::transport::{Transport, TransportSettings};
use super::{ChatRequest, Completion, LlmConfig, LlmError, Provider};
use meta_agent_config::raw::LlmProvider;

/// The `none` provider: every call fails with [`LlmError::NotConfigured`].
#[derive(Debug, Default)]
pub struct Offline;

impl Provider for Offline {
    async fn chat(&self, _request: &ChatRequest) -> Result<Completion, LlmError> {
        Err(LlmError::NotConfigured)
    }

    fn name(&self) -> &str {
        "none"
    }
}

/// One of the providers, chosen at run time.
#[derive(Debug)]
pub enum AnyProvider {
    Offline(Offline),
    OpenAi(OpenAi),
    Anthropic(Anthropic),
    Replay(Replay),
    /// A live provider whose exchanges are written to a transcript (`llm.record`).
    Recorded(Recorder<Live>),
}

/// A provider that talks to a real service (the ones worth recording).
#[derive(Debug)]
pub enum Live {
    OpenAi(OpenAi),
    Anthropic(Anthropic),
}

impl Provider for Live {
    async fn chat(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        match self {
            Self::OpenAi(provider) => provider.chat(request).await,
            Self::Anthropic(provider) => provider.chat(request).await,
        }
    }

    fn name(&self) -> &str {
        match self {
            Self::OpenAi(provider) => provider.name(),
            Self::Anthropic(provider) => provider.name(),
        }
    }
}

impl Provider for AnyProvider {
    async fn chat(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        match self {
            Self::Offline(provider) => provider.chat(request).await,
            Self::OpenAi(provider) => provider.chat(request).await,
            Self::Anthropic(provider) => provider.chat(request).await,
            Self::Replay(provider) => provider.chat(request).await,
            Self::Recorded(provider) => provider.chat(request).await,
        }
    }

    fn name(&self) -> &str {
        match self {
            Self::Offline(provider) => provider.name(),
            Self::OpenAi(provider) => provider.name(),
            Self::Anthropic(provider) => provider.name(),
            Self::Replay(provider) => provider.name(),
            Self::Recorded(provider) => provider.name(),
        }
    }
}

/// The provider `config` names, recording its exchanges when `llm.record` is set. `retry`
/// carries the sleeper (tests pass one that does not wait); its `max_attempts` is replaced by
/// the config's. An OpenAI-compatible server other than OpenAI's own may go without a key
/// (local servers); Anthropic and OpenAI itself may not.
pub fn connect(config: &LlmConfig, retry: RetryPolicy) -> Result<AnyProvider, LlmError> {
    let provider = unrecorded(config, retry)?;
    let Some(path) = &config.record else {
        return Ok(provider);
    };
    let live = match provider {
        AnyProvider::OpenAi(provider) => Live::OpenAi(provider),
        AnyProvider::Anthropic(provider) => Live::Anthropic(provider),
        other @ (AnyProvider::Offline(_) | AnyProvider::Replay(_) | AnyProvider::Recorded(_)) => {
            return Ok(other);
        }
    };
    Recorder::create(live, path, config.redactor.clone()).map(AnyProvider::Recorded)
}

fn unrecorded(config: &LlmConfig, retry: RetryPolicy) -> Result<AnyProvider, LlmError> {
    match config.provider {
        LlmProvider::None => Ok(AnyProvider::Offline(Offline)),
        LlmProvider::Openai => {
            let key = config.api_key.clone();
            if key.is_none() && config.base_url.starts_with(OPENAI_BASE_URL) {
                return Err(LlmError::MissingKey {
                    provider: "openai",
                    variable: "OPENAI_API_KEY",
                });
            }
            let provider = OpenAi::new(transport(config, retry)?, key).with_profile(WireProfile {
                compat: config.compat,
                reasoning_effort: config.reasoning_effort,
            });
            Ok(AnyProvider::OpenAi(match &config.azure {
                Some(azure) => provider.azure(azure, &config.base_url),
                None => provider,
            }))
        }
        LlmProvider::Anthropic => {
            let key = config.api_key.clone().ok_or(LlmError::MissingKey {
                provider: "anthropic",
                variable: "ANTHROPIC_API_KEY",
            })?;
            Ok(AnyProvider::Anthropic(Anthropic::new(
                transport(config, retry)?,
                key,
            )))
        }
        LlmProvider::Replay => replay(config).map(AnyProvider::Replay),
    }
}

fn transport(config: &LlmConfig, retry: RetryPolicy) -> Result<Transport, LlmError> {
    Transport::new(TransportSettings {
        base_url: config.base_url.clone(),
        timeout: config.timeout,
        connect_timeout: config.connect_timeout,
        idle_timeout: super::transport::IDLE_STREAM_TIMEOUT,
        retry: RetryPolicy {
            max_attempts: config.max_attempts,
            ..retry
        },
        redactor: config.redactor.clone(),
    })
}

fn replay(config: &LlmConfig) -> Result<Replay, LlmError> {
    let path = config.transcript.as_deref().ok_or(LlmError::Transcript {
        path: String::new(),
        detail: "the replay provider needs llm.replay to name a transcript file".into(),
    })?;
    Replay::open(path)
}
