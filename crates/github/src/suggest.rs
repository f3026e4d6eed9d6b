//! A verified fix as GitHub suggestions: the fix's diff (made against a pull request's head)
//! split into its smallest changes, each a range of the head's lines and the lines that replace
//! them, kept only when it is small and lies where a review may comment (inside one of the pull
//! request's own hunks, as `GET .../pulls/{n}/files` lists them). Pure; the text of each comment
//! is rendered in [`meta_agent_render::review`].

use meta_agent_git::unified::{self, FileStatus, Hunk, Line};

/// The most lines a suggestion replaces or writes.
pub const MAX_SUGGESTION_LINES: usize = 12;

/// One suggestion: replace lines `start..=end` of `path` at the pull request's head with
/// `replacement`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suggestion {
    pub path: String,
    /// 1-based, inclusive.
    pub start: usize,
    pub end: usize,
    pub replacement: Vec<String>,
}

/// The lines of a file where a review may comment: each hunk's span on the head's side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commentable {
    pub path: String,
    /// Inclusive, 1-based line ranges.
    pub ranges: Vec<(usize, usize)>,
}

impl Commentable {
    /// The ranges of a pull request file's `patch` (its hunks).
    pub fn from_patch(path: &str, patch: &str) -> Self {
        let ranges = unified::parse_hunks(patch)
            .iter()
            .filter(|hunk| hunk.new_len() > 0)
            .map(|hunk| (hunk.new_start, hunk.new_start + hunk.new_len() - 1))
            .collect();
        Self {
            path: path.to_owned(),
            ranges,
        }
    }

    fn covers(&self, start: usize, end: usize) -> bool {
        self.ranges
            .iter()
            .any(|&(first, last)| first <= start && end <= last)
    }
}

/// The suggestions a review can carry for `fix` (a unified diff whose old side is the pull
/// request's head), given where the pull request's files may be commented on.
pub fn suggestions(fix: &str, commentable: &[Commentable]) -> Vec<Suggestion> {
    let mut out = Vec::new();
    for file in unified::parse(fix) {
        let same_path = file.old_path.is_some() && file.old_path == file.new_path;
        if file.status != FileStatus::Modified || !same_path {
            continue;
        }
        let path = file.path().to_owned();
        let Some(allowed) = commentable.iter().find(|c| c.path == path) else {
            continue;
        };
        for hunk in &file.hunks {
            out.extend(
                changes(&path, hunk)
                    .into_iter()
                    .filter(|s| small(s) && allowed.covers(s.start, s.end)),
            );
        }
    }
    out
}

/// How many separate changes `fix` makes: each change of a file modified in place, and each
/// other file (added, deleted, renamed, binary) as one.
pub fn change_count(fix: &str) -> usize {
    unified::parse(fix)
        .iter()
        .map(|file| {
            let in_place = file.status == FileStatus::Modified
                && file.old_path.is_some()
                && file.old_path == file.new_path;
            let changes: usize = file
                .hunks
                .iter()
                .map(|hunk| changes(file.path(), hunk).len())
                .sum();
            if in_place && changes > 0 { changes } else { 1 }
        })
        .sum()
}

fn small(suggestion: &Suggestion) -> bool {
    suggestion.end + 1 - suggestion.start <= MAX_SUGGESTION_LINES
        && suggestion.replacement.len() <= MAX_SUGGESTION_LINES
}

/// A hunk's changes, each with the old lines it replaces (an insertion is anchored on the line
/// before it, or after it at the top of a file, which the replacement repeats).
pub fn changes(path: &str, hunk: &Hunk<'_>) -> Vec<Suggestion> {
    let mut out = Vec::new();
    let lines = &hunk.lines;
    let mut old_line = hunk.old_start.max(1);
    let mut index = 0;
    while index < lines.len() {
        if let Line::Context(_) = lines[index] {
            old_line += 1;
            index += 1;
            continue;
        }
        let run_end = lines[index..]
            .iter()
            .position(|line| matches!(line, Line::Context(_)))
            .map_or(lines.len(), |offset| index + offset);
        let run = &lines[index..run_end];
        let removed = run.iter().filter(|l| matches!(l, Line::Removed(_))).count();
        let added: Vec<String> = run
            .iter()
            .filter_map(|line| match line {
                Line::Added(text) => Some((*text).to_owned()),
                Line::Context(_) | Line::Removed(_) => None,
            })
            .collect();
        let before = index.checked_sub(1).map(|i| &lines[i]);
        let after = lines.get(run_end);
        out.extend(change(path, old_line, removed, added, (before, after)));
        old_line += removed;
        index = run_end;
    }
    merge_shared_anchors(out)
}

/// An insertion at the top of a hunk anchored on the line after it and the next insertion
/// anchored on that same line become one suggestion (two would overlap).
fn merge_shared_anchors(changes: Vec<Suggestion>) -> Vec<Suggestion> {
    let mut merged: Vec<Suggestion> = Vec::with_capacity(changes.len());
    for change in changes {
        match merged.last_mut() {
            Some(previous) if change.start <= previous.end => {
                previous
                    .replacement
                    .extend(change.replacement.into_iter().skip(1));
                previous.end = previous.end.max(change.end);
            }
            Some(_) | None => merged.push(change),
        }
    }
    merged
}

/// One run of removed and added lines starting at old line `at`.
fn change(
    path: &str,
    at: usize,
    removed: usize,
    added: Vec<String>,
    (before, after): (Option<&Line<'_>>, Option<&Line<'_>>),
) -> Option<Suggestion> {
    if removed > 0 {
        return Some(Suggestion {
            path: path.to_owned(),
            start: at,
            end: at + removed - 1,
            replacement: added,
        });
    }
    match (before, after) {
        (Some(Line::Context(text)), _) => {
            let mut replacement = vec![(*text).to_owned()];
            replacement.extend(added);
            Some(Suggestion {
                path: path.to_owned(),
                start: at - 1,
                end: at - 1,
                replacement,
            })
        }
        (_, Some(Line::Context(text))) => {
            let mut replacement = added;
            replacement.push((*text).to_owned());
            Some(Suggestion {
                path: path.to_owned(),
                start: at,
                end: at,
                replacement,
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests;
