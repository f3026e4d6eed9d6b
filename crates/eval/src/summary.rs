//! What an evaluation adds up to: the summary object (`summary.json`, and `--json`'s last line),
//! the Markdown report (`report.md`: statistics, a per-task table, the failures' escalation
//! summaries) and the JUnit XML (`junit.xml`: one case per task × run). Pure: the session writes
//! the files.
//!
//! The pass rate counts graded runs only: `passed / (passed + failed)`. Errors (a source or setup
//! that failed) and pending human grades are counted apart, never as failures.

use std::collections::BTreeMap;

use super::grade::Grade;
use super::results::RunResult;
use super::stats::{self, Spread};

pub use meta_agent_protocol::eval::{Summary, TaskCounts, per_task};

/// Adds up the results (sorted by task, then run).
pub fn summarize(suite: &str, mut results: Vec<RunResult>) -> Summary {
    results.sort_by(|a, b| a.task.cmp(&b.task).then(a.run.cmp(&b.run)));
    let tasks = per_task(&results);
    let count = |grade: Grade| results.iter().filter(|r| r.grade == grade).count();
    let (passed, failed) = (count(Grade::Pass), count(Grade::Fail));
    let graded = (passed + failed) as u64;
    let pass_rate = if graded == 0 {
        0.0
    } else {
        passed as f64 / graded as f64
    };
    let (lo, hi) = stats::wilson(passed as u64, graded, stats::Z95);
    let spread =
        |value: fn(&RunResult) -> f64| Spread::of(&results.iter().map(value).collect::<Vec<f64>>());
    Summary {
        suite: suite.to_owned(),
        tasks: tasks.len(),
        runs: results.len(),
        passed,
        failed,
        errors: count(Grade::Error),
        pending: count(Grade::Pending),
        pass_rate,
        pass_rate_ci95: [lo, hi],
        pass_at_k: pass_at_k(&tasks),
        llm_calls: spread(|r| f64::from(r.llm_calls)),
        prompt_tokens: spread(|r| r.prompt_tokens as f64),
        completion_tokens: spread(|r| r.completion_tokens as f64),
        cost_usd: spread(|r| r.cost_usd),
        wall_s: spread(|r| r.wall_s),
        results,
    }
}

/// pass@k for every k up to the fewest graded runs of a task, averaged over tasks.
fn pass_at_k(tasks: &BTreeMap<String, TaskCounts>) -> BTreeMap<String, f64> {
    let graded: Vec<&TaskCounts> = tasks.values().filter(|c| c.graded() > 0).collect();
    let Some(max_k) = graded.iter().map(|c| c.graded()).min() else {
        return BTreeMap::new();
    };
    (1..=max_k)
        .filter_map(|k| {
            let values: Vec<f64> = graded
                .iter()
                .filter_map(|c| stats::pass_at_k(c.graded(), c.passed, k))
                .collect();
            (!values.is_empty()).then(|| {
                (
                    k.to_string(),
                    values.iter().sum::<f64>() / values.len() as f64,
                )
            })
        })
        .collect()
}

/// The summary as the one JSON object (`--json`'s last line).
pub fn to_json(summary: &Summary) -> serde_json::Value {
    let mut value = serde_json::to_value(summary).unwrap_or(serde_json::Value::Null);
    if let Some(results) = value.get_mut("results").and_then(|r| r.as_array_mut()) {
        for result in results {
            if let Some(object) = result.as_object_mut() {
                object.retain(|key, _| RESULT_KEYS.contains(&key.as_str()));
            }
        }
    }
    value
}

/// The keys of a result in the summary object.
const RESULT_KEYS: [&str; 9] = [
    "task",
    "run",
    "outcome",
    "grade",
    "grader_details",
    "llm_calls",
    "prompt_tokens",
    "cost_usd",
    "wall_s",
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grade::GraderDetail;

    pub(crate) fn result(task: &str, run: u32, grade: Grade) -> RunResult {
        RunResult {
            task: task.into(),
            run,
            outcome: "committed".into(),
            grade,
            grader_details: vec![GraderDetail::leaf("gates", grade, "all gates passed")],
            llm_calls: run * 2,
            prompt_tokens: 1000,
            completion_tokens: 100,
            cost_usd: 0.01,
            wall_s: f64::from(run),
            overhead_s: 0.05,
            note: None,
        }
    }

    #[test]
    fn counts_rates_and_pass_at_k() {
        let results = vec![
            result("a", 1, Grade::Pass),
            result("a", 2, Grade::Fail),
            result("b", 1, Grade::Fail),
            result("b", 2, Grade::Fail),
            result("c", 1, Grade::Error),
            result("c", 2, Grade::Pending),
        ];
        let summary = summarize("s", results);
        assert_eq!(
            (
                summary.passed,
                summary.failed,
                summary.errors,
                summary.pending
            ),
            (1, 3, 1, 1)
        );
        assert_eq!(summary.tasks, 3);
        assert!((summary.pass_rate - 0.25).abs() < 1e-12);
        // pass@1 over a (1/2) and b (0/2); c has no graded run.
        assert!((summary.pass_at_k["1"] - 0.25).abs() < 1e-12);
        // pass@2: a 1, b 0.
        assert!((summary.pass_at_k["2"] - 0.5).abs() < 1e-12);
        assert_eq!(summary.llm_calls.median, 3.0);
    }
}
