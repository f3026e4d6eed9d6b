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

/// Why a run stopped without a commit (its sentence for people is
/// `render::reason::Describe`, in the main crate's `render/reason.rs`).
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
    /// The patch gate refused what would have been committed.
    PatchRefused {
        /// What was refused: the change as it stood, or what the run recorded with it.
        recorded: bool,
        refusals: Vec<crate::refusal::Refusal>,
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
    /// The model declined to go on (its refusal, not a failure of the code): its words, when it
    /// gave some.
    ModelRefused { words: Option<String> },
    /// Gates could not start (a program or test runner not installed, a path the sandbox
    /// hides): a problem of the environment, which no change to the code fixes. At the baseline
    /// the run ends before any model call; in the pristine verification the change stays
    /// unverified, not failed.
    Environment {
        failures: Vec<crate::records::StartFailure>,
        /// Seen only on the pristine checkout (the worktree's gates passed).
        pristine: bool,
    },
}

impl EscalationReason {
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
            | EscalationReason::SetupFailed { .. }
            | EscalationReason::Environment { .. }
            | EscalationReason::ModelRefused { .. } => false,
        }
    }

    /// Whether the code is at fault: its remaining failures are recorded in hindsight as
    /// unresolved. Not when the machine or the configuration is (a setup command failed, gates
    /// could not start): nothing of the code was learned.
    pub fn blames_the_code(&self) -> bool {
        match self {
            EscalationReason::SetupFailed { .. }
            | EscalationReason::Environment { .. }
            | EscalationReason::ModelRefused { .. } => false,
            EscalationReason::IterationsExhausted { .. }
            | EscalationReason::Budget { .. }
            | EscalationReason::NoWayForward
            | EscalationReason::TransientErrors { .. }
            | EscalationReason::PersistentFailure { .. }
            | EscalationReason::PatchRefused { .. }
            | EscalationReason::ProviderRefused { .. }
            | EscalationReason::PreexistingFailures { .. }
            | EscalationReason::PristineFailed { .. } => true,
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

/// What the patch gate refused of the work in progress when a run ended or paused, and whether
/// the rest was committed without it (`committed_without`) or nothing was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WipRefused {
    pub refusals: Vec<crate::refusal::Refusal>,
    pub committed_without: bool,
}
