//! Failures as hindsight names them: a [`Signature`] (a stable id, the kind, the normalized
//! template), an [`ExtractedSignature`] found in a gate's report or log with its context, and a
//! file of the store that could not be read ([`SkippedFile`]). Hindsight produces these; the
//! engine, the memory and the renderers read them.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::kinds::SignatureKind;

/// A stable identity for a failure: the same failure from two checkouts, at different times, gives
/// the same `id`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Signature {
    /// Short stable hash (16 lowercase hex digits) of `kind` and `template`.
    pub id: String,
    pub kind: SignatureKind,
    /// The failure with incidental detail (paths, numbers, addresses, ...) normalized away.
    pub template: String,
}

/// One failure found in an input, with its signature and context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExtractedSignature {
    #[serde(rename = "signature")]
    pub id: String,
    pub kind: SignatureKind,
    pub template: String,
    /// The family key of kind and template (hindsight's `family_key`): near-identical failures share it.
    pub family: String,
    /// The input file it came from.
    pub file: PathBuf,
    /// Repository-relative `path:line` of the failure when known.
    pub location: Option<String>,
    /// The failing test, as its runner named it, when it is a test failure.
    pub test: Option<crate::test_id::TestName>,
    /// Top frames inside the repository, innermost first, normalized; Python frames are
    /// repository-relative `path:line` (a traceback's with ` in <function>`).
    pub frames: Vec<String>,
    /// The original message, trimmed, for people and prompts.
    pub excerpt: String,
    /// A failing test's assertion and its diff, compact (hindsight's `assertion`); empty when
    /// the failure shows none.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

impl ExtractedSignature {
    /// The bare signature (id, kind, template).
    pub fn signature(&self) -> Signature {
        Signature {
            id: self.id.clone(),
            kind: self.kind,
            template: self.template.clone(),
        }
    }
}

/// A file the load skipped, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SkippedFile {
    pub path: PathBuf,
    pub reason: String,
}
