//! The bundled catalog: common ecosystem signatures with known resolutions (formatter and
//! autofixable lint commands, guidance for frequent compiler and test errors), read from the
//! YAML files in this crate's `catalog/` directory, which are embedded in the binary.
//!
//! A rule matches a signature by kind plus an exact template and/or a regex over the template
//! (schema in `catalog/README.md`). The catalog is read-only: outcomes of catalog resolutions
//! are recorded in the store's entries, never here. No I/O beyond parsing the given text.

use std::collections::BTreeSet;

use regex::Regex;
use serde::Deserialize;

use super::entry::{Fix, Resolution};
use crate::{Signature, SignatureKind};

/// The embedded catalog files, by name.
pub const BUNDLED_FILES: &[(&str, &str)] = &[
    ("catalog/rust.yaml", include_str!("../../catalog/rust.yaml")),
    (
        "catalog/python.yaml",
        include_str!("../../catalog/python.yaml"),
    ),
    ("catalog/node.yaml", include_str!("../../catalog/node.yaml")),
    (
        "catalog/general.yaml",
        include_str!("../../catalog/general.yaml"),
    ),
];

/// Why a catalog file could not be read. Names the file and the rule.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("{file}: {source}")]
    Parse {
        file: String,
        #[source]
        source: serde_yaml::Error,
    },
    #[error("{file}: rule {rule}: bad pattern: {source}")]
    Pattern {
        file: String,
        rule: String,
        #[source]
        source: regex::Error,
    },
    #[error("{file}: rule {rule} needs a template or a pattern")]
    NoMatcher { file: String, rule: String },
    #[error("{file}: rule {rule} has no resolutions")]
    NoResolutions { file: String, rule: String },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    rules: Vec<RawRule>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    name: String,
    kind: OneOrMany,
    #[serde(default)]
    template: Option<String>,
    #[serde(default)]
    pattern: Option<String>,
    #[serde(default)]
    tags: BTreeSet<String>,
    resolutions: Vec<Fix>,
}

/// `kind: lint` or `kind: [test_failure, crash]`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(SignatureKind),
    Many(Vec<SignatureKind>),
}

impl OneOrMany {
    fn into_vec(self) -> Vec<SignatureKind> {
        match self {
            OneOrMany::One(kind) => vec![kind],
            OneOrMany::Many(kinds) => kinds,
        }
    }
}

/// One catalog rule: which signatures it covers and what cures them.
#[derive(Debug, Clone)]
pub struct CatalogRule {
    pub name: String,
    /// The kinds of signature it applies to.
    pub kinds: Vec<SignatureKind>,
    pub template: Option<String>,
    pub pattern: Option<Regex>,
    pub tags: BTreeSet<String>,
    /// Fresh resolutions (no outcomes) in file order.
    pub resolutions: Vec<Resolution>,
}

impl CatalogRule {
    /// One of its kinds, and the exact template or the pattern matches.
    pub fn matches(&self, signature: &Signature) -> bool {
        self.kinds.contains(&signature.kind)
            && (self.template.as_deref() == Some(signature.template.as_str())
                || self
                    .pattern
                    .as_ref()
                    .is_some_and(|p| p.is_match(&signature.template)))
    }
}

/// The rules of one or more catalog files.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    rules: Vec<CatalogRule>,
}

impl Catalog {
    /// The catalog embedded in the binary.
    pub fn bundled() -> Result<Catalog, CatalogError> {
        Catalog::from_files(BUNDLED_FILES)
    }

    /// Reads catalog files given as `(name, YAML text)`.
    pub fn from_files(files: &[(&str, &str)]) -> Result<Catalog, CatalogError> {
        let mut rules = Vec::new();
        for (name, text) in files {
            let raw: RawFile =
                serde_yaml::from_str(text).map_err(|source| CatalogError::Parse {
                    file: (*name).to_string(),
                    source,
                })?;
            for rule in raw.rules {
                rules.push(compile_rule(name, rule)?);
            }
        }
        Ok(Catalog { rules })
    }

    pub fn rules(&self) -> &[CatalogRule] {
        &self.rules
    }

    /// Rules covering `signature`, in catalog order.
    pub fn matching(&self, signature: &Signature) -> impl Iterator<Item = &CatalogRule> {
        self.rules.iter().filter(move |r| r.matches(signature))
    }

    /// The catalog resolution with this id among the rules covering `signature`.
    pub fn resolution_for(&self, signature: &Signature, id: &str) -> Option<&Resolution> {
        self.matching(signature)
            .flat_map(|r| r.resolutions.iter())
            .find(|r| r.id == id)
    }
}

fn compile_rule(file: &str, raw: RawRule) -> Result<CatalogRule, CatalogError> {
    if raw.template.is_none() && raw.pattern.is_none() {
        return Err(CatalogError::NoMatcher {
            file: file.to_string(),
            rule: raw.name,
        });
    }
    if raw.resolutions.is_empty() {
        return Err(CatalogError::NoResolutions {
            file: file.to_string(),
            rule: raw.name,
        });
    }
    let pattern = match &raw.pattern {
        Some(p) => Some(Regex::new(p).map_err(|source| CatalogError::Pattern {
            file: file.to_string(),
            rule: raw.name.clone(),
            source,
        })?),
        None => None,
    };
    Ok(CatalogRule {
        name: raw.name,
        kinds: raw.kind.into_vec(),
        template: raw.template,
        pattern,
        tags: raw.tags,
        resolutions: raw.resolutions.into_iter().map(Resolution::new).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::signature_id;

    fn sig(kind: SignatureKind, template: &str) -> Signature {
        Signature {
            id: signature_id(kind, template),
            kind,
            template: template.to_string(),
        }
    }

    #[test]
    fn bundled_catalog_parses_and_every_rule_has_a_resolution() {
        let catalog = Catalog::bundled().unwrap();
        assert!(catalog.rules().len() >= 15);
        let names: BTreeSet<&str> = catalog.rules().iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names.len(), catalog.rules().len(), "rule names are unique");
    }

    #[test]
    fn pattern_rules_match_by_kind_and_regex() {
        let text = "rules:\n  - name: e0308\n    kind: compile\n    pattern: 'E0308'\n    resolutions:\n      - guidance: check the types\n";
        let catalog = Catalog::from_files(&[("t.yaml", text)]).unwrap();
        assert_eq!(
            catalog
                .matching(&sig(
                    SignatureKind::Compile,
                    "error[E0308]: mismatched types"
                ))
                .count(),
            1
        );
        assert_eq!(
            catalog
                .matching(&sig(SignatureKind::Lint, "error[E0308]: mismatched types"))
                .count(),
            0
        );
    }

    #[test]
    fn a_rule_without_matcher_is_an_error_naming_it() {
        let text =
            "rules:\n  - name: loose\n    kind: lint\n    resolutions:\n      - guidance: x\n";
        let err = Catalog::from_files(&[("t.yaml", text)]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "t.yaml: rule loose needs a template or a pattern"
        );
    }
}
