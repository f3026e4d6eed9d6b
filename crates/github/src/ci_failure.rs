//! A failed workflow run, digested for the task: which jobs failed, the failures their logs show
//! (parsed into signatures by the hindsight extractors, never pasted raw), and the failing tests
//! of any JUnit XML found in the run's artifacts. Reads through [`GitHubApi`]; writes only to a
//! private temporary directory (to hand artifact files to the JUnit reader).

use std::path::{Path, PathBuf};

use super::api::{GitHubApi, GitHubError, RepoId};
use meta_agent_hindsight::signature::{self, ExtractOptions};
use meta_agent_report::{self as report, Limits};

/// The tail of each job log that is read.
pub const LOG_TAIL_BYTES: usize = 512 * 1024;
/// The largest artifact unpacked.
pub const ARTIFACT_CAP: usize = 64 << 20;
/// Failures listed per job, and failing tests listed in all.
const MAX_ITEMS: usize = 15;

/// The digest as Markdown for the task's requirements.
pub async fn digest<A: GitHubApi>(api: &A, repo: &RepoId, run: u64) -> Result<String, GitHubError> {
    let jobs = api.jobs(repo, run).await?;
    let failed: Vec<_> = jobs
        .iter()
        .filter(|job| job.conclusion.as_deref() == Some("failure"))
        .collect();
    let mut out = String::from("## What failed\n");
    if failed.is_empty() {
        out.push_str("No job reports a failure (the run may have been cancelled or timed out).\n");
    }
    for job in failed {
        out.push_str(&format!("\n### Job `{}`\n", job.name));
        let log = api.job_log(repo, job.id, LOG_TAIL_BYTES).await?;
        out.push_str(&log_failures(&log, &job.name));
    }
    let tests = junit_failures(api, repo, run).await?;
    if !tests.is_empty() {
        out.push_str("\n### Failing tests (JUnit artifacts)\n");
        for test in tests.iter().take(MAX_ITEMS) {
            out.push_str(&format!("- {test}\n"));
        }
    }
    Ok(out)
}

/// The failures a job log shows, one line each.
pub fn log_failures(log: &str, job: &str) -> String {
    let found = signature::extract_log(log, Path::new(job), &ExtractOptions::default());
    if found.is_empty() {
        return "No failure the extractors recognise; the log's last lines:\n".to_owned()
            + &fenced_tail(log, 20);
    }
    found
        .iter()
        .take(MAX_ITEMS)
        .map(|failure| {
            let place = failure.location.as_deref().unwrap_or("");
            let excerpt: String = failure
                .excerpt
                .lines()
                .take(3)
                .collect::<Vec<_>>()
                .join(" / ");
            format!(
                "- {:?} {place}: {}\n",
                failure.kind,
                report::trim_to(&excerpt, 300)
            )
        })
        .collect()
}

fn fenced_tail(log: &str, lines: usize) -> String {
    let all: Vec<&str> = log.lines().collect();
    let tail = all[all.len().saturating_sub(lines)..].join("\n");
    format!("```text\n{}\n```\n", tail.replace("```", "'''"))
}

/// Failing tests from the run's artifacts that hold JUnit XML.
async fn junit_failures<A: GitHubApi>(
    api: &A,
    repo: &RepoId,
    run: u64,
) -> Result<Vec<String>, GitHubError> {
    let mut failing = Vec::new();
    for artifact in api.artifacts(repo, run).await? {
        if artifact.expired {
            continue;
        }
        let files = api.artifact_files(repo, artifact.id, ARTIFACT_CAP).await?;
        failing.extend(junit_in(&files));
    }
    Ok(failing)
}

fn junit_in(files: &[(String, Vec<u8>)]) -> Vec<String> {
    let Ok(dir) = tempfile::tempdir() else {
        return Vec::new();
    };
    let paths: Vec<PathBuf> = files
        .iter()
        .filter(|(name, bytes)| name.ends_with(".xml") && looks_like_junit(bytes))
        .enumerate()
        .filter_map(|(index, (_, bytes))| {
            let path = dir.path().join(format!("{index}.xml"));
            std::fs::write(&path, bytes).ok().map(|()| path)
        })
        .collect();
    if paths.is_empty() {
        return Vec::new();
    }
    match report::junit::parse_junit_files(&paths, &Limits::default()) {
        Ok(summary) => summary
            .failures
            .iter()
            .map(|failure| failure.id().to_string())
            .collect(),
        Err(err) => {
            tracing::warn!("a JUnit artifact could not be read: {err}");
            Vec::new()
        }
    }
}

fn looks_like_junit(bytes: &[u8]) -> bool {
    let head = String::from_utf8_lossy(&bytes[..bytes.len().min(2048)]);
    head.contains("<testsuite")
}
