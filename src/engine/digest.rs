//! What the next act is told: the failure digest (one line per signature, with its in-repo
//! frames), what earlier attempts did, the output of the gates that failed (never a skipped
//! gate's or the loop's own notes), the failures that predate the change, and guidance from
//! hindsight and maintainers. Part of [`Engine`]; pure assembly over the state, no I/O beyond
//! the hindsight view.

use std::collections::BTreeSet;

use super::improve;
use super::run::Engine;
use super::state::LoopState;
use crate::exec::CommandRunner;
use crate::git::Repository;
use crate::protocol::builder::{Builder, FailureContext};
use crate::protocol::records::{GateRecord, SignatureRecord};

/// Frames of one failure shown at most.
const MAX_FRAMES: usize = 3;

impl<R: CommandRunner, G: Repository, B: Builder> Engine<'_, R, G, B> {
    /// Everything the next attempt should know.
    pub(super) fn failure_context(&self, state: &LoopState) -> FailureContext {
        let preexisting = self.preexisting_at_baseline(state);
        let mut guidance = improve::guidance_for(self.hindsight_ctx(), state);
        guidance.extend(state.task.guidance.iter().cloned());
        guidance.extend(state.tamper.iter().map(|line| {
            format!(
                "Your earlier change was refused: {line}. Fix the product code; existing tests, \
                 their data and their configuration stay as they are (new tests in new test \
                 functions or files are welcome)."
            )
        }));
        guidance.extend(super::hints::family_hints(
            self.hindsight.store.entries(),
            &state.signatures,
            crate::hindsight::signature::family::family_key,
        ));
        let (shown, alone) = the_tasks_failures(state);
        if !alone.is_empty() {
            guidance.push(format!(
                "Failing before this change and not what the task asks (leave them as they \
                 are; they are reported, not yours to fix): {}",
                alone
                    .iter()
                    .map(|record| digest_line(record))
                    .collect::<Vec<_>>()
                    .join("; ")
            ));
        }
        FailureContext {
            failures: state
                .review_missing
                .iter()
                .map(|missing| format!("[requirement] not met yet: {missing}"))
                .chain(shown.into_iter().map(digest_line))
                .collect(),
            attempts: attempts(state),
            files_changed: files_changed(state),
            output: failed_output(&state.gates),
            patterns: patterns(state),
            instruction: instruction(state, preexisting),
            guidance,
        }
    }

    /// Whether the current failures are the baseline's and the task does not ask about them.
    fn preexisting_at_baseline(&self, state: &LoopState) -> bool {
        state.before_any_act() && !self.preexisting_left(state).is_empty()
    }
}

/// The current failures the task asks about, and those it leaves alone (the baseline showed
/// them; see [`super::baseline::not_asked`]). When every failure is left alone, all are shown
/// (with the instruction that they predate the change) and none is set apart.
fn the_tasks_failures(state: &LoopState) -> (Vec<&SignatureRecord>, Vec<&SignatureRecord>) {
    let left_alone = super::run::left_alone(state);
    let (alone, asked): (Vec<_>, Vec<_>) = state
        .signatures
        .iter()
        .partition(|record| left_alone.contains(&record.id));
    if asked.is_empty() {
        (alone, Vec::new())
    } else {
        (asked, alone)
    }
}

/// `[kind] template — excerpt (at file:line, …)`: the frames are in-repo paths.
pub(crate) fn digest_line(record: &SignatureRecord) -> String {
    let mut frames: Vec<&str> = record.location.iter().map(String::as_str).collect();
    for frame in &record.frames {
        let known = frames
            .iter()
            .any(|f| *f == frame || f.starts_with(&format!("{frame}:")));
        if !known {
            frames.push(frame);
        }
    }
    frames.truncate(MAX_FRAMES);
    let at = if frames.is_empty() {
        String::new()
    } else {
        format!(" (at {})", frames.join(", "))
    };
    format!(
        "[{}] {} — {}{at}",
        record.kind.as_str(),
        record.template,
        record.excerpt
    )
}

