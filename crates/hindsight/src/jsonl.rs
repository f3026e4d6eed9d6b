//! Reading a JSON-lines file (what `hindsight export` and `memory export` write): each line
//! parsed by the caller, the first bad one an error naming the file and the line.

use std::path::{Path, PathBuf};

/// Why a JSON-lines file could not be read: the file itself, or one of its lines (1-based).
#[derive(Debug, thiserror::Error)]
pub enum JsonLinesError<E: std::error::Error + 'static> {
    #[error("{path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}: {source}")]
    Line {
        path: PathBuf,
        line: usize,
        #[source]
        source: E,
    },
}

/// The records of a JSON-lines file (what `hindsight export` and `memory export` write), each
/// line read by `parse`, blank lines skipped. The first line `parse` refuses is an error naming
/// the file and the line; nothing is returned then.
pub fn json_lines_of<T, E: std::error::Error + 'static>(
    path: &Path,
    mut parse: impl FnMut(&str) -> Result<T, E>,
) -> Result<Vec<T>, JsonLinesError<E>> {
    let text = std::fs::read_to_string(path).map_err(|source| JsonLinesError::Read {
        path: path.to_owned(),
        source,
    })?;
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(n, line)| {
            parse(line).map_err(|source| JsonLinesError::Line {
                path: path.to_owned(),
                line: n + 1,
                source,
            })
        })
        .collect()
}
