//! Small validated values of the configuration: durations, byte sizes, percentages, gate names.
//!
//! Each validates while it is deserialized, so a bad value is reported with the file, line and key
//! of the place it was written. Each describes itself to the JSON Schema generator.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// Why a written value is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    #[error("empty duration")]
    EmptyDuration,
    #[error("`{0}` is not a duration (expected e.g. 90s, 10m, 1h30m)")]
    NotADuration(String),
    #[error("`{text}`: unknown unit `{unit}` (use ms, s, m or h)")]
    DurationUnit { text: String, unit: String },
    #[error("`{0}` is not a size (expected e.g. 4096, 64KiB, 1MiB)")]
    NotASize(String),
    #[error("`{text}`: unknown unit `{unit}` (use B, KiB, MiB, GiB, KB, MB, GB)")]
    SizeUnit { text: String, unit: String },
    #[error("`{0}`: number too large")]
    TooLarge(String),
    #[error("`{0}` is not a valid gate name (1-64 letters, digits, `-` or `_`)")]
    GateName(String),
}

/// A name on the command line that is not one of the known ones.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a {what} ({expected})")]
pub struct UnknownName {
    pub what: &'static str,
    pub text: String,
    pub expected: &'static str,
}

/// Reads `text` as a snake_case name of the serde enum `T`, or says what it could have been.
pub fn parse_name<T: serde::de::DeserializeOwned>(
    text: &str,
    what: &'static str,
    expected: &'static str,
) -> Result<T, UnknownName> {
    serde_json::from_value(serde_json::Value::String(text.replace('-', "_"))).map_err(|_| {
        UnknownName {
            what,
            text: text.to_owned(),
            expected,
        }
    })
}

/// A duration written as seconds (`90`) or with units (`500ms`, `90s`, `10m`, `1h30m`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct DurationSpec(pub Duration);

/// Parses `500ms`, `90s`, `10m`, `2h`, `1h30m`, or a bare number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, ValueError> {
    let text = text.trim();
    if let Ok(secs) = text.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    let mut total = Duration::ZERO;
    let mut rest = text;
    if rest.is_empty() {
        return Err(ValueError::EmptyDuration);
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits == 0 {
            return Err(ValueError::NotADuration(text.to_owned()));
        }
        let value: u64 = rest[..digits]
            .parse()
            .map_err(|_| ValueError::TooLarge(text.to_owned()))?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        let part = match unit {
            "ms" => Duration::from_millis(value),
            "s" => Duration::from_secs(value),
            "m" => Duration::from_secs(value.saturating_mul(60)),
            "h" => Duration::from_secs(value.saturating_mul(3600)),
            _ => {
                return Err(ValueError::DurationUnit {
                    text: text.to_owned(),
                    unit: unit.to_owned(),
                });
            }
        };
        total = total.saturating_add(part);
    }
    Ok(total)
}

impl<'de> Deserialize<'de> for DurationSpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct DurationVisitor;
        impl Visitor<'_> for DurationVisitor {
            type Value = DurationSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a duration such as 90s, 10m or 1h30m, or a number of seconds")
            }
            fn visit_u64<E: de::Error>(self, secs: u64) -> Result<DurationSpec, E> {
                Ok(DurationSpec(Duration::from_secs(secs)))
            }
            fn visit_i64<E: de::Error>(self, secs: i64) -> Result<DurationSpec, E> {
                u64::try_from(secs)
                    .map(|s| DurationSpec(Duration::from_secs(s)))
                    .map_err(|_| E::custom("a duration cannot be negative"))
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<DurationSpec, E> {
                parse_duration(text).map(DurationSpec).map_err(E::custom)
            }
        }
        deserializer.deserialize_any(DurationVisitor)
    }
}

impl Serialize for DurationSpec {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&format!("{}ms", self.0.as_millis()))
    }
}

impl JsonSchema for DurationSpec {
    fn schema_name() -> Cow<'static, str> {
        "Duration".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "Seconds, or a duration with units: 500ms, 90s, 10m, 1h30m",
            "oneOf": [
                { "type": "integer", "minimum": 0 },
                { "type": "string", "pattern": "^([0-9]+(ms|s|m|h))+$" }
            ]
        })
    }
}

