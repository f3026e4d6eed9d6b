//! The patch gate: the last check on a change before the bot commits it (SECURITY.md rule 3).
//!
//! Given the changed files, the unified diff against HEAD and the worktree, [`check`] lists every
//! reason to refuse the change: a path that is not a plain repository path or that a protected
//! glob covers (`.git`, workflows, the bot's configuration, `commit.protected_paths`), a symlink
//! pointing out of the tree or into `.git`, a change over the size limits, a binary file over its
//! cap, and a secret (an exact value the bot holds, in any encoding, or a token pattern) in the
//! added lines or in a changed binary file.
//!
//! It reads file metadata, link targets and (for binary files within the cap) file bytes; it
//! never follows a symlink, never writes and never decides what happens to a refused change: the
//! engine does. A refusal ([`Refusal`], protocol data) names the path and the kind of secret, never
//! the secret; render writes its line.

use std::path::Path;

use super::tamper::first_of_each;
use meta_agent_git::{ChangeStatus, FileChange};
use meta_agent_policy::{PatchLimits, Policy};
pub use meta_agent_protocol::refusal::{Refusal, SecretPlace, Why};
use meta_agent_redact::{Redactor, SecretMatch};

/// The change to check.
#[derive(Clone, Copy)]
pub struct PatchInput<'a> {
    pub changes: &'a [FileChange],
    /// The git-format unified diff of the worktree against HEAD.
    pub diff: &'a str,
    pub worktree: &'a Path,
    /// Holds the exact secret values; its token patterns apply too.
    pub redactor: &'a Redactor,
}

/// Every reason to refuse the change, in path order per check; empty when it may be committed.
pub fn check(input: &PatchInput<'_>, policy: &Policy) -> Vec<Refusal> {
    let limits = &policy.limits;
    let mut refusals = Vec::new();
    if input.changes.len() > limits.max_files {
        refusals.push(Refusal::whole(Why::TooManyFiles {
            count: input.changes.len(),
            max: limits.max_files,
        }));
    }
    for change in input.changes {
        refusals.extend(name_refusals(input, change));
        refusals.extend(path_refusals(change, policy));
        if change.status != ChangeStatus::Deleted {
            refusals.extend(file_refusals(input, &change.path, limits));
        }
    }
    let added = added_lines(input.diff);
    refusals.extend(size_refusals(&added, limits));
    refusals.extend(secret_refusals(&added, input.redactor));
    first_of_each(refusals)
}

/// A held secret or a token (raw or encoded) in the change's names: the path, a rename's source,
/// a symlink's target, each also with its separators removed (a secret split across
/// directories). The refusal names the path with the secret cut out.
fn name_refusals(input: &PatchInput<'_>, change: &FileChange) -> Vec<Refusal> {
    let mut names = vec![change.path.clone()];
    if let ChangeStatus::Renamed { from } = &change.status {
        names.push(from.clone());
    }
    if meta_agent_protocol::path::is_plain(Path::new(&change.path))
        && symlinked_ancestor(input.worktree, &change.path).is_none()
        && let Ok(target) = std::fs::read_link(input.worktree.join(&change.path))
    {
        names.push(target.to_string_lossy().into_owned());
    }
    let joined: Vec<String> = names.iter().map(|name| name.replace('/', "")).collect();
    names.extend(joined);
    let found = names
        .iter()
        .find_map(|name| input.redactor.find_secrets(name).into_iter().next());
    match found {
        Some(found) => vec![Refusal::of(
            &without_secrets(&change.path, input.redactor),
            secret(&found, SecretPlace::Name),
        )],
        None => Vec::new(),
    }
}

/// A secret of `found`'s kind (never its value) at `place`.
fn secret(found: &SecretMatch, place: SecretPlace) -> Why {
    Why::Secret {
        secret: found.kind.to_owned(),
        place,
    }
}

/// `path` with every secret found in it replaced by a marker (shown in refusals).
fn without_secrets(path: &str, redactor: &Redactor) -> String {
    let mut shown = String::new();
    let mut last = 0;
    for found in redactor.find_secrets(path) {
        if found.range.start < last {
            continue;
        }
        shown.push_str(&path[last..found.range.start]);
        shown.push_str("[secret]");
        last = found.range.end;
    }
    shown.push_str(&path[last..]);
    shown
}

/// The change's own path and a rename's source: plain, and not protected.
fn path_refusals(change: &FileChange, policy: &Policy) -> Vec<Refusal> {
    let from = match &change.status {
        ChangeStatus::Renamed { from } => Some(from.as_str()),
        _ => None,
    };
    let mut out = Vec::new();
    for path in std::iter::once(change.path.as_str()).chain(from) {
        if !meta_agent_protocol::path::is_plain(Path::new(path)) {
            out.push(Refusal::of(path, Why::NotPlainPath));
        } else if policy.protected_by(path).is_some() {
            out.push(Refusal::of(path, Why::Protected));
        }
    }
    out
}

