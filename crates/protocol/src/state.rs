//! The state of a run and its history ([`LoopState`]): everything the loop knows, enough to
//! resume after a kill. Plain data here; the engine persists it atomically after every
//! transition (its session store), and the renderers, the GitHub layer and the shared memory
//! read it without reaching into the engine.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::builder::ModelRefusal;
use crate::ending::EscalationReason;
use crate::event::LoopPhase;
use crate::records::{
    CommitStyle, GateRecord, Plan, RunOutcome, SignatureRecord, StepPhase, StepRecord, Usage,
    UserSnapshot,
};
use crate::task::Task;

/// Version of the state file format.
pub const STATE_VERSION: u32 = 2;

/// Everything the loop knows, enough to resume after a kill.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoopState {
    pub version: u32,
    pub session: String,
    pub task: Task,
    /// The bot's branch (`meta-agent/<slug>`); the current branch in a dry run.
    pub branch: String,
    /// The commit the run started from.
    pub base_commit: String,
    pub dry_run: bool,
    pub phase: LoopPhase,
    /// 0 is the build; 1.. are improve iterations.
    pub iteration: u32,
    pub max_iterations: u32,
    /// What the next Acting step will do.
    pub plan: Option<Plan>,
    /// The worktree's diff against `base_commit` after the last completed Acting step.
    pub worktree_diff: String,
    /// How many build/improve calls the builder has answered (scripted edits resume here).
    pub builder_calls: u32,
    pub history: Vec<StepRecord>,
    /// The latest gate results, compact.
    pub gates: Vec<GateRecord>,
    /// Signatures of the latest observation.
    pub signatures: Vec<SignatureRecord>,
    pub usage: Usage,
    /// Tests that failed and then passed on an immediate re-run with no change (older sessions
    /// hold their names as strings: they load untyped).
    pub flaky: Vec<crate::test_id::TestId>,
    /// What the tamper and evidence guards refused and undone during the run (older sessions
    /// hold lines of text: they load as said).
    pub tamper: Vec<crate::refusal::Refusal>,
    /// Transient failures retried in a row.
    pub transient_retries: u32,
    /// The transient failure of the step just taken, for the decision.
    #[serde(default)]
    pub transient_error: Option<String>,
    pub recoveries: Vec<Recovery>,
    pub started_unix_ms: u64,
    /// Set when the run is over.
    pub outcome: Option<RunOutcome>,
    /// Why the run stopped without a commit, when it did.
    #[serde(default)]
    pub escalation: Option<EscalationReason>,
    /// The requirements review ran (once per run, after the gates first pass).
    #[serde(default)]
    pub reviewed: bool,
    /// What the requirements review found missing: the next act's first failures.
    #[serde(default)]
    pub review_missing: Vec<String>,
    /// Why a signal or a pause point paused the run (with outcome `interrupted`), until it is
    /// resumed.
    #[serde(default)]
    pub interrupted: Option<String>,
    /// The pause point the run paused at, until it is resumed.
    #[serde(default)]
    pub paused: Option<crate::pause::PauseHit>,
    /// Arrivals at pause points and hits of their rules so far (see [`crate::pause`]).
    #[serde(default)]
    pub pauses: crate::pause::PauseCounts,
    /// This session's own work-in-progress commit the worktree diff is relative to (a paused
    /// run's, or the pushed tip a GitHub resume continues from): the verified commit goes on top
    /// of it, even when the worktree adds nothing to it.
    #[serde(default)]
    pub checkpoint: Option<String>,
    /// How the repository writes commit subjects (read from its history at the start).
    #[serde(default)]
    pub commit_style: CommitStyle,
    /// What the run did to the repository's tests: the tests it added, and the test and
    /// configuration edits a maintainer allowed (the engine's evidence rules).
    #[serde(default)]
    pub evidence: TestEvidence,
    /// The model declined to go on in the act just taken: the decision ends the run with this
    /// refusal as its reason.
    #[serde(default)]
    pub model_refusal: Option<ModelRefusal>,
    /// Worktree entries the setup commands and the baseline gates wrote (a lockfile, a virtual
    /// environment, caches): the environment's, left out of every diff and commit.
    #[serde(default)]
    pub environment: Vec<String>,
    /// The repository's instruction files the model was shown (`AGENTS.md`, ...), in the order
    /// first shown.
    #[serde(default)]
    pub instructions: Vec<String>,
    /// A local run's start from the user's uncommitted work: the snapshot commit that is
    /// `base_commit`, and which paths were the user's.
    #[serde(default)]
    pub snapshot: Option<UserSnapshot>,
    /// What this run's gate runs cost (the engine's candidate plan weighs them).
    #[serde(default)]
    pub costs: GateCosts,
    /// The tree the last observation ran the gates on in a pristine checkout: committed as it is
    /// when the loop completes in the same iteration.
    #[serde(default)]
    pub verified: Option<VerifiedTree>,
    /// The sub-task plan the run paused on at `after_plan` inside a build act: when it goes on
    /// without new guidance, the act runs this plan (the one the maintainers saw); with
    /// guidance, or once the act is done, it is dropped.
    #[serde(default)]
    pub sub_plan: Option<crate::subplan::TaskPlan>,
}

