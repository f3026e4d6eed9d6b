//! The git layer on real temporary repositories (created with git2), cross-checked with the real
//! `git` CLI: branches, changed files, diffs that `git apply` accepts, commits `git log` shows,
//! patch checks that agree with `git apply --check`, and proof that no hook, fsmonitor program or
//! filter driver planted in the repository ever runs through our operations.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use meta_agent::git::{
    ChangeStatus, FileChange, Git2Repository, GitError, Identity, Repository, branch_slug,
    commit_message_trailers, validate_branch_name,
};
use proptest::prelude::*;
use tempfile::TempDir;

/// Runs the real git CLI in `dir` with no global or system configuration.
fn git_cmd(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new("git")
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com"])
        .args(args)
        .output()
        .expect("git runs")
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = git_cmd(dir, args);
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 git output")
}

struct TempRepo {
    dir: TempDir,
    repo: Git2Repository,
}

impl TempRepo {
    /// A repository on `main` with one commit holding `files`.
    fn with_files(files: &[(&str, &str)]) -> Self {
        let dir = TempDir::new().expect("tempdir");
        let mut opts = git2::RepositoryInitOptions::new();
        opts.initial_head("main");
        git2::Repository::init_opts(dir.path(), &opts).expect("init");
        let repo = Git2Repository::open(dir.path()).expect("open");
        let this = Self { dir, repo };
        for (path, content) in files {
            this.write(path, content);
        }
        this.repo
            .commit_all("Initial commit", &Identity::default())
            .expect("initial commit");
        this
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn write(&self, path: &str, content: &str) {
        let full = self.path().join(path);
        fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
        fs::write(full, content).expect("write");
    }

    fn read(&self, path: &str) -> Option<String> {
        fs::read_to_string(self.path().join(path)).ok()
    }

    fn git(&self, args: &[&str]) -> String {
        git(self.path(), args)
    }

    fn head_sha(&self) -> String {
        self.git(&["rev-parse", "HEAD"]).trim().to_string()
    }
}

fn sorted(mut changes: Vec<FileChange>) -> Vec<FileChange> {
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    changes
}

fn change(path: &str, status: ChangeStatus) -> FileChange {
    FileChange {
        path: path.into(),
        status,
    }
}

/// An executable script at `path` that appends `tag` to `marker` when run.
fn plant_script(path: &Path, marker: &Path, tag: &str) {
    fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    let body = format!("#!/bin/sh\necho {tag} >> '{}'\nexit 0\n", marker.display());
    fs::write(path, body).expect("write script");
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).expect("chmod");
}

#[test]
fn head_reports_branch_and_commit_like_git() {
    let t = TempRepo::with_files(&[("a.txt", "a\n")]);
    let head = t.repo.head().expect("head");
    assert_eq!(head.branch.as_deref(), Some("main"));
    assert_eq!(head.commit, t.head_sha());
    t.git(&["checkout", "-q", "--detach"]);
    assert_eq!(t.repo.head().expect("head").branch, None);
}

#[test]
fn unborn_head_is_an_error() {
    let dir = TempDir::new().expect("tempdir");
    git2::Repository::init(dir.path()).expect("init");
    let repo = Git2Repository::open(dir.path()).expect("open");
    assert!(matches!(repo.head(), Err(GitError::UnbornHead)));
    assert!(matches!(
        repo.checkout_new_branch("x"),
        Err(GitError::UnbornHead)
    ));
}

#[test]
fn open_refuses_a_plain_directory() {
    let dir = TempDir::new().expect("tempdir");
    assert!(matches!(
        Git2Repository::open(dir.path()),
        Err(GitError::Open { .. })
    ));
}

#[test]
fn default_branch_prefers_origin_head_then_main_or_master() {
    let upstream = TempRepo::with_files(&[("a.txt", "a\n")]);
    upstream.git(&["branch", "-m", "main", "trunk"]);
    let clone_dir = TempDir::new().expect("tempdir");
    let clone_path = clone_dir.path().join("clone");
    git(
        clone_dir.path(),
        &[
            "clone",
            "-q",
            upstream.path().to_str().expect("utf-8"),
            "clone",
        ],
    );
    let clone = Git2Repository::open(&clone_path).expect("open clone");
    assert_eq!(
        clone.default_branch().expect("default").as_deref(),
        Some("trunk")
    );

    let plain = TempRepo::with_files(&[("a.txt", "a\n")]);
    assert_eq!(
        plain.repo.default_branch().expect("default").as_deref(),
        Some("main")
    );
    plain.git(&["branch", "-m", "main", "master"]);
    assert_eq!(
        plain.repo.default_branch().expect("default").as_deref(),
        Some("master")
    );
    plain.git(&["branch", "-m", "master", "dev"]);
    assert_eq!(plain.repo.default_branch().expect("default"), None);
}

