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

pub use meta_agent_protocol::kinds::SignatureKind;
pub use meta_agent_protocol::signature::Signature;
