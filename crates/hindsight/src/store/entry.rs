//! The store's plain data: an [`Entry`] per signature, its [`Resolution`]s and their outcome
//! counts, and the [`Timestamp`] they are dated with.
//!
//! Everything here serializes deterministically (sets are sorted, resolutions are kept in id
//! order) so that an entry file reads the same whoever wrote it and merges cleanly. Merging two
//! versions of an entry ([`Entry::merge`]) is a pure function. This module does no I/O and never
//! reads a clock: every time comes in as a parameter.

use std::collections::BTreeSet;
use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::signature::family_key;
use crate::{Signature, SignatureKind};

/// A point in time, written as RFC 3339 UTC with whole seconds (`2026-11-22T02:13:41Z`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(SystemTime);

impl Timestamp {
    /// The time, truncated to whole seconds so that it survives a round trip through a file.
    pub fn new(time: SystemTime) -> Self {
        let secs = time
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        Timestamp(UNIX_EPOCH + Duration::from_secs(secs))
    }

    /// Seconds since the Unix epoch (times before it count as zero).
    pub fn from_unix_secs(secs: u64) -> Self {
        Timestamp(UNIX_EPOCH + Duration::from_secs(secs))
    }

    pub fn system_time(self) -> SystemTime {
        self.0
    }

    /// Days from `self` to `later` (zero when `later` is earlier).
    pub fn days_until(self, later: Timestamp) -> f64 {
        later
            .0
            .duration_since(self.0)
            .map(|d| d.as_secs_f64() / 86_400.0)
            .unwrap_or(0.0)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", humantime::format_rfc3339_seconds(self.0))
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        humantime::parse_rfc3339_weak(&text)
            .map(Timestamp::new)
            .map_err(|e| serde::de::Error::custom(format!("bad timestamp {text:?}: {e}")))
    }
}

/// Where an entry stands. The order (unresolved < escalated < resolved) is the merge order:
/// merging two versions keeps the greater.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Seen, not (yet) cured.
    #[default]
    Unresolved,
    /// A run escalated to maintainers with this signature still failing.
    Escalated,
    /// Some resolution cured it at least once.
    Resolved,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Unresolved => "unresolved",
            Status::Escalated => "escalated",
            Status::Resolved => "resolved",
        }
    }
}

/// How to run a command resolution.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CommandLine {
    /// Program and arguments, run without a shell (`[cargo, fmt]`).
    Argv(Vec<String>),
    /// A line for `sh -c` (`cargo clippy --fix --allow-dirty`).
    Shell(String),
}

impl fmt::Display for CommandLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommandLine::Argv(argv) => write!(f, "{}", argv.join(" ")),
            CommandLine::Shell(line) => write!(f, "{line}"),
        }
    }
}

/// A diff that cured a signature once.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PatchFix {
    /// Unified diff, as `git diff` prints it.
    pub diff: String,
    /// Repository-relative files the diff touches, sorted.
    #[serde(default)]
    pub files: BTreeSet<String>,
    /// Where it came from: a commit, an issue or a run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// What a resolution does. Written as a map with exactly one of `command`, `patch`, `guidance`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "FixRepr", into = "FixRepr")]
pub enum Fix {
    /// Run a command (a formatter, an autofixing linter).
    Command(CommandLine),
    /// Apply a diff.
    Patch(PatchFix),
    /// Give the LLM this text along with the failure.
    Guidance(String),
}

impl Fix {
    /// Stable id of the fix's content: the same command, diff or text gives the same id anywhere.
    /// A patch's `source` and `files` do not count: the same diff learned twice is one fix.
    pub fn id(&self) -> String {
        let content = match self {
            Fix::Command(CommandLine::Argv(argv)) => format!("command\0argv\0{}", argv.join("\0")),
            Fix::Command(CommandLine::Shell(line)) => format!("command\0shell\0{line}"),
            Fix::Patch(patch) => format!("patch\0{}", patch.diff),
            Fix::Guidance(text) => format!("guidance\0{text}"),
        };
        stable_hash(&content)
    }

