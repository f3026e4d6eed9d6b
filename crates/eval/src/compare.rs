//! `eval compare A B`: two summaries side by side, and whether B is better or worse than A.
//!
//! Pass rates are compared on the tasks both ran, pair by pair (the same task is one pair: its
//! pass rate in A against its pass rate in B): the exact sign test over the tasks that differ
//! (McNemar's exact test when each task ran once) gives the p-value, and a paired bootstrap over
//! the tasks the 95 % interval of the difference. Without common tasks it falls back to the
//! two-proportion z-test on all runs. B is a regression when its pass rate is lower by more than
//! the threshold and the difference is significant at `alpha`. Pure.

use std::collections::BTreeMap;

pub use meta_agent_protocol::eval::{Comparison, ComparisonVerdict, Test};

use super::stats::{self, Spread};
use super::summary::{Summary, per_task};

/// When B counts as a regression.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gate {
    /// Significance level.
    pub alpha: f64,
    /// The pass-rate drop (0-1) tolerated even when significant.
    pub threshold: f64,
}

/// Compares B against A.
pub fn compare(a: &Summary, b: &Summary, gate: Gate) -> Comparison {
    let (ta, tb) = (per_task(&a.results), per_task(&b.results));
    let rate = |passed: u64, graded: u64| passed as f64 / graded as f64;
    let pairs: Vec<(f64, f64)> = ta
        .iter()
        .filter_map(|(task, ca)| {
            let cb = tb.get(task)?;
            (ca.graded() > 0 && cb.graded() > 0)
                .then(|| (rate(ca.passed, ca.graded()), rate(cb.passed, cb.graded())))
        })
        .collect();
    let (difference, ci, test, p_value, better, worse) = if pairs.is_empty() {
        let (ga, gb) = ((a.passed + a.failed) as u64, (b.passed + b.failed) as u64);
        let p = stats::two_proportion_p(a.passed as u64, ga, b.passed as u64, gb);
        let d = b.pass_rate - a.pass_rate;
        let se = (a.pass_rate * (1.0 - a.pass_rate) / ga.max(1) as f64
            + b.pass_rate * (1.0 - b.pass_rate) / gb.max(1) as f64)
            .sqrt();
        (
            d,
            [d - stats::Z95 * se, d + stats::Z95 * se],
            Test::TwoProportion,
            p,
            0,
            0,
        )
    } else {
        let diffs: Vec<f64> = pairs.iter().map(|(ra, rb)| rb - ra).collect();
        let better = diffs.iter().filter(|d| **d > 0.0).count() as u64;
        let worse = diffs.iter().filter(|d| **d < 0.0).count() as u64;
        let d = diffs.iter().sum::<f64>() / diffs.len() as f64;
        let (lo, hi) = stats::bootstrap_mean_ci(&diffs, 10_000, 0x5eed);
        (
            d,
            [lo, hi],
            Test::PairedSign,
            stats::sign_test(better, worse),
            better,
            worse,
        )
    };
    let significant = p_value < gate.alpha;
    let verdict = if significant && difference < -gate.threshold {
        ComparisonVerdict::Worse
    } else if significant && difference > gate.threshold {
        ComparisonVerdict::Better
    } else {
        ComparisonVerdict::Same
    };
    Comparison {
        a: a.suite.clone(),
        b: b.suite.clone(),
        pass_rate_a: a.pass_rate,
        pass_rate_b: b.pass_rate,
        difference,
        difference_ci95: ci,
        test,
        p_value,
        paired_tasks: pairs.len(),
        tasks_better: better,
        tasks_worse: worse,
        verdict,
        regression: verdict == ComparisonVerdict::Worse,
        measures: measures(a, b),
    }
}

/// A measure of a summary, by name.
type Measure = (&'static str, fn(&Summary) -> Spread);

fn measures(a: &Summary, b: &Summary) -> BTreeMap<String, [f64; 2]> {
    let pick: [Measure; 5] = [
        ("llm_calls", |s| s.llm_calls),
        ("prompt_tokens", |s| s.prompt_tokens),
        ("completion_tokens", |s| s.completion_tokens),
        ("cost_usd", |s| s.cost_usd),
        ("wall_s", |s| s.wall_s),
    ];
    pick.iter()
        .map(|(name, get)| ((*name).to_owned(), [get(a).mean, get(b).mean]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grade::{Grade, GraderDetail};
    use crate::results::RunResult;
    use crate::summary::summarize;

    fn run(task: &str, grade: Grade) -> RunResult {
        RunResult {
            grader_details: vec![GraderDetail::leaf("gates", grade, "")],
            grade,
            outcome: "committed".into(),
            ..RunResult::error(task, 1, String::new(), 1.0)
        }
    }

    fn suite(passes: &[bool]) -> Summary {
        let results = passes
            .iter()
            .enumerate()
            .map(|(i, pass)| {
                run(
                    &format!("t{i}"),
                    if *pass { Grade::Pass } else { Grade::Fail },
                )
            })
            .collect();
        summarize("s", results)
    }

    const GATE: Gate = Gate {
        alpha: 0.05,
        threshold: 0.0,
    };

    #[test]
    fn six_of_six_lost_tasks_is_a_significant_regression() {
        let a = suite(&[true; 8]);
        let b = suite(&[false, false, false, false, false, false, true, true]);
        let c = compare(&a, &b, GATE);
        assert_eq!(c.test, Test::PairedSign);
        assert_eq!((c.tasks_better, c.tasks_worse), (0, 6));
        assert!((c.p_value - 0.03125).abs() < 1e-9);
        assert!(c.regression);
        assert!((c.difference + 0.75).abs() < 1e-9);
    }

    #[test]
    fn two_lost_tasks_are_not_significant() {
        let a = suite(&[true; 8]);
        let b = suite(&[false, false, true, true, true, true, true, true]);
        let c = compare(&a, &b, GATE);
        assert_eq!(c.verdict, ComparisonVerdict::Same);
        assert!(!c.regression);
        assert!((c.p_value - 0.5).abs() < 1e-9);
    }

    #[test]
    fn an_improvement_is_better_not_a_regression() {
        let a = suite(&[false; 8]);
        let b = suite(&[true; 8]);
        assert_eq!(compare(&a, &b, GATE).verdict, ComparisonVerdict::Better);
    }
}
