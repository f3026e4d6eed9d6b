//! The records a run keeps of itself: what each step did, what each gate said, which failures
//! were seen and which resolutions tried, what was spent. The engine writes them into its
//! persisted state; the renderers, the GitHub session and the hindsight store read them.
//!
//! Every state is an enum, serialized in snake_case; nothing here is compared as a string.

use serde::{Deserialize, Serialize};

use super::kinds::GateKind;
use super::kinds::SignatureKind;

/// Whether a gate passed, failed, or was not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateStatus {
    #[serde(alias = "pass")]
    Passed,
    #[serde(alias = "fail")]
    Failed,
    /// An optional gate whose required program is missing.
    #[serde(alias = "skip")]
    Skipped,
}

impl GateStatus {
    /// Whether the gate ran and passed.
    pub fn passed(self) -> bool {
        self == GateStatus::Passed
    }

    /// The short word of trailers and tables: `pass`, `fail`, `skip`.
    pub fn short(self) -> &'static str {
        match self {
            GateStatus::Passed => "pass",
            GateStatus::Failed => "fail",
            GateStatus::Skipped => "skip",
        }
    }
}

/// A gate result in the compact form kept in history.
///
/// Read through [`GateRecord::lift_legacy_notes`]: sessions written before gate notes were
/// typed hold them as text among the reasons.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct GateRecord {
    pub name: String,
    pub kind: GateKind,
    pub result: GateStatus,
    pub duration_ms: u64,
    /// Why the gate failed or was skipped, most important first.
    pub reasons: Vec<String>,
    /// What the loop or the runner adds about how the gate ran (for people, not the model).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<GateNote>,
    pub tests_passed: Option<u64>,
    pub tests_total: Option<u64>,
    /// Tests the runner skipped (counted in `tests_total`, not in `tests_passed`); older
    /// sessions do not hold it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tests_skipped: Option<u64>,
    /// The failing tests, typed for the gate's runner (older sessions hold strings: they load
    /// untyped).
    pub failing_tests: Vec<crate::test_id::TestId>,
    pub coverage: Option<f64>,
    pub coverage_threshold: Option<f64>,
    pub findings: Option<u64>,
    /// Why the gate could not judge the code at all (a configuration or machine problem).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<GateProblem>,
    /// What the gate ran: the whole suite, or only the tests that failed before.
    #[serde(default, skip_serializing_if = "GateScope::is_full")]
    pub scope: GateScope,
}

impl Serialize for GateRecord {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        GateRecord::serialize(self, serializer)
    }
}

impl<'de> Deserialize<'de> for GateRecord {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut record = GateRecord::deserialize(deserializer)?;
        record.lift_legacy_notes();
        Ok(record)
    }
}

impl GateRecord {
    /// Moves the notes an older version wrote as text among the reasons into [`Self::notes`],
    /// in their order, so a resumed session reads as a new one does.
    pub fn lift_legacy_notes(&mut self) {
        let mut reasons = Vec::with_capacity(self.reasons.len());
        for reason in std::mem::take(&mut self.reasons) {
            match GateNote::from_legacy_reason(&reason) {
                Some(note) => self.notes.push(note),
                None => reasons.push(reason),
            }
        }
        self.reasons = reasons;
    }
}

/// Something the loop or the gate runner says about how a gate ran, beside its reasons: for
/// people (render writes each one's sentence), never a reason the gate failed and never sent to
/// the model as the gate's output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateNote {
    /// Fast feedback: only the tests that failed before were re-run, not the whole suite.
    FastFeedback,
    /// The failing tests passed on an immediate re-run with no change: counted as passed.
    Flaky,
    /// The gate should have run offline, but this machine cannot cut the network (no
    /// unprivileged user namespaces): code under test could reach it.
    NetworkNotCut,
}

impl GateNote {
    /// The note an older version wrote among a gate's reasons as this text, if it is one (only
    /// for reading sessions written then; nothing new is written as text).
    pub fn from_legacy_reason(reason: &str) -> Option<GateNote> {
        if reason.starts_with("fast feedback:") {
            Some(GateNote::FastFeedback)
        } else if reason.starts_with("flaky:") {
            Some(GateNote::Flaky)
        } else if reason.starts_with("note: this gate ran with the network ON") {
            Some(GateNote::NetworkNotCut)
        } else {
            None
        }
    }
}

