//! A verified commit held before its push (`before_push`): written as a git bundle into the
//! run's files, which the Action uploads as the run's artifact, and read back from there when a
//! maintainer says go on. Nothing leaves the runner in between but the artifact.
//!
//! The bundle is untrusted on its way back (an artifact is a file like any other): only the one
//! commit it names for the session's branch is taken from it, and only when that is exactly the
//! commit the bot's own status comment recorded; the push that follows is checked like every
//! push ([`super::push::verify`]).

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::push::{self, PushError, Remote};
use meta_agent_exec::CommandRunner;

/// The bundle's name in the run's files (and so in the artifact).
pub const BUNDLE_FILE: &str = "verified.bundle";

/// Where a held commit is, as the status comment records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldCommit {
    /// The verified commit: the session branch's tip when it was held.
    pub commit: String,
    /// The commit the bundle starts after (the session's base): needed to read it back.
    pub base: String,
    /// The workflow run whose artifact holds the bundle.
    pub run_id: u64,
    /// That artifact's name.
    pub artifact: String,
}

impl HeldCommit {
    /// The name the Action gives the run's artifact (`action.yml`: `meta-agent-RUN-ATTEMPT`).
    pub fn artifact_name(run_id: u64, attempt: u32) -> String {
        format!("meta-agent-{run_id}-{attempt}")
    }
}

/// Writes the commits of `branch` after `base` into the bundle `file`.
pub async fn bundle<R: CommandRunner>(
    runner: &R,
    remote: &Remote,
    branch: &str,
    base: &str,
    file: &Path,
) -> Result<(), PushError> {
    check_branch(branch)?;
    check_sha(base, branch)?;
    let args = vec![
        "bundle".into(),
        "create".into(),
        "--quiet".into(),
        file.to_string_lossy().into_owned(),
        format!("refs/heads/{branch}"),
        format!("^{base}"),
    ];
    push::run_output(runner, remote, "bundle", branch, args)
        .await
        .map(drop)
}

/// Reads the bundle `file` into the repository's objects (git checks that it is whole and that
/// what it builds on is there) and returns the commit it names for `branch`; no ref is written.
pub async fn unbundle<R: CommandRunner>(
    runner: &R,
    remote: &Remote,
    file: &Path,
    branch: &str,
) -> Result<String, PushError> {
    check_branch(branch)?;
    let wanted = format!("refs/heads/{branch}");
    let args = vec![
        "bundle".into(),
        "unbundle".into(),
        file.to_string_lossy().into_owned(),
        wanted.clone(),
    ];
    let listed = push::run_output(runner, remote, "unbundle", branch, args).await?;
    named_in(&listed, &wanted).ok_or_else(|| PushError::Failed {
        operation: "unbundle",
        branch: branch.to_owned(),
        detail: format!("the bundle holds no `{wanted}`"),
    })
}

/// Fetches the commit `sha` from the remote into the local ref `into` (a held commit's base,
/// which a shallow checkout may lack).
pub async fn fetch_commit<R: CommandRunner>(
    runner: &R,
    remote: &Remote,
    sha: &str,
    into: &str,
) -> Result<(), PushError> {
    push::check_url(&remote.url)?;
    check_sha(sha, into)?;
    push::fetch_ref(runner, remote, sha, into, sha).await
}

/// Makes a shallow checkout whole along the remote's `branch` (fetched into the local ref
/// `into`): a held commit's base is then there, and reachable from the branch the check before
/// the push trusts, even when that branch moved on since the commit was held.
pub async fn unshallow<R: CommandRunner>(
    runner: &R,
    remote: &Remote,
    branch: &str,
    into: &str,
) -> Result<(), PushError> {
    push::check_url(&remote.url)?;
    check_branch(branch)?;
    let args = vec![
        "fetch".into(),
        "--unshallow".into(),
        "--no-tags".into(),
        "--no-recurse-submodules".into(),
        remote.url.clone(),
        format!("+refs/heads/{branch}:{into}"),
    ];
    push::run_output(runner, remote, "unshallow", branch, args)
        .await
        .map(drop)
}

/// The commit `git bundle unbundle` lists for `wanted` (`<sha> <ref>` lines).
fn named_in(listed: &str, wanted: &str) -> Option<String> {
    listed.lines().find_map(|line| {
        let (sha, name) = line.trim().split_once(' ')?;
        (name == wanted && is_sha(sha)).then(|| sha.to_owned())
    })
}

fn is_sha(text: &str) -> bool {
    text.len() == 40 && text.bytes().all(|b| b.is_ascii_hexdigit())
}

fn check_sha(sha: &str, branch: &str) -> Result<(), PushError> {
    if is_sha(sha) {
        return Ok(());
    }
    Err(PushError::Refused {
        branch: branch.to_owned(),
        reason: format!("`{sha}` is not a full commit id"),
    })
}

fn check_branch(branch: &str) -> Result<(), PushError> {
    meta_agent_git::validate_branch_name(branch).map_err(|err| PushError::Refused {
        branch: branch.to_owned(),
        reason: err.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_wanted_ref_with_a_full_id_is_read_from_the_listing() {
        let sha = "0123456789abcdef0123456789abcdef01234567";
        let listed = format!(
            "{sha}x refs/heads/meta-agent/a\n1111111111111111111111111111111111111111 refs/heads/other\n{sha} refs/heads/meta-agent/a\n"
        );
        assert_eq!(
            named_in(&listed, "refs/heads/meta-agent/a").as_deref(),
            Some(sha)
        );
        assert_eq!(named_in(&listed, "refs/heads/meta-agent/b"), None);
        assert_eq!(
            named_in("abc refs/heads/meta-agent/a", "refs/heads/meta-agent/a"),
            None
        );
    }

    #[test]
    fn the_artifact_is_named_as_the_action_names_it() {
        assert_eq!(HeldCommit::artifact_name(4242, 1), "meta-agent-4242-1");
    }
}
