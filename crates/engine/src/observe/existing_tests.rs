//! Tests are evidence, whatever the change adds (SECURITY.md, "Honest edges", property 7): the
//! verdict of the tests that existed at the base commit comes from a run in which nothing the
//! change wrote into the test tree exists, so nothing it added (test files, fixtures, plugins,
//! configuration, start-up hooks) can run before or around them.
//!
//! After the gates of a pristine checkout of the candidate tree ran, when the change wrote any
//! path of the test tree ([`evidence::test_tree_paths`]), a second tree is built from git objects
//! alone: the candidate with each of those paths as the base commit has it (removed where it had
//! none). Its pristine checkout runs the test gates (kinds `tests` and `custom`: lint and coverage
//! judge the whole change, in the first run). The existing tests' verdict is that run's; the new
//! tests' verdict is the first run's. A gate that passed with the change's tests but fails
//! without them is the observation's failure, named as such: the committed code is what makes
//! the existing tests pass, or nothing is verified. When a maintainer allowed test edits, the
//! tests are not evidence, and nothing is run twice.

use std::io;
use std::path::Path;

use super::Observer;
use super::pristine::PristineError;
use super::rerun::in_run;
use crate::evidence;
use crate::state::LoopState;
use meta_agent_config::GateSpec;
use meta_agent_config::raw::GateKind;
use meta_agent_exec::CommandRunner;
use meta_agent_gates::{self as gates, GateResult, GatesSummary};
use meta_agent_git::Repository;
use meta_agent_protocol::records::{GateScope, GateStatus};

impl<'e, R: CommandRunner, G: Repository> Observer<'e, R, G> {
    /// `full` (the gates of the candidate tree `tree`) with the existing tests' verdict in it:
    /// each test gate that fails on the candidate without the test files the change wrote fails
    /// here too. The second checkout lives beneath `scratch`.
    pub(super) async fn with_existing_tests_verdict(
        &self,
        state: &LoopState,
        tree: &str,
        scratch: &Path,
        full: GatesSummary,
    ) -> Result<GatesSummary, PristineError> {
        if crate::guard::test_edits_allowed(self.config, state) {
            return Ok(full);
        }
        // What the candidate changes from the base commit's tree, read from git alone (the
        // run's own checkpoint commits included, the worktree never read again). Unreadable:
        // the verification is unprepared (fails closed).
        let base_tree = self.repo.tree_of(&state.base_commit)?;
        let changes: Vec<evidence::Change> = self
            .repo
            .tree_changes(&base_tree, tree)
            .map_err(io::Error::other)?
            .into_iter()
            .map(|c| evidence::Change {
                path: c.path,
                base: c.before.map(|b| String::from_utf8_lossy(&b).into_owned()),
                now: c.after.map(|b| String::from_utf8_lossy(&b).into_owned()),
            })
            .collect();
        let left_out = evidence::test_tree_paths(&changes);
        let specs: Vec<GateSpec> = self
            .config
            .gates
            .iter()
            .filter(|g| judges_tests(g.kind))
            .cloned()
            .collect();
        if left_out.is_empty() || specs.is_empty() {
            return Ok(full);
        }
        // A tree the change's paths cannot be laid over (a file where the base has a directory)
        // leaves the verification unprepared, never an internal error.
        let existing = self
            .repo
            .overlay(tree, &base_tree, &left_out)
            .map_err(io::Error::other)?;
        let checkout = scratch.join("existing-tests");
        self.prepare_checkout(state, &existing, &checkout)?;
        let ctx = self.gate_context(&checkout);
        let verdict = gates::run_gates_with(&ctx, &specs, in_run()).await;
        tracing::info!(
            "existing tests without the {} test-tree path(s) the change wrote (tree {existing}): {}",
            left_out.len(),
            if verdict.passed { "passed" } else { "failed" }
        );
        Ok(merged(full, verdict, &left_out))
    }
}

/// Whether a gate of this kind gives tests their verdict (and so runs on the existing tests).
fn judges_tests(kind: GateKind) -> bool {
    match kind {
        GateKind::Tests | GateKind::Custom => true,
        GateKind::Lint | GateKind::Coverage => false,
    }
}

/// The full run's results, where a gate that passed there failed on the existing tests alone
/// replaced by that failure (its reasons led by a note naming what was left out). A gate that
/// failed in the full run keeps that run's result: its failures come first either way.
fn merged(full: GatesSummary, existing: GatesSummary, left_out: &[String]) -> GatesSummary {
    let results: Vec<GateResult> = full
        .gates
        .into_iter()
        .map(|gate| {
            let alone = existing.gates.iter().find(|e| e.name == gate.name);
            match alone {
                Some(alone) if gate.passed() && fails(alone) => {
                    let mut result = alone.clone();
                    result.scope = GateScope::ExistingTests;
                    result.reasons.insert(
                        0,
                        meta_agent_render::evidence::existing_tests_note(left_out),
                    );
                    result
                }
                Some(_) | None => gate,
            }
        })
        .collect();
    GatesSummary::from_results(results)
}

fn fails(gate: &GateResult) -> bool {
    !gate.passed() && gate.status != GateStatus::Skipped
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(name: &str, passed: bool, reason: &str) -> GateResult {
        GateResult {
            name: name.into(),
            kind: GateKind::Tests,
            status: if passed {
                GateStatus::Passed
            } else {
                GateStatus::Failed
            },
            duration_ms: 1,
            command: "pytest".into(),
            termination: None,
            reasons: if reason.is_empty() {
                Vec::new()
            } else {
                vec![reason.into()]
            },
            notes: Vec::new(),
            tests: None,
            coverage: None,
            lint: None,
            output_tail: String::new(),
            descendants_killed: 0,
            log: String::new(),
            scope: GateScope::Full,
            problem: None,
            failing: Vec::new(),
        }
    }

    #[test]
    fn a_gate_green_only_with_the_changes_tests_fails_with_their_names() {
        let full =
            GatesSummary::from_results(vec![gate("tests", true, ""), gate("lint", true, "")]);
        let alone = GatesSummary::from_results(vec![gate("tests", false, "1 test failed")]);
        let merged = merged(full, alone, &["tests/test_aaa.py".into()]);
        assert!(!merged.passed);
        let tests = &merged.gates[0];
        assert!(!tests.passed());
        assert!(
            tests.reasons[0].contains("tests/test_aaa.py"),
            "{:?}",
            tests.reasons
        );
        assert_eq!(tests.reasons[1], "1 test failed");
        assert!(
            merged.gates[1].passed(),
            "lint keeps the full run's verdict"
        );
    }

    #[test]
    fn the_full_runs_failure_stays_and_a_green_pair_stays_green() {
        let full = GatesSummary::from_results(vec![gate("tests", false, "new test failed")]);
        let alone = GatesSummary::from_results(vec![gate("tests", false, "old test failed")]);
        let kept = merged(full, alone, &["tests/test_new.py".into()]);
        assert_eq!(kept.gates[0].reasons, ["new test failed"]);
        let full = GatesSummary::from_results(vec![gate("tests", true, "")]);
        let alone = GatesSummary::from_results(vec![gate("tests", true, "")]);
        assert!(merged(full, alone, &["tests/test_new.py".into()]).passed);
    }
}