#[test]
fn checkout_new_branch_keeps_uncommitted_work() {
    let t = TempRepo::with_files(&[("a.txt", "a\n")]);
    t.write("a.txt", "changed\n");
    t.repo
        .checkout_new_branch("meta-agent/fix-a")
        .expect("new branch");
    assert_eq!(
        t.git(&["symbolic-ref", "--short", "HEAD"]).trim(),
        "meta-agent/fix-a"
    );
    assert_eq!(t.read("a.txt").as_deref(), Some("changed\n"));
    // Switching again to the same branch at HEAD is allowed (a resumed run).
    t.repo
        .checkout_new_branch("meta-agent/fix-a")
        .expect("same branch again");
}

#[test]
fn checkout_new_branch_refusals() {
    let t = TempRepo::with_files(&[("a.txt", "a\n")]);
    assert!(matches!(
        t.repo.checkout_new_branch("bad..name"),
        Err(GitError::InvalidBranchName { .. })
    ));
    assert!(matches!(
        t.repo.checkout_new_branch("main"),
        Err(GitError::DefaultBranch { .. })
    ));
    t.git(&["branch", "elsewhere"]);
    t.write("b.txt", "b\n");
    t.repo
        .commit_all("second", &Identity::default())
        .expect("commit");
    assert!(matches!(
        t.repo.checkout_new_branch("elsewhere"),
        Err(GitError::BranchExists { .. })
    ));
    assert_eq!(t.repo.head().expect("head").branch.as_deref(), Some("main"));
}

#[test]
fn checkout_existing_switches_trees() {
    let t = TempRepo::with_files(&[("a.txt", "a\n")]);
    t.git(&["branch", "old"]);
    t.write("b.txt", "b\n");
    t.repo
        .commit_all("add b", &Identity::default())
        .expect("commit");
    t.repo.checkout_existing("old").expect("checkout old");
    assert_eq!(t.read("b.txt"), None);
    assert_eq!(t.git(&["status", "--porcelain"]), "");
    t.repo.checkout_existing("main").expect("back to main");
    assert_eq!(t.read("b.txt").as_deref(), Some("b\n"));
    assert!(matches!(
        t.repo.checkout_existing("missing"),
        Err(GitError::BranchNotFound { .. })
    ));
}

#[test]
fn commits_not_in_walks_like_git_rev_list() {
    let t = TempRepo::with_files(&[("a.txt", "a\n")]);
    let base = t.head_sha();
    t.git(&["checkout", "-q", "-b", "side"]);
    for n in 1..=3 {
        t.write("a.txt", &format!("a{n}\n"));
        t.git(&["commit", "-q", "-am", &format!("side {n}\n\nTrailer: {n}")]);
    }
    let commits = t.repo.commits_not_in("side", &[&base], 10).expect("walk");
    let listed = t.git(&["rev-list", "side", &format!("^{base}")]);
    let ids: Vec<&str> = commits.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, listed.lines().collect::<Vec<_>>());
    assert!(commits[0].message.contains("Trailer: 3"), "{commits:?}");
    assert_eq!(commits[0].committer_email, "test@example.com");
    let capped = t.repo.commits_not_in("side", &[&base], 1).expect("walk");
    assert_eq!(
        capped.len(),
        2,
        "one more than the limit says there are more"
    );
    assert!(
        t.repo
            .commits_not_in(&base, &["side"], 10)
            .unwrap()
            .is_empty()
    );
    let middle = t.git(&["rev-parse", "side~1"]);
    let two = t.repo.commits_not_in("side", &[&base, middle.trim()], 10);
    assert_eq!(two.expect("walk").len(), 1, "every hidden tip is left out");
}

#[test]
fn checkout_detached_moves_head_off_every_branch() {
    let t = TempRepo::with_files(&[("a.txt", "a\n")]);
    let first = t.head_sha();
    t.write("b.txt", "b\n");
    t.repo
        .commit_all("add b", &Identity::default())
        .expect("commit");
    t.repo.checkout_detached(&first).expect("detach");
    let head = t.repo.head().expect("head");
    assert_eq!((head.branch, head.commit), (None, first.clone()));
    assert_eq!(t.read("b.txt"), None);
    assert_eq!(t.git(&["status", "--porcelain"]), "");
    t.repo.checkout_existing("main").expect("back to main");
    t.write("b.txt", "changed\n");
    assert!(
        t.repo.checkout_detached(&first).is_err(),
        "local changes are kept"
    );
    assert_eq!(t.read("b.txt").as_deref(), Some("changed\n"));
}

#[test]
fn checkout_existing_refuses_to_clobber_local_changes() {
    let t = TempRepo::with_files(&[("a.txt", "a\n")]);
    t.git(&["branch", "old"]);
    t.write("a.txt", "on main\n");
    t.repo
        .commit_all("edit a", &Identity::default())
        .expect("commit");
    t.write("a.txt", "uncommitted\n");
    assert!(t.repo.checkout_existing("old").is_err());
    assert_eq!(t.read("a.txt").as_deref(), Some("uncommitted\n"));
}

