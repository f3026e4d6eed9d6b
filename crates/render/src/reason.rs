//! The sentence a person reads for each [`EscalationReason`]: in the escalation report, the
//! status comment, the terminal and the decision event. One arm per reason, no catch-all, so a
//! new reason cannot go out without its words.

use meta_agent_protocol::ending::EscalationReason;

/// The sentence for people of a reason (render owns the text; the reason is protocol's data).
pub trait Describe {
    /// One sentence for people (no trailing period).
    fn describe(&self) -> String;
}

impl Describe for EscalationReason {
    fn describe(&self) -> String {
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
                    super::refusal::lines(refusals)
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
            EscalationReason::ModelRefused { words: Some(words) } => {
                format!("the model refused to go on, saying: \"{words}\"")
            }
            EscalationReason::ModelRefused { words: None } => {
                "the model refused to go on (it gave no reason)".to_owned()
            }
            EscalationReason::Environment { failures, pristine } => {
                super::environment::describe(failures, *pristine)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Describe;
    use meta_agent_protocol::ending::{BudgetKind, EscalationReason};
    use meta_agent_protocol::refusal::{Refusal, TamperKind, Why};

    /// Every reason's sentence, in one snapshot: the words a maintainer reads first.
    #[test]
    fn every_reason_has_its_sentence() {
        let reasons = [
            EscalationReason::IterationsExhausted { iterations: 3 },
            EscalationReason::Budget {
                what: BudgetKind::WallClock,
            },
            EscalationReason::NoWayForward,
            EscalationReason::TransientErrors {
                error: "connection reset".to_owned(),
            },
            EscalationReason::PersistentFailure {
                signatures: 2,
                iteration: 4,
            },
            EscalationReason::PatchRefused {
                recorded: false,
                refusals: vec![Refusal::of(
                    "tests/test_a.py",
                    Why::Tampered {
                        tamper: TamperKind::AssertionWeakened,
                        seen: "assertion loosened".to_owned(),
                    },
                )],
            },
            EscalationReason::ProviderRefused {
                reason: "invalid x-api-key".to_owned(),
            },
            EscalationReason::PreexistingFailures { signatures: 1 },
            EscalationReason::PristineFailed {
                gates: vec!["tests".to_owned()],
                only_in_worktree: vec!["__pycache__/calc.cpython-313.pyc".to_owned()],
            },
            EscalationReason::SetupFailed {
                command: "pip install -e .".to_owned(),
                reason: "exited with status 1".to_owned(),
                tail: "No matching distribution".to_owned(),
            },
            EscalationReason::ModelRefused {
                words: Some("I can't help with modifying this test harness.".to_owned()),
            },
            EscalationReason::ModelRefused { words: None },
            EscalationReason::Environment {
                failures: vec![meta_agent_protocol::records::StartFailure {
                    gate: "tests".to_owned(),
                    problem: meta_agent_protocol::records::GateProblem::RunnerMissing {
                        runner: "pytest".to_owned(),
                        error: "No module named pytest".to_owned(),
                    },
                }],
                pristine: false,
            },
        ];
        let text: Vec<String> = reasons.iter().map(EscalationReason::describe).collect();
        insta::assert_snapshot!(text.join("\n"));
    }
}
