//! Makes outbound Markdown inert: images, links, autolinks and `<img>` tags pointing at hosts
//! outside an allowlist become plain text naming the host (so nothing is fetched and no data
//! leaves in a URL), and mass mentions (`@everyone`, `@here`, team mentions, more than three user
//! mentions) are wrapped in backticks so they notify nobody. It does not redact secrets: that is the
//! redactor's work (`meta-agent-redact`, which sends every outbound text through this too).

use std::sync::LazyLock;

use regex::{Captures, Regex};

/// Most user mentions one text may carry before they are all defused.
const MAX_USER_MENTIONS: usize = 3;

static IMAGE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r#"!\[([^\]\n]*)\]\(\s*<?([^)\s>]*)>?(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)"#).ok()
});
static LINK: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r#"\[([^\]\n]*)\]\(\s*<?([^)\s>]*)>?(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)"#).ok()
});
static REFERENCE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?m)^( {0,3}\[[^\]\n]+\]:)[ \t]*<?(\S+?)>?(?:[ \t].*)?$").ok());
static AUTOLINK: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"<((?i:https?):[^>\s]+)>").ok());
static IMG_TAG: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"(?i)<img\b[^>]*>").ok());
static IMG_SRC: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r#"(?i)\bsrc\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))"#).ok());
static MENTION: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(^|[^A-Za-z0-9_`/@.])@([A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:/[A-Za-z0-9][A-Za-z0-9_.-]*)?)").ok()
});

/// Neutralises foreign images and links and defuses mass mentions in outbound Markdown.
/// `allowed_hosts` are matched exactly or as a parent domain (`github.com` allows
/// `gist.github.com`); relative links and in-page anchors are kept.
pub fn neutralize_markdown(text: &str, allowed_hosts: &[&str]) -> String {
    let allowed = |url: &str| foreign_host(url, allowed_hosts);
    let mut out = replace_urls(
        &IMAGE,
        text,
        2,
        |caps, host| format!("{} (image removed: {host})", &caps[1]),
        &allowed,
    );
    out = replace_urls(
        &LINK,
        &out,
        2,
        |caps, host| format!("{} (link removed: {host})", &caps[1]),
        &allowed,
    );
    out = replace_urls(
        &REFERENCE,
        &out,
        2,
        |caps, host| format!("{} (link removed: {host})", &caps[1]),
        &allowed,
    );
    out = replace_urls(
        &AUTOLINK,
        &out,
        1,
        |_, host| format!("(link removed: {host})"),
        &allowed,
    );
    out = neutralize_img_tags(&out, &allowed);
    defuse_mentions(&out)
}

/// Replaces each match of `regex` whose URL (group `url_group`) is foreign with `render`.
fn replace_urls(
    regex: &LazyLock<Option<Regex>>,
    text: &str,
    url_group: usize,
    render: impl Fn(&Captures<'_>, &str) -> String,
    foreign: &dyn Fn(&str) -> Option<String>,
) -> String {
    let Some(regex) = regex.as_ref() else {
        return text.to_owned();
    };
    regex
        .replace_all(text, |caps: &Captures<'_>| {
            let url = caps.get(url_group).map_or("", |m| m.as_str());
            match foreign(url) {
                Some(host) => render(caps, &host),
                None => caps[0].to_owned(),
            }
        })
        .into_owned()
}

/// Replaces `<img>` tags whose `src` is foreign (or missing) with a note naming the host.
fn neutralize_img_tags(text: &str, foreign: &dyn Fn(&str) -> Option<String>) -> String {
    let (Some(tag), Some(src)) = (IMG_TAG.as_ref(), IMG_SRC.as_ref()) else {
        return text.to_owned();
    };
    tag.replace_all(text, |caps: &Captures<'_>| {
        let url = src
            .captures(&caps[0])
            .and_then(|c| c.get(1).or(c.get(2)).or(c.get(3)))
            .map_or("", |m| m.as_str());
        match foreign(url) {
            Some(host) => format!("(image removed: {host})"),
            None if url.is_empty() => "(image removed)".to_owned(),
            None => caps[0].to_owned(),
        }
    })
    .into_owned()
}

/// `Some(host)` when `url` leaves the allowlist: an absolute or protocol-relative URL to a host
/// not allowed, or any non-HTTP scheme (`data:`, `javascript:`, ...). `None` for allowed hosts,
/// relative paths and anchors.
fn foreign_host(url: &str, allowed_hosts: &[&str]) -> Option<String> {
    let url = url.trim();
    let host = match url.split_once("//") {
        Some((scheme, rest)) if scheme.is_empty() || is_http_scheme(scheme) => host_of(rest),
        _ => match url.split_once(':') {
            Some((scheme, _)) if is_scheme(scheme) => return Some(format!("{scheme}:")),
            _ => return None,
        },
    };
    let lower = host.to_ascii_lowercase();
    let ok = allowed_hosts.iter().any(|allowed| {
        let allowed = allowed.to_ascii_lowercase();
        lower == allowed || lower.ends_with(&format!(".{allowed}"))
    });
    (!ok).then_some(if lower.is_empty() {
        "unknown host".to_owned()
    } else {
        lower
    })
}

fn is_http_scheme(scheme: &str) -> bool {
    scheme.eq_ignore_ascii_case("http:") || scheme.eq_ignore_ascii_case("https:")
}

fn is_scheme(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
}

/// The host part of `rest` (what follows `//`): userinfo and port dropped.
fn host_of(rest: &str) -> String {
    let authority = rest.split(['/', '?', '#', '\\']).next().unwrap_or_default();
    let host_port = authority.rsplit('@').next().unwrap_or_default();
    if let Some(v6) = host_port.strip_prefix('[') {
        return v6.split(']').next().unwrap_or_default().to_owned();
    }
    host_port.split(':').next().unwrap_or_default().to_owned()
}

/// Wraps `@everyone`, `@here`, team mentions, and (when more than [`MAX_USER_MENTIONS`]) every
/// user mention in backticks.
fn defuse_mentions(text: &str) -> String {
    let Some(regex) = MENTION.as_ref() else {
        return text.to_owned();
    };
    let users = regex
        .captures_iter(text)
        .filter(|caps| !is_mass(&caps[2]))
        .map(|caps| caps[2].to_ascii_lowercase())
        .collect::<std::collections::HashSet<_>>()
        .len();
    let defuse_all = users > MAX_USER_MENTIONS;
    regex
        .replace_all(text, |caps: &Captures<'_>| {
            if defuse_all || is_mass(&caps[2]) {
                format!("{}`@{}`", &caps[1], &caps[2])
            } else {
                caps[0].to_owned()
            }
        })
        .into_owned()
}

fn is_mass(name: &str) -> bool {
    name.contains('/') || name.eq_ignore_ascii_case("everyone") || name.eq_ignore_ascii_case("here")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_parsed() {
        assert_eq!(host_of("user:pw@Example.com:8080/x"), "Example.com");
        assert_eq!(foreign_host("https://github.com/a", &["github.com"]), None);
        assert_eq!(
            foreign_host("https://gist.github.com/a", &["github.com"]),
            None
        );
        assert_eq!(
            foreign_host("https://evilgithub.com/a", &["github.com"]),
            Some("evilgithub.com".to_owned())
        );
        assert_eq!(foreign_host("docs/x.md", &[]), None);
        assert_eq!(foreign_host("#anchor", &[]), None);
        assert_eq!(
            foreign_host("data:image/png;base64,AAA", &[]),
            Some("data:".to_owned())
        );
        assert_eq!(
            foreign_host("//evil.example/x", &[]),
            Some("evil.example".to_owned())
        );
    }

    #[test]
    fn foreign_autolinks_are_removed() {
        let out = neutralize_markdown(
            "<https://evil.example/?d=1> <https://github.com/x>",
            &["github.com"],
        );
        assert_eq!(out, "(link removed: evil.example) <https://github.com/x>");
    }

    #[test]
    fn few_user_mentions_are_kept_and_emails_ignored() {
        let text = "thanks @alice and @bob, mail a@b.com";
        assert_eq!(defuse_mentions(text), text);
    }
}
