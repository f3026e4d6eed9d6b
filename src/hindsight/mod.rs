//! Hindsight: stable error signatures, and the store that remembers which fix cured which failure.
//!
//! [`signature`] turns what gates produce (JUnit failures, SARIF findings, compiler diagnostics,
//! plain logs) into [`Signature`]s: a short stable id, a human-readable template with incidental
//! detail normalized away, and the kind of failure. [`store`] keeps entries per signature with
//! their resolutions and outcomes, in files in the repository plus a bundled catalog. [`cli`] is
//! the `meta-agent hindsight` command-line surface.

pub mod cli;
pub mod signature;
pub mod store;

use serde::{Deserialize, Serialize};

/// What kind of failure a signature stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SignatureKind {
    /// A compiler or type-checker error (rustc, tsc, ...).
    Compile,
    /// A test that failed an assertion.
    TestFailure,
    /// A test that errored (crashed, raised outside an assertion).
    TestError,
    /// A linter or formatter finding.
    Lint,
    /// A panic or uncaught exception outside a test report.
    Crash,
    /// A command or test that ran out of time.
    Timeout,
    /// Anything else recognisable as an error.
    Other,
}

impl SignatureKind {
    /// The snake_case name (as serialised).
    pub fn as_str(self) -> &'static str {
        match self {
            SignatureKind::Compile => "compile",
            SignatureKind::TestFailure => "test_failure",
            SignatureKind::TestError => "test_error",
            SignatureKind::Lint => "lint",
            SignatureKind::Crash => "crash",
            SignatureKind::Timeout => "timeout",
            SignatureKind::Other => "other",
        }
    }
}

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
