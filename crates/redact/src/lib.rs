//! The one outbound redactor (SECURITY.md rule 5). [`Redactor`] removes the exact values of the
//! secrets the bot holds, in their common encodings (base64 at every alignment, hex, URL, JSON
//! escaping, reversed, ROT13, any letter case, spread with whitespace or zero-width characters,
//! inside gzip+base64), and token patterns of well-known providers, replacing each with
//! `[REDACTED:<kind>]`. [`neutralize_markdown`] makes outbound Markdown inert (foreign images and
//! links, mass mentions). Neither decides where text goes: callers pass every outbound text
//! through here. A redactor that holds no secret still removes the token patterns.

#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod encode;
mod packed;
pub(crate) mod patterns;
pub mod secrets;
pub mod writer;

use std::borrow::Cow;

use aho_corasick::{AhoCorasick, MatchKind};

pub use encode::{base64, hex, url_encode};
pub use meta_agent_protocol::markdown::neutralize_markdown;

/// Values shorter than this are not redacted by value: too likely to occur in ordinary text.
pub const MIN_SECRET_LEN: usize = 8;

/// The kind named in the marker for an exact secret value (in any encoding).
const SECRET_KIND: &str = "secret";

/// The replacement for one redacted match.
pub fn marker(kind: &str) -> String {
    format!("[REDACTED:{kind}]")
}

/// One secret found in a text by [`Redactor::find_secrets`]: what kind, and where (a byte range).
/// It never carries the secret itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretMatch {
    /// `secret` for an exact value the redactor holds (in any encoding), else the token
    /// pattern's kind (`github`, `openai`, `private-key`, ...).
    pub kind: &'static str,
    pub range: std::ops::Range<usize>,
}

impl SecretMatch {
    /// Whether this is an exact value the bot holds (rather than a token pattern).
    pub fn is_exact(&self) -> bool {
        self.kind == SECRET_KIND
    }
}

/// Removes secrets from outbound text. Built once per process; cheap to share behind an `Arc`.
/// Secrets the process learns later (a GitHub App's installation token, minted again when it
/// nears its expiry) join it with [`Redactor::learn`], so every holder of the `Arc` (stderr,
/// the engine, the GitHub step) redacts them from then on.
#[derive(Debug, Default)]
pub struct Redactor {
    exact: std::sync::RwLock<Exact>,
}

/// The exact values redacted (every encoded form) and their matcher.
#[derive(Debug, Clone, Default)]
struct Exact {
    needles: Vec<String>,
    matcher: Option<AhoCorasick>,
}

impl Exact {
    fn of(mut needles: Vec<String>) -> Exact {
        needles.sort();
        needles.dedup();
        let matcher = if needles.is_empty() {
            None
        } else {
            AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostLongest)
                .ascii_case_insensitive(true)
                .build(&needles)
                .ok()
        };
        Exact { needles, matcher }
    }
}

impl Clone for Redactor {
    fn clone(&self) -> Self {
        Redactor {
            exact: std::sync::RwLock::new(self.exact().clone()),
        }
    }
}

impl Redactor {
    /// A redactor for the secrets among `vars` (a process environment): every variable whose
    /// name [`secrets::is_secret_name`] flags or whose value carries a credential
    /// ([`secrets::carries_credential`]), with a value of at least [`MIN_SECRET_LEN`]
    /// characters. A URL's credential (password, or token as user name) counts on its own, and the OTLP header
    /// variables count header by header too: each value is sent (and could be echoed) on its own.
    pub fn from_env(vars: impl IntoIterator<Item = (String, String)>) -> Redactor {
        let values = vars
            .into_iter()
            .filter(|(name, value)| secrets::is_secret_var(name, value))
            .flat_map(|(name, value)| {
                let credential = secrets::url_credential(&value).map(str::to_owned);
                secret_values(&name, value).into_iter().chain(credential)
            });
        Redactor::from_values(values)
    }

    /// A redactor for these exact secret values (short ones ignored, see [`MIN_SECRET_LEN`]).
    pub fn from_values(values: impl IntoIterator<Item = String>) -> Redactor {
        Redactor {
            exact: std::sync::RwLock::new(Exact::of(needles_of(values))),
        }
    }

    /// Adds the secrets among `vars` (chosen as [`Redactor::from_env`] chooses them) to what
    /// this redactor removes, for every holder of it from now on.
    pub fn learn(&self, vars: impl IntoIterator<Item = (String, String)>) {
        let added = Redactor::from_env(vars).exact().needles.clone();
        if added.is_empty() {
            return;
        }
        let mut exact = self
            .exact
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let needles = exact.needles.iter().cloned().chain(added).collect();
        *exact = Exact::of(needles);
    }

