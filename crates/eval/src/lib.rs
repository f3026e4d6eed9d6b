//! Evaluation: how often the bot fixes things, at what cost, on a team's own tasks. The pure
//! half of `meta-agent eval`: the suite model and its checks ([`suite`]), grades and how they
//! combine ([`grade`]), result records ([`results`]), statistics ([`stats`]), the summary and its
//! reports ([`summary`]), the comparison of two evaluations ([`compare`]) and the decisions of
//! mining a suite from history ([`mine`]). Running the engine, the graders that need processes
//! or a model, and the files live in the session layer (`session::eval` of the main crate).

#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod compare;
pub mod grade;
pub mod mine;
pub mod results;
pub mod stats;
pub mod suite;
pub mod summary;

use std::path::PathBuf;

/// Why an evaluation could not go on. Each names the file, and the line and key where known.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Invalid YAML or JSON, an unknown key or grader, a wrong type.
    #[error("{path}:{line}:{column}: {message}")]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// The file parsed but a value is not acceptable (`key` is a dotted path such as
    /// `tasks[2].graders[0].hidden_tests.files.tests/test_a.py`; `line` is 0 when unknown).
    #[error("{path}:{line}: {key}: {message}")]
    Invalid {
        path: PathBuf,
        line: usize,
        key: String,
        message: String,
    },
    #[error("cannot serialize: {0}")]
    Json(#[source] serde_json::Error),
}
