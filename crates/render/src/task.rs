//! The tasks the GitHub step words itself: the title, the requirements and what accepts the work
//! on an issue, a pull request, a pull request's failing checks and a failed workflow run, the
//! guidance a review comment gives, and the digest of a failed run those tasks carry
//! ([`run_digest`]). People read them (the title names the run in the status comment, the report
//! and the pull request; the requirements are the escalation report's goal) and the model reads
//! them as its task. Pure text from plain values: the caller sanitizes the descriptions that came
//! from GitHub before they are passed in, and cuts the title to the task's length.

use meta_agent_protocol::signature::ExtractedSignature;
use meta_agent_protocol::text::trim_to;

/// An issue or pull request as GitHub had it: its number, title and description (sanitized).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thread<'a> {
    pub number: u64,
    pub title: &'a str,
    pub description: &'a str,
}

/// A failed workflow run to heal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FailedRun<'a> {
    pub id: u64,
    pub workflow: &'a str,
    /// The commit it failed on.
    pub head_sha: &'a str,
    /// The digest of its failed jobs (Markdown).
    pub digest: &'a str,
}

/// An issue's requirements: its title, then its description.
pub fn issue_requirements(issue: &Thread<'_>) -> String {
    format!("{}\n\n{}", issue.title, issue.description)
}

/// The title of work on a pull request.
pub fn pull_title(pull: &Thread<'_>) -> String {
    format!("Fix #{}: {}", pull.number, pull.title)
}

/// The requirements of work on a pull request: its head made to pass the gates.
pub fn pull_requirements(pull: &Thread<'_>) -> String {
    format!(
        "Make the repository's gates pass on pull request #{} ({}) without weakening any test, \
         keeping what it sets out to do.\n\nIts description:\n\n{}",
        pull.number, pull.title, pull.description
    )
}

/// The title of work on a failed run of `branch` (no pull request).
pub fn failed_run_title(run: &FailedRun<'_>, branch: &str) -> String {
    format!("Fix the failing `{}` workflow on {branch}", run.workflow)
}

/// The requirements of work on a failed run of `branch`: the title, the run and its digest.
pub fn failed_run_requirements(run: &FailedRun<'_>, branch: &str) -> String {
    format!(
        "{}\n\nThe workflow run {} failed at {}. Make the repository's gates pass again without \
         weakening any test.\n\n{}",
        failed_run_title(run, branch),
        run.id,
        run.head_sha,
        run.digest
    )
}

/// The title of work on a pull request's failing checks.
pub fn check_title(pull: &Thread<'_>, run: &FailedRun<'_>) -> String {
    format!(
        "Fix the failing `{}` checks of #{}: {}",
        run.workflow, pull.number, pull.title
    )
}

/// The requirements of work on the failing checks of a pull request whose head branch is
/// `head_ref`: the failed run, the pull request's description and the run's digest.
pub fn check_requirements(pull: &Thread<'_>, run: &FailedRun<'_>, head_ref: &str) -> String {
    format!(
        "The workflow run {} (`{}`) failed on pull request #{}'s head {} (branch `{head_ref}`). \
         Make the repository's gates pass on it without weakening any test, keeping what the \
         pull request sets out to do.\n\nIts description:\n\n{}\n\n{}",
        run.id, run.workflow, pull.number, run.head_sha, pull.description, run.digest
    )
}

/// What accepts the work of a task the GitHub step words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accepted {
    /// Work on a pull request: the repository's gates pass on its head.
    PullGates,
    /// Work on a pull request's failing checks.
    PullChecks,
    /// Work on a failed workflow run.
    FailedRun,
}

/// The acceptance criterion of a task.
pub fn acceptance(accepted: Accepted) -> String {
    match accepted {
        Accepted::PullGates => "the repository's gates pass on the pull request's head",
        Accepted::PullChecks => "the failing checks pass on the pull request's head",
        Accepted::FailedRun => "the failing checks pass",
    }
    .to_owned()
}

/// The guidance of a review comment left at `location` (`path:line`): the maintainer's words
/// after the command (sanitized by the caller), or the default ask.
pub fn review_guidance(location: &str, guidance: Option<&str>) -> String {
    format!(
        "Review comment on {location}: {}",
        guidance.unwrap_or("address this review comment")
    )
}

/// Failures listed per job, and failing tests listed in all, in a run's digest.
pub const DIGEST_ITEMS: usize = 15;

/// A failed workflow run as its digest tells it: the failed jobs and the failing tests its JUnit
/// artifacts name.
#[derive(Debug, Clone, PartialEq)]
pub struct RunDigest {
    pub jobs: Vec<JobDigest>,
    pub tests: Vec<String>,
}

