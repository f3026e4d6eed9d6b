//! The file tools: `list_files`, `read_file`, `edit_file` and `write_file`.
//!
//! Every path goes through [`crate::tools::paths::resolve`] first; writes are checked for
//! protected files. The files themselves are opened through [`meta_agent_fsafe`]: beneath the
//! worktree, never through a link, regular files only (a FIFO is refused, not waited on), reads
//! bounded. Listings honour `.gitignore` (the `ignore` crate) and are capped. Nothing here runs a
//! process.

use std::path::Path;

use serde::Deserialize;

use super::ToolError;
use crate::tools::paths::{Access, relative, resolve, resolve_dir};
use meta_agent_fsafe::Beneath;
use meta_agent_policy::Policy;

/// Entries listed at most.
const MAX_LISTED: usize = 500;
/// Largest file `write_file` writes.
const MAX_WRITE_BYTES: usize = 1024 * 1024;
/// Largest file `read_file` and `edit_file` read.
const MAX_READ_BYTES: u64 = 4 * 1024 * 1024;

#[derive(Deserialize)]
pub struct ListArgs {
    #[serde(default)]
    path: Option<String>,
}

#[derive(Deserialize)]
pub struct ReadArgs {
    path: String,
    #[serde(default)]
    start_line: Option<usize>,
    #[serde(default)]
    end_line: Option<usize>,
}

#[derive(Deserialize)]
pub struct EditArgs {
    path: String,
    old_string: String,
    new_string: String,
}

#[derive(Deserialize)]
pub struct WriteArgs {
    path: String,
    content: String,
}

/// The files under a directory, relative to the root, sorted, `.gitignore` honoured.
pub fn list_files(root: &Path, args: ListArgs) -> Result<String, ToolError> {
    let dir = resolve_dir(root, args.path.as_deref())?;
    let mut files: Vec<String> = walk(&dir).map(|path| relative(root, &path)).collect();
    files.sort();
    let total = files.len();
    files.truncate(MAX_LISTED);
    if total > MAX_LISTED {
        files.push(format!("[{} more not shown]", total - MAX_LISTED));
    }
    if files.is_empty() {
        return Ok("(no files)".into());
    }
    Ok(files.join("\n"))
}

/// Every regular file under `dir` that `.gitignore` keeps, never inside `.git`; symlinks are
/// neither followed nor listed (one could lead out of the tree).
pub fn walk(dir: &Path) -> impl Iterator<Item = std::path::PathBuf> {
    ignore::WalkBuilder::new(dir)
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|entry| entry.file_name() != ".git")
        .build()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_some_and(|kind| kind.is_file()))
        .map(ignore::DirEntry::into_path)
}

/// A file's lines with numbers, optionally a range of them.
pub fn read_file(root: &Path, args: ReadArgs) -> Result<String, ToolError> {
    let full = resolve(root, &args.path, Access::Read)?;
    let text = read_text(root, &full, &args.path)?;
    let start = args.start_line.unwrap_or(1).max(1);
    let end = args.end_line.unwrap_or(usize::MAX);
    let numbered: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(index, line)| (index + 1, line))
        .filter(|(number, _)| (start..=end).contains(number))
        .map(|(number, line)| format!("{number:>5}\t{line}"))
        .collect();
    if numbered.is_empty() {
        return Ok(format!(
            "(no lines in range; {} has {} lines)",
            args.path,
            text.lines().count()
        ));
    }
    Ok(numbered.join("\n"))
}

/// Replaces the one occurrence of `old_string`.
pub fn edit_file(root: &Path, policy: &Policy, args: EditArgs) -> Result<String, ToolError> {
    let full = resolve(root, &args.path, Access::Write(policy))?;
    if args.old_string.is_empty() {
        return Err(ToolError::NoMatch { path: args.path });
    }
    let text = read_text(root, &full, &args.path)?;
    match text.matches(&args.old_string).count() {
        1 => {
            let edited = text.replacen(&args.old_string, &args.new_string, 1);
            write_bytes(root, &full, edited.as_bytes())?;
            Ok(format!("edited {}", args.path))
        }
        0 => Err(ToolError::NoMatch { path: args.path }),
        count => Err(ToolError::SeveralMatches {
            path: args.path,
            count,
        }),
    }
}

