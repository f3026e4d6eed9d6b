//! Token patterns the redactor removes whatever their value: GitHub, OpenAI, Anthropic, AWS,
//! Slack, private key blocks, `Authorization` header values and JWTs. Compiled once, on first
//! use. This module only finds and replaces; it knows nothing of the secrets the bot holds.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::{Regex, RegexSet};

/// One token pattern: the kind named in the replacement, and the regex. When the regex has a
/// group named `keep`, that part of the match is kept in front of the marker (a header name or
/// an assignment's key).
struct Pattern {
    kind: &'static str,
    regex: Regex,
}

/// (kind, regex source), in the order they are applied: the most specific first. A private key
/// without its END line is removed up to the end of the text or the next `"`, so a JSON line
/// stays valid.
const SOURCES: &[(&str, &str)] = &[
    (
        "private-key",
        r#"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:[^"]*?-----END [A-Z0-9 ]*PRIVATE KEY-----|[^"]*)"#,
    ),
    (
        "github",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})",
    ),
    ("anthropic", r"\bsk-ant-[A-Za-z0-9_\-]{16,}"),
    ("openai", r"\bsk-(?:proj-)?[A-Za-z0-9_\-]{20,}"),
    ("aws-key-id", r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"),
    (
        "aws-secret",
        r#"(?i)(?P<keep>aws_secret_access_key["']?\s*[:=]\s*["']?)[A-Za-z0-9/+=]{16,}"#,
    ),
    ("slack", r"\bxox[baprs]-[A-Za-z0-9\-]{10,}"),
    (
        "jwt",
        r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
    ),
    (
        "authorization",
        r"(?i)(?P<keep>\bauthorization\s*[:=]\s*(?:(?:bearer|token|basic)\s+)?)[A-Za-z0-9\-._~+/]{8,}=*",
    ),
    (
        "authorization",
        r"(?i)(?P<keep>\b(?:bearer|token)\s+)[A-Za-z0-9\-._~+/]{16,}=*",
    ),
];

struct Compiled {
    set: RegexSet,
    patterns: Vec<Pattern>,
}

static COMPILED: LazyLock<Option<Compiled>> = LazyLock::new(compile);

/// Compiles the patterns; `None` only if a source above is invalid (a unit test proves not).
fn compile() -> Option<Compiled> {
    let set = RegexSet::new(SOURCES.iter().map(|(_, source)| *source)).ok()?;
    let patterns = SOURCES
        .iter()
        .map(|(kind, source)| Regex::new(source).map(|regex| Pattern { kind, regex }))
        .collect::<Result<Vec<_>, _>>()
        .ok()?;
    Some(Compiled { set, patterns })
}

/// Replaces every token pattern in `text` with `[REDACTED:<kind>]`.
pub fn replace(text: &str) -> Cow<'_, str> {
    let Some(compiled) = COMPILED.as_ref() else {
        return Cow::Borrowed(text);
    };
    let matched: Vec<usize> = compiled.set.matches(text).into_iter().collect();
    if matched.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = text.to_owned();
    for index in matched {
        let pattern = &compiled.patterns[index];
        out = replace_one(pattern, &out);
    }
    Cow::Owned(out)
}

/// Every token pattern match in `text`: its kind and byte range (the part a marker would replace,
/// without the kept header name or assignment key), in pattern order, each range once.
pub fn find(text: &str) -> Vec<(&'static str, std::ops::Range<usize>)> {
    let Some(compiled) = COMPILED.as_ref() else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for index in compiled.set.matches(text).into_iter() {
        let pattern = &compiled.patterns[index];
        for caps in pattern.regex.captures_iter(text) {
            let Some(whole) = caps.get(0) else { continue };
            let start = caps.name("keep").map_or(whole.start(), |keep| keep.end());
            let range = start..whole.end();
            if !found.iter().any(|(_, seen)| *seen == range) {
                found.push((pattern.kind, range));
            }
        }
    }
    found
}

fn replace_one(pattern: &Pattern, text: &str) -> String {
    let marker = super::marker(pattern.kind);
    pattern
        .regex
        .replace_all(text, |caps: &regex::Captures<'_>| {
            let keep = caps.name("keep").map_or("", |m| m.as_str());
            format!("{keep}{marker}")
        })
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_patterns_compile() {
        assert!(COMPILED.is_some());
    }

    #[test]
    fn header_name_is_kept() {
        let out = replace("Authorization: Bearer abcdefghijklmnopqrstuvwxyz");
        assert_eq!(out, "Authorization: Bearer [REDACTED:authorization]");
    }

    #[test]
    fn a_truncated_key_in_a_json_line_keeps_the_line_valid() {
        let line = r#"{"output":"-----BEGIN RSA PRIVATE KEY-----\nMIIEow","n":1}"#;
        let out = replace(line);
        assert_eq!(out, r#"{"output":"[REDACTED:private-key]","n":1}"#);
    }

    #[test]
    fn find_names_the_kind_and_skips_the_kept_part() {
        let text = "x Authorization: Bearer abcdefghijklmnopqrstuvwxyz y";
        let found = find(text);
        assert_eq!(found.len(), 1, "{found:?}");
        let (kind, range) = &found[0];
        assert_eq!(*kind, "authorization");
        assert_eq!(&text[range.clone()], "abcdefghijklmnopqrstuvwxyz");
        assert!(find("nothing here").is_empty());
    }

    #[test]
    fn plain_words_are_left_alone() {
        let text = "the token was refreshed; a sk-8 build; task-force";
        assert!(matches!(replace(text), Cow::Borrowed(_)));
    }
}
