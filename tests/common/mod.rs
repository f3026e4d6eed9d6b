//! Helpers shared by the integration tests: paths to fixtures and the built binary.

#![allow(dead_code)]

use std::path::PathBuf;

pub mod chromium;
pub mod collector;
pub mod file_server;
pub mod git_http;
pub mod http;
pub mod llmwire;
pub mod mock_github;
pub mod mock_llm;
pub mod postgres;
pub mod procs;
pub mod webhooks;

/// `name` in the design documents' `shared/` directory: beside the checkout (CI clones there),
/// else beside any ancestor of it (a worktree under `wt/NAME`). `None` when there is none.
pub fn shared_dir(name: &str) -> Option<PathBuf> {
    let checkout = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    checkout
        .ancestors()
        .skip(1)
        .map(|dir| dir.join("shared").join(name))
        .find(|dir| dir.is_dir())
}

/// The repository's `fixtures/` directory.
pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// `shared/<name>` beside the checkout (`../shared` in CI) or beside any of its ancestors (a
/// worktree under `/work/wt/NAME` finds `/work/shared`); `None` when there is none.
pub fn shared(name: &str) -> Option<PathBuf> {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .skip(1)
        .map(|dir| dir.join("shared").join(name))
        .find(|candidate| candidate.is_dir())
}

/// A command for the `meta-agent` binary under test, with a scrubbed environment; local runs
/// keep their worktrees in [`worktrees_root`], never in the real home.
pub fn meta_agent() -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::new(env!("CARGO_BIN_EXE_meta-agent"));
    cmd.env_remove("RUST_LOG");
    cmd.env_remove("XDG_STATE_HOME");
    cmd.env(meta_agent::session::places::WORKTREES_VAR, worktrees_root());
    cmd
}

/// `program` (the binary under test, or a copy of it) as a process to spawn, with the
/// environment [`meta_agent`] gives.
pub fn meta_agent_process(program: &std::path::Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(program);
    cmd.env_remove("RUST_LOG");
    cmd.env_remove("XDG_STATE_HOME");
    cmd.env(meta_agent::session::places::WORKTREES_VAR, worktrees_root());
    cmd
}

/// Where the tests' local runs keep their worktrees (`META_AGENT_WORKTREES_DIR`): under the
/// temporary directory, whose ancestors hold no project (never the target directory, inside
/// this crate: cargo would find its `Cargo.toml` from a worktree there). Keyed by repository
/// beneath, as everywhere; `scripts/test.sh` removes what the tests' repositories left there.
pub fn worktrees_root() -> PathBuf {
    std::env::temp_dir().join("meta-agent-test-worktrees")
}

/// The directory holding the worktrees of the repository checked out at `work`.
pub fn worktrees_of(work: &std::path::Path) -> PathBuf {
    let checkout = std::fs::canonicalize(work).expect("the checkout exists");
    let name = meta_agent::session::places::repository_name(&checkout, &checkout.join(".git"));
    worktrees_root().join(name)
}

/// Runs git in `dir`, panicking with its output when it fails.
pub fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .current_dir(dir)
        .args([
            "-c",
            "user.name=Test",
            "-c",
            "user.email=test@example.com",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A scratch git repository holding a copy of `source`, committed on `main`, with a local bare
/// remote as `origin`. Returns (tempdir holding both, the work tree path).
pub fn scratch_repo(source: &std::path::Path) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let work = dir.path().join("work");
    copy_tree(source, &work);
    let remote = dir.path().join("remote.git");
    git(
        dir.path(),
        &["init", "-q", "--bare", remote.to_str().expect("utf-8")],
    );
    git(&work, &["init", "-q"]);
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "initial"]);
    git(
        &work,
        &["remote", "add", "origin", remote.to_str().expect("utf-8")],
    );
    git(&work, &["push", "-q", "origin", "main"]);
    (dir, work)
}

/// Copies a directory tree.
pub fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry.expect("walk");
        let target = to.join(entry.path().strip_prefix(from).expect("prefix"));
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&target).expect("mkdir");
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// The Quickstart's example repository.
pub fn example() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/python-calc")
}

