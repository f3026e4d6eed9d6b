//! Recorded transcripts: [`Recorder`] writes every exchange of a real provider as one JSON line
//! ([`Exchange`]); [`Replay`] plays the answers back in order, for a deterministic re-run.
//!
//! Replay does not compare the requests with the recorded ones; it answers the n-th call with the
//! n-th recorded answer and refuses a call beyond the last. Transcripts hold prompts and answers,
//! never the API key.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize};

use super::{ChatRequest, Completion, LlmError, Provider};

/// One line of a transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exchange {
    pub request: ChatRequest,
    pub completion: Completion,
}

fn transcript_error(path: &Path, detail: impl ToString) -> LlmError {
    LlmError::Transcript {
        path: path.display().to_string(),
        detail: detail.to_string(),
    }
}

/// Plays a transcript back.
#[derive(Debug)]
pub struct Replay {
    exchanges: Vec<Exchange>,
    next: Mutex<usize>,
}

impl Replay {
    /// Reads a JSON-lines transcript (blank lines skipped).
    pub fn open(path: &Path) -> Result<Self, LlmError> {
        let text = std::fs::read_to_string(path).map_err(|error| transcript_error(path, error))?;
        let exchanges = text
            .lines()
            .enumerate()
            .filter(|(_, line)| !line.trim().is_empty())
            .map(|(number, line)| {
                serde_json::from_str(line).map_err(|error| {
                    transcript_error(path, format!("line {}: {error}", number + 1))
                })
            })
            .collect::<Result<Vec<Exchange>, _>>()?;
        Ok(Self {
            exchanges,
            next: Mutex::new(0),
        })
    }

    /// The next recorded answer, or [`LlmError::ReplayExhausted`].
    fn take(&self) -> Result<Completion, LlmError> {
        let mut next = self.next.lock().unwrap_or_else(PoisonError::into_inner);
        let exchange = self.exchanges.get(*next).ok_or(LlmError::ReplayExhausted {
            recorded: self.exchanges.len(),
        })?;
        *next += 1;
        Ok(exchange.completion.clone())
    }
}

impl Provider for Replay {
    async fn chat(&self, _request: &ChatRequest) -> Result<Completion, LlmError> {
        self.take()
    }

    fn name(&self) -> &str {
        "replay"
    }
}

/// Writes a transcript of `inner`'s successful calls.
#[derive(Debug)]
pub struct Recorder<P> {
    inner: P,
    path: PathBuf,
    file: Mutex<File>,
    /// Applied to every line before it is written.
    redactor: Option<std::sync::Arc<meta_agent_redact::Redactor>>,
}

impl<P: Provider> Recorder<P> {
    /// Creates (or truncates) the transcript at `path`, redacting it with `redactor` if given.
    pub fn create(
        inner: P,
        path: &Path,
        redactor: Option<std::sync::Arc<meta_agent_redact::Redactor>>,
    ) -> Result<Self, LlmError> {
        let file = File::create(path).map_err(|error| transcript_error(path, error))?;
        Ok(Self {
            inner,
            path: path.to_path_buf(),
            file: Mutex::new(file),
            redactor,
        })
    }

    fn append(&self, exchange: &Exchange) -> Result<(), LlmError> {
        let mut line =
            serde_json::to_string(exchange).map_err(|error| transcript_error(&self.path, error))?;
        if let Some(redactor) = &self.redactor {
            line = redactor.redact_text(&line).into_owned();
        }
        line.push('\n');
        let mut file = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        file.write_all(line.as_bytes())
            .map_err(|error| transcript_error(&self.path, error))
    }
}

impl<P: Provider> Provider for Recorder<P> {
    async fn chat(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        let completion = self.inner.chat(request).await?;
        let exchange = Exchange {
            request: request.clone(),
            completion,
        };
        self.append(&exchange)?;
        Ok(exchange.completion)
    }

    fn name(&self) -> &str {
        self.inner.name()
    }
}
