//! One line of `results.jsonl`: a run of a task, how it ended, how it was graded and what it
//! cost. Results are appended one whole line per write (a line cut short by a kill is ignored
//! when read back, and that run is redone by `--resume`); `eval mine`'s journal is kept the same
//! way ([`read_lines`], [`append_line`]).

use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;

use serde::Serialize;

use super::EvalError;

/// The file of results in an output directory.
pub const RESULTS_FILE: &str = "results.jsonl";

pub use meta_agent_protocol::eval::RunResult;

/// Reads `results.jsonl` (missing: none). A last line without its newline (cut by a kill) is
/// dropped; any other bad line is an error naming its line.
pub fn read(path: &Path) -> Result<Vec<RunResult>, EvalError> {
    read_lines(path)
}

/// Reads a file of JSON lines written by [`append_line`] (missing: none), as [`read`] does.
pub fn read_lines<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>, EvalError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(EvalError::Read {
                path: path.to_owned(),
                source,
            });
        }
    };
    let complete = if text.ends_with('\n') {
        text.as_str()
    } else {
        text.rsplit_once('\n').map_or("", |(head, _)| head)
    };
    complete
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(index, line)| {
            serde_json::from_str(line).map_err(|err| EvalError::Parse {
                path: path.to_owned(),
                line: index + 1,
                column: err.column(),
                message: err.to_string(),
            })
        })
        .collect()
}

/// The runs already recorded.
pub fn finished(results: &[RunResult]) -> BTreeSet<(String, u32)> {
    results.iter().map(RunResult::key).collect()
}

/// Appends one result as one line, in one write, and syncs it.
pub fn append(path: &Path, result: &RunResult) -> Result<(), EvalError> {
    append_line(path, result)
}

/// Appends one value as one JSON line, in one write, and syncs it: a kill leaves at most a last
/// line cut short, which [`read_lines`] drops.
pub fn append_line<T: Serialize>(path: &Path, value: &T) -> Result<(), EvalError> {
    let mut line = serde_json::to_string(value).map_err(EvalError::Json)?;
    line.push('\n');
    let write = |path: &Path| -> std::io::Result<()> {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        file.write_all(line.as_bytes())?;
        file.sync_data()
    };
    write(path).map_err(|source| EvalError::Write {
        path: path.to_owned(),
        source,
    })
}

/// Rewrites the whole file atomically (after `eval grade`).
pub fn rewrite(path: &Path, results: &[RunResult]) -> Result<(), EvalError> {
    let mut text = String::new();
    for result in results {
        text.push_str(&serde_json::to_string(result).map_err(EvalError::Json)?);
        text.push('\n');
    }
    meta_agent_engine::state::write_atomic(path, text.as_bytes()).map_err(|err| EvalError::Write {
        path: path.to_owned(),
        source: std::io::Error::other(err.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_cut_by_a_kill_is_dropped_and_the_rest_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(RESULTS_FILE);
        let first = RunResult::error("a", 1, "setup failed".into(), 0.5);
        append(&path, &first).unwrap();
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("{\"task\": \"a\", \"ru");
        std::fs::write(&path, text).unwrap();
        assert_eq!(read(&path).unwrap(), vec![first]);
    }

    #[test]
    fn a_bad_complete_line_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(RESULTS_FILE);
        std::fs::write(&path, "{}\n").unwrap();
        let err = read(&path).unwrap_err().to_string();
        assert!(err.contains("results.jsonl:1:"), "{err}");
    }
}
