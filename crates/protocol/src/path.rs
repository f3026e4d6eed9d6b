//! What a path handed to the bot may be: one rule for every place that takes a path from a
//! model, a patch, a task file or a configuration (the write policy, the patch gate, git's
//! check of a worktree patch, the beneath-the-root file access, the configuration's directories).
//!
//! A plain path is relative, never climbs with `..`, holds no NUL byte and has no component that
//! a file system could take for `.git`: in any case (`.GIT` on a case-insensitive disk), with the
//! trailing dots and spaces NTFS drops (`.git.`), as NTFS's short name `git~1`, or with the
//! zero-width code points HFS+ ignores. The same names git itself refuses in a tree
//! (`core.protectNTFS`, `core.protectHFS`). Pure functions over paths; nothing is opened.

use std::ffi::OsStr;
use std::path::{Component, Path};

use thiserror::Error;

/// Why a path is not plain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum NotPlain {
    /// The path holds a NUL byte.
    #[error("holds a NUL byte")]
    Nul,
    /// An absolute path (or a Windows prefix).
    #[error("is absolute")]
    Absolute,
    /// A `..` component.
    #[error("climbs out with `..`")]
    Climbs,
    /// A component a file system could take for `.git`.
    #[error("reaches into .git")]
    InsideGit,
}

/// Whether a file system could take `name` for `.git`: in any case, with trailing dots or
/// spaces, NTFS's `git~1`, an NTFS stream (`.git::$INDEX_ALLOCATION`), or with the code points
/// HFS+ ignores in names.
pub fn is_git_dir_name(name: &OsStr) -> bool {
    let text = name.to_string_lossy();
    let visible: String = text.chars().filter(|c| !hfs_ignores(*c)).collect();
    let lower = visible.to_ascii_lowercase();
    let head = lower.split(['\\', ':']).next().unwrap_or_default();
    let trimmed = head.trim_end_matches(['.', ' ']);
    trimmed == ".git" || trimmed == "git~1"
}

/// The code points HFS+ drops when it compares names (git's `next_hfs_char`).
fn hfs_ignores(c: char) -> bool {
    matches!(
        c,
        '\u{200c}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{206a}'..='\u{206f}' | '\u{feff}'
    )
}

/// The normal components of `path` when it is plain (none for `.` or an empty path).
pub fn plain_parts(path: &Path) -> Result<Vec<&OsStr>, NotPlain> {
    if path.as_os_str().as_encoded_bytes().contains(&0) {
        return Err(NotPlain::Nul);
    }
    let mut parts = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(name) if is_git_dir_name(name) => return Err(NotPlain::InsideGit),
            Component::Normal(name) => parts.push(name),
            Component::CurDir => {}
            Component::ParentDir => return Err(NotPlain::Climbs),
            Component::RootDir | Component::Prefix(_) => return Err(NotPlain::Absolute),
        }
    }
    Ok(parts)
}

/// Whether `path` is plain and names something (not `.`, not empty).
pub fn is_plain(path: &Path) -> bool {
    plain_parts(path).is_ok_and(|parts| !parts.is_empty())
}

/// Where a symlink's target leads that it must not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkEscape {
    /// An empty target, or one with a NUL byte.
    #[error("with an empty target")]
    Empty,
    /// An absolute target.
    #[error("pointing to an absolute path")]
    Absolute,
    /// A target that climbs above the tree's root.
    #[error("pointing out of the repository")]
    OutOfTree,
    /// A target through `.git`.
    #[error("pointing into .git")]
    IntoGit,
}

/// Where the symlink at `link` (a plain path in the tree) leads out of the tree or into `.git`,
/// resolving `target` lexically from the directory that holds the link; `None` when it stays.
pub fn link_escape(link: &Path, target: &Path) -> Option<LinkEscape> {
    let bytes = target.as_os_str().as_encoded_bytes();
    if bytes.is_empty() || bytes.contains(&0) {
        return Some(LinkEscape::Empty);
    }
    let mut depth = link.components().count().saturating_sub(1);
    for component in target.components() {
        match component {
            Component::Normal(name) if is_git_dir_name(name) => return Some(LinkEscape::IntoGit),
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::ParentDir => match depth.checked_sub(1) {
                Some(up) => depth = up,
                None => return Some(LinkEscape::OutOfTree),
            },
            Component::RootDir | Component::Prefix(_) => return Some(LinkEscape::Absolute),
        }
    }
    None
}

/// The last component of a `/`-separated repository path (`a/b.py` → `b.py`; a path without
/// `/` is its own).
pub fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn every_name_a_file_system_takes_for_git_is_refused() {
        for name in [
            ".git",
            ".GIT",
            ".Git",
            ".git.",
            ".git ",
            ".git. .",
            "git~1",
            "GIT~1",
            ".git::$INDEX_ALLOCATION",
            ".g\u{200c}it",
            "\u{feff}.git",
        ] {
            assert!(is_git_dir_name(OsStr::new(name)), "{name:?}");
            let path = format!("src/{name}/hooks/pre-commit");
            assert_eq!(plain_parts(Path::new(&path)), Err(NotPlain::InsideGit));
        }
        for name in [
            ".gitignore",
            ".github",
            "git",
            ".git2",
            "a.git",
            "git~2",
            "legit",
        ] {
            assert!(!is_git_dir_name(OsStr::new(name)), "{name:?}");
        }
    }

    #[test]
    fn plain_paths_are_relative_and_never_climb() {
        fn parts(p: &str) -> Result<Vec<&OsStr>, NotPlain> {
            plain_parts(Path::new(p))
        }
        assert_eq!(
            parts("./src/a.py"),
            Ok(vec![OsStr::new("src"), OsStr::new("a.py")])
        );
        assert_eq!(parts("."), Ok(vec![]));
        assert_eq!(parts("a/../b"), Err(NotPlain::Climbs));
        assert_eq!(parts("/etc/passwd"), Err(NotPlain::Absolute));
        assert_eq!(parts("a\0b"), Err(NotPlain::Nul));
        assert!(is_plain(Path::new("src/a.py")));
        assert!(!is_plain(Path::new("./")));
    }

    #[test]
    fn link_targets_stay_in_the_tree() {
        let escape = |link: &str, target: &str| link_escape(Path::new(link), Path::new(target));
        assert_eq!(escape("a/link", "../b"), None);
        assert_eq!(escape("a/link", "../../b"), Some(LinkEscape::OutOfTree));
        assert_eq!(escape("link", ".GIT/config"), Some(LinkEscape::IntoGit));
        assert_eq!(escape("link", "/etc/passwd"), Some(LinkEscape::Absolute));
        assert_eq!(escape("link", ""), Some(LinkEscape::Empty));
    }

    proptest! {
        /// Any mix of case on `.git`, anywhere in a path, makes it not plain.
        #[test]
        fn any_case_of_git_anywhere_is_refused(
            before in proptest::collection::vec("[a-z]{1,8}", 0..4),
            after in proptest::collection::vec("[a-z]{1,8}", 0..4),
            upper in proptest::collection::vec(any::<bool>(), 3),
        ) {
            let git: String = "git"
                .chars()
                .zip(&upper)
                .map(|(c, up)| if *up { c.to_ascii_uppercase() } else { c })
                .collect();
            let path = [before, vec![format!(".{git}")], after].concat().join("/");
            prop_assert_eq!(plain_parts(Path::new(&path)), Err(NotPlain::InsideGit));
            prop_assert!(!is_plain(Path::new(&path)));
        }
    }
}
