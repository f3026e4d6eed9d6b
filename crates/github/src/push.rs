//! The bot's push and fetch: the git CLI run through the one child-process module, with the
//! token held in memory and handed to git only as an `http.extraHeader` through
//! `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n` (never in `.git/config`, never on a
//! command line, never in the URL). Repository hooks, fsmonitor, credential helpers, system and
//! global configuration are all switched off; only the http(s) transports are allowed; the push
//! is never forced and names exactly one branch, checked first ([`check`], pure): the bot's, or
//! the pull request's own branch a plan allows ([`check_pull_head`]), which the push can only
//! fast-forward.
//!
//! A push happens only through [`push_verified`], which takes a
//! [`super::provenance::VerifiedPush`]: [`verify`] makes one after reading from the remote the tip
//! of the branch the trigger trusts and of the branch the push extends, walking the commits the
//! push would bring beyond both, and letting [`super::provenance::judge_push`] decide. It pushes
//! the very commit it verified (`<sha>:refs/heads/<branch>`), not whatever a branch points at by
//! then.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use base64::Engine as _;

use super::provenance::{self, Onto, PushCheck, PushRefusal, VerifiedPush};
use meta_agent_exec::sandbox::{Isolation, WritePolicy};
use meta_agent_exec::{CommandRunner, CommandSpec, Program};
use meta_agent_git::Repository;
use meta_agent_redact::Redactor;

/// One push or fetch of the bot's branch.
#[derive(Clone)]
pub struct Remote {
    /// The repository's http(s) URL, without credentials.
    pub url: String,
    pub token: String,
    /// The working repository.
    pub workdir: PathBuf,
    /// The `git` resolved at start-up, before any untrusted code ran; never looked up on `PATH`
    /// again (a gate could have planted one first on it).
    pub git: PathBuf,
    /// The parent's `PATH` and `HOME`, so git can be found.
    pub path_env: String,
    pub timeout: Duration,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote")
            .field("url", &self.url)
            .field("token", &"[hidden]")
            .finish_non_exhaustive()
    }
}

/// What protects branches from the bot.
#[derive(Debug, Clone, Default)]
pub struct BranchRules {
    /// The bot's branch prefix (`meta-agent/`): it pushes nothing else but `pull_head`.
    pub prefix: String,
    /// The default branch and any other protected branch names.
    pub protected: Vec<String>,
    /// The pull request's own branch the plan lets the bot fast-forward with its verified fix
    /// ([`super::provenance::PushKind::HeadBranch`]), if any.
    pub pull_head: Option<String>,
}

/// Why a push or fetch was refused or failed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PushError {
    #[error("refusing to push `{branch}`: {reason}")]
    Refused { branch: String, reason: String },
    #[error("refusing the remote URL {url}: {reason}")]
    BadRemote { url: String, reason: String },
    #[error("git {operation} of `{branch}` failed: {detail}")]
    Failed {
        operation: &'static str,
        branch: String,
        detail: String,
    },
    #[error("refusing to push `{branch}`: {refusal}")]
    Untrusted {
        branch: String,
        refusal: PushRefusal,
    },
    #[error("refusing to push `{branch}`: reading what it would carry failed: {detail}")]
    Unreadable { branch: String, detail: String },
}

/// Checks that the bot may push `branch` to `url`.
pub fn check(branch: &str, url: &str, rules: &BranchRules) -> Result<(), PushError> {
    let refuse = |reason: String| PushError::Refused {
        branch: branch.to_owned(),
        reason,
    };
    meta_agent_git::validate_branch_name(branch).map_err(|err| refuse(err.to_string()))?;
    if rules.prefix.is_empty() || !branch.starts_with(&rules.prefix) {
        return Err(refuse(format!(
            "the bot pushes only its own branches (`{}…`)",
            rules.prefix
        )));
    }
    if is_protected(branch, rules) {
        return Err(refuse("it is a protected or default branch".into()));
    }
    check_url(url)
}

/// Checks that the bot may push `branch`, a pull request's own branch, to `url`: it is the one
/// the rules name, a valid name, never `main`, `master` or a protected branch.
pub fn check_pull_head(branch: &str, url: &str, rules: &BranchRules) -> Result<(), PushError> {
    let refuse = |reason: String| PushError::Refused {
        branch: branch.to_owned(),
        reason,
    };
    meta_agent_git::validate_branch_name(branch).map_err(|err| refuse(err.to_string()))?;
    if rules.pull_head.as_deref() != Some(branch) {
        return Err(refuse(
            "it is not the pull request's branch the plan allows a push onto".into(),
        ));
    }
    if is_protected(branch, rules) {
        return Err(refuse("it is a protected or default branch".into()));
    }
    check_url(url)
}

