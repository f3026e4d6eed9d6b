//! Tests of the patch gate: paths, links, sizes, binaries and secrets refused, plain changes passed.

use super::*;

const CANARY: &str = "CanaryValue-0123456789abcdef";

fn change(path: &str) -> FileChange {
    FileChange {
        path: path.to_owned(),
        status: ChangeStatus::Added,
    }
}

fn added_diff(path: &str, lines: &[&str]) -> String {
    let mut diff = format!(
        "diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{} @@\n",
        lines.len()
    );
    for line in lines {
        diff.push_str(&format!("+{line}\n"));
    }
    diff
}

fn run(dir: &Path, changes: &[FileChange], diff: &str, policy: &Policy) -> Vec<Refusal> {
    let redactor = Redactor::from_values([CANARY.to_owned()]);
    check(
        &PatchInput {
            changes,
            diff,
            worktree: dir,
            redactor: &redactor,
        },
        policy,
    )
}

/// Each refusal's path (`*`: the whole change) and kind.
fn kinds(refusals: &[Refusal]) -> Vec<(String, &'static str)> {
    refusals
        .iter()
        .map(|r| {
            let path = r.path.clone().unwrap_or_else(|| "*".to_owned());
            (path, r.why.as_str())
        })
        .collect()
}

/// Each refusal's line, as people read it.
fn lines(refusals: &[Refusal]) -> Vec<String> {
    refusals
        .iter()
        .map(meta_agent_render::refusal::line)
        .collect()
}

#[test]
fn a_plain_change_passes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.py"), "x = 1\n").unwrap();
    let diff = added_diff("a.py", &["x = 1"]);
    assert_eq!(
        run(dir.path(), &[change("a.py")], &diff, &Policy::default()),
        []
    );
}

#[test]
fn protected_and_unplain_paths_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let policy = Policy::new(meta_agent_policy::PolicyInput {
        protected: vec!["secrets/**".to_owned()],
        ..Default::default()
    });
    let changes: Vec<FileChange> = [
        ".github/workflows/x.yml",
        ".meta-agent.yml",
        ".gitattributes",
        "sub/.git",
        "secrets/key.pem",
        "../escape",
        "/etc/passwd",
        "x/.GIT/config",
        "y/.git. /config",
        "z/GIT~1/hooks/post-checkout",
        "fine.txt",
    ]
    .into_iter()
    .map(change)
    .collect();
    let found = kinds(&run(dir.path(), &changes, "", &policy));
    assert_eq!(
        found,
        [
            (".github/workflows/x.yml".to_owned(), "protected"),
            (".meta-agent.yml".to_owned(), "protected"),
            (".gitattributes".to_owned(), "protected"),
            ("sub/.git".to_owned(), "not_plain_path"),
            ("secrets/key.pem".to_owned(), "protected"),
            ("../escape".to_owned(), "not_plain_path"),
            ("/etc/passwd".to_owned(), "not_plain_path"),
            ("x/.GIT/config".to_owned(), "not_plain_path"),
            ("y/.git. /config".to_owned(), "not_plain_path"),
            ("z/GIT~1/hooks/post-checkout".to_owned(), "not_plain_path"),
        ]
    );
}

#[test]
fn a_rename_out_of_a_protected_path_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let moved = FileChange {
        path: "ci.yml".into(),
        status: ChangeStatus::Renamed {
            from: ".github/workflows/ci.yml".into(),
        },
    };
    let found = kinds(&run(dir.path(), &[moved], "", &Policy::default()));
    assert_eq!(
        found,
        [(".github/workflows/ci.yml".to_owned(), "protected")]
    );
}

#[test]
fn symlinks_out_of_the_tree_or_into_git_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join("sub")).unwrap();
    let links = [
        ("etc", "/etc"),
        ("up", "../outside"),
        ("sub/up2", "../../outside"),
        ("hooks", ".git/hooks"),
        ("sub/ok", "../fine.txt"),
        ("ok", "sub/ok"),
    ];
    for (link, target) in links {
        std::os::unix::fs::symlink(target, root.join(link)).unwrap();
    }
    std::os::unix::fs::symlink("/tmp", root.join("dirlink")).unwrap();
    let mut changes: Vec<FileChange> = links.iter().map(|(l, _)| change(l)).collect();
    changes.push(change("dirlink/planted.txt"));
    let found = kinds(&run(root, &changes, "", &Policy::default()));
    assert_eq!(
        found,
        [
            ("etc".to_owned(), "symlink_out"),
            ("up".to_owned(), "symlink_out"),
            ("sub/up2".to_owned(), "symlink_out"),
            ("hooks".to_owned(), "symlink_out"),
            ("dirlink/planted.txt".to_owned(), "symlink_on_the_way"),
        ]
    );
}