    /// True when the redactor knows at least one exact secret value.
    pub fn holds_secrets(&self) -> bool {
        self.exact().matcher.is_some()
    }

    fn exact(&self) -> std::sync::RwLockReadGuard<'_, Exact> {
        self.exact
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Redacts `text`: exact values (and their encodings) first, then token patterns. Returns the
    /// input borrowed when nothing matched.
    pub fn redact_text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let packed: Vec<_> = packed::runs_holding(text, |inner| self.packed_kind(inner))
            .into_iter()
            .map(|(range, _)| range)
            .collect();
        if packed.is_empty() {
            return self.redact_plain(text);
        }
        let unpacked = replace_ranges(text, &packed);
        Cow::Owned(self.redact_plain(&unpacked).into_owned())
    }

    /// The kind of secret the unpacked text of a gzip+base64 run holds, if any.
    fn packed_kind(&self, inner: &str) -> Option<&'static str> {
        if matches!(self.replace_exact(inner), Cow::Owned(_)) {
            return Some(SECRET_KIND);
        }
        patterns::find(inner).first().map(|(kind, _)| *kind)
    }

    /// [`Redactor::redact_text`] for text with no packed run holding a secret.
    fn redact_plain<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let exact = self.replace_exact(text);
        match patterns::replace(&exact) {
            Cow::Borrowed(_) => exact,
            Cow::Owned(changed) => Cow::Owned(changed),
        }
    }

    /// Where `text` holds secrets, exact values (in their encodings) first, then token patterns;
    /// empty when [`Redactor::redact_text`] would change nothing. For checks that must refuse
    /// rather than rewrite (the patch gate).
    pub fn find_secrets(&self, text: &str) -> Vec<SecretMatch> {
        let exact = self.exact();
        let mut found: Vec<SecretMatch> = exact
            .matcher
            .iter()
            .flat_map(|matcher| matcher.find_iter(text))
            .map(|m| SecretMatch {
                kind: SECRET_KIND,
                range: m.start()..m.end(),
            })
            .collect();
        if let Some(matcher) = &exact.matcher {
            found.extend(
                interleaved(matcher, text)
                    .into_iter()
                    .map(|range| SecretMatch {
                        kind: SECRET_KIND,
                        range,
                    }),
            );
        }
        drop(exact);
        found.extend(
            patterns::find(text)
                .into_iter()
                .map(|(kind, range)| SecretMatch { kind, range }),
        );
        found.extend(
            packed::runs_holding(text, |inner| self.packed_kind(inner))
                .into_iter()
                .map(|(range, kind)| SecretMatch { kind, range }),
        );
        found
    }

    fn replace_exact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let exact = self.exact();
        let Some(matcher) = &exact.matcher else {
            return Cow::Borrowed(text);
        };
        let direct = match matcher.is_match(text) {
            true => {
                let marker = marker(SECRET_KIND);
                let mut out = String::with_capacity(text.len());
                matcher.replace_all_with(text, &mut out, |_, _, dst| {
                    dst.push_str(&marker);
                    true
                });
                Cow::Owned(out)
            }
            false => Cow::Borrowed(text),
        };
        let spread = interleaved(matcher, &direct);
        match spread.is_empty() {
            true => direct,
            false => Cow::Owned(replace_ranges(&direct, &spread)),
        }
    }
}

/// A character that can be put between a secret's letters without changing how it reads back:
/// whitespace and the zero-width and formatting characters.
fn filler(c: char) -> bool {
    c.is_whitespace()
        || matches!(c, '\u{200B}'..='\u{200F}' | '\u{2060}'..='\u{2064}' | '\u{FEFF}' | '\u{00AD}')
}

/// Where `text` holds a secret form with fillers between its characters (zero-width
/// characters, spaces, line breaks): the matcher run over `text` without its fillers, each match
/// mapped back to the byte range it spans in `text`. Matches with no filler inside are left to
/// the direct pass.
fn interleaved(matcher: &AhoCorasick, text: &str) -> Vec<std::ops::Range<usize>> {
    if !text.chars().any(filler) {
        return Vec::new();
    }
    let mut squeezed = String::with_capacity(text.len());
    let mut origin = Vec::with_capacity(text.len());
    for (at, c) in text.char_indices().filter(|(_, c)| !filler(*c)) {
        squeezed.push(c);
        origin.extend((0..c.len_utf8()).map(|i| at + i));
    }
    matcher
        .find_iter(&squeezed)
        .map(|m| origin[m.start()]..origin[m.end() - 1] + 1)
        .filter(|range| text[range.clone()].chars().any(filler))
        .collect()
}

