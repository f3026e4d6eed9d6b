//! A failed workflow run, digested for the task: which jobs failed, the failures their logs show
//! (parsed into signatures by the hindsight extractors, never pasted raw), and the failing tests
//! of any JUnit XML found in the run's artifacts; render writes the digest
//! ([`meta_agent_render::task::run_digest`]). Reads through [`GitHubApi`]; writes only to a
//! private temporary directory (to hand artifact files to the JUnit reader).

use std::path::{Path, PathBuf};

use super::api::{GitHubApi, GitHubError, RepoId};
use meta_agent_hindsight::signature::{self, ExtractOptions};
use meta_agent_render::task::{self, JobDigest, LogShows, RunDigest};
use meta_agent_report::{self as report, Limits};

/// The tail of each job log that is read.
pub const LOG_TAIL_BYTES: usize = 512 * 1024;
/// The largest artifact unpacked.
pub const ARTIFACT_CAP: usize = 64 << 20;
/// The lines of a log shown when the extractors recognise no failure in it.
const TAIL_LINES: usize = 20;

/// The digest as Markdown for the task's requirements (render writes it).
pub async fn digest<A: GitHubApi>(api: &A, repo: &RepoId, run: u64) -> Result<String, GitHubError> {
    let jobs = api.jobs(repo, run).await?;
    let mut failed = Vec::new();
    for job in jobs
        .iter()
        .filter(|job| job.conclusion.as_deref() == Some("failure"))
    {
        let log = api.job_log(repo, job.id, LOG_TAIL_BYTES).await?;
        failed.push(JobDigest {
            name: job.name.clone(),
            log: log_shows(&log, &job.name),
        });
    }
    let tests = junit_failures(api, repo, run).await?;
    Ok(task::run_digest(&RunDigest {
        jobs: failed,
        tests,
    }))
}

/// What a job log shows: the failures the extractors recognise, or its last lines.
pub fn log_shows(log: &str, job: &str) -> LogShows {
    let mut found = signature::extract_log(log, Path::new(job), &ExtractOptions::default());
    if found.is_empty() {
        let all: Vec<&str> = log.lines().collect();
        return LogShows::Tail(all[all.len().saturating_sub(TAIL_LINES)..].join("\n"));
    }
    found.truncate(task::DIGEST_ITEMS);
    LogShows::Failures(found)
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