    /// The same fix with every text passed through `redact`.
    pub fn redacted(&self, redact: &dyn Fn(&str) -> String) -> Fix {
        match self {
            Fix::Command(CommandLine::Argv(argv)) => {
                Fix::Command(CommandLine::Argv(argv.iter().map(|a| redact(a)).collect()))
            }
            Fix::Command(CommandLine::Shell(line)) => {
                Fix::Command(CommandLine::Shell(redact(line)))
            }
            Fix::Patch(patch) => Fix::Patch(PatchFix {
                diff: redact(&patch.diff),
                files: patch.files.iter().map(|f| redact(f)).collect(),
                source: patch.source.as_deref().map(redact),
            }),
            Fix::Guidance(text) => Fix::Guidance(redact(text)),
        }
    }

    pub fn kind_name(&self) -> &'static str {
        match self {
            Fix::Command(_) => "command",
            Fix::Patch(_) => "patch",
            Fix::Guidance(_) => "guidance",
        }
    }

    /// One line for tables.
    pub fn summary(&self) -> String {
        match self {
            Fix::Command(line) => format!("command: {line}"),
            Fix::Patch(patch) => {
                let files: Vec<&str> = patch.files.iter().map(String::as_str).collect();
                format!("patch: {}", files.join(", "))
            }
            Fix::Guidance(text) => {
                let first = text.lines().next().unwrap_or_default();
                format!("guidance: {first}")
            }
        }
    }
}

/// The file shape of a [`Fix`]: YAML writes enums as tags, which people should not have to.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FixRepr {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    command: Option<CommandLine>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    patch: Option<PatchFix>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    guidance: Option<String>,
}

impl TryFrom<FixRepr> for Fix {
    type Error = String;

    fn try_from(repr: FixRepr) -> Result<Self, Self::Error> {
        match (repr.command, repr.patch, repr.guidance) {
            (Some(command), None, None) => Ok(Fix::Command(command)),
            (None, Some(patch), None) => Ok(Fix::Patch(patch)),
            (None, None, Some(text)) => Ok(Fix::Guidance(text)),
            _ => Err("a resolution needs exactly one of command, patch, guidance".to_string()),
        }
    }
}

impl From<Fix> for FixRepr {
    fn from(fix: Fix) -> Self {
        match fix {
            Fix::Command(command) => FixRepr {
                command: Some(command),
                ..FixRepr::default()
            },
            Fix::Patch(patch) => FixRepr {
                patch: Some(patch),
                ..FixRepr::default()
            },
            Fix::Guidance(text) => FixRepr {
                guidance: Some(text),
                ..FixRepr::default()
            },
        }
    }
}

/// How often a resolution was tried and how it went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Outcomes {
    #[serde(default)]
    pub applied: u64,
    #[serde(default)]
    pub succeeded: u64,
    #[serde(default)]
    pub failed: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_used: Option<Timestamp>,
}

impl Outcomes {
    /// One application: cured (the signature is gone) or not.
    pub fn record(&mut self, cured: bool, now: Timestamp) {
        self.applied += 1;
        if cured {
            self.succeeded += 1;
        } else {
            self.failed += 1;
        }
        self.last_used = Some(self.last_used.map_or(now, |t| t.max(now)));
    }

    /// Both histories together: counts added, the later last use kept.
    pub fn merge(&mut self, other: &Outcomes) {
        self.applied += other.applied;
        self.succeeded += other.succeeded;
        self.failed += other.failed;
        self.last_used = self.last_used.max(other.last_used);
    }
}

/// One known way to cure a signature, with its track record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resolution {
    /// [`Fix::id`] of `fix`; checked on load.
    pub id: String,
    #[serde(flatten)]
    pub fix: Fix,
    #[serde(flatten)]
    pub outcomes: Outcomes,
}

impl Resolution {
    /// A resolution that has not been tried yet.
    pub fn new(fix: Fix) -> Self {
        Resolution {
            id: fix.id(),
            fix,
            outcomes: Outcomes::default(),
        }
    }
}

