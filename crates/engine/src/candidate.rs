//! Where the gates run after an act, pure: the fewest gate runs that keep every guarantee.
//!
//! A change the loop might commit is a **candidate**. Its full gates run once, on a pristine
//! checkout of exactly the tree that would be committed (verified means the commit): that run is
//! both the observation the loop decides on and the verification that justifies the commit, so
//! there is no second full run in the worktree. Two runs may come before it, each only when it
//! adds information:
//! - the failing tests alone, in the worktree, when re-running them costs at most a quarter of
//!   the full gates and those take at least ten seconds (measured on this run's own earlier gate
//!   runs): on a large suite a fix that did not work is then known for the price of its failing
//!   tests, not the suite's;
//! - the flaky check (in `engine/observe.rs`): the failing tests once more, unchanged, at the
//!   baseline only when the task is about those failures (else they are pre-existing, flaky or
//!   not), and after an act only for tests that were not failing before.
//!
//! Without a pristine verification (`verify.pristine: false`, an act that changed nothing, a
//! change the patch gate refuses to stage) the worktree is observed as before: the failing tests
//! first, then the full gates.

pub use meta_agent_protocol::state::{GateCosts, VerifiedTree};

/// How the gates observe the change an act left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Observation {
    /// The full gates once, on a pristine checkout of the candidate tree.
    Pristine,
    /// The failing tests in the worktree first; the pristine run only when they pass.
    FailingFirst,
    /// The worktree: the failing tests first, then the full gates (no pristine verification).
    Worktree,
}

/// What [`plan`] looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Facts {
    /// A pristine verification can be made of the worktree now (see the module doc).
    pub pristine: bool,
    /// A gate that failed before can re-run its failing tests alone.
    pub failing_rerunnable: bool,
    pub costs: GateCosts,
}

/// The observation after an act.
pub fn plan(facts: &Facts) -> Observation {
    match (facts.pristine, facts.failing_rerunnable) {
        (false, _) => Observation::Worktree,
        (true, true) if failing_first_pays(&facts.costs) => Observation::FailingFirst,
        (true, _) => Observation::Pristine,
    }
}

/// Full gates shorter than this go straight to the pristine run: a cheaper first check saves
/// too little to matter, and the ratio of two runs this short is mostly noise (a loaded machine
/// swings it past a quarter and back).
pub const FAILING_FIRST_MIN_FULL_MS: u64 = 10_000;

/// Whether re-running only the failing tests before the full gates is worth a gate run: it is
/// when the full gates take at least [`FAILING_FIRST_MIN_FULL_MS`] and the failing tests cost at
/// most a quarter of them (a fix that does not work is then caught for a fraction of the suite's
/// time; one that works pays a little more). Unknown costs say no: the full gates run once.
pub fn failing_first_pays(costs: &GateCosts) -> bool {
    match (costs.full_ms, costs.failing_ms) {
        (Some(full), Some(failing)) => {
            full >= FAILING_FIRST_MIN_FULL_MS && failing.saturating_mul(4) <= full
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(pristine: bool, failing_rerunnable: bool, full: u64, failing: u64) -> Facts {
        Facts {
            pristine,
            failing_rerunnable,
            costs: GateCosts {
                full_ms: Some(full),
                failing_ms: Some(failing),
            },
        }
    }

    #[test]
    fn a_small_suite_goes_straight_to_the_pristine_run() {
        // The example's figures: full gates ~1 s, its one failing test ~0.45 s.
        assert_eq!(plan(&facts(true, true, 1000, 450)), Observation::Pristine);
    }

    #[test]
    fn a_large_suite_reruns_its_failing_tests_first() {
        assert_eq!(
            plan(&facts(true, true, 60_000, 2_000)),
            Observation::FailingFirst
        );
        assert_eq!(
            plan(&facts(true, true, 40_000, 10_000)),
            Observation::FailingFirst
        );
        assert_eq!(
            plan(&facts(true, true, 4_000, 1_000)),
            Observation::Pristine,
            "a short suite: the saving is too small and the ratio is noise"
        );
        assert_eq!(
            plan(&facts(true, false, 60_000, 2_000)),
            Observation::Pristine,
            "nothing to re-run alone"
        );
    }

    #[test]
    fn without_a_pristine_verification_the_worktree_is_observed() {
        assert_eq!(
            plan(&facts(false, true, 60_000, 2_000)),
            Observation::Worktree
        );
        assert_eq!(
            plan(&facts(false, false, 1_000, 900)),
            Observation::Worktree
        );
    }

    #[test]
    fn unknown_costs_run_the_full_gates_once() {
        let unknown = Facts {
            pristine: true,
            failing_rerunnable: true,
            costs: GateCosts::default(),
        };
        assert_eq!(plan(&unknown), Observation::Pristine);
    }
}