#[test]
fn changed_files_lists_every_kind_of_change() {
    let body = "line one\nline two\nline three\nline four\n";
    let t = TempRepo::with_files(&[
        ("keep.txt", "keep\n"),
        ("mod.txt", "old\n"),
        ("gone.txt", "gone\n"),
        ("move_me.txt", body),
        ("staged.txt", "s\n"),
        (".gitignore", "*.log\nbuild/\n"),
    ]);
    t.write("mod.txt", "new\n");
    fs::remove_file(t.path().join("gone.txt")).expect("rm");
    fs::rename(t.path().join("move_me.txt"), t.path().join("moved.txt")).expect("mv");
    t.write("dir/sub/new.txt", "new file\n");
    t.write("debug.log", "ignored\n");
    t.write("build/out.txt", "ignored\n");
    t.write("staged.txt", "staged change\n");
    t.git(&["add", "staged.txt"]);
    let got = sorted(t.repo.changed_files().expect("changes"));
    let want = vec![
        change("dir/sub/new.txt", ChangeStatus::Added),
        change("gone.txt", ChangeStatus::Deleted),
        change("mod.txt", ChangeStatus::Modified),
        change(
            "moved.txt",
            ChangeStatus::Renamed {
                from: "move_me.txt".into(),
            },
        ),
        change("staged.txt", ChangeStatus::Modified),
    ];
    assert_eq!(got, want);
}

#[test]
fn changed_files_reports_a_type_change() {
    let t = TempRepo::with_files(&[("target.txt", "t\n"), ("link", "was a file\n")]);
    fs::remove_file(t.path().join("link")).expect("rm");
    std::os::unix::fs::symlink("target.txt", t.path().join("link")).expect("symlink");
    let got = t.repo.changed_files().expect("changes");
    assert_eq!(got, vec![change("link", ChangeStatus::TypeChange)]);
}

/// Copies the committed state into a fresh clone and applies `patch` there with `git apply`.
fn apply_on_fresh_clone(t: &TempRepo, patch: &str) -> (TempDir, PathBuf) {
    let dir = TempDir::new().expect("tempdir");
    let clone = dir.path().join("clone");
    git(
        dir.path(),
        &["clone", "-q", t.path().to_str().expect("utf-8"), "clone"],
    );
    let patch_file = dir.path().join("change.patch");
    fs::write(&patch_file, patch).expect("write patch");
    git(
        &clone,
        &["apply", "--index", patch_file.to_str().expect("utf-8")],
    );
    (dir, clone)
}

#[test]
fn diff_applies_with_git_apply_on_a_fresh_clone() {
    let t = TempRepo::with_files(&[
        ("src/lib.rs", "fn a() {}\nfn b() {}\n"),
        ("old.txt", "old\n"),
        ("no_newline.txt", "x"),
        ("renamed_from.txt", "one\ntwo\nthree\nfour\nfive\n"),
    ]);
    t.write("src/lib.rs", "fn a() {}\nfn b() { 1; }\nfn c() {}\n");
    fs::remove_file(t.path().join("old.txt")).expect("rm");
    t.write("no_newline.txt", "y");
    t.write("untracked/new.txt", "brand new\n");
    fs::rename(
        t.path().join("renamed_from.txt"),
        t.path().join("renamed_to.txt"),
    )
    .expect("mv");
    let patch = t.repo.diff().expect("diff");
    assert!(patch.contains("new file mode"), "{patch}");
    assert!(patch.contains("\\ No newline at end of file"), "{patch}");
    let (_keep, clone) = apply_on_fresh_clone(&t, &patch);
    for path in [
        "src/lib.rs",
        "no_newline.txt",
        "untracked/new.txt",
        "renamed_to.txt",
    ] {
        assert_eq!(
            fs::read(clone.join(path)).expect("cloned file"),
            fs::read(t.path().join(path)).expect("original"),
            "{path}"
        );
    }
    assert!(!clone.join("old.txt").exists());
    assert!(!clone.join("renamed_from.txt").exists());
}

#[test]
fn diff_notes_binary_files_and_leaves_ignored_out() {
    let t = TempRepo::with_files(&[(".gitignore", "*.log\n"), ("a.txt", "a\n")]);
    fs::write(t.path().join("image.bin"), [0u8, 159, 146, 150, 0, 1, 2]).expect("write");
    t.write("noise.log", "ignored\n");
    let patch = t.repo.diff().expect("diff");
    assert!(
        patch.contains("Binary files /dev/null and b/image.bin differ"),
        "{patch}"
    );
    assert!(!patch.contains("noise.log"), "{patch}");
}

#[test]
fn diff_of_a_clean_tree_is_empty() {
    let t = TempRepo::with_files(&[("a.txt", "a\n")]);
    assert_eq!(t.repo.diff().expect("diff"), "");
    assert!(t.repo.changed_files().expect("changes").is_empty());
}