/// Why a run gave up with this signature still failing.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct EscalationContext {
    /// The engine's reason (budget exhausted, persistent failure, ...).
    pub reason: String,
    /// The run, session or issue it happened in (an id or URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// The work-in-progress branch kept for maintainers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// What was tried, briefly (already redacted by the caller).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Tags added to every entry it marks (for example the gate's name).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub tags: BTreeSet<String>,
    /// When it escalated; set by the store from `now`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<Timestamp>,
}

/// Everything the store knows about one signature.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub signature: String,
    pub kind: SignatureKind,
    pub template: String,
    /// The signature's [`family_key`]; files written before families existed have none, and
    /// the store derives it from kind and template when it loads them.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub family: String,
    pub first_seen: Timestamp,
    pub last_seen: Timestamp,
    #[serde(default)]
    pub occurrences: u64,
    #[serde(default)]
    pub status: Status,
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub tags: BTreeSet<String>,
    /// Sorted by id.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resolutions: Vec<Resolution>,
    /// The latest escalation, for escalated or unresolved entries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalation: Option<EscalationContext>,
}

impl Entry {
    /// A fresh entry for a signature seen for the first time at `now` (no occurrence counted).
    pub fn new(signature: &Signature, now: Timestamp) -> Self {
        Entry {
            signature: signature.id.clone(),
            kind: signature.kind,
            template: signature.template.clone(),
            family: family_key(signature.kind, &signature.template),
            first_seen: now,
            last_seen: now,
            occurrences: 0,
            status: Status::Unresolved,
            tags: BTreeSet::new(),
            resolutions: Vec::new(),
            escalation: None,
        }
    }

    pub fn signature(&self) -> Signature {
        Signature {
            id: self.signature.clone(),
            kind: self.kind,
            template: self.template.clone(),
        }
    }

    pub fn resolution(&self, id: &str) -> Option<&Resolution> {
        self.resolutions.iter().find(|r| r.id == id)
    }

    pub fn resolution_mut(&mut self, id: &str) -> Option<&mut Resolution> {
        self.resolutions.iter_mut().find(|r| r.id == id)
    }

    /// Adds `resolution` unless one with its id is there already; keeps id order.
    /// Returns the id.
    pub fn add_resolution(&mut self, resolution: Resolution) -> String {
        let id = resolution.id.clone();
        match self.resolutions.binary_search_by(|r| r.id.cmp(&id)) {
            Ok(_) => {}
            Err(at) => self.resolutions.insert(at, resolution),
        }
        id
    }

    /// Whether any resolution ever cured it.
    pub fn ever_cured(&self) -> bool {
        self.resolutions.iter().any(|r| r.outcomes.succeeded > 0)
    }

    /// Puts everything in canonical order (after a hand edit or a load), deriving a missing
    /// family.
    pub fn normalize(&mut self) {
        if self.family.is_empty() {
            self.family = family_key(self.kind, &self.template);
        }
        self.resolutions.sort_by(|a, b| a.id.cmp(&b.id));
        self.resolutions.dedup_by(|a, b| {
            if a.id == b.id {
                b.outcomes.merge(&a.outcomes);
                true
            } else {
                false
            }
        });
    }

    /// Passes every free text of the entry through `redact` (template, tags, fixes, escalation
    /// context). A fix that changes gets the id of its new content, so the file still loads; a
    /// redacted patch no longer applies, which is the point.
    pub fn redact(&mut self, redact: &dyn Fn(&str) -> String) {
        self.template = redact(&self.template);
        self.tags = self.tags.iter().map(|tag| redact(tag)).collect();
        for resolution in &mut self.resolutions {
            let fix = resolution.fix.redacted(redact);
            if fix != resolution.fix {
                resolution.id = fix.id();
                resolution.fix = fix;
            }
        }
        self.normalize();
        if let Some(context) = &mut self.escalation {
            context.reason = redact(&context.reason);
            for text in [&mut context.run, &mut context.branch, &mut context.summary]
                .into_iter()
                .flatten()
            {
                *text = redact(text);
            }
            context.tags = context.tags.iter().map(|tag| redact(tag)).collect();
        }
    }