/// What the worktree holds at `path`: symlinks, sizes, binary content (never followed).
fn file_refusals(input: &PatchInput<'_>, path: &str, limits: &PatchLimits) -> Vec<Refusal> {
    if !meta_agent_protocol::path::is_plain(Path::new(path)) {
        return Vec::new();
    }
    if let Some(dir) = symlinked_ancestor(input.worktree, path) {
        return vec![Refusal::of(path, Why::SymlinkOnTheWay { dir })];
    }
    let full = input.worktree.join(path);
    let Ok(meta) = full.symlink_metadata() else {
        return Vec::new();
    };
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(&full).unwrap_or_default();
        return link_refusal(path, &target.to_string_lossy())
            .into_iter()
            .collect();
    }
    if !meta.is_file() {
        return Vec::new();
    }
    if meta.len() > limits.max_file_bytes {
        return vec![Refusal::of(
            path,
            Why::FileTooLarge {
                bytes: meta.len(),
                max: limits.max_file_bytes,
            },
        )];
    }
    binary_refusals(input, path, &full, meta.len(), limits)
}

/// A directory between the root and `path` that is a symlink, if any.
pub fn symlinked_ancestor(root: &Path, path: &str) -> Option<String> {
    Path::new(path)
        .ancestors()
        .skip(1)
        .filter(|a| !a.as_os_str().is_empty())
        .find(|a| {
            root.join(a)
                .symlink_metadata()
                .is_ok_and(|m| m.file_type().is_symlink())
        })
        .map(|a| a.to_string_lossy().into_owned())
}

/// A symlink at `path` must point, lexically, inside the tree and not into `.git`.
fn link_refusal(path: &str, target: &str) -> Option<Refusal> {
    let escape = meta_agent_protocol::path::link_escape(Path::new(path), Path::new(target))?;
    Some(Refusal::of(path, Why::SymlinkOut { escape }))
}

/// A binary file (a NUL byte in its first 8 KiB) over the binary cap, or holding a secret: the
/// diff shows no lines for it, so its bytes are scanned here.
fn binary_refusals(
    input: &PatchInput<'_>,
    path: &str,
    full: &Path,
    len: u64,
    limits: &PatchLimits,
) -> Vec<Refusal> {
    let Ok(bytes) = std::fs::read(full) else {
        return Vec::new();
    };
    let head = &bytes[..bytes.len().min(8 << 10)];
    if !head.contains(&0) {
        return Vec::new();
    }
    if len > limits.max_binary_bytes {
        return vec![Refusal::of(
            path,
            Why::BinaryTooLarge {
                bytes: len,
                max: limits.max_binary_bytes,
            },
        )];
    }
    let text = String::from_utf8_lossy(&bytes);
    let printable: String = text.split(['\0', '\u{fffd}']).collect();
    input
        .redactor
        .find_secrets(&text)
        .into_iter()
        .chain(input.redactor.find_secrets(&printable))
        .next()
        .map(|found| Refusal::of(path, secret(&found, SecretPlace::BinaryFile)))
        .into_iter()
        .collect()
}

/// The added lines of one file in the diff, with their line numbers in the new file.
#[derive(Debug, Default)]
struct Added {
    path: String,
    lines: Vec<(usize, String)>,
}

/// Every file's added lines, in diff order.
fn added_lines(diff: &str) -> Vec<Added> {
    let mut files: Vec<Added> = Vec::new();
    let mut line_no = 0usize;
    let mut in_hunk = false;
    for line in diff.lines() {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            files.push(Added {
                path: header_path(rest),
                lines: Vec::new(),
            });
            in_hunk = false;
        } else if let Some(rest) = line.strip_prefix("@@ ") {
            line_no = hunk_start(rest);
            in_hunk = true;
        } else if !in_hunk {
            if let (Some(rest), Some(file)) = (line.strip_prefix("+++ "), files.last_mut())
                && rest != "/dev/null"
            {
                file.path = strip_side(&unquote(rest), "b/");
            }
        } else if let Some(text) = line.strip_prefix('+') {
            if let Some(file) = files.last_mut() {
                file.lines.push((line_no, text.to_owned()));
            }
            line_no += 1;
        } else if line.starts_with(' ') {
            line_no += 1;
        }
    }
    files
}

