//! Reading the repository's instruction files from one commit's tree, through the bot's git
//! ([`meta_agent_git::Repository`]): regular files only (a link is never followed, not even inside
//! the tree), each at most [`MAX_FILE_BYTES`], at most [`MAX_NESTED`] nested `AGENTS.md`. What
//! cannot be used (a broken front matter, no `applyTo`, `excludeAgent: coding-agent`, a file
//! that is not text) is listed with why, never an error: the run goes on without it.

use super::front::{self, Front};
use super::{InstructionFile, Kind, RepoInstructions, Skipped, Unusable};
use meta_agent_git::{GitError, Repository};

/// The local ref a pull request's base branch is fetched into, to read its instructions.
pub const INSTRUCTIONS_REF: &str = "refs/meta-agent/instructions-base";

/// The largest instruction file read (a longer one is cut here, and by the token budget later).
pub const MAX_FILE_BYTES: usize = 64 * 1024;
/// Nested `AGENTS.md` files read at most (monorepos hold one per package).
pub const MAX_NESTED: usize = 256;

/// The directory of path-specific instruction files.
const PATH_SPECIFIC_DIR: &str = ".github/instructions/";
const PATH_SPECIFIC_SUFFIX: &str = ".instructions.md";

/// The instruction files in the tree of `rev` (`origin` says where that is, for the prompt).
pub fn load<G: Repository>(
    repo: &G,
    rev: &str,
    origin: &str,
) -> Result<RepoInstructions, GitError> {
    let mut found = RepoInstructions {
        origin: origin.to_owned(),
        ..RepoInstructions::default()
    };
    let mut nested = 0;
    for path in repo.regular_files(rev)? {
        let Some(kind) = kind_of(&path) else {
            continue;
        };
        if kind == Kind::NestedAgents {
            nested += 1;
            if nested > MAX_NESTED {
                found.skip(
                    &path,
                    format!("more than {MAX_NESTED} nested AGENTS.md files"),
                );
                continue;
            }
        }
        let Some(bytes) = repo.read_blob(rev, &path)? else {
            continue;
        };
        let Some(text) = text_of(&bytes) else {
            found.skip(&path, "not UTF-8 text".into());
            continue;
        };
        match read_file(&path, kind, text) {
            Ok(file) => found.files.push(file),
            Err(why) => found.skip(&path, why.to_string()),
        }
    }
    Ok(found)
}

impl RepoInstructions {
    fn skip(&mut self, path: &str, why: String) {
        self.skipped.push(Skipped {
            path: path.to_owned(),
            why,
        });
    }
}

/// The convention `path` follows, if it is an instruction file.
fn kind_of(path: &str) -> Option<Kind> {
    match path {
        ".meta-agent/instructions.md" => return Some(Kind::MetaAgent),
        "AGENTS.md" => return Some(Kind::Agents),
        "CLAUDE.md" => return Some(Kind::Claude),
        ".github/copilot-instructions.md" => return Some(Kind::Copilot),
        _ => {}
    }
    if path.ends_with("/AGENTS.md") {
        return Some(Kind::NestedAgents);
    }
    let in_dir = path.strip_prefix(PATH_SPECIFIC_DIR)?;
    (in_dir.ends_with(PATH_SPECIFIC_SUFFIX) && in_dir.len() > PATH_SPECIFIC_SUFFIX.len())
        .then_some(Kind::PathSpecific)
}

/// At most [`MAX_FILE_BYTES`] of `bytes` as text, cut at a character boundary; `None` when it
/// is not UTF-8.
fn text_of(bytes: &[u8]) -> Option<&str> {
    let end = bytes.len().min(MAX_FILE_BYTES);
    match std::str::from_utf8(&bytes[..end]) {
        Ok(text) => Some(text),
        Err(err) if err.error_len().is_none() => {
            std::str::from_utf8(&bytes[..err.valid_up_to()]).ok()
        }
        Err(_) => None,
    }
}

/// One file read by its convention: path-specific files by their front matter, the others
/// with any front matter left out.
fn read_file(path: &str, kind: Kind, text: &str) -> Result<InstructionFile, Unusable> {
    let split = front::split(text);
    if kind != Kind::PathSpecific {
        return Ok(InstructionFile::new(path, kind, split.body));
    }
    let Front {
        apply_to,
        exclude_agent,
    } = front::parse(split.front.ok_or(Unusable::NoFrontMatter)?)?;
    if exclude_agent.iter().any(|agent| agent == "coding-agent") {
        return Err(Unusable::ExcludedAgent);
    }
    if apply_to.is_empty() {
        return Err(Unusable::NoApplyTo);
    }
    InstructionFile::path_specific(path, split.body, apply_to)
}