fn attempts(state: &LoopState) -> Vec<String> {
    state
        .history
        .iter()
        .filter(|step| step.phase.is_act())
        .flat_map(|step| {
            step.actions
                .iter()
                .map(move |a| format!("iteration {}: {a}", step.iteration))
        })
        .collect()
}

fn files_changed(state: &LoopState) -> Vec<String> {
    let files: BTreeSet<String> = state
        .history
        .iter()
        .flat_map(|s| s.files_changed.iter().cloned())
        .collect();
    files.into_iter().collect()
}

/// The reasons of the gates that failed, without the loop's own notes: a skipped or passing
/// gate says nothing the model needs.
pub(crate) fn failed_output(gates: &[GateRecord]) -> String {
    gates
        .iter()
        .filter(|g| g.failed())
        .flat_map(|g| g.reasons.iter())
        .filter(|reason| !is_loop_note(reason))
        .cloned()
        .collect::<Vec<_>>()
        .join("\n")
}

/// Notes the loop adds to a gate's reasons for people, not for the model.
fn is_loop_note(reason: &str) -> bool {
    reason.starts_with("fast feedback:")
        || reason.starts_with("flaky:")
        || reason == crate::gates::runner::NETWORK_NOT_CUT_NOTE
}

fn patterns(state: &LoopState) -> String {
    let persistent = state
        .previous_signature_ids()
        .is_some_and(|prev| prev == state.signature_ids());
    let failed: Vec<&str> = state
        .gates
        .iter()
        .filter(|g| g.failed())
        .map(|g| g.name.as_str())
        .collect();
    format!(
        "{} failure signature(s) across gates {}{}",
        state.signatures.len(),
        failed.join(", "),
        if persistent {
            "; the same failures persisted through the last attempt"
        } else {
            ""
        }
    )
}

fn instruction(state: &LoopState, preexisting: bool) -> String {
    if preexisting {
        return "The failures above were there before any change (the baseline): they are not \
                yours and the task does not ask about them. Build what the task asks; leave \
                them alone unless the task needs them fixed."
            .into();
    }
    if state.iteration > 1 {
        return "The previous attempts did not make the gates pass. Try a different approach \
                from the ones listed."
            .into();
    }
    "Make the failing gates pass without weakening, skipping or deleting tests.".into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::raw::GateKind;
    use crate::hindsight::SignatureKind;
    use crate::protocol::records::GateStatus;

    fn gate(name: &str, result: GateStatus, reasons: &[&str]) -> GateRecord {
        let reasons = reasons.iter().map(|r| (*r).to_owned()).collect();
        GateRecord::judged(name, GateKind::Lint, result, reasons)
    }

    #[test]
    fn only_failed_gates_speak_in_the_relevant_output() {
        let gates = [
            gate(
                "lint",
                GateStatus::Skipped,
                &["requires `ruff`, which is not on PATH"],
            ),
            gate(
                "tests",
                GateStatus::Failed,
                &[
                    "1 of 3 tests failed",
                    "fast feedback: only the tests that failed before were re-run",
                ],
            ),
        ];
        assert_eq!(failed_output(&gates), "1 of 3 tests failed");
    }

    #[test]
    fn a_digest_line_names_the_in_repo_frames() {
        let record = SignatureRecord {
            id: "x".into(),
            kind: SignatureKind::TestFailure,
            template: "AssertionError: assert <N> == <N>".into(),
            gate: "tests".into(),
            excerpt: "assert 2 == 2.5".into(),
            location: Some("test_calc.py:7".into()),
            test: Some("test_calc.test_mean".into()),
            frames: vec![
                "test_calc.py".into(),
                "test_calc.py:7".into(),
                "calc.py:3".into(),
            ],
            family: String::new(),
        };
        assert_eq!(
            digest_line(&record),
            "[test_failure] AssertionError: assert <N> == <N> — assert 2 == 2.5 (at \
             test_calc.py:7, calc.py:3)"
        );
    }
}