/// A scratch directory outside every place children may write to by default (the temporary
/// directory, `/tmp`, `/dev/shm`): for decoys that must stay untouched. The checkout itself may
/// live under `/tmp` (CI clones anywhere), so the target directory is only a last resort.
pub fn outside_tmp() -> tempfile::TempDir {
    let tmp = std::env::temp_dir();
    let writable_by_default = |dir: &std::path::Path| {
        dir.starts_with(&tmp) || dir.starts_with("/tmp") || dir.starts_with("/dev/shm")
    };
    let candidates = [
        Some(PathBuf::from("/var/tmp")),
        std::env::var_os("HOME").map(PathBuf::from),
        Some(PathBuf::from(env!("CARGO_TARGET_TMPDIR"))),
    ];
    candidates
        .into_iter()
        .flatten()
        .filter(|dir| !writable_by_default(dir))
        .find_map(|dir| {
            tempfile::Builder::new()
                .prefix("meta-agent-decoy-")
                .tempdir_in(dir)
                .ok()
        })
        .expect("a writable directory outside /tmp")
}

/// A file a run left in its session directory (`.git/meta-agent/sessions/<id>/<name>`), where
/// `outcome` is the run's outcome object.
pub fn session_file(work: &std::path::Path, outcome: &serde_json::Value, name: &str) -> String {
    let session = outcome["session"]
        .as_str()
        .expect("the outcome names its session");
    let path = work
        .join(".git/meta-agent/sessions")
        .join(session)
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// A local run's own worktree (`<worktrees of work>/<session>`, outside `work`), where `outcome`
/// is the run's outcome object: the run works there, never in `work`.
pub fn session_worktree(work: &std::path::Path, outcome: &serde_json::Value) -> PathBuf {
    let session = outcome["session"]
        .as_str()
        .expect("the outcome names its session");
    let place = worktrees_of(work).join(session);
    if let Some(kept) = outcome["worktree"].as_str() {
        // A run started without the tests' worktrees directory would make every check of this
        // place vacuous.
        assert_eq!(
            kept,
            place.display().to_string(),
            "the run kept its worktree elsewhere"
        );
    }
    place
}

/// The run's work branch (from its outcome object), for `git` commands in the user's checkout.
pub fn run_branch(outcome: &serde_json::Value) -> &str {
    outcome["branch"]
        .as_str()
        .expect("the outcome names its branch")
}

/// `path` as the tip of the run's branch holds it.
pub fn file_on_branch(work: &std::path::Path, outcome: &serde_json::Value, path: &str) -> String {
    git(work, &["show", &format!("{}:{path}", run_branch(outcome))])
}

/// The full message of the commit at the tip of the run's branch.
pub fn branch_message(work: &std::path::Path, outcome: &serde_json::Value) -> String {
    git(work, &["log", "-1", "--format=%B", run_branch(outcome)])
}

/// The outcome object a `--json` run prints as its last stdout line (`Null` when there is none).
pub fn outcome_line(stdout: &str) -> serde_json::Value {
    stdout
        .lines()
        .last()
        .and_then(|line| serde_json::from_str(line).ok())
        .unwrap_or(serde_json::Value::Null)
}

/// Puts the `//` bug into the example's `mean` in `work` (uncommitted).
pub fn break_mean(work: &std::path::Path) {
    let calc = work.join("calc.py");
    let text = std::fs::read_to_string(&calc).unwrap();
    let broken = text.replacen("sum(values) / len(values)", "sum(values) // len(values)", 1);
    std::fs::write(&calc, broken).unwrap();
}

/// The project files the run's commit changed (from its outcome object): the hindsight it
/// learned, under `.meta-agent/`, is the bot's own record and is left out.
pub fn committed_project_files(work: &std::path::Path, outcome: &serde_json::Value) -> Vec<String> {
    let commit = outcome["commit"]
        .as_str()
        .expect("the outcome names a commit");
    git(work, &["show", "--name-only", "--format=", commit])
        .lines()
        .filter(|path| !path.starts_with(".meta-agent/"))
        .map(str::to_owned)
        .collect()
}