/// The tests a run added and the test edits it was allowed, for the report and the PR body.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestEvidence {
    /// `path::name` of every test the change adds (new files and new tests alike).
    #[serde(default)]
    pub new_tests: Vec<String>,
    /// Test code and configuration the change alters, kept because a maintainer allowed test
    /// edits for this task: one entry per file, with its diff against the base commit.
    #[serde(default)]
    pub allowed_edits: Vec<AllowedEdit>,
}

/// One allowed change to existing tests or their configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllowedEdit {
    pub path: String,
    /// Why it would have been refused (the evidence check's finding).
    pub reason: String,
    /// The file's unified diff against the base commit.
    pub diff: String,
}

/// A resume after a kill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recovery {
    pub phase: LoopPhase,
    pub iteration: u32,
    pub at_unix_ms: u64,
}

impl LoopState {
    /// A new session's state before its first step: `task` on `branch`, from `base_commit`, with
    /// at most `max_iterations` improve iterations; nothing run, spent or decided yet.
    pub fn new(
        session: String,
        task: Task,
        branch: String,
        base_commit: String,
        max_iterations: u32,
    ) -> LoopState {
        LoopState {
            version: STATE_VERSION,
            session,
            task,
            branch,
            base_commit,
            dry_run: false,
            phase: LoopPhase::Idle,
            iteration: 0,
            max_iterations,
            plan: None,
            worktree_diff: String::new(),
            builder_calls: 0,
            history: Vec::new(),
            gates: Vec::new(),
            signatures: Vec::new(),
            usage: Usage::default(),
            flaky: Vec::new(),
            tamper: Vec::new(),
            transient_retries: 0,
            transient_error: None,
            recoveries: Vec::new(),
            started_unix_ms: 0,
            outcome: None,
            escalation: None,
            reviewed: false,
            review_missing: Vec::new(),
            interrupted: None,
            paused: None,
            pauses: Default::default(),
            checkpoint: None,
            commit_style: CommitStyle::Plain,
            evidence: Default::default(),
            model_refusal: None,
            environment: Vec::new(),
            instructions: Vec::new(),
            snapshot: None,
            costs: Default::default(),
            verified: None,
            sub_plan: None,
        }
    }

    /// Acts whose result reached the gates: the number people read as "iterations" everywhere
    /// (outcome, trailer, reports, metrics), on the scale of `--max-iterations`. Iteration 0 is
    /// the baseline observation before any act and is not counted; a run never reports more than
    /// its maximum.
    pub fn iterations_run(&self) -> u32 {
        let improve: BTreeSet<u32> = self
            .history
            .iter()
            .filter(|step| step.phase.is_check_after_act() && step.iteration > 0)
            .map(|step| step.iteration)
            .collect();
        u32::try_from(improve.len()).unwrap_or(u32::MAX)
    }

    /// The baseline observation (the gates before any act), when the run took one.
    pub fn baseline(&self) -> Option<&StepRecord> {
        self.history
            .iter()
            .find(|step| step.phase == StepPhase::Baseline)
    }

    /// Whether no act has happened yet (the next observation is the baseline).
    pub fn before_any_act(&self) -> bool {
        !self.history.iter().any(|step| step.phase.is_act())
    }

    /// The signature ids of the latest observation.
    pub fn signature_ids(&self) -> BTreeSet<String> {
        self.signatures.iter().map(|s| s.id.clone()).collect()
    }

    /// The signature ids of the observation before the latest one, if there was one.
    pub fn previous_signature_ids(&self) -> Option<BTreeSet<String>> {
        self.history
            .iter()
            .rev()
            .filter(|step| step.phase.is_check_after_act())
            .nth(1)
            .map(|step| step.signatures.iter().map(|s| s.id.clone()).collect())
    }

    /// Every resolution id tried for a signature so far.
    pub fn tried(&self, signature: &str) -> BTreeSet<String> {
        self.history
            .iter()
            .flat_map(|step| step.resolutions.iter())
            .filter(|r| r.signature == signature)
            .map(|r| r.resolution.clone())
            .collect()
    }
}

/// What this run's gate runs cost, measured as they ran: the basis for the engine's choice
/// between the failing tests first and the pristine run alone.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateCosts {
    /// Wall time of the last run of every gate, in milliseconds.
    #[serde(default)]
    pub full_ms: Option<u64>,
    /// Wall time of the last run of only the failing tests, in milliseconds.
    #[serde(default)]
    pub failing_ms: Option<u64>,
}

/// A tree that passed (or was judged on) the pristine gates, for the commit of this iteration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifiedTree {
    /// The tree object the pristine checkout was made from.
    pub tree: String,
    /// The iteration whose act produced it: a later act makes it stale.
    pub iteration: u32,
}
