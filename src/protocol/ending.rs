//! How a run stops short of a commit, and what the pure decision said, as types: the reason
//! travels typed from `decide()` through the state to the report a maintainer reads; only the
//! renderer turns it into words.

use serde::{Deserialize, Serialize};

/// A spending cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetKind {
    Tokens,
    Cost,
    Calls,
    WallClock,
}

impl BudgetKind {
    /// The budget's name in a sentence ("the {name} budget is spent").
    pub fn name(self) -> &'static str {
        match self {
            BudgetKind::Tokens => "token",
            BudgetKind::Cost => "cost",
            BudgetKind::Calls => "LLM call",
            BudgetKind::WallClock => "time",
        }
    }
}

/// Why a run stopped without a commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum EscalationReason {
    /// The improve iterations ran out with gates still failing.
    IterationsExhausted { iterations: u32 },
    /// A spending cap was reached.
    Budget { what: BudgetKind },
    /// Nothing known fits the remaining failures and no LLM is configured.
    NoWayForward,
    /// The machinery (not the code) kept failing.
    TransientErrors { error: String },
    /// The same failures stayed after an attempt: a person should say what to try.
    PersistentFailure { signatures: usize, iteration: u32 },
    /// The patch gate refused what would have been committed (one line per refusal).
    PatchRefused {
        /// What was refused: the change as it stood, or what the run recorded with it.
        recorded: bool,
        refusals: Vec<String>,
    },
    /// The LLM provider refused the requests for good (key, model, request, context length,
    /// spend limit): its reason, in its words.
    ProviderRefused { reason: String },
    /// The task needed no change, but the gates fail as they did before the run, on failures
    /// the task does not ask about: the run does not call that "nothing to do".
    PreexistingFailures { signatures: usize },
    /// The gates passed in the worktree but failed on a pristine checkout of the tree that would
    /// have been committed: the worktree held something the commit does not.
    PristineFailed {
        /// The gates that failed on the pristine checkout.
        gates: Vec<String>,
        /// Files the worktree held that the commit does not (ignored bytecode, build outputs
        /// written since the run began), as far as the run could name them.
        only_in_worktree: Vec<String>,
    },
    /// A setup command failed before the build.
    SetupFailed {
        command: String,
        reason: String,
        tail: String,
    },
}

impl EscalationReason {
    /// One sentence for people (no trailing period).
    pub fn describe(&self) -> String {
        match self {
            EscalationReason::IterationsExhausted { iterations } => {
                format!("the gates still fail after {iterations} improve iteration(s)")
            }
            EscalationReason::Budget { what } => format!("the {} budget is spent", what.name()),
            EscalationReason::NoWayForward => "no known resolution fits the remaining failures \
                                               and no LLM is configured: only an LLM (or a \
                                               person) could go further"
                .to_owned(),
            EscalationReason::TransientErrors { error } => {
                format!("transient errors kept happening: {error}")
            }
            EscalationReason::PersistentFailure {
                signatures,
                iteration,
            } => format!(
                "the same {signatures} failure signature(s) remained after iteration \
                 {iteration}: a persistent failure"
            ),
            EscalationReason::PatchRefused { recorded, refusals } => {
                let what = if *recorded {
                    "what the run recorded"
                } else {
                    "the change"
                };
                format!(
                    "the patch gate refused to commit {what} ({})",
                    refusals.join("; ")
                )
            }
            EscalationReason::ProviderRefused { reason } => {
                format!("the LLM provider refused the request: {reason}")
            }
            EscalationReason::PreexistingFailures { signatures } => format!(
                "the task needed no change, but the gates fail as they did before the run \
                 ({signatures} failure signature(s) the task does not ask about): fix them or \
                 say they may stay"
            ),
            EscalationReason::PristineFailed {
                gates,
                only_in_worktree,
            } => {
                let held = if only_in_worktree.is_empty() {
                    "files or dependencies the commit does not carry (none the run could name: \
                     look for state outside the tree, or dependencies setup: does not recreate)"
                        .to_owned()
                } else {
                    format!(
                        "files the commit does not carry ({})",
                        only_in_worktree.join(", ")
                    )
                };
                format!(
                    "the gates pass in the worktree but fail on a pristine checkout of the tree \
                     that would be committed ({} failed there): the worktree held {held}; \
                     nothing was committed as verified",
                    gates.join(", ")
                )
            }
            EscalationReason::SetupFailed {
                command,
                reason,
                tail,
            } => {
                let mut text = format!("setup command `{command}` {reason}");
                if !tail.is_empty() {
                    text.push_str(": ");
                    text.push_str(tail);
                }
                text.push_str(" (the run stopped before the build)");
                text
            }
        }
    }

    /// Whether a person's guidance is what the run waits for (the loop stops in
    /// `AwaitingGuidance` rather than `Escalated`).
    pub fn awaits_guidance(&self) -> bool {
        match self {
            EscalationReason::PersistentFailure { .. } => true,
            EscalationReason::IterationsExhausted { .. }
            | EscalationReason::Budget { .. }
            | EscalationReason::NoWayForward
            | EscalationReason::TransientErrors { .. }
            | EscalationReason::PatchRefused { .. }
            | EscalationReason::ProviderRefused { .. }
            | EscalationReason::PreexistingFailures { .. }
            | EscalationReason::PristineFailed { .. }
            | EscalationReason::SetupFailed { .. } => false,
        }
    }
}

/// What the pure decision said, without its details: the `decided` event's label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    Complete,
    Continue,
    Retry,
    Escalate,
    AwaitGuidance,
}
