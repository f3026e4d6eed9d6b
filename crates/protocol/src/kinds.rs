//! The kinds every layer names: of a failure's signature ([`SignatureKind`]), of a gate
//! ([`GateKind`]) and of the test runner a gate runs ([`TestFilterFormat`]). Plain enums at the
//! floor: hindsight, the configuration, the gates and the records all use these, and they
//! depend on nothing of them.

use schemars::JsonSchema;
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

/// What a gate is for; shown in summaries. Inferred from its reports when not written.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum GateKind {
    Tests,
    Lint,
    Coverage,
    Custom,
}

/// The test runner a gate runs, which says how its JUnit report names tests and how `{tests}`
/// selects them again (the gates' test filters).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum TestFilterFormat {
    /// pytest: node ids, one argument each (`tests/test_x.py::TestA::test_y[1-2]`).
    Pytest,
    /// cargo-nextest: one filterset (`(binary_id(=crate::it) & test(=m::t)) | ...`), after `-E`.
    Nextest,
    /// `cargo test` (libtest): test paths, one argument each, after `-- --exact`.
    Cargo,
    /// jest: a `--testNamePattern` regular expression of full names (after `-t`), then the
    /// test files as path patterns.
    Jest,
    /// vitest: a `-t` regular expression of full names (after `-t`), then the test files.
    Vitest,
    /// go test: a `-run` expression (`^TestA$|^TestB$/^sub$`, after `-run`), then the packages.
    Go,
}
