//! The parts of a SARIF 2.1.0 log the reader needs, as small serde structs that ignore every
//! other field, and the streaming visitors that walk `runs[]` and `results[]` one element at a
//! time. Results past the cap are deserialized into a head (rule and level only) so their
//! messages and locations are skipped, not kept. Must not hold a whole run's results.

use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::level::{Declared, RuleKey, declared_level};

/// `tool.driver`: its name and rules (for default levels and message strings).
#[derive(Debug, Default, Deserialize)]
pub(super) struct Tool {
    #[serde(default)]
    pub driver: Driver,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct Driver {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub rules: Vec<Rule>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Rule {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub default_configuration: Option<RuleConfiguration>,
    #[serde(default)]
    pub message_strings: HashMap<String, Message>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct RuleConfiguration {
    #[serde(default)]
    pub level: Option<String>,
}

/// `message`: plain text, or an id into the rule's `messageStrings` with arguments.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Message {
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub arguments: Vec<String>,
}

/// `result.rule`: a reference to a rule by id and/or index.
#[derive(Debug, Default, Deserialize)]
pub(super) struct RuleReference {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub index: Option<i64>,
}

/// The fields of a result that decide its rule and level.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ResultHead {
    #[serde(default)]
    pub rule_id: Option<String>,
    #[serde(default)]
    pub rule_index: Option<i64>,
    #[serde(default)]
    pub rule: Option<RuleReference>,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub level: Option<String>,
}

/// A result kept in detail: the head fields, its message and its first location.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct FullResult {
    #[serde(flatten)]
    pub head: ResultHead,
    #[serde(default)]
    pub message: Message,
    #[serde(default)]
    pub locations: First<Location>,
}

impl ResultHead {
    pub fn declared(&self) -> Declared {
        declared_level(self.level.as_deref(), self.kind.as_deref(), self.rule_key())
    }

    /// The rule key of this result.
    pub fn rule_key(&self) -> RuleKey {
        rule_key(self.rule_id.as_deref(), self.rule_index, self.rule.as_ref())
    }
}

impl FullResult {
    pub fn declared(&self) -> Declared {
        self.head.declared()
    }

    /// The rule key of this result.
    pub fn rule_key(&self) -> RuleKey {
        self.head.rule_key()
    }
}

fn rule_key(id: Option<&str>, index: Option<i64>, rule: Option<&RuleReference>) -> RuleKey {
    let id = id.or(rule.and_then(|r| r.id.as_deref()));
    let index = index.or(rule.and_then(|r| r.index));
    RuleKey {
        index: index.and_then(|i| usize::try_from(i).ok()),
        id: id.map(str::to_owned),
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Location {
    #[serde(default)]
    pub physical_location: Option<PhysicalLocation>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PhysicalLocation {
    #[serde(default)]
    pub artifact_location: Option<ArtifactLocation>,
    #[serde(default)]
    pub region: Option<Region>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ArtifactLocation {
    #[serde(default)]
    pub uri: Option<String>,
    #[serde(default)]
    pub uri_base_id: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Region {
    #[serde(default)]
    pub start_line: Option<u64>,
}

/// The first element of an array; the rest are skipped.
#[derive(Debug)]
pub(super) struct First<T>(pub Option<T>);

impl<T> Default for First<T> {
    fn default() -> Self {
        First(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for First<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_seq(FirstVisitor(PhantomData))
    }
}

struct FirstVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for FirstVisitor<T> {
    type Value = First<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let first = seq.next_element()?;
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(First(first))
    }
}

/// What a run's `results` array holds once walked: the first results in detail (up to the room
/// left under the cap), and the rest only as declared levels, counted.
#[derive(Debug, Default)]
pub(super) struct RunResults {
    pub kept: Vec<FullResult>,
    pub counted: HashMap<Declared, u64>,
}

/// Walks `results[]`, keeping at most `room` results in detail.
pub(super) struct ResultsSeed<'a> {
    pub room: usize,
    pub into: &'a mut RunResults,
}

impl<'de> DeserializeSeed<'de> for ResultsSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ResultsSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of SARIF results")
    }

    /// `"results": null` means the tool did not run; it has no results.
    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while self.into.kept.len() < self.room {
            match seq.next_element::<FullResult>()? {
                Some(result) => self.into.kept.push(result),
                None => return Ok(()),
            }
        }
        while let Some(head) = seq.next_element::<ResultHead>()? {
            *self.into.counted.entry(head.declared()).or_default() += 1;
        }
        Ok(())
    }
}

/// One run as read: its tool, its base URIs and its results.
#[derive(Debug, Default)]
pub(super) struct RawRun {
    pub tool: Tool,
    pub bases: HashMap<String, String>,
    pub results: RunResults,
}

#[derive(Debug, Default, Deserialize)]
struct BaseUri {
    #[serde(default)]
    uri: Option<String>,
}

/// Reads one run object; `room` is how many results may still be kept in detail.
pub(super) struct RunSeed {
    pub room: usize,
}

impl<'de> DeserializeSeed<'de> for RunSeed {
    type Value = RawRun;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<RawRun, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RunSeed {
    type Value = RawRun;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a SARIF run object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawRun, A::Error> {
        let mut run = RawRun::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "tool" => run.tool = map.next_value()?,
                "results" => map.next_value_seed(ResultsSeed {
                    room: self.room,
                    into: &mut run.results,
                })?,
                "originalUriBaseIds" => {
                    let bases: HashMap<String, BaseUri> = map.next_value()?;
                    run.bases = bases
                        .into_iter()
                        .filter_map(|(id, base)| base.uri.map(|uri| (id, uri)))
                        .collect();
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(run)
    }
}
