//! "What next?": the pure decision over the loop's state and its latest observation. No I/O, no
//! clock, no async: everything it needs is in [`DecisionInput`], and it is unit-tested as such.
//!
//! In order: gates green → complete; a transient error → retry with exponential backoff (before
//! any other decision); the model refused in the act just observed → escalate with its words; a
//! budget spent → escalate; the same signature set as the previous
//! observation → persistent failure, ask for guidance; iterations used up → escalate; a known
//! resolution not yet tried → continue with hindsight (no LLM); an agent available → continue
//! with a fix, asking for a different approach after the first; otherwise escalate: only an LLM
//! could go further.

use meta_agent_render::reason::Describe;
use std::collections::BTreeSet;
use std::time::Duration;

use meta_agent_protocol::builder::ModelRefusal;
use meta_agent_protocol::ending::{BudgetKind, DecisionKind, EscalationReason};
use meta_agent_protocol::records::{Plan, Usage};

/// Caps on what a run may spend. `None` is no cap.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Budgets {
    pub max_tokens: Option<u64>,
    pub max_cost_usd: Option<f64>,
    pub max_calls: Option<u32>,
    pub wall_clock: Option<Duration>,
}

/// Everything the decision looks at.
#[derive(Debug, Clone)]
pub struct DecisionInput<'a> {
    /// The iteration just observed (0 = the baseline, before any act).
    pub iteration: u32,
    pub max_iterations: u32,
    pub gates_passed: bool,
    pub signatures: &'a BTreeSet<String>,
    /// The signature set of the observation before this one, if any.
    pub previous_signatures: Option<&'a BTreeSet<String>>,
    pub usage: &'a Usage,
    pub budgets: &'a Budgets,
    /// A failure of the machinery (not of the code) in this step: network, a killed runner.
    pub transient_error: Option<&'a str>,
    pub transient_retries: u32,
    /// The model declined to go on in the act just observed.
    pub model_refusal: Option<&'a ModelRefusal>,
    /// A hindsight resolution not yet tried exists for a current signature.
    pub hindsight_available: bool,
    /// An agent (an LLM) can write a fix.
    pub agent_available: bool,
}

/// The decision.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Every gate passed.
    Complete,
    /// Try again with this plan.
    Continue { plan: Plan, reason: String },
    /// Repeat the step after a delay (transient failure).
    Retry { delay: Duration, reason: String },
    /// Stop and report.
    Escalate { reason: EscalationReason },
    /// The same failures twice in a row: stop and ask a person, with what was tried.
    AwaitGuidance { reason: EscalationReason },
}

impl Decision {
    /// The decision's label, for the `decided` event.
    pub fn kind(&self) -> DecisionKind {
        match self {
            Decision::Complete => DecisionKind::Complete,
            Decision::Continue { .. } => DecisionKind::Continue,
            Decision::Retry { .. } => DecisionKind::Retry,
            Decision::Escalate { .. } => DecisionKind::Escalate,
            Decision::AwaitGuidance { .. } => DecisionKind::AwaitGuidance,
        }
    }

    /// Why, in a sentence.
    pub fn reason(&self) -> String {
        match self {
            Decision::Complete => "all gates passed".into(),
            Decision::Continue { reason, .. } | Decision::Retry { reason, .. } => reason.clone(),
            Decision::Escalate { reason } | Decision::AwaitGuidance { reason } => reason.describe(),
        }
    }
}

/// Transient failures retried before giving up.
pub const MAX_TRANSIENT_RETRIES: u32 = 3;

/// Decides what the loop does next.
pub fn decide(input: &DecisionInput<'_>) -> Decision {
    if input.gates_passed && input.transient_error.is_none() {
        return Decision::Complete;
    }
    if let Some(error) = input.transient_error {
        return transient(error, input.transient_retries);
    }
    if let Some(refusal) = input.model_refusal {
        return Decision::Escalate {
            reason: EscalationReason::ModelRefused {
                words: refusal.words.clone(),
            },
        };
    }
    if let Some(what) = spent_budget(input.usage, input.budgets) {
        return Decision::Escalate {
            reason: EscalationReason::Budget { what },
        };
    }
    if input
        .previous_signatures
        .is_some_and(|previous| previous == input.signatures)
    {
        return Decision::AwaitGuidance {
            reason: EscalationReason::PersistentFailure {
                signatures: input.signatures.len(),
                iteration: input.iteration,
            },
        };
    }
    if input.iteration >= input.max_iterations {
        return Decision::Escalate {
            reason: EscalationReason::IterationsExhausted {
                iterations: input.iteration,
            },
        };
    }
    next_plan(input)
}

