//! Which failures a task asks about: the one rule the engine decides with (a failure the task
//! leaves alone predates the change and does not hold a commit back) and the report and the
//! commit message name them by. Pure functions of the task and the gates' records.

use std::collections::BTreeSet;

use crate::kinds::{GateKind, SignatureKind};
use crate::records::{GateRecord, SignatureRecord, StepRecord};
use crate::task::{Task, TaskSource};

/// Words that ask about every failure the gates show ("make the gates pass", "all green"); `ci`
/// (whole word) too.
const EVERY_FAILURE_WORDS: [&str; 2] = ["gate", "green"];
/// Words that ask about failing tests, builds and coverage.
const FAILURE_WORDS: [&str; 11] = [
    "fail",
    "fix",
    "bug",
    "broken",
    "error",
    "crash",
    "regression",
    "test",
    "pass",
    "coverage",
    "compile",
];
/// Words that ask about linters' and formatters' findings.
const LINT_WORDS: [&str; 13] = [
    "lint", "format", "fmt", "warning", "style", "ruff", "clippy", "eslint", "prettier", "vet",
    "flake8", "pylint", "rustfmt",
];

/// Whether the task asks about any of the baseline's failures (see [`asks_about`]).
pub fn task_asks_about(task: &Task, baseline: &StepRecord) -> bool {
    asks_about_any(task, &baseline.signatures, &baseline.gates)
}

/// Whether the task asks about any of `signatures`, failures of the gate runs `gates`.
pub fn asks_about_any(task: &Task, signatures: &[SignatureRecord], gates: &[GateRecord]) -> bool {
    let lint_gates = lint_gates(gates);
    signatures
        .iter()
        .any(|failure| asks_about(task, failure, lint_gates.contains(failure.gate.as_str())))
}

/// The ids of the baseline's failures the task does not ask about: they predate the change and
/// are not its to fix (reported, never fixed, and they do not hold a commit back).
pub fn not_asked(task: &Task, baseline: &StepRecord) -> BTreeSet<String> {
    let lint_gates = lint_gates(&baseline.gates);
    baseline
        .signatures
        .iter()
        .filter(|failure| !asks_about(task, failure, lint_gates.contains(failure.gate.as_str())))
        .map(|failure| failure.id.clone())
        .collect()
}

/// The names of the lint gates among `gates`.
fn lint_gates(gates: &[GateRecord]) -> BTreeSet<&str> {
    gates
        .iter()
        .filter(|gate| gate.kind == GateKind::Lint)
        .map(|gate| gate.name.as_str())
        .collect()
}

/// Whether the task asks about one failure of the baseline: a failed CI run asks about every
/// one; a task that names the failure's test or file asks about it; one that speaks of the gates
/// or CI as a whole asks about all. Otherwise a linter's or formatter's finding (`from_lint_gate`,
/// or a lint signature) is the task's only when it speaks of linting, formatting or style, and
/// any other failure when it speaks of failures, bugs, fixes or tests. When in doubt it does, so
/// only a task plainly about something else leaves a failure alone.
pub fn asks_about(task: &Task, failure: &SignatureRecord, from_lint_gate: bool) -> bool {
    match task.source {
        TaskSource::WorkflowRun { .. } | TaskSource::PullRequest { .. } => return true,
        TaskSource::File { .. } | TaskSource::Text | TaskSource::Issue { .. } => {}
    }
    let text = format!(
        "{}\n{}\n{}\n{}",
        task.title,
        task.requirements,
        task.acceptance.join("\n"),
        task.guidance.join("\n")
    )
    .to_lowercase();
    let words: BTreeSet<&str> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let speaks_of = |vocabulary: &[&str]| {
        words
            .iter()
            .any(|word| vocabulary.iter().any(|w| word.starts_with(w)))
    };
    let lint = from_lint_gate || failure.kind == SignatureKind::Lint;
    let topic = if lint {
        speaks_of(&LINT_WORDS)
    } else {
        speaks_of(&FAILURE_WORDS) || speaks_of(&LINT_WORDS)
    };
    topic
        || speaks_of(&EVERY_FAILURE_WORDS)
        || words.contains("ci")
        || names_failure(&text, failure)
}

/// Whether `text` (lowercase) names the failure's test or its file.
fn names_failure(text: &str, failure: &SignatureRecord) -> bool {
    let test_name = failure
        .test
        .as_ref()
        .map(|test| test.function())
        .filter(|name| name.len() >= 4);
    let file = failure
        .location
        .as_deref()
        .and_then(|location| location.split(':').next())
        .and_then(|path| path.rsplit('/').next())
        .filter(|name| name.len() >= 4);
    [test_name, file]
        .into_iter()
        .flatten()
        .any(|needle| text.contains(&needle.to_lowercase()))
}

/// Whether every current failure is one the task leaves alone (`left_alone`, from
/// [`not_asked`]), and there is at least one.
pub fn only_preexisting(current: &BTreeSet<String>, left_alone: &BTreeSet<String>) -> bool {
    !current.is_empty() && current.is_subset(left_alone)
}