/// `branch` is `main`, `master` or one the rules protect.
fn is_protected(branch: &str, rules: &BranchRules) -> bool {
    ["main", "master"].contains(&branch) || rules.protected.iter().any(|name| name == branch)
}

pub(super) fn check_url(url: &str) -> Result<(), PushError> {
    let bad = |reason: &str| PushError::BadRemote {
        url: url.to_owned(),
        reason: reason.to_owned(),
    };
    let Some(rest) = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
    else {
        return Err(bad(
            "only http(s) remotes are used (no ext::, file:// or ssh)",
        ));
    };
    if url.contains("::") {
        return Err(bad("remote-helper syntax (`::`) is never used"));
    }
    let authority = rest.split('/').next().unwrap_or("");
    if authority.contains('@') {
        return Err(bad("credentials never go in the URL"));
    }
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad("the URL has whitespace or control characters"));
    }
    Ok(())
}

/// The configuration git gets through the environment.
fn git_config(token: &str) -> Vec<(&'static str, String)> {
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{token}"));
    vec![
        ("http.extraHeader", format!("AUTHORIZATION: basic {basic}")),
        ("core.hooksPath", "/dev/null".into()),
        ("core.fsmonitor", "false".into()),
        ("credential.helper", String::new()),
        ("protocol.allow", "never".into()),
        ("protocol.https.allow", "always".into()),
        ("protocol.http.allow", "always".into()),
        ("push.recurseSubmodules", "no".into()),
        ("submodule.recurse", "false".into()),
    ]
}

/// The complete environment of a bot git command (nothing inherited but `PATH`).
fn git_env(remote: &Remote) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    env.insert("PATH".to_owned(), remote.path_env.clone());
    env.insert("HOME".to_owned(), "/nonexistent".to_owned());
    env.insert("GIT_TERMINAL_PROMPT".to_owned(), "0".to_owned());
    env.insert("GIT_CONFIG_NOSYSTEM".to_owned(), "1".to_owned());
    env.insert("GIT_CONFIG_GLOBAL".to_owned(), "/dev/null".to_owned());
    env.insert("GIT_ALLOW_PROTOCOL".to_owned(), "https:http".to_owned());
    env.insert("LC_ALL".to_owned(), "C".to_owned());
    let mut config = git_config(&remote.token);
    // The bot's own checkout: in container jobs it belongs to another uid, and the global
    // configuration that would list it is switched off.
    config.push((
        "safe.directory",
        remote.workdir.to_string_lossy().into_owned(),
    ));
    env.insert("GIT_CONFIG_COUNT".to_owned(), config.len().to_string());
    for (index, (key, value)) in config.into_iter().enumerate() {
        env.insert(format!("GIT_CONFIG_KEY_{index}"), key.to_owned());
        env.insert(format!("GIT_CONFIG_VALUE_{index}"), value);
    }
    env
}

fn spec(remote: &Remote, args: Vec<String>) -> CommandSpec {
    let mut argv = vec![remote.git.to_string_lossy().into_owned()];
    argv.extend(args);
    CommandSpec {
        program: Program::Argv(argv),
        cwd: remote.workdir.clone(),
        env: git_env(remote),
        timeout: remote.timeout,
        kill_grace: Duration::from_secs(2),
        output_cap: 64 * 1024,
        isolation: Isolation {
            writes: WritePolicy::Anywhere,
            ..Isolation::default()
        },
    }
}

/// The argv of the push: one explicit refspec (the verified commit onto the bot's branch), no
/// `+`, no `--force`, hooks skipped.
pub fn push_args(url: &str, commit: &str, target: &str) -> Vec<String> {
    vec![
        "push".into(),
        "--no-verify".into(),
        "--porcelain".into(),
        url.into(),
        format!("{commit}:refs/heads/{target}"),
    ]
}

