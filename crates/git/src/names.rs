//! Branch names: turning a task title into a safe slug and checking a name against the rules of
//! `git check-ref-format --branch`, in Rust (no `git` process). Must not accept anything git
//! would refuse as `refs/heads/<name>`.

use super::GitError;

/// The longest slug [`branch_slug`] returns.
const MAX_SLUG_LEN: usize = 48;

/// A branch-name slug for a task title: ASCII lowercase letters, digits and single dashes, at most
/// 48 characters, never empty (`"task"` when nothing is left).
///
/// `"Fix: mean() of empty list!"` becomes `"fix-mean-of-empty-list"`.
pub fn branch_slug(title: &str) -> String {
    let mut slug = String::with_capacity(title.len().min(MAX_SLUG_LEN));
    for c in title.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
        if slug.len() >= MAX_SLUG_LEN {
            break;
        }
    }
    slug.truncate(MAX_SLUG_LEN);
    let trimmed = slug.trim_end_matches('-');
    if trimmed.is_empty() {
        "task".into()
    } else {
        trimmed.into()
    }
}

/// Checks `name` (a short branch name such as `meta-agent/fix-x`) against the rules git applies to
/// `refs/heads/<name>`.
pub fn validate_branch_name(name: &str) -> Result<(), GitError> {
    match rule_broken(name) {
        None => Ok(()),
        Some(reason) => Err(GitError::InvalidBranchName {
            name: name.into(),
            reason,
        }),
    }
}

fn rule_broken(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("empty");
    }
    if name == "HEAD" || name == "@" {
        return Some("reserved name");
    }
    if name.starts_with('-') {
        return Some("starts with '-'");
    }
    whole_name_rule(name).or_else(|| name.split('/').find_map(component_rule))
}

fn whole_name_rule(name: &str) -> Option<&'static str> {
    if name.contains("..") {
        return Some("contains '..'");
    }
    if name.contains("@{") {
        return Some("contains '@{'");
    }
    if name.ends_with('.') {
        return Some("ends with '.'");
    }
    if let Some(c) = name.chars().find(|&c| forbidden_char(c)) {
        return Some(if c.is_ascii_control() {
            "contains a control character"
        } else {
            "contains one of space ~ ^ : ? * [ \\"
        });
    }
    None
}

fn forbidden_char(c: char) -> bool {
    c.is_ascii_control() || matches!(c, ' ' | '~' | '^' | ':' | '?' | '*' | '[' | '\\')
}

fn component_rule(component: &str) -> Option<&'static str> {
    if component.is_empty() {
        return Some("empty path component (leading, trailing or double '/')");
    }
    if component.starts_with('.') {
        return Some("a component starts with '.'");
    }
    if component.ends_with(".lock") {
        return Some("a component ends with '.lock'");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slug_examples() {
        assert_eq!(
            branch_slug("Fix: mean() of empty list!"),
            "fix-mean-of-empty-list"
        );
        assert_eq!(branch_slug("  --Hello__World--  "), "hello-world");
        assert_eq!(branch_slug("Ünïcödé only ✓"), "n-c-d-only");
        assert_eq!(branch_slug("!!!"), "task");
        assert_eq!(branch_slug(""), "task");
    }

    #[test]
    fn slug_is_capped_without_trailing_dash() {
        let slug = branch_slug(&"ab ".repeat(40));
        assert!(slug.len() <= MAX_SLUG_LEN);
        assert!(!slug.ends_with('-'));
    }

    #[test]
    fn valid_names() {
        for name in ["main", "meta-agent/fix-x", "a/b/c", "v1.2", "@x", "ü"] {
            assert!(validate_branch_name(name).is_ok(), "{name}");
        }
    }

    #[test]
    fn invalid_names() {
        let bad = [
            "", "HEAD", "@", "-x", "a..b", "a@{1}", "a.", "a b", "a~1", "a^", "a:b", "a?", "a*",
            "a[b", "a\\b", "a\tb", "a\x7f", "/a", "a/", "a//b", ".a", "a/.b", "a.lock", "a.lock/b",
        ];
        for name in bad {
            assert!(validate_branch_name(name).is_err(), "{name:?}");
        }
    }
}