/// A size in bytes written as a number or with a unit (`64KiB`, `1MiB`, `2MB`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ByteSize(pub u64);

/// Parses `4096`, `64KiB`, `1MiB`, `1GiB`, `10KB`, `2MB`.
pub fn parse_byte_size(text: &str) -> Result<u64, ValueError> {
    let text = text.trim();
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let value: u64 = text[..digits]
        .parse()
        .map_err(|_| ValueError::NotASize(text.to_owned()))?;
    let factor: u64 = match text[digits..].trim() {
        "" | "B" => 1,
        "KB" | "kB" => 1_000,
        "KiB" => 1 << 10,
        "MB" => 1_000_000,
        "MiB" => 1 << 20,
        "GB" => 1_000_000_000,
        "GiB" => 1 << 30,
        unit => {
            return Err(ValueError::SizeUnit {
                text: text.to_owned(),
                unit: unit.to_owned(),
            });
        }
    };
    value
        .checked_mul(factor)
        .ok_or_else(|| ValueError::TooLarge(text.to_owned()))
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SizeVisitor;
        impl Visitor<'_> for SizeVisitor {
            type Value = ByteSize;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a size such as 65536, 64KiB or 1MiB")
            }
            fn visit_u64<E: de::Error>(self, bytes: u64) -> Result<ByteSize, E> {
                Ok(ByteSize(bytes))
            }
            fn visit_i64<E: de::Error>(self, bytes: i64) -> Result<ByteSize, E> {
                u64::try_from(bytes)
                    .map(ByteSize)
                    .map_err(|_| E::custom("a size cannot be negative"))
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<ByteSize, E> {
                parse_byte_size(text).map(ByteSize).map_err(E::custom)
            }
        }
        deserializer.deserialize_any(SizeVisitor)
    }
}

impl Serialize for ByteSize {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(self.0)
    }
}

impl JsonSchema for ByteSize {
    fn schema_name() -> Cow<'static, str> {
        "ByteSize".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "Bytes, or a size with a unit: 64KiB, 1MiB, 2MB",
            "oneOf": [
                { "type": "integer", "minimum": 0 },
                { "type": "string", "pattern": "^[0-9]+ ?(B|KB|kB|KiB|MB|MiB|GB|GiB)?$" }
            ]
        })
    }
}

/// A percentage between 0 and 100 inclusive.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize)]
pub struct Percent(pub f64);

impl<'de> Deserialize<'de> for Percent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = f64::deserialize(deserializer)?;
        if (0.0..=100.0).contains(&value) {
            Ok(Percent(value))
        } else {
            Err(de::Error::custom(format!(
                "{value} is not a percentage between 0 and 100"
            )))
        }
    }
}

impl JsonSchema for Percent {
    fn schema_name() -> Cow<'static, str> {
        "Percent".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "number", "minimum": 0, "maximum": 100 })
    }
}

/// A gate name: 1-64 characters from letters, digits, `-` and `_`.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct GateName(pub String);

impl GateName {
    /// Checks the characters and length of a gate name.
    pub fn validate(name: &str) -> Result<(), ValueError> {
        let valid = !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if valid {
            Ok(())
        } else {
            Err(ValueError::GateName(name.to_owned()))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for GateName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for GateName {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        GateName::validate(&name).map_err(de::Error::custom)?;
        Ok(GateName(name))
    }
}

impl JsonSchema for GateName {
    fn schema_name() -> Cow<'static, str> {
        "GateName".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$" })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_with_units_add_up() {
        assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert!(parse_duration("10 minutes").is_err());
        assert!(parse_duration("m").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn sizes_with_units_multiply() {
        assert_eq!(parse_byte_size("1MiB"), Ok(1 << 20));
        assert_eq!(parse_byte_size("10KB"), Ok(10_000));
        assert_eq!(parse_byte_size("512"), Ok(512));
        assert!(parse_byte_size("1XB").is_err());
        assert!(parse_byte_size("99999999999999GiB").is_err());
    }

    #[test]
    fn gate_names_are_restricted() {
        assert!(GateName::validate("unit-tests_2").is_ok());
        assert!(GateName::validate("").is_err());
        assert!(GateName::validate("a b").is_err());
        assert!(GateName::validate("$(rm -rf /)").is_err());
    }
}