/// What one gate run covered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum GateScope {
    /// The gate's command as configured: the whole suite.
    #[default]
    Full,
    /// Fast feedback: only the `ran` tests that failed before, of the `of` the suite ran then.
    Rerun { ran: u64, of: u64 },
    /// The whole suite without the test files the change wrote: the existing tests' verdict
    /// (`engine/observe/existing_tests.rs`), none of the change's new tests among its counts.
    ExistingTests,
}

impl GateScope {
    pub fn is_full(&self) -> bool {
        *self == GateScope::Full
    }

    /// "re-ran 2 failing of 5" for a partial run; nothing for a full one.
    pub fn describe(&self) -> Option<String> {
        match self {
            GateScope::Full => None,
            GateScope::Rerun { ran, of } => Some(format!("re-ran {ran} failing of {of}")),
            GateScope::ExistingTests => Some("the existing tests alone".to_owned()),
        }
    }
}

/// A gate that could not judge the code: a problem of the configuration or the machine, which no
/// change to the code fixes. Every variant but [`GateProblem::TimedOut`] is a gate that could not
/// start ([`GateProblem::cannot_start`]), decided from facts by `gates::start::classify`; the
/// `error` of each is the tool's own line, as it printed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum GateProblem {
    /// The command did not start (its program is missing, the sandbox refused it, ...).
    CouldNotStart { reason: String },
    /// The shell could not find (127) or execute (126) the command.
    BadCommand {
        code: i32,
        #[serde(default)]
        error: String,
    },
    /// Before any test ran, the command was denied `path`, which lies outside what the sandbox
    /// lets commands read (a virtualenv under `/tmp` or the real home).
    PathHidden {
        path: String,
        error: String,
        /// The directory `sandbox.read` could grant for it, when granting it is allowed.
        #[serde(default)]
        grant: Option<String>,
    },
    /// The test runner the gate runs is not installed where the gate runs it (`No module named
    /// pytest`, an npx package missing, an unknown cargo subcommand).
    RunnerMissing { runner: String, error: String },
    /// The gate ran past its timeout.
    TimedOut,
}

impl GateProblem {
    /// Whether the gate could not even start (it judged nothing, and no change to the code
    /// could make it start): the run ends as an environment problem.
    pub fn cannot_start(&self) -> bool {
        match self {
            GateProblem::CouldNotStart { .. }
            | GateProblem::BadCommand { .. }
            | GateProblem::PathHidden { .. }
            | GateProblem::RunnerMissing { .. } => true,
            GateProblem::TimedOut => false,
        }
    }
}

/// A gate that could not start, and why: what an environment escalation names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StartFailure {
    pub gate: String,
    pub problem: GateProblem,
}

/// The gates of an observation that could not start.
pub fn start_failures(gates: &[GateRecord]) -> Vec<StartFailure> {
    gates
        .iter()
        .filter_map(|gate| {
            let problem = gate.problem.as_ref().filter(|p| p.cannot_start())?;
            Some(StartFailure {
                gate: gate.name.clone(),
                problem: problem.clone(),
            })
        })
        .collect()
}

impl GateRecord {
    /// A gate's verdict with its reasons, and nothing measured (no tests, coverage or findings).
    pub fn judged(name: &str, kind: GateKind, result: GateStatus, reasons: Vec<String>) -> Self {
        GateRecord {
            name: name.to_owned(),
            kind,
            result,
            duration_ms: 0,
            reasons,
            notes: Vec::new(),
            tests_passed: None,
            tests_total: None,
            tests_skipped: None,
            failing_tests: Vec::new(),
            coverage: None,
            coverage_threshold: None,
            findings: None,
            problem: None,
            scope: GateScope::Full,
        }
    }

    pub fn passed(&self) -> bool {
        self.result == GateStatus::Passed
    }

    pub fn failed(&self) -> bool {
        self.result == GateStatus::Failed
    }
}

