//! The `search` tool: a regular expression over the repository's text files, honouring
//! `.gitignore`, with capped hits and capped line lengths. Read-only.

use std::path::Path;

use serde::Deserialize;

use super::ToolError;
use super::files::walk;
use crate::tools::paths::{relative, resolve_dir};
use meta_agent_fsafe::Beneath;

/// Hits returned at most.
const MAX_HITS: usize = 100;
/// Files larger than this are skipped.
const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// Characters of a matching line shown.
const MAX_LINE_CHARS: usize = 200;

#[derive(Deserialize)]
pub struct SearchArgs {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
}

/// `path:line: text` for every matching line, at most [`MAX_HITS`].
pub fn search(root: &Path, args: SearchArgs) -> Result<String, ToolError> {
    let regex =
        regex::Regex::new(&args.pattern).map_err(|err| ToolError::Regex(err.to_string()))?;
    let dir = resolve_dir(root, args.path.as_deref())?;
    let files = Beneath::open(root).map_err(|err| ToolError::Io(err.to_string()))?;
    let mut hits = Vec::new();
    let mut more = false;
    for file in walk(&dir) {
        let Some(text) = readable(&files, root, &file) else {
            continue;
        };
        for (index, line) in text.lines().enumerate() {
            if !regex.is_match(line) {
                continue;
            }
            if hits.len() == MAX_HITS {
                more = true;
                break;
            }
            let shown: String = line.chars().take(MAX_LINE_CHARS).collect();
            hits.push(format!("{}:{}: {shown}", relative(root, &file), index + 1));
        }
        if more {
            break;
        }
    }
    if hits.is_empty() {
        return Ok("(no matches)".into());
    }
    if more {
        hits.push(format!("[more than {MAX_HITS} matches; narrow the search]"));
    }
    Ok(hits.join("\n"))
}

/// A walked file's text, read beneath the worktree without following links; `None` for links,
/// FIFOs, large or binary files.
fn readable(files: &Beneath, root: &Path, path: &Path) -> Option<String> {
    let relative = path.strip_prefix(root).ok()?;
    let bytes = files.read(relative, MAX_FILE_BYTES).ok()?;
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_lines_and_reports_bad_patterns() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.py"), "def mean(x):\n    return 1\n").unwrap();
        let found = search(
            dir.path(),
            SearchArgs {
                pattern: r"def \w+".into(),
                path: None,
            },
        )
        .unwrap();
        assert_eq!(found, "a.py:1: def mean(x):");
        let bad = SearchArgs {
            pattern: "(".into(),
            path: None,
        };
        assert!(matches!(search(dir.path(), bad), Err(ToolError::Regex(_))));
    }

    #[test]
    fn symlinks_out_of_the_tree_are_not_searched() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "canary-token\n").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.txt"), dir.path().join("s.txt"))
            .unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("d")).unwrap();
        let args = SearchArgs {
            pattern: "canary".into(),
            path: None,
        };
        assert_eq!(search(dir.path(), args).unwrap(), "(no matches)");
    }
}