#[test]
fn diff_between_matches_git_diff() {
    let t = TempRepo::with_files(&[("a.txt", "1\n2\n3\n"), ("b.txt", "b\n")]);
    let first = t.head_sha();
    t.write("a.txt", "1\ntwo\n3\n");
    t.write("c.txt", "c\n");
    fs::remove_file(t.path().join("b.txt")).expect("rm");
    let second = t
        .repo
        .commit_all("change", &Identity::default())
        .expect("commit");
    let ours = t.repo.diff_between(&first, &second).expect("diff");
    let theirs = t.git(&["diff", "--no-color", "--full-index", "-M", &first, &second]);
    let strip_index = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| !l.starts_with("index "))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(strip_index(&ours), strip_index(&theirs));
    assert!(matches!(
        t.repo.diff_between("nope", &second),
        Err(GitError::RevisionNotFound { .. })
    ));
}

#[test]
fn commit_all_stages_everything_and_git_log_shows_it() {
    let t = TempRepo::with_files(&[
        (".gitignore", "target/\n"),
        ("a.txt", "a\n"),
        ("b.txt", "b\n"),
    ]);
    let before = t.head_sha();
    t.write("a.txt", "a2\n");
    fs::remove_file(t.path().join("b.txt")).expect("rm");
    t.write("new/c.txt", "c\n");
    t.write("target/junk", "ignored\n");
    let message = "Fix the thing\n\nBody.\n\nMeta-Agent-Iterations: 2\nMeta-Agent-Session: s-1\n";
    let identity = Identity::default();
    let sha = t.repo.commit_all(message, &identity).expect("commit");
    assert_eq!(sha, t.head_sha());
    let log = t.git(&["log", "-1", "--format=%an <%ae>|%cn <%ce>|%P"]);
    assert_eq!(
        log.trim(),
        format!(
            "meta-agent <meta-agent@users.noreply.github.com>|meta-agent <meta-agent@users.noreply.github.com>|{before}"
        )
    );
    assert_eq!(
        t.git(&["log", "-1", "--format=%B"]).trim_end(),
        message.trim_end()
    );
    let files = t.git(&["show", "--name-status", "--format=", "HEAD"]);
    assert_eq!(files, "M\ta.txt\nD\tb.txt\nA\tnew/c.txt\n");
    assert_eq!(t.git(&["status", "--porcelain"]), "");
    assert_eq!(t.git(&["branch", "--show-current"]).trim(), "main");
    assert!(matches!(
        t.repo.commit_all("again", &identity),
        Err(GitError::NothingToCommit)
    ));
}

#[test]
fn commit_all_on_a_work_branch_leaves_main_alone() {
    let t = TempRepo::with_files(&[("a.txt", "a\n")]);
    let main_before = t.head_sha();
    t.repo
        .checkout_new_branch("meta-agent/task")
        .expect("branch");
    t.write("a.txt", "b\n");
    let sha = t
        .repo
        .commit_all("work", &Identity::default())
        .expect("commit");
    assert_eq!(t.git(&["rev-parse", "main"]).trim(), main_before);
    assert_eq!(t.git(&["rev-parse", "meta-agent/task"]).trim(), sha);
}

#[test]
fn planted_hooks_never_run() {
    let t = TempRepo::with_files(&[("a.txt", "a\n")]);
    t.git(&["branch", "other"]);
    let marker_dir = TempDir::new().expect("tempdir");
    let marker = marker_dir.path().join("hook-ran");
    let hooks = t.path().join(".git/hooks");
    for hook in [
        "pre-commit",
        "prepare-commit-msg",
        "commit-msg",
        "post-commit",
        "post-checkout",
        "reference-transaction",
    ] {
        plant_script(&hooks.join(hook), &marker, hook);
    }
    assert!(!marker.exists(), "setup ran a hook");
    t.write("a.txt", "changed\n");
    t.repo
        .commit_all("change", &Identity::default())
        .expect("commit");
    t.repo.checkout_new_branch("meta-agent/x").expect("branch");
    t.repo.checkout_existing("other").expect("checkout");
    t.repo
        .checkout_existing("meta-agent/x")
        .expect("checkout back");
    t.write("a.txt", "again\n");
    t.repo.restore_worktree("HEAD").expect("restore");
    assert!(
        !marker.exists(),
        "a hook ran: {:?}",
        fs::read_to_string(&marker)
    );
    // The hooks are real: the git CLI runs them.
    t.git(&["commit", "-q", "--allow-empty", "-m", "cli"]);
    let ran = fs::read_to_string(&marker).expect("the CLI ran the hooks");
    assert!(
        ran.contains("pre-commit") && ran.contains("post-commit"),
        "{ran}"
    );
}

