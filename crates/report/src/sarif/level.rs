//! How a SARIF result's level is decided (SARIF 2.1.0 §3.27.10): its own `level`; else `none`
//! when its `kind` says it is not a failure; else its rule's `defaultConfiguration.level`; else
//! `warning`. Pure functions over the parsed values.

use super::FindingLevel;
use super::raw::Rule;

/// Identifies a result's rule: by index into `tool.driver.rules`, by id, or both.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub(super) struct RuleKey {
    pub index: Option<usize>,
    pub id: Option<String>,
}

impl RuleKey {
    /// The rule this key names among `rules`: by index when it is in range, else by id.
    pub fn find<'r>(&self, rules: &'r [Rule]) -> Option<&'r Rule> {
        let by_index = self.index.and_then(|i| rules.get(i));
        by_index.or_else(|| {
            let id = self.id.as_deref()?;
            rules.iter().find(|rule| rule.id.as_deref() == Some(id))
        })
    }
}

/// A result's level as far as the result itself decides it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Declared {
    Level(FindingLevel),
    /// No level and a failing (or absent) kind: the rule's default applies.
    FromRule(RuleKey),
}

impl Declared {
    /// The final level, looking up the rule's default when needed.
    pub fn resolve(&self, rules: &[Rule]) -> FindingLevel {
        match self {
            Declared::Level(level) => *level,
            Declared::FromRule(key) => key
                .find(rules)
                .and_then(|rule| rule.default_configuration.as_ref())
                .and_then(|config| config.level.as_deref())
                .map_or(FindingLevel::Warning, parse_level),
        }
    }
}

/// The level a result declares through `level` and `kind`.
pub(super) fn declared_level(level: Option<&str>, kind: Option<&str>, key: RuleKey) -> Declared {
    match (level, kind) {
        (Some(level), _) => Declared::Level(parse_level(level)),
        (None, Some(kind)) if kind != "fail" => Declared::Level(FindingLevel::None),
        (None, _) => Declared::FromRule(key),
    }
}

/// A SARIF level name. A value outside the spec's four is read as `warning`, the spec's default.
pub(super) fn parse_level(text: &str) -> FindingLevel {
    match text {
        "error" => FindingLevel::Error,
        "note" => FindingLevel::Note,
        "none" => FindingLevel::None,
        _ => FindingLevel::Warning,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sarif::raw::RuleConfiguration;

    fn rule(id: &str, level: &str) -> Rule {
        Rule {
            id: Some(id.into()),
            default_configuration: Some(RuleConfiguration {
                level: Some(level.into()),
            }),
            ..Rule::default()
        }
    }

    #[test]
    fn level_precedence_follows_the_spec() {
        let rules = [rule("A", "error"), rule("B", "note")];
        let by_id = RuleKey {
            index: None,
            id: Some("B".into()),
        };
        let by_index = RuleKey {
            index: Some(0),
            id: Some("B".into()),
        };
        let unknown = RuleKey::default();
        let resolve = |level, kind, key| declared_level(level, kind, key).resolve(&rules);
        assert_eq!(
            resolve(Some("note"), None, by_index.clone()),
            FindingLevel::Note
        );
        assert_eq!(
            resolve(None, Some("pass"), by_index.clone()),
            FindingLevel::None
        );
        assert_eq!(resolve(None, Some("fail"), by_index), FindingLevel::Error);
        assert_eq!(resolve(None, None, by_id), FindingLevel::Note);
        assert_eq!(resolve(None, None, unknown), FindingLevel::Warning);
    }
}
