//! The tasks the GitHub step words itself: the title and the requirements of work on an issue, a
//! pull request, a pull request's failing checks and a failed workflow run. People read them (the
//! title names the run in the status comment, the report and the pull request; the requirements
//! are the escalation report's goal) and the model reads them as its task. Pure text from plain
//! values: the caller sanitizes the descriptions that came from GitHub before they are passed in,
//! and cuts the title to the task's length.

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

#[cfg(test)]
mod tests {
    use super::*;

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
        ];
        insta::assert_snapshot!("task_texts", texts.join("\n---\n"));
    }
}