/// Pushes what [`verify`] allowed: its commit onto its branch (checked again: the bot's, never
/// a protected one).
pub async fn push_verified<R: CommandRunner>(
    runner: &R,
    remote: &Remote,
    verified: &VerifiedPush,
    rules: &BranchRules,
) -> Result<(), PushError> {
    let target = verified.target();
    match verified.onto() {
        Onto::BotsBranch => check(target, &remote.url, rules)?,
        Onto::PullHead => check_pull_head(target, &remote.url, rules)?,
    }
    let commit = verified.tip();
    if commit.len() != 40 || !commit.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(PushError::Refused {
            branch: target.to_owned(),
            reason: format!("`{commit}` is not a commit id"),
        });
    }
    run(
        runner,
        remote,
        "push",
        target,
        push_args(&remote.url, commit, target),
    )
    .await
}

/// What [`verify`] needs.
pub struct VerifyInput<'a, R, G> {
    pub runner: &'a R,
    pub remote: &'a Remote,
    pub repo: &'a G,
    pub rules: &'a BranchRules,
    pub publish: &'a provenance::Publish,
    /// The local commit to push.
    pub tip: &'a str,
    /// The remote branch it would go to.
    pub target: &'a str,
    pub session: &'a str,
    /// The committer address of the bot's commits.
    pub bot_email: &'a str,
}

/// Where [`verify`] fetches the tip of the branch the trigger trusts.
pub const TRUSTED_REF: &str = "refs/meta-agent/trusted";
/// Where [`verify`] fetches the tip of the branch a push would extend.
pub const TARGET_REF: &str = "refs/meta-agent/target";

/// The check before every push, which nothing checked out can bypass: the tip of the branch the
/// trigger trusts and of the push's target branch are read from the remote now (the target may
/// not exist yet), the commits the push would bring beyond both are walked, and
/// [`provenance::judge_push`] decides.
pub async fn verify<R: CommandRunner, G: Repository>(
    input: VerifyInput<'_, R, G>,
) -> Result<VerifiedPush, PushError> {
    let untrusted = |refusal| PushError::Untrusted {
        branch: input.target.to_owned(),
        refusal,
    };
    let provenance::Publish::Branch(plan) = input.publish else {
        let check = push_check(&input, &[], None);
        return provenance::judge_push(&check, &input.rules.prefix).map_err(untrusted);
    };
    fetch_trusted(
        input.runner,
        input.remote,
        &plan.trusted_branch,
        TRUSTED_REF,
    )
    .await?;
    let mut hidden = vec![TRUSTED_REF];
    // A target that does not exist yet (or cannot be read) hides nothing: stricter, not laxer.
    let target_read = fetch_into(
        input.runner,
        input.remote,
        input.target,
        TARGET_REF,
        input.rules,
    )
    .await;
    if target_read.is_ok() {
        hidden.push(TARGET_REF);
    }
    let commits = input
        .repo
        .commits_not_in(input.tip, &hidden, provenance::MAX_NEW_COMMITS)
        .map_err(|err| PushError::Unreadable {
            branch: input.target.to_owned(),
            detail: err.to_string(),
        })?;
    // The target's tip now: the trusted branch's when the push goes onto it (a pull request's
    // own branch), else the target's as fetched.
    let tip_ref = if input.target == plan.trusted_branch {
        Some(TRUSTED_REF)
    } else {
        target_read.is_ok().then_some(TARGET_REF)
    };
    let target_tip = tip_ref.and_then(|name| input.repo.commit_of(name).ok());
    let check = push_check(&input, &commits, target_tip.as_deref());
    provenance::judge_push(&check, &input.rules.prefix).map_err(untrusted)
}

fn push_check<'a, R, G>(
    input: &'a VerifyInput<'a, R, G>,
    commits: &'a [meta_agent_git::CommitSummary],
    target_tip: Option<&'a str>,
) -> PushCheck<'a> {
    PushCheck {
        publish: input.publish,
        tip: input.tip,
        target: input.target,
        session: input.session,
        bot_email: input.bot_email,
        new_commits: commits,
        target_tip,
    }
}

/// Whether a failed push was refused because the remote branch holds other history (the bot
/// never forces: it publishes under another name instead).
pub fn was_rejected(error: &PushError) -> bool {
    match error {
        PushError::Failed { detail, .. } => {
            detail.contains("[rejected]")
                || detail.contains("non-fast-forward")
                || detail.contains("fetch first")
        }
        PushError::Refused { .. }
        | PushError::BadRemote { .. }
        | PushError::Untrusted { .. }
        | PushError::Unreadable { .. } => false,
    }
}

