//! Benchmarks of the per-iteration git work of the loop: the worktree diff, the changed-file list
//! and the tamper inspection of that diff, on a synthetic repository of 500 files with 25 edited
//! and 5 added; plus `commit_all` on the same change, and the per-run costs of a local run's own
//! worktree (added outside the checkout, then removed) and of its snapshot of the user's
//! uncommitted work (30 changed files), for 500 and 5,000 files.
//!
//! Run with `cargo bench --bench git_tamper`.

use std::fs;
use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use meta_agent::engine::tamper::{TamperGuard, inspect};
use meta_agent::git::{Git2Repository, Identity, Repository, SessionWorktree};
use meta_agent::policy::Policy;
use tempfile::TempDir;

const FILES: usize = 500;

fn source(index: usize, edited: bool) -> String {
    let mut text = String::new();
    for line in 0..40 {
        let value = if edited && line % 10 == 3 {
            line * 7
        } else {
            line
        };
        text.push_str(&format!("fn f_{index}_{line}() -> usize {{ {value} }}\n"));
    }
    text.push_str("\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn works() {\n");
    text.push_str(&format!(
        "        assert_eq!(super::f_{index}_1(), 1);\n    }}\n}}\n"
    ));
    text
}

fn write(root: &Path, path: &str, text: &str) {
    let full = root.join(path);
    fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
    fs::write(full, text).expect("write");
}

/// A repository of `files` files, committed; returns the commit too.
fn committed_repository(files: usize) -> (TempDir, Git2Repository, String) {
    let dir = TempDir::new().expect("tempdir");
    git2::Repository::init(dir.path()).expect("init");
    for index in 0..files {
        write(
            dir.path(),
            &format!("src/m{}/f{index}.rs", index % 20),
            &source(index, false),
        );
    }
    let repo = Git2Repository::open(dir.path()).expect("open");
    let head = repo
        .commit_all("base", &Identity::default())
        .expect("commit");
    (dir, repo, head)
}

/// A committed repository of `files` files, then 25 edited and 5 new ones in the worktree.
fn edited_repository(files: usize) -> (TempDir, Git2Repository) {
    let (dir, repo, _) = committed_repository(files);
    for index in (0..files).step_by(files / 25) {
        write(
            dir.path(),
            &format!("src/m{}/f{index}.rs", index % 20),
            &source(index, true),
        );
    }
    for index in 0..5 {
        write(
            dir.path(),
            &format!("tests/new_{index}.rs"),
            &source(index, false),
        );
    }
    (dir, repo)
}

fn bench(c: &mut Criterion) {
    let (dir, repo) = edited_repository(FILES);
    let diff = repo.diff().expect("diff");
    c.bench_function("git/diff (500 files, 30 changed)", |b| {
        b.iter(|| black_box(repo.diff().expect("diff")))
    });
    c.bench_function("git/changed_files (500 files, 30 changed)", |b| {
        b.iter(|| black_box(repo.changed_files().expect("changes")))
    });
    let policy = Policy::default();
    c.bench_function("tamper/inspect (policy compiled per call)", |b| {
        b.iter(|| black_box(inspect(&diff, &policy)))
    });
    let guard = TamperGuard::new(&policy);
    c.bench_function("tamper/TamperGuard::inspect", |b| {
        b.iter(|| black_box(guard.inspect(&diff)))
    });
    c.bench_function("git/commit_all then restore", |b| {
        b.iter(|| {
            let head = repo.head().expect("head").commit;
            let sha = repo
                .commit_all("bench", &Identity::default())
                .expect("commit");
            black_box(sha);
            reset_branch(dir.path(), &head);
        })
    });
}

/// A local run's worktree: added at HEAD (checked out by libgit2) in a directory outside the
/// checkout, as local runs make it, and removed, per run.
fn bench_session_worktree(c: &mut Criterion) {
    for files in [FILES, 10 * FILES] {
        let (dir, _repo, head) = committed_repository(files);
        let places = TempDir::new().expect("tempdir");
        let mut n = 0u64;
        c.bench_function(
            &format!("git/session worktree add + remove ({files} files)"),
            |b| {
                b.iter(|| {
                    n += 1;
                    let session = format!("bench-{n}");
                    let at = places.path().join(&session);
                    let place =
                        SessionWorktree::add(dir.path(), &session, &head, &at).expect("add");
                    place.remove().expect("remove");
                })
            },
        );
    }
}

/// A local run's start from uncommitted work: the snapshot commit of 25 edited and 5 new files
/// (staged in memory, written to the object database only), per run.
fn bench_snapshot(c: &mut Criterion) {
    for files in [FILES, 10 * FILES] {
        let (_dir, repo) = edited_repository(files);
        c.bench_function(
            &format!("git/snapshot of uncommitted work ({files} files, 30 changed)"),
            |b| {
                b.iter(|| {
                    let changes = repo.changed_files().expect("changes");
                    let sha = repo
                        .snapshot_commit("snapshot", &Identity::default())
                        .expect("snapshot");
                    black_box((changes, sha));
                })
            },
        );
    }
}

/// Moves the branch back to `head` keeping the worktree, so the next commit has work to do.
fn reset_branch(path: &Path, head: &str) {
    let raw = git2::Repository::open(path).expect("open");
    let commit = raw
        .find_commit(git2::Oid::from_str(head).expect("oid"))
        .expect("commit");
    raw.reset(commit.as_object(), git2::ResetType::Mixed, None)
        .expect("reset");
}

criterion_group!(benches, bench, bench_session_worktree, bench_snapshot);
criterion_main!(benches);
