//! Error signatures: turn what gates produce into stable, comparable failure identities.
//!
//! Being written: the public API is final, bodies are simple and being improved.

mod hash;
pub mod normalize;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Signature, SignatureKind};
use crate::report::{JunitSummary, Limits, ReportError, SarifReport};

pub use hash::signature_id;
pub use normalize::normalize;

/// Which reader to use for an input file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum InputFormat {
    /// Guess from the file name and its first bytes.
    #[default]
    Auto,
    /// JUnit XML.
    Junit,
    /// SARIF 2.1.0.
    Sarif,
    /// `cargo build --message-format=json` output.
    CargoJson,
    /// Plain text output of a tool (gate stdout/stderr).
    Log,
}

/// How to extract signatures.
#[derive(Debug, Clone, Default)]
pub struct ExtractOptions {
    pub format: InputFormat,
    /// The repository root: absolute paths under it become repository-relative.
    pub repo_root: Option<PathBuf>,
    pub limits: Limits,
}

/// One failure found in an input, with its signature and context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExtractedSignature {
    #[serde(rename = "signature")]
    pub id: String,
    pub kind: SignatureKind,
    pub template: String,
    /// The input file it came from.
    pub file: PathBuf,
    /// Repository-relative `path:line` of the failure when known.
    pub location: Option<String>,
    /// The test's identity when it is a test failure.
    pub test: Option<String>,
    /// Top frames inside the repository, normalized.
    pub frames: Vec<String>,
    /// The original message, trimmed, for people and prompts.
    pub excerpt: String,
}

impl ExtractedSignature {
    /// The bare signature (id, kind, template).
    pub fn signature(&self) -> Signature {
        Signature {
            id: self.id.clone(),
            kind: self.kind,
            template: self.template.clone(),
        }
    }
}

/// Why signatures could not be extracted from a file. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum SignatureError {
    /// A JUnit or SARIF report could not be read.
    #[error(transparent)]
    Report(#[from] ReportError),
    /// The file could not be opened or read.
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is larger than the limit for a log read whole.
    #[error("{path} is {size} bytes, more than the {limit}-byte limit")]
    TooLarge {
        path: PathBuf,
        size: u64,
        limit: u64,
    },
}

/// Extracts the signatures of every failure in one file.
pub fn extract_file(
    path: &Path,
    opts: &ExtractOptions,
) -> Result<Vec<ExtractedSignature>, SignatureError> {
    match opts.format {
        InputFormat::Junit => Ok(from_junit(
            &crate::report::parse_junit_file(path, &opts.limits)?,
            opts,
        )),
        InputFormat::Sarif => Ok(from_sarif(
            &crate::report::parse_sarif_file(path, &opts.limits)?,
            opts,
        )),
        InputFormat::Auto | InputFormat::CargoJson | InputFormat::Log => {
            let text = std::fs::read(path).map_err(|source| SignatureError::Io {
                path: path.to_owned(),
                source,
            })?;
            Ok(extract_log(&String::from_utf8_lossy(&text), path, opts))
        }
    }
}

/// Extracts signatures from plain tool output (gate stdout/stderr).
pub fn extract_log(_text: &str, _source: &Path, _opts: &ExtractOptions) -> Vec<ExtractedSignature> {
    Vec::new()
}

/// One signature per failing or erroring test case.
pub fn from_junit(_summary: &JunitSummary, _opts: &ExtractOptions) -> Vec<ExtractedSignature> {
    Vec::new()
}

/// One signature per SARIF finding.
pub fn from_sarif(_report: &SarifReport, _opts: &ExtractOptions) -> Vec<ExtractedSignature> {
    Vec::new()
}