/// The new-side path of a `diff --git a/X b/X` header (exact for anything but a rename, whose
/// `+++` line corrects it).
fn header_path(rest: &str) -> String {
    if rest.starts_with('"') {
        let second = rest.rfind(" \"").map_or(rest, |at| &rest[at + 1..]);
        return strip_side(&unquote(second), "b/");
    }
    let half = rest.len().saturating_sub(1) / 2;
    rest.get(half + 1..)
        .map_or_else(|| rest.to_owned(), |b| strip_side(b, "b/"))
}

fn strip_side(path: &str, side: &str) -> String {
    path.strip_prefix(side).unwrap_or(path).to_owned()
}

/// A C-quoted git path (`"a/x\ty"`) unquoted; anything else as it is.
fn unquote(text: &str) -> String {
    let Some(inner) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) else {
        return text.to_owned();
    };
    let mut bytes = Vec::with_capacity(inner.len());
    let mut chars = inner.bytes().peekable();
    while let Some(byte) = chars.next() {
        if byte != b'\\' {
            bytes.push(byte);
            continue;
        }
        match chars.next() {
            Some(b't') => bytes.push(b'\t'),
            Some(b'n') => bytes.push(b'\n'),
            Some(digit @ b'0'..=b'7') => {
                let mut value = u32::from(digit - b'0');
                for _ in 0..2 {
                    if let Some(next @ b'0'..=b'7') = chars.peek().copied() {
                        value = value * 8 + u32::from(next - b'0');
                        chars.next();
                    }
                }
                bytes.push(u8::try_from(value).unwrap_or(b'?'));
            }
            Some(other) => bytes.push(other),
            None => {}
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The new file's first line number from a hunk header's `-a,b +c,d @@` part.
fn hunk_start(rest: &str) -> usize {
    rest.split(' ')
        .find_map(|part| part.strip_prefix('+'))
        .and_then(|range| range.split(',').next())
        .and_then(|start| start.parse().ok())
        .unwrap_or(1)
}

fn size_refusals(added: &[Added], limits: &PatchLimits) -> Vec<Refusal> {
    let lines: usize = added.iter().map(|f| f.lines.len()).sum();
    let bytes: usize = added
        .iter()
        .flat_map(|f| f.lines.iter())
        .map(|(_, text)| text.len() + 1)
        .sum();
    let mut out = Vec::new();
    if lines > limits.max_added_lines {
        out.push(Refusal::whole(Why::TooManyAddedLines {
            count: lines,
            max: limits.max_added_lines,
        }));
    }
    if bytes > limits.max_added_bytes {
        out.push(Refusal::whole(Why::TooManyAddedBytes {
            count: bytes,
            max: limits.max_added_bytes,
        }));
    }
    out
}

/// Whether a match is worth refusing a commit for. The redactor rewrites any `token <word>` or
/// `bearer <word>` in prose, which costs nothing; refusing a commit for "token auto-renewal" would.
/// An `authorization` match counts only when its value looks generated: letters and digits.
fn token_like(found: &SecretMatch, text: &str) -> bool {
    if found.kind != "authorization" {
        return true;
    }
    let value = text.get(found.range.clone()).unwrap_or_default();
    value.bytes().any(|b| b.is_ascii_digit()) && value.bytes().any(|b| b.is_ascii_alphabetic())
}

/// Secrets in each file's added lines: line by line (token patterns and exact values), then the
/// lines run together (an exact value wrapped over several lines, as base64 tools print it).
fn secret_refusals(added: &[Added], redactor: &Redactor) -> Vec<Refusal> {
    let mut out = Vec::new();
    for file in added {
        let mut text = String::new();
        let mut starts = Vec::with_capacity(file.lines.len());
        for (number, line) in &file.lines {
            starts.push((text.len(), *number));
            text.push_str(line);
            text.push('\n');
        }
        let found_all: Vec<SecretMatch> = redactor
            .find_secrets(&text)
            .into_iter()
            .filter(|m| token_like(m, &text))
            .collect();
        let exact_found = found_all.iter().any(|m| m.is_exact());
        for found in found_all {
            let line_of = |offset: usize| {
                let at = starts.partition_point(|(start, _)| *start <= offset);
                starts.get(at.saturating_sub(1)).map_or(0, |(_, n)| *n)
            };
            let line = line_of(found.range.start);
            let place = match line == line_of(found.range.end.saturating_sub(1)) {
                true => SecretPlace::Line { line },
                false => SecretPlace::AcrossLines,
            };
            out.push(Refusal::of(&file.path, secret(&found, place)));
        }
        let joined: String = file.lines.iter().map(|(_, l)| l.trim()).collect();
        if exact_found {
            continue;
        }
        if let Some(found) = redactor
            .find_secrets(&joined)
            .into_iter()
            .find(|m| m.is_exact())
        {
            out.push(Refusal::of(
                &file.path,
                secret(&found, SecretPlace::AcrossLines),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests;
