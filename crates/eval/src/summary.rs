//! What an evaluation adds up to: the summary object (`summary.json`, and `--json`'s last line),
//! the Markdown report (`report.md`: statistics, a per-task table, the failures' escalation
//! summaries) and the JUnit XML (`junit.xml`: one case per task × run). Pure: the session writes
//! the files.
//!
//! The pass rate counts graded runs only: `passed / (passed + failed)`. Errors (a source or setup
//! that failed) and pending human grades are counted apart, never as failures.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::grade::Grade;
use super::results::RunResult;
use super::stats::{self, Spread};
use meta_agent_report::junit_writer::{Case, JunitWriteError, Suite, Verdict};

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

/// `report.md`.
pub fn to_markdown(summary: &Summary) -> String {
    let mut out = format!("# Evaluation: {}\n\n", summary.suite);
    out.push_str(&format!(
        "**Pass rate {:.1} %** (95 % CI {:.1}–{:.1} %): {} passed, {} failed, {} errors, {} pending; {} runs of {} tasks.\n\n",
        summary.pass_rate * 100.0,
        summary.pass_rate_ci95[0] * 100.0,
        summary.pass_rate_ci95[1] * 100.0,
        summary.passed,
        summary.failed,
        summary.errors,
        summary.pending,
        summary.runs,
        summary.tasks
    ));
    if !summary.pass_at_k.is_empty() {
        let ks: Vec<String> = summary
            .pass_at_k
            .iter()
            .map(|(k, v)| format!("pass@{k} {:.3}", v))
            .collect();
        out.push_str(&format!("{}\n\n", ks.join(" · ")));
    }
    out.push_str("| measure | mean | median |\n|---|---:|---:|\n");
    for (name, spread, digits) in [
        ("LLM calls", summary.llm_calls, 1),
        ("prompt tokens", summary.prompt_tokens, 0),
        ("completion tokens", summary.completion_tokens, 0),
        ("cost (USD)", summary.cost_usd, 4),
        ("wall (s)", summary.wall_s, 2),
    ] {
        out.push_str(&format!(
            "| {name} | {:.digits$} | {:.digits$} |\n",
            spread.mean, spread.median
        ));
    }
    out.push_str(
        "\n## Tasks\n\n| task | passed | failed | errors | pending |\n|---|---:|---:|---:|---:|\n",
    );
    for (task, counts) in per_task(&summary.results) {
        out.push_str(&format!(
            "| {task} | {} | {} | {} | {} |\n",
            counts.passed, counts.failed, counts.errors, counts.pending
        ));
    }
    out.push_str(&failures(summary));
    out
}

fn failures(summary: &Summary) -> String {
    let bad: Vec<&RunResult> = summary
        .results
        .iter()
        .filter(|r| matches!(r.grade, Grade::Fail | Grade::Error))
        .collect();
    if bad.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n## Failures and errors\n");
    for result in bad {
        out.push_str(&format!(
            "\n### {} run {}: {} ({})\n\n",
            result.task,
            result.run,
            result.grade.as_str(),
            result.outcome
        ));
        for detail in &result.grader_details {
            out.push_str(&format!(
                "- {}: {} — {}\n",
                detail.kind,
                detail.grade.as_str(),
                one_line(&detail.detail)
            ));
        }
        if let Some(note) = &result.note {
            out.push_str(&format!("\n```text\n{}\n```\n", note.trim_end()));
        }
    }
    out
}

fn one_line(text: &str) -> String {
    meta_agent_report::trim_to(&text.replace('\n', " "), 300)
}

/// `junit.xml`: one case per task × run, grouped by task; a pending run is skipped with the
/// reason.
pub fn to_junit(summary: &Summary) -> Result<String, JunitWriteError> {
    let mut suites: BTreeMap<&str, Vec<Case>> = BTreeMap::new();
    for result in &summary.results {
        suites.entry(&result.task).or_default().push(case(result));
    }
    let suites: Vec<Suite> = suites
        .into_iter()
        .map(|(name, cases)| Suite {
            name: name.to_owned(),
            cases,
        })
        .collect();
    meta_agent_report::junit_writer::to_xml(&format!("meta-agent eval {}", summary.suite), &suites)
}

fn case(result: &RunResult) -> Case {
    let detail = result
        .grader_details
        .iter()
        .map(|d| format!("{}: {} — {}", d.kind, d.grade.as_str(), d.detail))
        .chain(result.note.iter().cloned())
        .collect::<Vec<String>>()
        .join("\n");
    let verdict = match result.grade {
        Grade::Pass => Verdict::Passed,
        Grade::Fail => Verdict::Failed {
            message: format!("graded fail (run ended {})", result.outcome),
            detail,
        },
        Grade::Error => Verdict::Errored {
            message: "could not be judged".into(),
            detail,
        },
        Grade::Pending => Verdict::Skipped {
            message: "pending a human grade (meta-agent eval grade)".into(),
        },
    };
    Case {
        name: format!("run {}", result.run),
        classname: Some(format!("eval.{}", result.task)),
        duration: Some(Duration::from_secs_f64(result.wall_s.max(0.0))),
        verdict,
        properties: vec![
            ("outcome".into(), result.outcome.clone()),
            ("llm_calls".into(), result.llm_calls.to_string()),
            ("cost_usd".into(), format!("{:.4}", result.cost_usd)),
        ],
    }
}

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
