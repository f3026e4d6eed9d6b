//! Walks the top level of a SARIF log: checks the version, hands each run to the resolver as soon
//! as it is read (so only one run's kept results are in memory), and skips everything else.

use std::fmt;

use serde::de::{
    DeserializeSeed, Deserializer, Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor,
};

use super::SarifReport;
use super::raw::RunSeed;
use super::resolve::add_run;
use crate::Limits;

/// The version this reader understands.
pub(super) const VERSION: &str = "2.1.0";

/// What the top level said about itself, and the report built from its runs.
#[derive(Debug, Default)]
pub(super) struct LogState {
    pub version: Option<String>,
    pub schema: Option<String>,
    pub saw_runs: bool,
    /// Set when reading stopped because the version is not 2.1.0.
    pub wrong_version: Option<String>,
    pub report: SarifReport,
}

impl LogState {
    /// Why this is not a SARIF 2.1.0 log, when it is not.
    pub fn format_problem(&self) -> Option<String> {
        if let Some(version) = &self.wrong_version {
            return Some(format!(
                "SARIF version {version:?}, this reader reads {VERSION}"
            ));
        }
        if !self.saw_runs {
            return Some("a JSON object without \"runs\"".into());
        }
        if self.version.is_none() && !self.schema.as_deref().is_some_and(|s| s.contains(VERSION)) {
            return Some("no \"version\" and no 2.1.0 \"$schema\"".into());
        }
        None
    }
}

/// Reads the log object into `state`.
pub(super) struct LogSeed<'a> {
    pub state: &'a mut LogState,
    pub limits: &'a Limits,
}

impl<'de> DeserializeSeed<'de> for LogSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for LogSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a SARIF log object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "version" => {
                    let version: String = map.next_value()?;
                    if version != VERSION {
                        self.state.wrong_version = Some(version);
                        return Err(A::Error::custom("unsupported SARIF version"));
                    }
                    self.state.version = Some(version);
                }
                "$schema" => self.state.schema = Some(map.next_value()?),
                "runs" => {
                    self.state.saw_runs = true;
                    map.next_value_seed(RunsSeed {
                        report: &mut self.state.report,
                        limits: self.limits,
                    })?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// Walks `runs[]`, resolving each run before reading the next.
struct RunsSeed<'a> {
    report: &'a mut SarifReport,
    limits: &'a Limits,
}

impl<'de> DeserializeSeed<'de> for RunsSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for RunsSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of SARIF runs")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        loop {
            let room = self
                .limits
                .max_items
                .saturating_sub(self.report.results.len());
            let Some(run) = seq.next_element_seed(RunSeed { room })? else {
                return Ok(());
            };
            add_run(self.report, run, self.limits);
        }
    }
}