fn next_plan(input: &DecisionInput<'_>) -> Decision {
    if input.hindsight_available {
        return Decision::Continue {
            plan: Plan::Hindsight,
            reason: "hindsight knows a resolution for a remaining failure".into(),
        };
    }
    if input.agent_available {
        let different_approach = input.iteration > 0;
        return Decision::Continue {
            plan: Plan::AgentFix { different_approach },
            reason: "no known resolution fits; asking the agent for a fix".into(),
        };
    }
    Decision::Escalate {
        reason: EscalationReason::NoWayForward,
    }
}

fn transient(error: &str, retries: u32) -> Decision {
    if retries >= MAX_TRANSIENT_RETRIES {
        return Decision::Escalate {
            reason: EscalationReason::TransientErrors {
                error: error.to_owned(),
            },
        };
    }
    Decision::Retry {
        delay: backoff(retries),
        reason: format!("transient failure, retry {}: {error}", retries + 1),
    }
}

/// 1s, 2s, 4s, ... capped at 30s.
pub fn backoff(retries: u32) -> Duration {
    Duration::from_secs(1u64 << retries.min(5)).min(Duration::from_secs(30))
}

/// The first budget that is spent.
fn spent_budget(usage: &Usage, budgets: &Budgets) -> Option<BudgetKind> {
    let tokens = usage.input_tokens + usage.output_tokens;
    if budgets.max_tokens.is_some_and(|max| tokens >= max) {
        return Some(BudgetKind::Tokens);
    }
    if budgets
        .max_cost_usd
        .is_some_and(|max| usage.cost_usd >= max)
    {
        return Some(BudgetKind::Cost);
    }
    if budgets.max_calls.is_some_and(|max| usage.llm_calls >= max) {
        return Some(BudgetKind::Calls);
    }
    if budgets
        .wall_clock
        .is_some_and(|max| Duration::from_millis(usage.elapsed_ms) >= max)
    {
        return Some(BudgetKind::WallClock);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(ids: &[&str]) -> BTreeSet<String> {
        ids.iter().map(|id| (*id).to_owned()).collect()
    }

    struct Case {
        signatures: BTreeSet<String>,
        previous: Option<BTreeSet<String>>,
        usage: Usage,
        budgets: Budgets,
    }

    impl Case {
        fn new(signatures: &[&str]) -> Case {
            Case {
                signatures: set(signatures),
                previous: None,
                usage: Usage::default(),
                budgets: Budgets::default(),
            }
        }

        fn input(&self) -> DecisionInput<'_> {
            DecisionInput {
                iteration: 1,
                max_iterations: 3,
                gates_passed: self.signatures.is_empty(),
                signatures: &self.signatures,
                previous_signatures: self.previous.as_ref(),
                usage: &self.usage,
                budgets: &self.budgets,
                transient_error: None,
                transient_retries: 0,
                model_refusal: None,
                hindsight_available: false,
                agent_available: true,
            }
        }
    }

    #[test]
    fn green_gates_complete() {
        let case = Case::new(&[]);
        assert_eq!(decide(&case.input()), Decision::Complete);
    }

    #[test]
    fn the_same_signatures_twice_is_persistent_and_asks_for_guidance() {
        let mut case = Case::new(&["a", "b"]);
        case.previous = Some(set(&["b", "a"]));
        assert!(matches!(
            decide(&case.input()),
            Decision::AwaitGuidance { .. }
        ));
        case.previous = Some(set(&["a"]));
        assert!(matches!(decide(&case.input()), Decision::Continue { .. }));
    }

    #[test]
    fn hindsight_comes_before_the_agent() {
        let case = Case::new(&["a"]);
        let input = DecisionInput {
            hindsight_available: true,
            ..case.input()
        };
        assert_eq!(
            decide(&input),
            Decision::Continue {
                plan: Plan::Hindsight,
                reason: "hindsight knows a resolution for a remaining failure".into()
            }
        );
        let input = DecisionInput {
            hindsight_available: false,
            ..case.input()
        };
        assert!(matches!(
            decide(&input),
            Decision::Continue {
                plan: Plan::AgentFix {
                    different_approach: true
                },
                ..
            }
        ));
    }

    #[test]
    fn without_an_llm_or_a_resolution_the_run_escalates() {
        let case = Case::new(&["a"]);
        let input = DecisionInput {
            agent_available: false,
            ..case.input()
        };
        assert_eq!(
            decide(&input),
            Decision::Escalate {
                reason: EscalationReason::NoWayForward
            }
        );
    }

    #[test]
    fn a_refusal_of_the_model_is_why_the_run_stops() {
        let mut case = Case::new(&["a"]);
        case.previous = Some(set(&["a"]));
        let refusal = ModelRefusal {
            words: Some("I won't do that.".into()),
        };
        let input = DecisionInput {
            model_refusal: Some(&refusal),
            ..case.input()
        };
        assert_eq!(
            decide(&input),
            Decision::Escalate {
                reason: EscalationReason::ModelRefused {
                    words: Some("I won't do that.".into())
                }
            }
        );
        let green = Case::new(&[]);
        let input = DecisionInput {
            model_refusal: Some(&refusal),
            ..green.input()
        };
        assert_eq!(
            decide(&input),
            Decision::Complete,
            "green gates still complete"
        );
    }

    #[test]
    fn iterations_are_capped() {
        let case = Case::new(&["a"]);
        let input = DecisionInput {
            iteration: 3,
            ..case.input()
        };
        assert_eq!(
            decide(&input),
            Decision::Escalate {
                reason: EscalationReason::IterationsExhausted { iterations: 3 }
            }
        );
    }

    #[test]
    fn every_budget_is_enforced() {
        let mut case = Case::new(&["a"]);
        case.usage = Usage {
            llm_calls: 5,
            input_tokens: 900,
            output_tokens: 200,
            cost_usd: 1.5,
            elapsed_ms: 60_000,
        };
        for (budgets, what) in [
            (
                Budgets {
                    max_tokens: Some(1000),
                    ..Budgets::default()
                },
                BudgetKind::Tokens,
            ),
            (
                Budgets {
                    max_cost_usd: Some(1.0),
                    ..Budgets::default()
                },
                BudgetKind::Cost,
            ),
            (
                Budgets {
                    max_calls: Some(5),
                    ..Budgets::default()
                },
                BudgetKind::Calls,
            ),
            (
                Budgets {
                    wall_clock: Some(Duration::from_secs(30)),
                    ..Budgets::default()
                },
                BudgetKind::WallClock,
            ),
        ] {
            case.budgets = budgets;
            assert_eq!(
                decide(&case.input()),
                Decision::Escalate {
                    reason: EscalationReason::Budget { what }
                }
            );
        }
    }

    #[test]
    fn transient_errors_are_retried_with_backoff_before_any_other_decision() {
        let case = Case::new(&["a"]);
        let input = DecisionInput {
            transient_error: Some("connection reset"),
            ..case.input()
        };
        assert!(
            matches!(decide(&input), Decision::Retry { delay, .. } if delay == Duration::from_secs(1))
        );
        let input = DecisionInput {
            transient_error: Some("x"),
            transient_retries: 2,
            ..case.input()
        };
        assert!(
            matches!(decide(&input), Decision::Retry { delay, .. } if delay == Duration::from_secs(4))
        );
        let input = DecisionInput {
            transient_error: Some("x"),
            transient_retries: 3,
            ..case.input()
        };
        assert!(matches!(
            decide(&input),
            Decision::Escalate {
                reason: EscalationReason::TransientErrors { .. }
            }
        ));
        assert_eq!(backoff(10), Duration::from_secs(30));
    }
}