/// A gate's numbers as the live displays show them: tests, findings, coverage, and what it ran
/// (serialized flat, each only when measured).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GateCounts {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tests_passed: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tests_total: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub findings: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage_threshold: Option<f64>,
    #[serde(default, skip_serializing_if = "GateScope::is_full")]
    pub scope: GateScope,
}

/// One gate's verdict in a finished observation (the `gates` of a `phase_finished` event).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateOutcome {
    pub gate: String,
    pub result: GateStatus,
    #[serde(flatten)]
    pub counts: GateCounts,
    /// The gate could not start, or timed out: it judged nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<GateProblem>,
}

impl GateRecord {
    /// The gate's numbers.
    pub fn counts(&self) -> GateCounts {
        GateCounts {
            tests_passed: self.tests_passed,
            tests_total: self.tests_total,
            findings: self.findings,
            coverage: self.coverage,
            coverage_threshold: self.coverage_threshold,
            scope: self.scope,
        }
    }

    /// The gate's verdict, as a finished observation reports it.
    pub fn outcome(&self) -> GateOutcome {
        GateOutcome {
            gate: self.name.clone(),
            result: self.result,
            counts: self.counts(),
            problem: self.problem.clone(),
        }
    }
}

/// Whether every gate that ran passed, and at least one ran: commit readiness.
pub fn gates_passed(gates: &[GateRecord]) -> bool {
    gates.iter().all(|g| !g.failed()) && gates.iter().any(GateRecord::passed)
}

/// What a step of the loop was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepPhase {
    /// The first act: the change built from the requirements.
    Build,
    /// An act that fixes failures (hindsight or the agent).
    Improve,
    /// An observation: the gates ran.
    Test,
    /// The observation before any act: the gates on the code as the run found it.
    Baseline,
    /// The gates once more on a pristine checkout of exactly the tree to commit
    /// (`crates/engine/src/observe/pristine.rs`).
    Verify,
}

impl StepPhase {
    pub fn as_str(self) -> &'static str {
        match self {
            StepPhase::Build => "build",
            StepPhase::Improve => "improve",
            StepPhase::Test => "test",
            StepPhase::Baseline => "baseline",
            StepPhase::Verify => "verify",
        }
    }

    /// An observation after an act: the gates in the worktree, or on the pristine checkout.
    pub fn is_check_after_act(self) -> bool {
        match self {
            StepPhase::Test | StepPhase::Verify => true,
            StepPhase::Build | StepPhase::Improve | StepPhase::Baseline => false,
        }
    }

    /// An acting step (build or improve), as opposed to an observation.
    pub fn is_act(self) -> bool {
        match self {
            StepPhase::Build | StepPhase::Improve => true,
            StepPhase::Test | StepPhase::Baseline | StepPhase::Verify => false,
        }
    }
}

/// What happened in one phase of one iteration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    pub phase: StepPhase,
    pub iteration: u32,
    pub started_unix_ms: u64,
    pub duration_ms: u64,
    /// One line on how the step ended (the builder's summary, or what the gates said).
    pub outcome: String,
    /// What was done, one line each (edits, commands, resolutions).
    pub actions: Vec<String>,
    /// The change this step made (Acting steps).
    pub diff: String,
    pub files_changed: Vec<String>,
    pub gates: Vec<GateRecord>,
    pub signatures: Vec<SignatureRecord>,
    pub resolutions: Vec<ResolutionTried>,
    /// How an act ended: `outcome` is the builder's own summary only when it finished.
    #[serde(default, skip_serializing_if = "ActEnd::is_finished")]
    pub ended: ActEnd,
    /// The definitions the act's change is in, per file (Acting steps).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<ChangedFile>,
}

/// How an act ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActEnd {
    /// The builder finished (the model called `finish`): its summary describes the change.
    #[default]
    Finished,
    /// The builder stopped first (the LLM budget ran out, the step cap, a refusal): the outcome
    /// says why, not what the change is.
    Stopped,
}

impl ActEnd {
    pub fn is_finished(&self) -> bool {
        *self == ActEnd::Finished
    }
}

/// What an act changed in one file: the definitions (functions, methods, classes) holding the
/// lines it added or changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangedFile {
    pub path: String,
    /// `Owner.name` for methods; empty when no grammar reads the file or the change is outside
    /// any definition.
    pub definitions: Vec<String>,
}

