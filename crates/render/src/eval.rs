//! What an evaluation writes for people: the report (`report.md`: statistics, a per-task table,
//! the failures' escalation summaries), the JUnit cases of `junit.xml` (one per task × run) and
//! `eval compare`'s comparison. Pure functions of the eval records; the session writes the files.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use meta_agent_protocol::eval::{
    Comparison, ComparisonVerdict, Grade, GraderDetail, RunResult, Summary, Test, diff_name,
    per_task,
};
use meta_agent_protocol::reports::{Case, CaseVerdict, Suite};
use meta_agent_protocol::text::trim_to;

use super::fit;
use super::words::plural;

/// `report.md`.
pub fn report_markdown(summary: &Summary) -> String {
    let mut out = format!("# Evaluation: {}\n\n", summary.suite);
    out.push_str(&format!(
        "**Pass rate {:.1} %** (95 % CI {:.1}–{:.1} %): {} passed, {} failed, {} error{}, {} pending; {} run{} of {} task{}.\n\n",
        summary.pass_rate * 100.0,
        summary.pass_rate_ci95[0] * 100.0,
        summary.pass_rate_ci95[1] * 100.0,
        summary.passed,
        summary.failed,
        summary.errors,
        plural(summary.errors as u64),
        summary.pending,
        summary.runs,
        plural(summary.runs as u64),
        summary.tasks,
        plural(summary.tasks as u64)
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
    trim_to(&text.replace('\n', " "), 300)
}

/// The cases of `junit.xml` (serialized by the report crate's writer, under the report name
/// [`junit_report_name`]): one case per task × run, grouped by task; a pending run is skipped
/// with the reason.
pub fn junit_suites(summary: &Summary) -> Vec<Suite> {
    let mut suites: BTreeMap<&str, Vec<Case>> = BTreeMap::new();
    for result in &summary.results {
        suites.entry(&result.task).or_default().push(case(result));
    }
    suites
        .into_iter()
        .map(|(name, cases)| Suite {
            name: name.to_owned(),
            cases,
        })
        .collect()
}

/// The name of an evaluation's JUnit report.
pub fn junit_report_name(summary: &Summary) -> String {
    format!("meta-agent eval {}", summary.suite)
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
        Grade::Pass => CaseVerdict::Passed,
        Grade::Fail => CaseVerdict::Failed {
            message: format!("graded fail (run ended {})", result.outcome),
            detail,
        },
        Grade::Error => CaseVerdict::Errored {
            message: "could not be judged".into(),
            detail,
        },
        Grade::Pending => CaseVerdict::Skipped {
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

/// The comparison as a person reads it.
pub fn comparison(c: &Comparison) -> String {
    let test = match c.test {
        Test::PairedSign => format!(
            "exact sign test over {} paired tasks ({} better, {} worse)",
            c.paired_tasks, c.tasks_better, c.tasks_worse
        ),
        Test::TwoProportion => "two-proportion z-test (no tasks in common)".to_owned(),
    };
    let verdict = match c.verdict {
        ComparisonVerdict::Better => "B is significantly BETTER than A",
        ComparisonVerdict::Worse => "B is significantly WORSE than A (regression)",
        ComparisonVerdict::Same => "no significant difference",
    };
    let mut out = format!(
        "pass rate: A {:.1} % → B {:.1} % (B − A {:+.1} points, 95 % CI {:+.1} to {:+.1}); p = {:.4}, {test}\n{verdict}\n\n| measure | A mean | B mean |\n|---|---:|---:|\n",
        c.pass_rate_a * 100.0,
        c.pass_rate_b * 100.0,
        c.difference * 100.0,
        c.difference_ci95[0] * 100.0,
        c.difference_ci95[1] * 100.0,
        c.p_value,
    );
    for (name, [a, b]) in &c.measures {
        out.push_str(&format!("| {name} | {a:.3} | {b:.3} |\n"));
    }
    out
}

/// The review queue: a Markdown checklist per run awaiting a human grade, with its diff's file
/// and the command that records the grade.
pub fn review_queue(summary: &Summary) -> String {
    let mut out = String::from("# Review queue\n\n");
    let mut any = false;
    for result in &summary.results {
        let mut items = Vec::new();
        for detail in &result.grader_details {
            pending_humans(detail, &mut items);
        }
        if items.is_empty() {
            continue;
        }
        any = true;
        let _ = write!(
            out,
            "## {} run {} ({})\n\nDiff: `diffs/{}`\n\n",
            result.task,
            result.run,
            result.outcome,
            diff_name(&result.task, result.run)
        );
        for item in items {
            out.push_str(&format!("- [ ] {item}\n"));
        }
        out.push_str(&format!(
            "\nRecord: `meta-agent eval grade DIR --task {} --run {} --pass` (or `--fail`)\n\n",
            result.task, result.run
        ));
    }
    if !any {
        out.push_str("Nothing awaits review.\n");
    }
    out
}

fn pending_humans(detail: &GraderDetail, items: &mut Vec<String>) {
    if detail.kind == "human" && detail.grade == Grade::Pending {
        let list = detail.detail.trim_start_matches("awaiting review: ");
        items.extend(list.split("; ").map(str::to_owned));
    }
    for child in &detail.children {
        pending_humans(child, items);
    }
}

/// The first line of the review comment of suite `suite`: the hidden marker by which the bot
/// finds its comment again.
pub fn review_marker(suite: &str) -> String {
    format!("<!-- meta-agent:eval-review suite={suite} -->")
}

/// The review queue as a GitHub comment: the marker, then the queue with what it is for, passed
/// through `outbound` (the caller's redaction and neutralisation) and cut to GitHub's limit
/// with a pointer to the whole queue (the run's files at `run_url`, else the output directory).
pub fn review_comment(
    suite: &str,
    queue: &str,
    run_url: Option<&str>,
    outbound: impl Fn(&str) -> String,
) -> String {
    let marker = review_marker(suite);
    let visible = outbound(&format!(
        "**meta-agent eval**: suite `{suite}`. Grades stay `pending` until recorded with \
         `meta-agent eval grade`.\n\n{queue}"
    ));
    let whole = match run_url {
        Some(url) => {
            format!("the whole queue is `review.md` in [the run's files]({url}#artifacts)")
        }
        None => "the whole queue is `review.md` in the evaluation's output directory".to_owned(),
    };
    let room = fit::MAX_BODY_CHARS.saturating_sub(marker.chars().count() + 1);
    let fitted = fit::fit(&visible, room, fit::Measure::Chars, &whole);
    format!("{marker}\n{}", fitted.text)
}

#[cfg(test)]
mod tests {
    use meta_agent_protocol::eval::{GraderDetail, Spread};

    use super::*;

    fn spread(mean: f64) -> Spread {
        Spread { mean, median: mean }
    }

    fn run(task: &str, run: u32, grade: Grade, note: Option<&str>) -> RunResult {
        RunResult {
            task: task.into(),
            run,
            outcome: if grade == Grade::Pass {
                "committed"
            } else {
                "escalated"
            }
            .into(),
            grade,
            grader_details: vec![GraderDetail::leaf(
                "gates",
                grade,
                "tests: 3 of 4 passed\nmore",
            )],
            llm_calls: 2,
            prompt_tokens: 1200,
            completion_tokens: 90,
            cost_usd: 0.0125,
            wall_s: 12.5,
            overhead_s: 1.0,
            note: note.map(Into::into),
        }
    }

    fn summary() -> Summary {
        Summary {
            suite: "smoke".into(),
            tasks: 2,
            runs: 4,
            passed: 1,
            failed: 1,
            errors: 1,
            pending: 1,
            pass_rate: 0.5,
            pass_rate_ci95: [0.09, 0.91],
            pass_at_k: [("1".to_owned(), 0.5)].into_iter().collect(),
            llm_calls: spread(2.0),
            prompt_tokens: spread(1200.0),
            completion_tokens: spread(90.0),
            cost_usd: spread(0.0125),
            wall_s: spread(12.5),
            results: vec![
                run("py-clamp", 1, Grade::Pass, None),
                run(
                    "py-clamp",
                    2,
                    Grade::Fail,
                    Some("escalated: the tests still fail"),
                ),
                run(
                    "rs-parse",
                    1,
                    Grade::Error,
                    Some("setup failed: cargo fetch"),
                ),
                run("rs-parse", 2, Grade::Pending, None),
            ],
        }
    }

    fn comparison(test: Test, verdict: ComparisonVerdict) -> Comparison {
        Comparison {
            a: "a".into(),
            b: "b".into(),
            pass_rate_a: 1.0,
            pass_rate_b: 0.25,
            difference: -0.75,
            difference_ci95: [-1.0, -0.5],
            test,
            p_value: 0.03125,
            paired_tasks: 8,
            tasks_better: 0,
            tasks_worse: 6,
            verdict,
            regression: verdict == ComparisonVerdict::Worse,
            measures: [("llm_calls".to_owned(), [2.0, 3.5])].into_iter().collect(),
        }
    }

    #[test]
    fn the_report_and_the_comparisons_as_people_read_them() {
        insta::assert_snapshot!(
            "eval_texts",
            [
                report_markdown(&summary()),
                super::comparison(&comparison(Test::PairedSign, ComparisonVerdict::Worse)),
                super::comparison(&comparison(Test::TwoProportion, ComparisonVerdict::Same)),
                super::comparison(&comparison(Test::PairedSign, ComparisonVerdict::Better)),
            ]
            .join("---\n")
        );
    }

    #[test]
    fn the_review_queue_and_its_comment_as_people_read_them() {
        let mut awaiting = summary();
        let human = GraderDetail::leaf(
            "human",
            Grade::Pending,
            "awaiting review: the error message names the file; no new dependency",
        );
        awaiting.results[3].grader_details.push(human);
        let queue = review_queue(&awaiting);
        insta::assert_snapshot!(
            "eval_review",
            [
                queue.clone(),
                review_queue(&Summary {
                    results: Vec::new(),
                    ..summary()
                }),
                review_comment(
                    "smoke",
                    &queue,
                    Some("https://github.com/octo/calc/actions/runs/42"),
                    |text| text.replace("octo", "[REDACTED]"),
                ),
            ]
            .join("---\n")
        );
    }

    #[test]
    fn each_run_is_one_junit_case_under_its_task() {
        let suites = junit_suites(&summary());
        let names: Vec<(&str, Vec<&str>)> = suites
            .iter()
            .map(|s| {
                (
                    s.name.as_str(),
                    s.cases.iter().map(|c| c.name.as_str()).collect(),
                )
            })
            .collect();
        assert_eq!(
            names,
            [
                ("py-clamp", vec!["run 1", "run 2"]),
                ("rs-parse", vec!["run 1", "run 2"])
            ]
        );
        let verdicts: Vec<&CaseVerdict> = suites
            .iter()
            .flat_map(|s| s.cases.iter().map(|c| &c.verdict))
            .collect();
        assert_eq!(verdicts[0], &CaseVerdict::Passed);
        assert!(
            matches!(verdicts[1], CaseVerdict::Failed { message, detail }
                if message == "graded fail (run ended escalated)"
                    && detail.ends_with("escalated: the tests still fail"))
        );
        assert!(matches!(verdicts[2], CaseVerdict::Errored { .. }));
        assert!(
            matches!(verdicts[3], CaseVerdict::Skipped { message } if message.contains("eval grade"))
        );
        assert_eq!(junit_report_name(&summary()), "meta-agent eval smoke");
    }
}