/// Creates or overwrites a file.
pub fn write_file(root: &Path, policy: &Policy, args: WriteArgs) -> Result<String, ToolError> {
    let full = resolve(root, &args.path, Access::Write(policy))?;
    if args.content.len() > MAX_WRITE_BYTES {
        return Err(ToolError::Io(format!(
            "the content is {} bytes; the limit is {MAX_WRITE_BYTES}",
            args.content.len()
        )));
    }
    write_bytes(root, &full, args.content.as_bytes())?;
    Ok(format!(
        "wrote {} ({} bytes)",
        args.path,
        args.content.len()
    ))
}

/// A checked path's text, read beneath the worktree without following links.
fn read_text(root: &Path, full: &Path, shown: &str) -> Result<String, ToolError> {
    let bytes = Beneath::open(root)
        .and_then(|dir| dir.read(relative_to(root, full), MAX_READ_BYTES))
        .map_err(|err| ToolError::Io(err.to_string()))?;
    String::from_utf8(bytes).map_err(|_| ToolError::Io(format!("{shown} is not UTF-8 text")))
}

/// Replaces a checked path's content beneath the worktree (never through a link).
fn write_bytes(root: &Path, full: &Path, bytes: &[u8]) -> Result<(), ToolError> {
    Beneath::open(root)
        .and_then(|dir| dir.write(relative_to(root, full), bytes, false))
        .map_err(|err| ToolError::Io(err.to_string()))
}

fn relative_to<'a>(root: &Path, full: &'a Path) -> &'a Path {
    full.strip_prefix(root).unwrap_or(full)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(root: &Path, old: &str, new: &str) -> Result<String, ToolError> {
        edit_file(
            root,
            &Policy::default(),
            EditArgs {
                path: "a.py".into(),
                old_string: old.into(),
                new_string: new.into(),
            },
        )
    }

    #[test]
    fn edits_need_exactly_one_match() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.py"), "x = 1\ny = 1\n").unwrap();
        assert!(matches!(
            edit(dir.path(), "z", "w"),
            Err(ToolError::NoMatch { .. })
        ));
        assert!(matches!(
            edit(dir.path(), "= 1", "= 2"),
            Err(ToolError::SeveralMatches { count: 2, .. })
        ));
        edit(dir.path(), "y = 1", "y = 2").unwrap();
        let text = std::fs::read_to_string(dir.path().join("a.py")).unwrap();
        assert_eq!(text, "x = 1\ny = 2\n");
    }

    #[test]
    fn reads_a_line_range_with_numbers_and_lists_honour_gitignore() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.py"), "one\ntwo\nthree\n").unwrap();
        std::fs::write(dir.path().join(".gitignore"), "build/\n").unwrap();
        std::fs::create_dir(dir.path().join("build")).unwrap();
        std::fs::write(dir.path().join("build/out.txt"), "x").unwrap();
        let args = ReadArgs {
            path: "a.py".into(),
            start_line: Some(2),
            end_line: Some(2),
        };
        assert_eq!(read_file(dir.path(), args).unwrap(), "    2\ttwo");
        let listed = list_files(dir.path(), ListArgs { path: None }).unwrap();
        assert_eq!(listed, ".gitignore\na.py");
    }

    #[test]
    fn a_fifo_a_link_and_a_deep_path_are_tool_errors_not_hangs_or_crashes() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "CANARY").unwrap();
        let fifo = dir.path().join("pipe.txt");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), dir.path().join("in.txt"))
            .unwrap();
        let read = |path: &str| {
            read_file(
                dir.path(),
                ReadArgs {
                    path: path.into(),
                    start_line: None,
                    end_line: None,
                },
            )
        };
        let err = read("pipe.txt").unwrap_err().to_string();
        assert!(err.contains("a FIFO"), "{err}");
        let err = read("in.txt").unwrap_err().to_string();
        assert!(err.contains("link") && !err.contains("CANARY"), "{err}");
        let write = |path: String| {
            write_file(
                dir.path(),
                &Policy::default(),
                WriteArgs {
                    path,
                    content: "x".into(),
                },
            )
        };
        let err = write("a/".repeat(150) + "f.txt").unwrap_err().to_string();
        assert!(err.contains("151 levels deep; at most 40"), "{err}");
        assert!(!dir.path().join("a").exists());
        assert!(write("in.txt".into()).is_err());
        assert_eq!(
            std::fs::read_to_string(outside.path().join("secret")).unwrap(),
            "CANARY"
        );
    }
}