#[test]
fn core_fsmonitor_is_never_run() {
    let t = TempRepo::with_files(&[("a.txt", "a\n")]);
    let marker_dir = TempDir::new().expect("tempdir");
    let marker = marker_dir.path().join("fsmonitor-ran");
    let script = marker_dir.path().join("fsmonitor.sh");
    plant_script(&script, &marker, "fsmonitor");
    t.git(&["config", "core.fsmonitor", script.to_str().expect("utf-8")]);
    let repo = Git2Repository::open(t.path()).expect("reopen after config");
    t.write("a.txt", "b\n");
    t.write("new.txt", "n\n");
    repo.changed_files().expect("changes");
    repo.diff().expect("diff");
    repo.commit_all("c", &Identity::default()).expect("commit");
    repo.head().expect("head");
    assert!(!marker.exists(), "fsmonitor ran");
    // The setting is live: git's own status runs it.
    t.git(&["status", "--porcelain"]);
    assert!(
        marker.exists(),
        "git status should have run the fsmonitor hook"
    );
}

#[test]
fn clean_and_smudge_filter_drivers_are_never_run() {
    let t = TempRepo::with_files(&[("a.txt", "a\n")]);
    let marker_dir = TempDir::new().expect("tempdir");
    let marker = marker_dir.path().join("filter-ran");
    let script = marker_dir.path().join("filter.sh");
    fs::write(
        &script,
        format!("#!/bin/sh\necho filter >> '{}'\ncat\n", marker.display()),
    )
    .expect("write");
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).expect("chmod");
    let script = script.to_str().expect("utf-8");
    t.git(&["config", "filter.evil.clean", script]);
    t.git(&["config", "filter.evil.smudge", script]);
    t.write(".gitattributes", "* filter=evil\n");
    t.write("a.txt", "changed\n");
    let repo = Git2Repository::open(t.path()).expect("reopen after config");
    repo.changed_files().expect("changes");
    repo.diff().expect("diff");
    repo.commit_all("c", &Identity::default()).expect("commit");
    repo.checkout_new_branch("meta-agent/f").expect("branch");
    assert!(!marker.exists(), "a filter driver ran");
    t.write("a.txt", "again\n");
    t.git(&["add", "a.txt"]);
    assert!(marker.exists(), "git add should have run the clean filter");
}

fn git_apply_check(t: &TempRepo, patch: &str) -> bool {
    let dir = TempDir::new().expect("tempdir");
    let file = dir.path().join("p.patch");
    fs::write(&file, patch).expect("write");
    git_cmd(
        t.path(),
        &["apply", "--check", file.to_str().expect("utf-8")],
    )
    .status
    .success()
}

#[test]
fn patch_applies_agrees_with_git_apply_check() {
    let t = TempRepo::with_files(&[("a.txt", "1\n2\n3\n"), ("b.txt", "b\n")]);
    let base = t.head_sha();
    t.write("a.txt", "1\ntwo\n3\n");
    let modify_a = t.repo.diff().expect("diff");
    t.repo.restore_worktree(&base).expect("restore");
    t.write("c.txt", "c\n");
    let add_c = t.repo.diff().expect("diff");
    t.repo.restore_worktree(&base).expect("restore");
    fs::remove_file(t.path().join("b.txt")).expect("rm");
    let delete_b = t.repo.diff().expect("diff");
    t.repo.restore_worktree(&base).expect("restore");
    let stale = modify_a
        .replace("-2\n", "-zwei\n")
        .replace(" 1\n", " eins\n");

    let mut cases = vec![
        (modify_a.clone(), true),
        (add_c.clone(), true),
        (delete_b.clone(), true),
        (stale, false),
    ];
    // Once applied, the same patches no longer apply.
    let applied_state = |t: &TempRepo| {
        t.repo.apply_patch(&modify_a).expect("apply");
        t.repo.apply_patch(&add_c).expect("apply");
        t.repo.apply_patch(&delete_b).expect("apply");
    };
    for (patch, expected) in &cases {
        assert_eq!(git_apply_check(&t, patch), *expected, "git on {patch}");
        assert_eq!(
            t.repo.patch_applies(patch).expect("check"),
            *expected,
            "{patch}"
        );
    }
    assert_eq!(t.repo.diff().expect("diff"), "", "check must not write");
    applied_state(&t);
    cases = vec![(modify_a, false), (add_c, false), (delete_b, false)];
    for (patch, expected) in &cases {
        assert_eq!(git_apply_check(&t, patch), *expected, "git on {patch}");
        assert_eq!(
            t.repo.patch_applies(patch).expect("check"),
            *expected,
            "{patch}"
        );
    }
}

#[test]
fn a_text_that_is_not_a_patch_is_a_parse_error() {
    let t = TempRepo::with_files(&[("a.txt", "a\n")]);
    assert!(matches!(
        t.repo.patch_applies("this is not a patch\n"),
        Err(GitError::PatchParse { .. })
    ));
    assert!(matches!(
        t.repo.apply_patch("hello\n"),
        Err(GitError::PatchParse { .. })
    ));
}

