//! Hindsight: stable error signatures, and the store that remembers which fix cured which failure.
//!
//! [`signature`] turns what gates produce (JUnit failures, SARIF findings, compiler diagnostics,
//! plain logs) into [`Signature`]s: a short stable id, a human-readable template with incidental
//! detail normalized away, and the kind of failure. [`store`] keeps entries per signature with
//! their resolutions and outcomes, in files in the repository plus a bundled catalog. [`jsonl`]
//! reads the JSON-lines exports; the `meta-agent hindsight` command-line surface is the session
//! layer's (`session::hindsight_cli`).

#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod jsonl;
pub mod signature;
pub mod store;

use serde::{Deserialize, Serialize};

pub use meta_agent_protocol::kinds::SignatureKind;

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