/// A failed job of a run, and what its log shows.
#[derive(Debug, Clone, PartialEq)]
pub struct JobDigest {
    pub name: String,
    pub log: LogShows,
}

/// What a failed job's log shows.
#[derive(Debug, Clone, PartialEq)]
pub enum LogShows {
    /// The failures the extractors recognised in it.
    Failures(Vec<ExtractedSignature>),
    /// None the extractors recognise: the log's last lines.
    Tail(String),
}

/// The digest of a failed run as Markdown, for the task's requirements (the model reads it, and
/// people in the report and the status comment).
pub fn run_digest(digest: &RunDigest) -> String {
    let mut out = String::from("## What failed\n");
    if digest.jobs.is_empty() {
        out.push_str("No job reports a failure (the run may have been cancelled or timed out).\n");
    }
    for job in &digest.jobs {
        out.push_str(&format!("\n### Job `{}`\n", job.name));
        out.push_str(&log_shows(&job.log));
    }
    if !digest.tests.is_empty() {
        out.push_str("\n### Failing tests (JUnit artifacts)\n");
        for test in digest.tests.iter().take(DIGEST_ITEMS) {
            out.push_str(&format!("- {test}\n"));
        }
    }
    out
}

/// What a job's log shows, one line per failure.
fn log_shows(log: &LogShows) -> String {
    let failures = match log {
        LogShows::Tail(tail) => {
            return format!(
                "No failure the extractors recognise; the log's last lines:\n```text\n{}\n```\n",
                tail.replace("```", "'''")
            );
        }
        LogShows::Failures(failures) => failures,
    };
    failures
        .iter()
        .take(DIGEST_ITEMS)
        .map(|failure| {
            let place = failure.location.as_deref().unwrap_or("");
            let excerpt: String = failure
                .excerpt
                .lines()
                .take(3)
                .collect::<Vec<_>>()
                .join(" / ");
            format!("- {:?} {place}: {}\n", failure.kind, trim_to(&excerpt, 300))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use meta_agent_protocol::kinds::SignatureKind;

    #[test]
    fn task_texts_as_people_and_the_model_read_them() {
        let pull = Thread {
            number: 8,
            title: "Mean rounds down",
            description: "`mean([1, 2])` gives 1.",
        };
        let run = FailedRun {
            id: 4242,
            workflow: "CI",
            head_sha: "b0f680389bdf6917491796565941a55c933eb11e",
            digest: "### job `test`\n\n- tests/test_calc.py::test_mean: assert 1 == 1.5",
        };
        let texts = [
            issue_requirements(&pull),
            pull_title(&pull),
            pull_requirements(&pull),
            failed_run_title(&run, "main"),
            failed_run_requirements(&run, "main"),
            check_title(&pull, &run),
            check_requirements(&pull, &run, "fix-mean"),
            acceptance(Accepted::PullGates),
            acceptance(Accepted::PullChecks),
            acceptance(Accepted::FailedRun),
            review_guidance("src/calc.py:12", Some("round half up")),
            review_guidance("src/calc.py:12", None),
        ];
        insta::assert_snapshot!("task_texts", texts.join("\n---\n"));
    }

    fn failure(kind: SignatureKind, location: Option<&str>, excerpt: &str) -> ExtractedSignature {
        ExtractedSignature {
            id: "0123456789abcdef".into(),
            kind,
            template: excerpt.into(),
            family: String::new(),
            file: "tests".into(),
            location: location.map(str::to_owned),
            test: None,
            frames: Vec::new(),
            excerpt: excerpt.into(),
            detail: String::new(),
        }
    }

    #[test]
    fn a_failed_runs_digest_as_the_model_and_people_read_it() {
        let long = "x".repeat(320);
        let found = RunDigest {
            jobs: vec![
                JobDigest {
                    name: "tests".into(),
                    log: LogShows::Failures(vec![
                        failure(
                            SignatureKind::TestFailure,
                            Some("tests/test_calc.py:9"),
                            "assert 1 == 1.5\n where 1 = mean([1, 2])\n more\n cut",
                        ),
                        failure(SignatureKind::Compile, None, &long),
                    ]),
                },
                JobDigest {
                    name: "lint".into(),
                    log: LogShows::Tail("ruff check .\n```\nFound 1 error.".into()),
                },
            ],
            tests: vec!["tests/test_calc.py::test_mean".into()],
        };
        let nothing = RunDigest {
            jobs: Vec::new(),
            tests: Vec::new(),
        };
        let texts = [run_digest(&found), run_digest(&nothing)];
        insta::assert_snapshot!("run_digest", texts.join("---\n"));
    }
}