/// Fetches the bot's `branch` from the remote into the local branch of the same name (to
/// resume a session another runner escalated).
pub async fn fetch<R: CommandRunner>(
    runner: &R,
    remote: &Remote,
    branch: &str,
    rules: &BranchRules,
) -> Result<(), PushError> {
    fetch_into(
        runner,
        remote,
        branch,
        &format!("refs/heads/{branch}"),
        rules,
    )
    .await
}

/// The ref [`fetch_published`] fetches into: never a branch, so it works whatever is checked out.
pub const PUBLISHED_REF: &str = "refs/meta-agent/published";

/// Fetches the remote's `branch` (the bot's, checked first) into [`PUBLISHED_REF`], to see
/// whether what a session pushed is there. An error when the remote has no such branch.
pub async fn fetch_published<R: CommandRunner>(
    runner: &R,
    remote: &Remote,
    branch: &str,
    rules: &BranchRules,
) -> Result<(), PushError> {
    fetch_into(runner, remote, branch, PUBLISHED_REF, rules).await
}

/// Fetches the remote's `branch` (the bot's, checked first) into the local ref `into`.
async fn fetch_into<R: CommandRunner>(
    runner: &R,
    remote: &Remote,
    branch: &str,
    into: &str,
    rules: &BranchRules,
) -> Result<(), PushError> {
    check(branch, &remote.url, rules)?;
    fetch_branch(runner, remote, branch, into).await
}

/// Fetches the base repository's `branch` (any valid branch: a read, never a write) into the
/// local ref `into`: the tip the check before a push trusts.
pub async fn fetch_trusted<R: CommandRunner>(
    runner: &R,
    remote: &Remote,
    branch: &str,
    into: &str,
) -> Result<(), PushError> {
    meta_agent_git::validate_branch_name(branch).map_err(|err| PushError::Refused {
        branch: branch.to_owned(),
        reason: err.to_string(),
    })?;
    check_url(&remote.url)?;
    fetch_branch(runner, remote, branch, into).await
}

/// `refs/heads/<branch>` of the remote into the local ref `into` (the name checked by the caller).
async fn fetch_branch<R: CommandRunner>(
    runner: &R,
    remote: &Remote,
    branch: &str,
    into: &str,
) -> Result<(), PushError> {
    let source = format!("refs/heads/{branch}");
    fetch_ref(runner, remote, &source, into, branch).await
}

/// Fetches pull request `number`'s head as the base repository serves it
/// (`refs/pull/<number>/head`, for a fork's pull request too) into the local ref `into`.
pub async fn fetch_pull_head<R: CommandRunner>(
    runner: &R,
    remote: &Remote,
    number: u64,
    into: &str,
) -> Result<(), PushError> {
    check_url(&remote.url)?;
    let source = format!("refs/pull/{number}/head");
    fetch_ref(runner, remote, &source, into, &source).await
}

/// `git fetch <url> +<source>:<into>` (`into` is the bot's own ref, overwritten).
pub(super) async fn fetch_ref<R: CommandRunner>(
    runner: &R,
    remote: &Remote,
    source: &str,
    into: &str,
    label: &str,
) -> Result<(), PushError> {
    let args = vec![
        "fetch".into(),
        "--no-tags".into(),
        "--no-recurse-submodules".into(),
        remote.url.clone(),
        format!("+{source}:{into}"),
    ];
    run(runner, remote, "fetch", label, args).await
}

async fn run<R: CommandRunner>(
    runner: &R,
    remote: &Remote,
    operation: &'static str,
    branch: &str,
    args: Vec<String>,
) -> Result<(), PushError> {
    run_output(runner, remote, operation, branch, args)
        .await
        .map(drop)
}