#[test]
fn size_limits_are_enforced() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("big.txt"), "y\n".repeat(600)).unwrap();
    let mut blob = vec![0u8; 300];
    blob.extend_from_slice(b"data");
    std::fs::write(root.join("blob.bin"), &blob).unwrap();
    let mut policy = Policy::default();
    policy.limits = PatchLimits {
        max_files: 2,
        max_added_lines: 10,
        max_added_bytes: 100,
        max_file_bytes: 1000,
        max_binary_bytes: 200,
    };
    let changes = [change("big.txt"), change("blob.bin"), change("c.txt")];
    let lines: Vec<&str> = vec!["y"; 600];
    let diff = added_diff("big.txt", &lines);
    let found = kinds(&run(root, &changes, &diff, &policy));
    assert_eq!(
        found,
        [
            ("*".to_owned(), "too_many_files"),
            ("big.txt".to_owned(), "file_too_large"),
            ("blob.bin".to_owned(), "binary_too_large"),
            ("*".to_owned(), "too_many_added_lines"),
            ("*".to_owned(), "too_many_added_bytes"),
        ]
    );
}

#[test]
fn secrets_in_added_lines_are_refused_without_quoting_them() {
    let dir = tempfile::tempdir().unwrap();
    let changes = [
        "raw.txt",
        "wrapped.txt",
        "token.txt",
        "clean.txt",
        "auth.txt",
    ]
    .map(change);
    let b64 = meta_agent_redact::base64(CANARY.as_bytes());
    let (first, second) = b64.split_at(b64.len() / 2);
    let mut diff = added_diff("raw.txt", &["ok", &format!("key = \"{CANARY}\"")]);
    diff.push_str(&added_diff("wrapped.txt", &[first, second]));
    diff.push_str(&added_diff(
        "token.txt",
        &["ghp_abcdefghijklmnopqrstuvwxyz0123"],
    ));
    diff.push_str(&added_diff(
        "clean.txt",
        &[
            "nothing to see",
            "// the token auto-renewal.happens-later here",
        ],
    ));
    diff.push_str(&added_diff(
        "auth.txt",
        &["Authorization: token 0a1b2c3d4e5f6a7b8c9d"],
    ));
    let found = run(dir.path(), &changes, &diff, &Policy::default());
    let lines = lines(&found);
    assert_eq!(
        lines,
        [
            "raw.txt: adds a secret (secret) at line 2",
            "wrapped.txt: adds a secret (secret) across lines",
            "token.txt: adds a secret (github) at line 1",
            "auth.txt: adds a secret (authorization) at line 1",
        ]
    );
    assert!(lines.iter().all(|l| !l.contains(CANARY)));
}

/// A secret the bot holds, put into a committed file's name (raw, base64-encoded, split
/// across directories) or a link's target, is refused, and the refusal does not quote it.
#[test]
fn secrets_in_file_names_and_link_targets_are_refused_without_quoting_them() {
    let dir = tempfile::tempdir().unwrap();
    let b64 = meta_agent_redact::base64(CANARY.as_bytes());
    let (first, second) = CANARY.split_at(10);
    let split = format!("{first}/{second}.txt");
    let names = [format!("raw-{CANARY}.txt"), format!("{b64}.txt"), split];
    std::os::unix::fs::symlink(format!("x{CANARY}"), dir.path().join("link")).unwrap();
    let mut changes: Vec<FileChange> = names.iter().map(|n| change(n)).collect();
    changes.push(change("link"));
    changes.push(change("clean.txt"));
    let found = run(dir.path(), &changes, "", &Policy::default());
    let secret: Vec<&Refusal> = found
        .iter()
        .filter(|r| matches!(r.why, Why::Secret { .. }))
        .collect();
    assert_eq!(secret.len(), 4, "{found:?}");
    for line in lines(&found) {
        assert!(!line.contains(CANARY), "{line}");
    }
    let shown = secret[0].path.as_deref().unwrap_or_default();
    assert!(shown.contains("[secret]"), "{found:?}");
}

#[test]
fn a_secret_in_a_binary_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut blob = b"\0\0header".to_vec();
    blob.extend_from_slice(CANARY.as_bytes());
    std::fs::write(dir.path().join("x.bin"), blob).unwrap();
    let diff = "diff --git a/x.bin b/x.bin\nnew file mode 100644\nBinary files /dev/null and b/x.bin differ\n";
    let found = kinds(&run(
        dir.path(),
        &[change("x.bin")],
        diff,
        &Policy::default(),
    ));
    assert_eq!(found, [("x.bin".to_owned(), "secret")]);
}

#[test]
fn diff_headers_and_hunks_are_read() {
    assert_eq!(header_path("a/x y.txt b/x y.txt"), "x y.txt");
    assert_eq!(header_path("\"a/t\\tab\" \"b/t\\tab\""), "t\tab");
    assert_eq!(unquote("\"b/caf\\303\\251\""), "b/café");
    assert_eq!(hunk_start("-1,3 +7,4 @@ fn x()"), 7);
    let diff =
        "diff --git a/m.txt b/m.txt\n--- a/m.txt\n+++ b/m.txt\n@@ -3,2 +3,3 @@\n a\n-b\n+c\n+d\n";
    let files = added_lines(diff);
    assert_eq!(files[0].path, "m.txt");
    assert_eq!(files[0].lines, [(4, "c".to_owned()), (5, "d".to_owned())]);
}
