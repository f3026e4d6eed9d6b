//! Assertions weakened or disabled in test files: removed with nothing in their place, commented
//! out, made trivially true, stripped of their comparison, put behind dead code, or made to pass
//! on failure. Works on one file's hunks; no I/O.

use super::lines::{self, Lang};
use super::{FileView, TamperFinding, TamperKind, line_text, quote};
use meta_agent_git::unified::{FileStatus, Line};

/// A run of removed and added lines between context lines.
#[derive(Default)]
struct Block<'a> {
    removed: Vec<&'a str>,
    added: Vec<&'a str>,
}

fn blocks<'a>(hunk: &[Line<'a>]) -> Vec<Block<'a>> {
    let mut out = vec![Block::default()];
    for line in hunk {
        match *line {
            Line::Context(_) => {
                if out
                    .last()
                    .is_some_and(|b| !b.removed.is_empty() || !b.added.is_empty())
                {
                    out.push(Block::default());
                }
            }
            Line::Removed(t) => out.last_mut().iter_mut().for_each(|b| b.removed.push(t)),
            Line::Added(t) => out.last_mut().iter_mut().for_each(|b| b.added.push(t)),
        }
    }
    out
}

fn real_assertions<'a>(lines: &[&'a str]) -> Vec<&'a str> {
    lines
        .iter()
        .copied()
        .filter(|l| lines::is_assertion(l) && !lines::is_trivial_assertion(l))
        .collect()
}

pub(super) fn weakened_assertions(file: &FileView<'_>) -> Vec<TamperFinding> {
    if !file.is_test || file.file.status == FileStatus::Deleted {
        return Vec::new();
    }
    let all: Vec<Block<'_>> = file
        .file
        .hunks
        .iter()
        .flat_map(|h| blocks(&h.lines))
        .collect();
    let removed_total: usize = all.iter().map(|b| real_assertions(&b.removed).len()).sum();
    let added_total: usize = all.iter().map(|b| real_assertions(&b.added).len()).sum();
    let balanced = added_total >= removed_total;
    all.iter()
        .filter(|block| !removes_a_test(block, file.lang))
        .filter_map(|block| weakening(block, balanced))
        .map(|detail| file.finding(TamperKind::AssertionWeakened, detail))
        .collect()
}

/// Added code that stops existing assertions from running or failing: an always-false guard or
/// a bare `return` with assertions after it, a swallowed `AssertionError`, a `#[should_panic]` on
/// a test that is not new.
pub(super) fn disabled_assertions(file: &FileView<'_>) -> Vec<TamperFinding> {
    if !file.is_test {
        return Vec::new();
    }
    let mut details = Vec::new();
    for hunk in &file.file.hunks {
        details.extend(dead_code_before_assertions(&hunk.lines));
        for block in blocks(&hunk.lines) {
            let adds_a_test = block
                .added
                .iter()
                .any(|l| lines::test_declaration(l, file.lang).is_some());
            let swallowing = block.added.iter().find(|l| lines::swallows_failures(l));
            if let Some(line) = swallowing.filter(|_| !adds_a_test) {
                details.push(format!("makes failures pass with {}", quote(line)));
            }
        }
    }
    details
        .into_iter()
        .map(|detail| file.finding(TamperKind::AssertionWeakened, detail))
        .collect()
}

fn dead_code_before_assertions(hunk: &[Line<'_>]) -> Option<String> {
    let new_side: Vec<&Line<'_>> = hunk
        .iter()
        .filter(|l| !matches!(l, Line::Removed(_)))
        .collect();
    new_side.iter().enumerate().find_map(|(i, line)| {
        let Line::Added(text) = line else { return None };
        let guards = lines::is_dead_code_start(text)
            && new_side[i + 1..]
                .iter()
                .any(|l| lines::is_assertion(line_text(l)));
        guards.then(|| format!("adds {} before assertions, so they never run", quote(text)))
    })
}

fn removes_a_test(block: &Block<'_>, lang: Option<Lang>) -> bool {
    block
        .removed
        .iter()
        .any(|l| lines::test_declaration(l, lang).is_some())
}

/// Why this block weakens an assertion, if it does. `balanced`: the file as a whole adds as many
/// real assertions as it removes (so a removal here is a move or a restructuring).
fn weakening(block: &Block<'_>, balanced: bool) -> Option<String> {
    let removed = real_assertions(&block.removed);
    let first = *removed.first()?;
    let added_asserts: Vec<&str> = block
        .added
        .iter()
        .copied()
        .filter(|l| lines::is_assertion(l))
        .collect();
    if let Some(trivial) = added_asserts
        .iter()
        .find(|l| lines::is_trivial_assertion(l))
    {
        return Some(format!(
            "replaces {} with the always-true {}",
            quote(first),
            quote(trivial)
        ));
    }
    if added_asserts.is_empty() {
        return weakened_without_replacement(block, first, balanced);
    }
    let compared = removed.iter().find(|l| lines::has_comparison(l))?;
    let still_compares = added_asserts.iter().any(|l| lines::has_comparison(l));
    (!still_compares).then(|| {
        format!(
            "drops the comparison: {} became {}",
            quote(compared),
            quote(added_asserts[0])
        )
    })
}

fn weakened_without_replacement(block: &Block<'_>, first: &str, balanced: bool) -> Option<String> {
    let needle = first.trim();
    let commented = block
        .added
        .iter()
        .find(|l| lines::is_comment(l) && l.contains(needle));
    match commented {
        Some(comment) => Some(format!(
            "comments out {} as {}",
            quote(first),
            quote(comment)
        )),
        None if balanced => None,
        None => Some(format!(
            "removes {} with no assertion in its place",
            quote(first)
        )),
    }
}