/// How the repository writes commit subjects, read from its recent history.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum CommitStyle {
    /// Plain imperative sentences: `Use true division in mean`.
    #[default]
    Plain,
    /// Conventional Commits: `fix(scope): use true division in mean`.
    Conventional {
        /// The scopes the history uses, most frequent first (empty when it uses none).
        scopes: Vec<String>,
        /// Its descriptions start with a lower-case letter.
        lowercase: bool,
    },
}

impl StepRecord {
    /// An observation: the gates ran and showed `gates` and `signatures` (no action, no diff).
    pub fn observation(
        phase: StepPhase,
        iteration: u32,
        started_unix_ms: u64,
        duration_ms: u64,
        outcome: &str,
        gates: &[GateRecord],
        signatures: &[SignatureRecord],
    ) -> Self {
        StepRecord {
            phase,
            iteration,
            started_unix_ms,
            duration_ms,
            outcome: outcome.to_owned(),
            actions: Vec::new(),
            diff: String::new(),
            files_changed: Vec::new(),
            gates: gates.to_vec(),
            signatures: signatures.to_vec(),
            resolutions: Vec::new(),
            ended: ActEnd::Finished,
            changed: Vec::new(),
        }
    }
}

/// An error signature as kept in history.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SignatureRecord {
    pub id: String,
    pub kind: SignatureKind,
    pub template: String,
    /// The family key (near-identical failures elsewhere share it); empty in records written
    /// before families existed.
    #[serde(default)]
    pub family: String,
    /// The gate that produced it.
    pub gate: String,
    pub excerpt: String,
    pub location: Option<String>,
    /// The failing test, as its runner named it.
    pub test: Option<crate::test_id::TestName>,
    pub frames: Vec<String>,
    /// A failing test's assertion and its diff, compact (empty when the failure shows none, and
    /// in records written before it was kept).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

/// A hindsight resolution applied in an iteration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResolutionTried {
    pub signature: String,
    pub resolution: String,
    pub description: String,
    /// Whether the signature was gone at the next observation (unknown until then).
    pub cured: Option<bool>,
}

/// LLM and time spent so far.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub llm_calls: u32,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
    /// Wall-clock time of the run so far (across resumes).
    pub elapsed_ms: u64,
}

impl Usage {
    /// Adds the model use of one step (calls, tokens, cost; not the wall clock).
    pub fn add(&mut self, step: &Usage) {
        self.llm_calls += step.llm_calls;
        self.input_tokens += step.input_tokens;
        self.output_tokens += step.output_tokens;
        self.cost_usd += step.cost_usd;
    }
}

/// The step the loop will take in Acting.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Plan {
    /// Produce the change from the requirements.
    Build,
    /// Apply known resolutions from hindsight (no LLM).
    Hindsight,
    /// Ask the agent for a fix with the full failure context.
    AgentFix { different_approach: bool },
}

impl Plan {
    /// The step phase an act with this plan records.
    pub fn phase(&self) -> StepPhase {
        match self {
            Plan::Build => StepPhase::Build,
            Plan::Hindsight | Plan::AgentFix { .. } => StepPhase::Improve,
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunOutcome {
    Committed,
    Escalated,
    Failed,
    NothingToDo,
    /// Paused by a signal: the work in progress kept, `resume` (`/agent fix`) continues.
    Interrupted,
}

impl RunOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            RunOutcome::Committed => "committed",
            RunOutcome::Escalated => "escalated",
            RunOutcome::Failed => "failed",
            RunOutcome::NothingToDo => "nothing_to_do",
            RunOutcome::Interrupted => "interrupted",
        }
    }
}

/// The user's uncommitted work a local run started from: a commit of its own on top of the
/// user's `HEAD` (labelled as theirs), the run's base. The bot's changes are everything after it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserSnapshot {
    /// The snapshot commit (the run's base commit).
    pub commit: String,
    /// The user's `HEAD` it was taken on (its parent).
    pub head: String,
    /// The paths that differed from `HEAD` (tracked changes, staged or not, and untracked files
    /// that are not ignored), sorted.
    pub paths: Vec<String>,
}