    /// Folds `other` (the same signature from another store or branch) into `self`: occurrences
    /// and outcome counts added, resolutions unioned by id, first and last seen widened, tags
    /// unioned, the later escalation kept. Status becomes resolved if either side was cured.
    pub fn merge(&mut self, other: &Entry) {
        if self.family.is_empty() {
            self.family.clone_from(&other.family);
        }
        self.occurrences += other.occurrences;
        self.first_seen = self.first_seen.min(other.first_seen);
        self.last_seen = self.last_seen.max(other.last_seen);
        self.tags.extend(other.tags.iter().cloned());
        for theirs in &other.resolutions {
            match self.resolution_mut(&theirs.id) {
                Some(ours) => ours.outcomes.merge(&theirs.outcomes),
                None => {
                    self.add_resolution(theirs.clone());
                }
            }
        }
        self.escalation = later_escalation(self.escalation.take(), other.escalation.clone());
        self.status = self.status.max(other.status);
        if self.ever_cured() {
            self.status = Status::Resolved;
        }
    }
}

fn later_escalation(
    ours: Option<EscalationContext>,
    theirs: Option<EscalationContext>,
) -> Option<EscalationContext> {
    match (ours, theirs) {
        (Some(a), Some(b)) => Some(if b.at > a.at { b } else { a }),
        (a, b) => a.or(b),
    }
}

/// 64-bit FNV-1a of `text` as 16 lowercase hex digits: stable across versions and platforms.
pub fn stable_hash(text: &str) -> String {
    stable_hash_bytes(text.as_bytes())
}