#[test]
fn apply_patch_writes_the_worktree_not_the_index() {
    let t = TempRepo::with_files(&[("a.txt", "1\n2\n3\n")]);
    let patch =
        "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n 1\n-2\n+two\n 3\n";
    t.repo.apply_patch(patch).expect("apply");
    assert_eq!(t.read("a.txt").as_deref(), Some("1\ntwo\n3\n"));
    assert_eq!(t.git(&["diff", "--cached", "--name-only"]), "");
    assert!(
        t.repo.apply_patch(patch).is_err(),
        "applying twice must fail"
    );
}

#[test]
fn a_patch_into_dot_git_is_refused() {
    let t = TempRepo::with_files(&[("a.txt", "a\n")]);
    let patch = "diff --git a/.git/hooks/pre-commit b/.git/hooks/pre-commit\nnew file mode 100755\n--- /dev/null\n+++ b/.git/hooks/pre-commit\n@@ -0,0 +1,2 @@\n+#!/bin/sh\n+echo pwned\n";
    let refused = t.repo.apply_patch(patch).is_err();
    assert!(refused, "a patch writing into .git was applied");
    assert!(!t.path().join(".git/hooks/pre-commit").exists());
    assert!(!t.repo.patch_applies(patch).expect("check"));
    let outside = "diff --git a/../escape.txt b/../escape.txt\nnew file mode 100644\n--- /dev/null\n+++ b/../escape.txt\n@@ -0,0 +1 @@\n+x\n";
    assert!(t.repo.apply_patch(outside).is_err());
    assert!(
        !t.path()
            .parent()
            .expect("parent")
            .join("escape.txt")
            .exists()
    );
}

#[test]
fn restore_worktree_discards_changes_and_keeps_ignored_files() {
    let t = TempRepo::with_files(&[
        (".gitignore", "*.log\n"),
        ("a.txt", "a\n"),
        ("b.txt", "b\n"),
    ]);
    let head = t.head_sha();
    t.write("a.txt", "tampered\n");
    fs::remove_file(t.path().join("b.txt")).expect("rm");
    t.write("new/untracked.txt", "x\n");
    t.write("staged_new.txt", "s\n");
    t.git(&["add", "staged_new.txt"]);
    t.write("keep.log", "ignored stays\n");
    t.repo.restore_worktree(&head).expect("restore");
    assert_eq!(t.git(&["status", "--porcelain"]), "");
    assert_eq!(t.read("a.txt").as_deref(), Some("a\n"));
    assert_eq!(t.read("b.txt").as_deref(), Some("b\n"));
    assert!(
        !t.path().join("new").exists(),
        "emptied untracked directories go too"
    );
    assert!(!t.path().join("staged_new.txt").exists());
    assert_eq!(t.read("keep.log").as_deref(), Some("ignored stays\n"));
    assert_eq!(t.head_sha(), head);
}

/// The tamper guard's undo is a forced checkout: a tracked directory or file the act swapped for
/// a link (hidden from git by a self-ignoring `.gitignore`) must be replaced, never written
/// through. Without the link removal, libgit2 writes `tests/test_x.py` and `f.txt` into the decoy.
#[test]
fn restore_never_writes_through_a_link_that_replaced_a_tracked_path() {
    let t = TempRepo::with_files(&[("tests/test_x.py", "def test(): pass\n"), ("f.txt", "x\n")]);
    let head = t.head_sha();
    let decoy = TempDir::new().expect("decoy");
    fs::write(decoy.path().join("target"), "ORIGINAL").expect("decoy file");
    fs::remove_dir_all(t.path().join("tests")).expect("rm tests");
    std::os::unix::fs::symlink(decoy.path(), t.path().join("tests")).expect("link dir");
    fs::remove_file(t.path().join("f.txt")).expect("rm f");
    std::os::unix::fs::symlink(decoy.path().join("target"), t.path().join("f.txt"))
        .expect("link file");
    t.write(".gitignore", "/tests\n/f.txt\n/.gitignore\n");
    t.repo.restore_worktree(&head).expect("restore");
    let mut decoy_files: Vec<String> = fs::read_dir(decoy.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    decoy_files.sort();
    assert_eq!(decoy_files, ["target"]);
    assert_eq!(
        fs::read_to_string(decoy.path().join("target")).expect("read"),
        "ORIGINAL"
    );
    assert!(
        fs::symlink_metadata(t.path().join("tests"))
            .expect("tests")
            .is_dir()
    );
    assert_eq!(
        t.read("tests/test_x.py").as_deref(),
        Some("def test(): pass\n")
    );
    assert!(
        fs::symlink_metadata(t.path().join("f.txt"))
            .expect("f")
            .is_file()
    );
}

#[test]
fn read_blob_reads_committed_content() {
    let t = TempRepo::with_files(&[("dir/a.txt", "first\n")]);
    let first = t.head_sha();
    t.write("dir/a.txt", "second\n");
    t.repo
        .commit_all("second", &Identity::default())
        .expect("commit");
    let read = |rev: &str, path: &str| t.repo.read_blob(rev, path).expect("read");
    assert_eq!(read(&first, "dir/a.txt"), Some(b"first\n".to_vec()));
    assert_eq!(read("HEAD", "dir/a.txt"), Some(b"second\n".to_vec()));
    assert_eq!(read("HEAD", "dir/missing.txt"), None);
    assert_eq!(read("HEAD", "dir"), None);
    assert!(matches!(
        t.repo.read_blob("no-such-rev", "dir/a.txt"),
        Err(GitError::RevisionNotFound { .. })
    ));
}

#[test]
fn git_dir_and_workdir() {
    let t = TempRepo::with_files(&[("a.txt", "a\n")]);
    let canonical = |p: PathBuf| p.canonicalize().expect("canonical");
    assert_eq!(
        canonical(t.repo.workdir()),
        canonical(t.path().to_path_buf())
    );
    assert_eq!(
        canonical(t.repo.git_dir()),
        canonical(t.path().join(".git"))
    );
}

/// What `git interpret-trailers --parse` prints for `message`, as pairs.
fn git_parse_trailers(message: &str) -> Vec<(String, String)> {
    let dir = TempDir::new().expect("tempdir");
    let file = dir.path().join("msg");
    fs::write(&file, message).expect("write");
    let out = git(
        dir.path(),
        &[
            "interpret-trailers",
            "--parse",
            file.to_str().expect("utf-8"),
        ],
    );
    out.lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_string(), v.trim().to_string()))
        .collect()
}