/// Runs the trusted git with `args` in the working repository; its standard output.
pub(super) async fn run_output<R: CommandRunner>(
    runner: &R,
    remote: &Remote,
    operation: &'static str,
    branch: &str,
    args: Vec<String>,
) -> Result<String, PushError> {
    let failed = |detail: String| PushError::Failed {
        operation,
        branch: branch.to_owned(),
        detail: Redactor::from_values([remote.token.clone()])
            .redact_text(&detail)
            .into_owned(),
    };
    let output = runner
        .run(spec(remote, args))
        .await
        .map_err(|err| failed(err.to_string()))?;
    if output.termination.success() {
        return Ok(output.stdout.text);
    }
    let text = format!("{}\n{}", output.stdout.text, output.stderr.text);
    let tail: String = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .rev()
        .take(8)
        .collect::<Vec<_>>()
        .join(" | ");
    Err(failed(format!("{:?}: {tail}", output.termination)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> BranchRules {
        BranchRules {
            prefix: "meta-agent/".into(),
            protected: vec!["release".into()],
            pull_head: Some("feature/x".into()),
        }
    }

    #[test]
    fn only_the_pull_head_the_plan_names_is_pushed_outside_the_bots_branches() {
        let url = "https://github.com/octo/hello.git";
        assert_eq!(check_pull_head("feature/x", url, &rules()), Ok(()));
        for branch in [
            "feature/y",
            "main",
            "release",
            "meta-agent/x",
            "feature/x.lock",
        ] {
            assert!(
                matches!(
                    check_pull_head(branch, url, &rules()),
                    Err(PushError::Refused { .. })
                ),
                "{branch} allowed"
            );
        }
        let main_head = BranchRules {
            pull_head: Some("main".into()),
            ..rules()
        };
        assert!(check_pull_head("main", url, &main_head).is_err());
        assert!(check_pull_head("feature/x", "file:///srv/x.git", &rules()).is_err());
    }

    #[test]
    fn only_the_bots_branches_go_to_http_remotes() {
        let url = "https://github.com/octo/hello.git";
        assert_eq!(check("meta-agent/fix-mean", url, &rules()), Ok(()));
        for branch in [
            "main",
            "master",
            "release",
            "feature/x",
            "meta-agent/../main",
            "meta-agent/x.lock",
            "+meta-agent/x",
        ] {
            assert!(
                matches!(check(branch, url, &rules()), Err(PushError::Refused { .. })),
                "{branch} allowed"
            );
        }
        for url in [
            "ext::sh -c touch% /tmp/pwned",
            "file:///srv/repo.git",
            "/srv/repo.git",
            "https://x-access-token:abc@github.com/octo/hello.git",
            "ssh://git@github.com/octo/hello.git",
            "https://github.com/octo/hello.git\n--upload-pack=x",
        ] {
            assert!(
                matches!(
                    check("meta-agent/x", url, &rules()),
                    Err(PushError::BadRemote { .. })
                ),
                "{url:?} allowed"
            );
        }
    }

    #[test]
    fn the_token_travels_only_in_the_environment_never_in_argv() {
        let remote = Remote {
            url: "https://github.com/octo/hello.git".into(),
            token: "ghs_canary_token_123456".into(),
            workdir: PathBuf::from("/tmp"),
            git: PathBuf::from("/usr/bin/git"),
            path_env: "/usr/bin".into(),
            timeout: Duration::from_secs(60),
        };
        let spec = spec(
            &remote,
            push_args(&remote.url, &"a".repeat(40), "meta-agent/x"),
        );
        let Program::Argv(argv) = &spec.program else {
            panic!("not argv")
        };
        assert!(argv.iter().all(|arg| !arg.contains("ghs_canary")));
        assert!(
            !argv
                .iter()
                .any(|arg| arg.contains("force") || arg.starts_with('+'))
        );
        let basic = base64::engine::general_purpose::STANDARD
            .encode("x-access-token:ghs_canary_token_123456");
        assert!(spec.env.values().any(|value| value.contains(&basic)));
        assert_eq!(
            spec.env.get("GIT_CONFIG_GLOBAL").map(String::as_str),
            Some("/dev/null")
        );
        assert!(
            spec.env
                .iter()
                .any(|(key, value)| key.starts_with("GIT_CONFIG_KEY_") && value == "core.hooksPath"),
            "hooks are switched off"
        );
        let safe = spec
            .env
            .iter()
            .find(|(_, value)| value.as_str() == "safe.directory")
            .map(|(key, _)| key.replace("KEY", "VALUE"))
            .expect("the checkout is a safe.directory");
        assert_eq!(spec.env.get(&safe).map(String::as_str), Some("/tmp"));
        assert!(spec.env.values().any(|value| value == "/dev/null"));
        assert!(!format!("{remote:?}").contains("canary"));
    }
}