/// `text` with each of `ranges` (sorted, disjoint, on character boundaries) replaced by the
/// secret marker.
fn replace_ranges(text: &str, ranges: &[std::ops::Range<usize>]) -> String {
    let marker = marker(SECRET_KIND);
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for range in ranges {
        out.push_str(&text[at..range.start]);
        out.push_str(&marker);
        at = range.end;
    }
    out.push_str(&text[at..]);
    out
}

/// Every encoded form of each value long enough to redact (see [`MIN_SECRET_LEN`]).
fn needles_of(values: impl IntoIterator<Item = String>) -> Vec<String> {
    values
        .into_iter()
        .filter(|value| value.chars().count() >= MIN_SECRET_LEN)
        .flat_map(|value| encode::forms(&value))
        .filter(|form| form.len() >= MIN_SECRET_LEN && !marker(SECRET_KIND).contains(form))
        .collect()
}

/// The password of a URL-shaped secret (`scheme://user:password@host...`, such as a database
/// URL), so that it is redacted wherever it appears on its own.
fn url_password(value: &str) -> Option<String> {
    let userinfo = secrets::url_userinfo(value)?;
    let (_, password) = userinfo.split_once(':')?;
    (!password.is_empty()).then(|| password.to_owned())
}

/// Redacts and neutralises one outbound Markdown text (comment, PR body, report, job summary):
/// the call for the code that publishes such text. Every HTML comment opener after the first
/// line is escaped (shown, never hidden): the bot's own hidden markers stand on a body's first
/// line or are appended after this call, so quoted text can never carry one.
pub fn outbound_markdown(redactor: &Redactor, text: &str, allowed_hosts: &[&str]) -> String {
    let redacted = redactor.redact_text(text);
    escape_comments_after_first_line(&neutralize_markdown(&redacted, allowed_hosts))
}

/// `text` with every `<!--` after its first line written `&lt;!--` (GitHub shows it as typed).
fn escape_comments_after_first_line(text: &str) -> String {
    match text.split_once('\n') {
        Some((first, rest)) => format!("{first}\n{}", rest.replace("<!--", "&lt;!--")),
        None => text.to_owned(),
    }
}

/// The secrets in a secret variable: its value, the password of a URL with credentials
/// (a database URL), and each header's value of an OTLP headers list.
fn secret_values(name: &str, value: String) -> Vec<String> {
    let mut values = Vec::new();
    values.extend(url_password(&value));
    if name.to_ascii_uppercase().ends_with("_HEADERS")
        && let Ok(headers) = secrets::parse_headers(&value)
    {
        values.extend(headers.into_iter().map(|(_, header)| header));
    }
    values.push(value);
    values
}

#[cfg(test)]
mod tests {
    use super::*;

    const CANARY: &str = "CanaryValue-0123456789";

    #[test]
    fn simple_reversible_forms_of_a_secret_are_redacted() {
        let redactor = Redactor::from_values([CANARY.to_owned()]);
        let letters: Vec<String> = CANARY.chars().map(String::from).collect();
        let (spaced, zero_width) = (letters.join(" "), letters.join("\u{200B}"));
        let reversed_rot13: String = encode::rot13(CANARY).chars().rev().collect();
        for form in [
            CANARY.to_uppercase(),
            CANARY.to_lowercase(),
            encode::rot13(CANARY),
            reversed_rot13,
            spaced,
            zero_width,
            format!("{}\n{}", &CANARY[..6], &CANARY[6..]),
        ] {
            let text = format!("before {form} after");
            let redacted = redactor.redact_text(&text);
            assert_eq!(redacted, "before [REDACTED:secret] after", "{form:?}");
            assert!(!redactor.find_secrets(&text).is_empty(), "{form:?}");
        }
        assert_eq!(redactor.redact_text("an ordinary text"), "an ordinary text");
    }

    #[test]
    fn a_secret_inside_gzip_and_base64_is_redacted_and_found() {
        use base64::Engine as _;
        use std::io::Write as _;
        let gzip_base64 = |text: &str, url_safe: bool| {
            let mut encoder =
                flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            encoder.write_all(text.as_bytes()).unwrap();
            let packed = encoder.finish().unwrap();
            match url_safe {
                true => base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(packed),
                false => base64::engine::general_purpose::STANDARD.encode(packed),
            }
        };
        let redactor = Redactor::from_values([CANARY.to_owned()]);
        let token = format!("ghp_{}", "a1B2c3D4e5".repeat(4));
        for (inner, kind) in [
            (format!("export KEY={CANARY}\nok\n"), "secret"),
            (format!("{}\n", CANARY.to_lowercase()), "secret"),
            (format!("auth: {token}\n"), "github"),
        ] {
            for url_safe in [false, true] {
                let packed = gzip_base64(&inner, url_safe);
                let text = format!("log: {packed} end");
                assert_eq!(
                    redactor.redact_text(&text),
                    "log: [REDACTED:secret] end",
                    "{inner:?}"
                );
                let found = redactor.find_secrets(&text);
                assert!(
                    found
                        .iter()
                        .any(|m| m.kind == kind && text[m.range.clone()] == packed),
                    "{inner:?}: {found:?}"
                );
            }
        }
        let harmless = format!("log: {} end", gzip_base64("just a build log\n", false));
        assert_eq!(redactor.redact_text(&harmless), harmless);
        assert!(redactor.find_secrets(&harmless).is_empty());
    }