#[test]
fn trailers_agree_with_git_interpret_trailers() {
    let messages = [
        "Subject\n\nBody.\n\nMeta-Agent-Iterations: 2\nMeta-Agent-Gates: tests=pass(3/3) lint=pass\n",
        "Subject only: with colon\n",
        "Subject\n\nKey: value\n",
        "Subject\n\nFixes #4\n\nKey: value\nplain text line\n",
        "Subject\n\nA: 1\nplain\nSigned-off-by: X <x@y>\n",
        "Subject\n\nA: 1\nnot\nnot\nnot\nnot\nSigned-off-by: X <x@y>\n",
        "Subject\n\nKey: one\n  two\n\tthree\n",
        "Subject\n\nSpaced Key: no\n",
        "Subject\n\nKey : spaced separator\nOther-Key:tight\n",
        "Subject\n\nA: 1\n# a comment\nB: 2\n",
        "Subject\n\nA: 1\n\n# trailing comment\n",
        "Subject\n\nBody\n---\nA: after divider\n",
        "Subject\n\nA: before\n---\ndiff stuff\n",
        "Subject\n\nhttp://example.com/x\n",
        "Subject\n\n(cherry picked from commit abc)\nA: 1\n",
        "Subject\n\n   \nA: 1\n  \n",
        "Subject\n\nBody\n\n  indented: no\nA: 1\n",
        "",
    ];
    for message in messages {
        assert_eq!(
            commit_message_trailers(message),
            git_parse_trailers(message),
            "message: {message:?}"
        );
    }
}

#[test]
fn commit_trailers_survive_the_round_trip_through_git() {
    let t = TempRepo::with_files(&[("a.txt", "a\n")]);
    t.write("a.txt", "b\n");
    let message = "Fix mean of empty list\n\nFixes #12\n\nMeta-Agent-Iterations: 1\nMeta-Agent-Hindsight-Used: yes\n";
    t.repo
        .commit_all(message, &Identity::default())
        .expect("commit");
    let stored = t.git(&["log", "-1", "--format=%B"]);
    let ours = commit_message_trailers(&stored);
    assert_eq!(ours, git_parse_trailers(&stored));
    assert_eq!(
        ours,
        vec![
            ("Meta-Agent-Iterations".to_string(), "1".to_string()),
            ("Meta-Agent-Hindsight-Used".to_string(), "yes".to_string()),
        ]
    );
}

fn git_accepts_branch(name: &str) -> bool {
    Command::new("git")
        .args(["check-ref-format", &format!("refs/heads/{name}")])
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .status()
        .expect("git runs")
        .success()
}

/// Lines a commit message's last paragraphs are made of, including the awkward ones.
fn message_line() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("Meta-Agent-Iterations: 2".to_string()),
        Just("Signed-off-by: A U Thor <a@example.com>".to_string()),
        Just("(cherry picked from commit 0123abc)".to_string()),
        Just("  continued value".to_string()),
        Just("plain prose line".to_string()),
        Just("# a comment".to_string()),
        Just(String::new()),
        Just("Key-2 : spaced".to_string()),
        Just("---".to_string()),
        Just("http://example.com/x".to_string()),
        "[A-Za-z][A-Za-z0-9-]{0,10}: [ -~]{0,20}",
        "[ -~]{0,24}",
    ]
}

