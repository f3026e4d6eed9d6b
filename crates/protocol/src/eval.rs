//! An evaluation's records ([`RunResult`] per run of a task, graded by [`GraderDetail`]s), what
//! they add up to ([`Summary`]) and two summaries compared ([`Comparison`]). The eval layer
//! produces them and keeps them in `results.jsonl` and `summary.json`; the renderers write the
//! report, the JUnit cases and the comparison people read.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How one run, or one grader of it, was judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grade {
    Pass,
    Fail,
    /// It could not be judged: the source could not be prepared, its setup failed, a grader
    /// could not run. Not the bot's failure, and not counted in the pass rate.
    Error,
    /// Waiting for a person (`eval grade`).
    Pending,
}

impl Grade {
    pub fn as_str(self) -> &'static str {
        match self {
            Grade::Pass => "pass",
            Grade::Fail => "fail",
            Grade::Error => "error",
            Grade::Pending => "pending",
        }
    }
}

/// What one grader said.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GraderDetail {
    /// The grader's kind (`gates`, `hidden_tests`, `llm_judge`, ...).
    pub kind: String,
    pub grade: Grade,
    /// Why, in a line or a few (a judge's reasoning, the failing hidden tests).
    pub detail: String,
    /// A judge's score (0-10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    /// The weight inside a composite.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub weight: f64,
    /// For a composite: how its children combine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<CompositeMode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<GraderDetail>,
}

fn one() -> f64 {
    1.0
}

fn is_one(value: &f64) -> bool {
    *value == 1.0
}

impl GraderDetail {
    /// A leaf grader's verdict.
    pub fn leaf(kind: &str, grade: Grade, detail: impl Into<String>) -> GraderDetail {
        GraderDetail {
            kind: kind.to_owned(),
            grade,
            detail: detail.into(),
            score: None,
            weight: 1.0,
            mode: None,
            threshold: None,
            children: Vec::new(),
        }
    }
}

/// How a composite combines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CompositeMode {
    All,
    Any,
    Weighted,
}

/// Mean and median of a sample (both 0 for an empty one).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Spread {
    pub mean: f64,
    pub median: f64,
}

impl Spread {
    pub fn of(values: &[f64]) -> Spread {
        if values.is_empty() {
            return Spread {
                mean: 0.0,
                median: 0.0,
            };
        }
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let mid = sorted.len() / 2;
        let median = if sorted.len().is_multiple_of(2) {
            (sorted[mid - 1] + sorted[mid]) / 2.0
        } else {
            sorted[mid]
        };
        Spread { mean, median }
    }
}

/// One run of one task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub task: String,
    /// 1-based run number.
    pub run: u32,
    /// How the engine ended: `committed`, `escalated`, `nothing_to_do`, `failed`, or `error`
    /// when it could not start.
    pub outcome: String,
    pub grade: Grade,
    pub grader_details: Vec<GraderDetail>,
    pub llm_calls: u32,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cost_usd: f64,
    /// Wall time of the whole run: clone, setup, engine and grading.
    pub wall_s: f64,
    /// The part of `wall_s` spent outside the engine (clone, setup, grading, bookkeeping).
    #[serde(default)]
    pub overhead_s: f64,
    /// Why the run is an error, or the escalation's summary (first lines).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl RunResult {
    /// A run that could not be judged (its source or setup failed).
    pub fn error(task: &str, run: u32, why: String, wall_s: f64) -> RunResult {
        RunResult {
            task: task.to_owned(),
            run,
            outcome: "error".into(),
            grade: Grade::Error,
            grader_details: Vec::new(),
            llm_calls: 0,
            prompt_tokens: 0,
            completion_tokens: 0,
            cost_usd: 0.0,
            wall_s,
            overhead_s: wall_s,
            note: Some(why),
        }
    }

    /// The `(task, run)` key.
    pub fn key(&self) -> (String, u32) {
        (self.task.clone(), self.run)
    }
}

/// The summary of an evaluation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub suite: String,
    pub tasks: usize,
    pub runs: usize,
    pub passed: usize,
    pub failed: usize,
    pub errors: usize,
    pub pending: usize,
    pub pass_rate: f64,
    pub pass_rate_ci95: [f64; 2],
    /// pass@k for k from 1 to the fewest graded runs of any task, over the tasks with that many.
    pub pass_at_k: BTreeMap<String, f64>,
    pub llm_calls: Spread,
    pub prompt_tokens: Spread,
    pub completion_tokens: Spread,
    pub cost_usd: Spread,
    pub wall_s: Spread,
    pub results: Vec<RunResult>,
}

/// Counts of one task's runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TaskCounts {
    pub passed: u64,
    pub failed: u64,
    pub errors: u64,
    pub pending: u64,
}

impl TaskCounts {
    /// Runs that were graded pass or fail.
    pub fn graded(&self) -> u64 {
        self.passed + self.failed
    }
}

/// Each task's counts, by task id.
pub fn per_task(results: &[RunResult]) -> BTreeMap<String, TaskCounts> {
    let mut tasks: BTreeMap<String, TaskCounts> = BTreeMap::new();
    for result in results {
        let counts = tasks.entry(result.task.clone()).or_default();
        match result.grade {
            Grade::Pass => counts.passed += 1,
            Grade::Fail => counts.failed += 1,
            Grade::Error => counts.errors += 1,
            Grade::Pending => counts.pending += 1,
        }
    }
    tasks
}

/// What the comparison says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ComparisonVerdict {
    Better,
    Worse,
    /// No significant difference (or one within the threshold).
    Same,
}

/// How pass rates were tested.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Test {
    /// Exact sign test on paired tasks.
    PairedSign,
    /// Pooled two-proportion z-test (no tasks in common).
    TwoProportion,
}

/// The comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub a: String,
    pub b: String,
    pub pass_rate_a: f64,
    pub pass_rate_b: f64,
    /// B − A (on paired tasks when there are any).
    pub difference: f64,
    pub difference_ci95: [f64; 2],
    pub test: Test,
    pub p_value: f64,
    pub paired_tasks: usize,
    /// Paired tasks B did better / worse on.
    pub tasks_better: u64,
    pub tasks_worse: u64,
    pub verdict: ComparisonVerdict,
    pub regression: bool,
    /// Means of A and B: calls, tokens, cost, wall.
    pub measures: BTreeMap<String, [f64; 2]>,
}

/// The file name of a run's diff in an evaluation's `diffs/` directory.
pub fn diff_name(task: &str, run: u32) -> String {
    format!("{task}-run{run}.diff")
}