    #[test]
    fn quoted_html_comments_are_shown_never_hidden() {
        let redactor = Redactor::from_values(Vec::new());
        let text = "<!-- meta-agent:status -->\nsaid: <!-- meta-agent:session e30= -->\n";
        assert_eq!(
            outbound_markdown(&redactor, text, &[]),
            "<!-- meta-agent:status -->\nsaid: &lt;!-- meta-agent:session e30= -->\n"
        );
    }

    #[test]
    fn secrets_learned_later_are_redacted_for_every_holder() {
        let shared = std::sync::Arc::new(Redactor::from_values([CANARY.to_owned()]));
        let holder = shared.clone();
        let later = "v1.InstallationTokenMintedLater0123";
        assert_eq!(holder.redact_text(later), later);
        shared.learn([
            (
                "META_AGENT_APP_INSTALLATION_TOKEN".to_owned(),
                later.to_owned(),
            ),
            ("HOME".to_owned(), "/home/not-a-secret".to_owned()),
        ]);
        let text = format!("{CANARY} {later} /home/not-a-secret");
        assert_eq!(
            holder.redact_text(&text),
            "[REDACTED:secret] [REDACTED:secret] /home/not-a-secret"
        );
        assert_eq!(holder.find_secrets(later).len(), 1);
        assert_eq!(holder.clone().redact_text(later), "[REDACTED:secret]");
    }

    #[test]
    fn short_values_and_non_secret_names_are_ignored() {
        let redactor = Redactor::from_env([
            ("GITHUB_TOKEN".to_owned(), "short".to_owned()),
            ("HOME".to_owned(), "/home/someone/long".to_owned()),
        ]);
        assert!(!redactor.holds_secrets());
        assert_eq!(
            redactor.redact_text("/home/someone/long"),
            "/home/someone/long"
        );
    }

    #[test]
    fn exact_value_and_its_reversal_are_redacted() {
        let redactor = Redactor::from_values([CANARY.to_owned()]);
        let reversed: String = CANARY.chars().rev().collect();
        let text = format!("a {CANARY} b {reversed} c");
        let out = redactor.redact_text(&text);
        assert_eq!(out, "a [REDACTED:secret] b [REDACTED:secret] c");
    }

    #[test]
    fn find_secrets_locates_values_and_patterns_without_quoting_them() {
        let redactor = Redactor::from_values([CANARY.to_owned()]);
        let text = format!(
            "a {} b ghp_abcdefghijklmnopqrstuvwxyz0123",
            base64(CANARY.as_bytes())
        );
        let found = redactor.find_secrets(&text);
        let kinds: Vec<&str> = found.iter().map(|m| m.kind).collect();
        assert_eq!(kinds, ["secret", "github"], "{found:?}");
        assert!(found[0].is_exact() && !found[1].is_exact());
        assert!(redactor.find_secrets("plain text").is_empty());
    }

    #[test]
    fn a_database_url_and_its_password_are_secrets() {
        let redactor = Redactor::from_env([(
            "META_AGENT_DATABASE_URL".to_owned(),
            "postgres://bot:Pg-Canary-0123@db.example.com/memory".to_owned(),
        )]);
        let out = redactor.redact_text("password Pg-Canary-0123 and url db.example.com");
        assert_eq!(out, "password [REDACTED:secret] and url db.example.com");
        assert_eq!(url_password("postgres://bot@db/x"), None);
        assert_eq!(
            url_password("https://a:b@c:d@host/p").as_deref(),
            Some("b@c:d")
        );
    }

    #[test]
    fn each_otlp_header_value_is_a_secret() {
        let redactor = Redactor::from_env([(
            "OTEL_EXPORTER_OTLP_HEADERS".to_owned(),
            format!("x-team=acme,x-api-key={CANARY}"),
        )]);
        assert_eq!(
            redactor.redact_text(&format!("key {CANARY} sent")),
            "key [REDACTED:secret] sent"
        );
    }

    #[test]
    fn markers_survive_a_second_pass() {
        let redactor = Redactor::from_values(["REDACTED:secret".to_owned()]);
        let once = redactor.redact_text("x REDACTED:secret y").into_owned();
        assert_eq!(redactor.redact_text(&once), once);
    }
}