/// A small text file: a few short lines, sometimes without a final newline.
fn file_text() -> impl Strategy<Value = String> {
    (prop::collection::vec("[a-c é]{0,6}", 0..8), any::<bool>()).prop_map(|(lines, newline)| {
        let mut text = lines.join("\n");
        if newline && !text.is_empty() {
            text.push('\n');
        }
        text
    })
}

proptest! {
    // Each case builds, clones and patches a repository: a few cases cover the shapes.
    #![proptest_config(ProptestConfig::with_cases(16))]

    #[test]
    fn diff_always_applies_on_a_fresh_clone(
        before in prop::collection::vec(file_text(), 3),
        after in prop::collection::vec(prop::option::of(file_text()), 3),
        extra in prop::option::of(file_text()),
    ) {
        let names = ["one.txt", "dir/two.txt", "three.txt"];
        let files: Vec<(&str, &str)> = names.iter().copied().zip(before.iter().map(String::as_str)).collect();
        let t = TempRepo::with_files(&files);
        for (name, content) in names.iter().zip(&after) {
            match content {
                Some(text) => t.write(name, text),
                None => fs::remove_file(t.path().join(name)).expect("rm"),
            }
        }
        if let Some(text) = &extra {
            t.write("new/extra.txt", text);
        }
        let patch = t.repo.diff().expect("diff");
        let (_keep, clone) = apply_on_fresh_clone(&t, &patch);
        for name in names.iter().chain(["new/extra.txt"].iter()) {
            let ours = fs::read(t.path().join(name)).ok();
            let theirs = fs::read(clone.join(name)).ok();
            prop_assert_eq!(ours, theirs, "{}\n{}", name, patch);
        }
    }

}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn trailers_agree_with_git_on_generated_messages(
        subject in "[A-Za-z][ -~]{0,30}",
        body in prop::collection::vec(message_line(), 0..10),
    ) {
        let message = format!("{subject}\n\n{}\n", body.join("\n"));
        prop_assert_eq!(commit_message_trailers(&message), git_parse_trailers(&message), "{:?}", message);
    }

    #[test]
    fn branch_slug_is_always_a_valid_branch(title in "\\PC{0,80}") {
        let slug = branch_slug(&title);
        prop_assert!(!slug.is_empty() && slug.len() <= 48);
        prop_assert!(slug.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'));
        prop_assert!(validate_branch_name(&slug).is_ok());
        let branch = format!("meta-agent/{slug}");
        prop_assert!(validate_branch_name(&branch).is_ok());
        prop_assert!(git_accepts_branch(&branch), "{}", branch);
    }

    #[test]
    fn validate_branch_name_agrees_with_git_check_ref_format(
        name in "[a-z@{}./\\-~^:?*\\[\\\\ \\x01\\x7fHEADlock]{0,12}"
    ) {
        let ours = validate_branch_name(&name).is_ok();
        let extra_branch_rules = !name.starts_with('-') && name != "HEAD" && name != "@" && !name.is_empty();
        let theirs = git_accepts_branch(&name) && extra_branch_rules;
        prop_assert_eq!(ours, theirs, "name {:?}", name);
    }
}

#[test]
fn a_patch_through_a_symlinked_directory_is_refused() {
    let t = TempRepo::with_files(&[("a.txt", "a\n")]);
    let outside = TempDir::new().expect("tempdir");
    std::os::unix::fs::symlink(outside.path(), t.path().join("out")).expect("symlink");
    let patch = "diff --git a/out/evil.txt b/out/evil.txt\nnew file mode 100644\n--- /dev/null\n+++ b/out/evil.txt\n@@ -0,0 +1 @@\n+x\n";
    assert!(matches!(
        t.repo.apply_patch(patch),
        Err(GitError::PatchDoesNotApply { .. })
    ));
    assert!(!t.repo.patch_applies(patch).expect("check"));
    assert!(!outside.path().join("evil.txt").exists());
}

#[test]
fn a_patch_creating_a_symlink_out_of_the_tree_is_refused() {
    let t = TempRepo::with_files(&[("a.txt", "a\n")]);
    let link = |target: &str| {
        format!(
            "diff --git a/link b/link\nnew file mode 120000\n--- /dev/null\n+++ b/link\n@@ -0,0 +1 @@\n+{target}\n\\ No newline at end of file\n"
        )
    };
    for target in ["/etc/passwd", "../outside", ".git/config"] {
        assert!(t.repo.apply_patch(&link(target)).is_err(), "{target}");
        assert!(
            t.path().join("link").symlink_metadata().is_err(),
            "{target}"
        );
    }
    t.repo
        .apply_patch(&link("a.txt"))
        .expect("an in-tree link applies");
    assert_eq!(
        fs::read_link(t.path().join("link")).expect("link"),
        PathBuf::from("a.txt")
    );
}