/// [`stable_hash`] of raw bytes.
pub fn stable_hash_bytes(bytes: &[u8]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &byte in bytes {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> Timestamp {
        Timestamp::from_unix_secs(secs)
    }

    #[test]
    fn redaction_reaches_every_text_and_renews_changed_fix_ids() {
        let secret = "EntryCanary-0123456789";
        let signature = Signature {
            id: "ab12".into(),
            kind: SignatureKind::Other,
            template: format!("failed with {secret}"),
        };
        let mut entry = Entry::new(&signature, at(1));
        let patch = Fix::Patch(PatchFix {
            diff: format!("+key = {secret}\n"),
            files: BTreeSet::from(["a.py".to_owned()]),
            source: None,
        });
        let kept = Fix::Guidance("use true division".into());
        entry.add_resolution(Resolution::new(patch));
        entry.add_resolution(Resolution::new(kept.clone()));
        entry.escalation = Some(EscalationContext {
            reason: format!("budget; {secret}"),
            summary: Some(secret.to_owned()),
            ..EscalationContext::default()
        });
        entry.redact(&|text: &str| text.replace(secret, "[REDACTED:secret]"));
        let yaml = serde_yaml::to_string(&entry).unwrap();
        assert!(!yaml.contains(secret), "{yaml}");
        for resolution in &entry.resolutions {
            assert_eq!(resolution.id, resolution.fix.id());
        }
        assert!(
            entry.resolution(&kept.id()).is_some(),
            "unchanged fixes keep their id"
        );
    }

    #[test]
    fn timestamp_round_trips_through_text() {
        let t = at(1_795_000_000);
        let yaml = serde_yaml::to_string(&t).unwrap();
        assert_eq!(yaml.trim(), "2026-11-18T11:06:40Z");
        assert_eq!(serde_yaml::from_str::<Timestamp>(&yaml).unwrap(), t);
    }

    use proptest::prelude::*;

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            "\\PC{0,40}",
            "[ -~\n\t]{0,60}",
            prop::sample::select(vec![
                "yes",
                "null",
                "~",
                "1.0",
                "- item",
                "key: value",
                " lead",
                "trail ",
                "#x",
                "'q'",
                "\"dq\"",
                "@a",
                "`b`",
                "0x10",
                "",
                "\n\nx\n",
                "--- a\n+++ b\n@@ -1 +1 @@\n-x\n+y\n",
            ])
            .prop_map(str::to_string),
        ]
    }

    fn fix() -> impl Strategy<Value = Fix> {
        prop_oneof![
            prop::collection::vec(text(), 1..4).prop_map(|a| Fix::Command(CommandLine::Argv(a))),
            text().prop_map(|l| Fix::Command(CommandLine::Shell(l))),
            (
                text(),
                prop::collection::btree_set(text(), 0..3),
                prop::option::of(text())
            )
                .prop_map(|(diff, files, source)| Fix::Patch(PatchFix {
                    diff,
                    files,
                    source
                })),
            text().prop_map(Fix::Guidance),
        ]
    }

    proptest! {
        #[test]
        fn entries_survive_a_round_trip_through_yaml_and_json(
            template in text(),
            tags in prop::collection::btree_set(text(), 0..3),
            fixes in prop::collection::vec((fix(), 0u64..5, any::<bool>()), 0..4),
            reason in prop::option::of(text()),
            secs in 0u64..4_000_000_000,
        ) {
            let sig = Signature { id: "00ff".into(), kind: SignatureKind::Other, template };
            let now = Timestamp::from_unix_secs(secs);
            let mut entry = Entry::new(&sig, now);
            entry.tags = tags;
            for (fix, times, cured) in fixes {
                let mut resolution = Resolution::new(fix);
                for _ in 0..times {
                    resolution.outcomes.record(cured, now);
                }
                entry.add_resolution(resolution);
            }
            entry.escalation = reason.map(|reason| EscalationContext {
                reason,
                at: Some(now),
                ..EscalationContext::default()
            });
            let yaml = serde_yaml::to_string(&entry).unwrap();
            prop_assert_eq!(&serde_yaml::from_str::<Entry>(&yaml).unwrap(), &entry, "{}", yaml);
            prop_assert_eq!(serde_yaml::to_string(&entry).unwrap(), yaml);
            let json = serde_json::to_string(&entry).unwrap();
            prop_assert_eq!(&serde_json::from_str::<Entry>(&json).unwrap(), &entry);
        }
    }

    #[test]
    fn fix_id_depends_on_content_only() {
        let a = Fix::Patch(PatchFix {
            diff: "--- a\n+++ b\n".into(),
            files: ["a".to_string()].into(),
            source: Some("commit 1".into()),
        });
        let b = Fix::Patch(PatchFix {
            diff: "--- a\n+++ b\n".into(),
            files: BTreeSet::new(),
            source: Some("issue 2".into()),
        });
        assert_eq!(a.id(), b.id());
        let argv = Fix::Command(CommandLine::Argv(vec!["cargo".into(), "fmt".into()]));
        let shell = Fix::Command(CommandLine::Shell("cargo fmt".into()));
        assert_ne!(argv.id(), shell.id());
        assert_eq!(argv.id().len(), 16);
    }

    #[test]
    fn merge_adds_counts_and_unions_resolutions() {
        let sig = Signature {
            id: "00aa".into(),
            kind: SignatureKind::Lint,
            template: "t".into(),
        };
        let mut ours = Entry::new(&sig, at(100));
        ours.occurrences = 2;
        let mut fmt = Resolution::new(Fix::Command(CommandLine::Shell("cargo fmt".into())));
        fmt.outcomes.record(true, at(150));
        ours.add_resolution(fmt.clone());
        let mut theirs = Entry::new(&sig, at(50));
        theirs.last_seen = at(300);
        theirs.occurrences = 3;
        theirs.add_resolution(fmt);
        theirs.add_resolution(Resolution::new(Fix::Guidance("run it".into())));
        ours.merge(&theirs);
        assert_eq!(ours.occurrences, 5);
        assert_eq!((ours.first_seen, ours.last_seen), (at(50), at(300)));
        assert_eq!(ours.resolutions.len(), 2);
        let merged = ours
            .resolutions
            .iter()
            .map(|r| r.outcomes.succeeded)
            .sum::<u64>();
        assert_eq!(merged, 2);
        assert_eq!(ours.status, Status::Resolved);
        assert!(ours.resolutions.windows(2).all(|w| w[0].id < w[1].id));
    }
}
