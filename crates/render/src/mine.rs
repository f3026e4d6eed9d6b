//! What `meta-agent eval mine` tells a person: a progress line on stderr per step of each
//! candidate (which of how many, what it is doing, how long it has taken), one line per commit on
//! stdout, and the closing lines (what was written, what it cost, how to go on after an
//! interruption). Pure text from plain values.

use std::time::Duration;

/// What mining is doing with one candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MineStep {
    /// Cloning the parent and writing the commit's test files into it.
    Preparing,
    /// The test gates on the parent with the commit's test files (the one full-suite run).
    TestsBefore { test_files: usize },
    /// The tests that failed before, alone, on the commit.
    FailingOnCommit { tests: usize },
    /// The test gates on the commit (when the failing tests cannot be selected alone).
    TestsOnCommit,
}

/// Where mining stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MineProgress<'a> {
    /// 1-based.
    pub index: usize,
    pub candidates: usize,
    pub short: &'a str,
    pub title: &'a str,
    pub step: MineStep,
    /// Time on this candidate so far.
    pub on_candidate: Duration,
    /// Time since mining started.
    pub overall: Duration,
}

/// Characters of a commit title shown in a progress line, at most.
const TITLE_CHARS: usize = 60;

/// `candidate 3/12 e32443bb7d "Fix titleize()…": running the tests on the parent with the
/// commit's 1 test file (4.2 s; 31 s in all)`.
pub fn progress(p: &MineProgress<'_>) -> String {
    let doing = match p.step {
        MineStep::Preparing => "cloning the parent and adding the commit's test files".to_owned(),
        MineStep::TestsBefore { test_files } => {
            format!("running the tests on the parent with the commit's {test_files} test file(s)")
        }
        MineStep::FailingOnCommit { tests } => {
            format!("re-running the {tests} failing test(s) alone on the commit")
        }
        MineStep::TestsOnCommit => "running the tests on the commit".to_owned(),
    };
    format!(
        "candidate {}/{} {} \"{}\": {doing} ({} s; {} s in all)",
        p.index,
        p.candidates,
        p.short,
        shortened(p.title),
        seconds(p.on_candidate),
        seconds(p.overall)
    )
}

fn shortened(title: &str) -> String {
    if title.chars().count() <= TITLE_CHARS {
        return title.to_owned();
    }
    let cut: String = title.chars().take(TITLE_CHARS - 1).collect();
    format!("{cut}…")
}

fn seconds(duration: Duration) -> String {
    format!("{:.1}", duration.as_secs_f64())
}

/// One commit's line on stdout: `e32443bb7d task   Fix titleize()`, or `... skip   title: why`.
pub fn commit_line(short: &str, title: &str, skipped: Option<&str>) -> String {
    match skipped {
        None => format!("{short} task   {title}"),
        Some(why) => format!("{short} skip   {title}: {why}"),
    }
}

/// One issue a mined commit refers to: `e32443bb7d issue  #33: its title` (or why not found).
pub fn issue_line(short: &str, reference: &str, what: &str) -> String {
    format!("{short} issue  {reference}: {what}")
}

/// What mining cost, counted as it ran.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MineCost {
    /// Candidates tried this time (not those a resumed run found finished).
    pub tried: usize,
    /// Runs of the whole test suite.
    pub suite_runs: usize,
    /// Runs of only the tests that failed.
    pub failing_runs: usize,
    pub elapsed: Duration,
}

/// The closing lines: where the suite is, what it cost, and how an interrupted run goes on.
pub fn closing(tasks: usize, suite: &str, cost: &MineCost, interrupted: Option<&str>) -> String {
    let mut out = format!("{tasks} tasks written to {suite}\n");
    let per = if cost.tried == 0 {
        String::new()
    } else {
        format!(
            "; {:.1} s and {:.2} full-suite runs per candidate",
            cost.elapsed.as_secs_f64() / cost.tried as f64,
            cost.suite_runs as f64 / cost.tried as f64
        )
    };
    out.push_str(&format!(
        "cost: {} candidate(s) tried in {} s: {} full-suite run(s), {} re-run(s) of failing tests{per}\n",
        cost.tried,
        seconds(cost.elapsed),
        cost.suite_runs,
        cost.failing_runs
    ));
    if let Some(why) = interrupted {
        out.push_str(&format!(
            "interrupted ({why}): the finished candidates are kept; `meta-agent eval mine --resume` with the same --out goes on\n"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_lines_say_which_candidate_what_and_how_long() {
        let at = |step| {
            progress(&MineProgress {
                index: 3,
                candidates: 12,
                short: "e32443bb7d",
                title: "Fix titleize() capitalizing only words starting A-Z, and a title long enough to be cut",
                step,
                on_candidate: Duration::from_millis(4_200),
                overall: Duration::from_millis(31_050),
            })
        };
        let lines = [
            at(MineStep::Preparing),
            at(MineStep::TestsBefore { test_files: 1 }),
            at(MineStep::FailingOnCommit { tests: 2 }),
            at(MineStep::TestsOnCommit),
        ];
        insta::assert_snapshot!(lines.join("\n"));
    }

    #[test]
    fn the_closing_lines_give_the_cost_and_how_to_go_on() {
        let cost = MineCost {
            tried: 9,
            suite_runs: 9,
            failing_runs: 5,
            elapsed: Duration::from_millis(14_500),
        };
        let done = closing(5, "mined/suite.yml", &cost, None);
        let stopped = closing(
            2,
            "mined/suite.yml",
            &cost,
            Some("received SIGINT (Ctrl-C)"),
        );
        let lines = [
            commit_line("e32443bb7d", "Fix titleize()", None),
            commit_line(
                "88eefaacf7",
                "Fix typing errors",
                Some("the new tests already pass on the parent"),
            ),
            issue_line("e32443bb7d", "#33", "lookup skipped (no --issues-from)"),
            done,
            stopped,
        ];
        insta::assert_snapshot!(lines.join("\n"));
    }
}
