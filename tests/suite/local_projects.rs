//! End to end: local runs on projects that live inside another project, as people's checkouts
//! do (a crate made by `cargo init`, and one from crates.io, in a directory whose `Cargo.toml` is a workspace that does not list it, a Python
//! package with a `pyproject.toml` one level up). The run's worktree is outside the checkout, so
//! no tool that searches upward from it (cargo's workspace root, pytest's rootdir) finds the
//! user's project or its parent: a scripted mock model fixes the failing test, the gates verify
//! it, the fix is committed. Real tools throughout: cargo, cargo-nextest, pytest.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::local::{Invocation, invoke};
use crate::common::mock_llm::{MockLlm, streamed_tool_call};
use crate::common::{copy_tree, git};

/// A directory holding `parent_manifest` (the parent project's file, named `name`) and the
/// checkout `child` beneath it, made by `make`, committed with `break_it` applied on top.
fn nested(
    (name, parent_manifest): (&str, &str),
    child: &str,
    make: impl FnOnce(&Path),
    break_it: impl FnOnce(&Path),
) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let parent = dir.path().join("parent");
    let work = parent.join(child);
    std::fs::create_dir_all(&work).unwrap();
    make(&work);
    std::fs::write(parent.join(name), parent_manifest).unwrap();
    git(&work, &["init", "-q"]);
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "initial"]);
    break_it(&work);
    git(&work, &["commit", "-q", "-am", "break it"]);
    (dir, work)
}

fn replace(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{from} not in {}", path.display());
    std::fs::write(path, text.replacen(from, to, 1)).unwrap();
}

/// The mock model's fix: one edit of `path`, then `finish`.
async fn model_fixing(path: &str, from: &str, to: &str) -> MockLlm {
    MockLlm::start(vec![
        streamed_tool_call(
            "call_edit",
            "edit_file",
            serde_json::json!({"path": path, "old_string": from, "new_string": to}),
        ),
        streamed_tool_call(
            "call_finish",
            "finish",
            serde_json::json!({"summary": "the failing test passes again"}),
        ),
    ])
    .await
}

/// `meta-agent run --text TEXT` in `work` with the mock model, the user's shell setting `shell`;
/// the outcome (last line), checked committed and verified.
async fn committed_by_model(
    work: &Path,
    mock: &MockLlm,
    text: &'static str,
    shell: Vec<(&'static str, String)>,
) -> Value {
    let url = mock.base_url.clone();
    let at = work.to_owned();
    let (code, lines, _) = tokio::task::spawn_blocking(move || {
        let how = Invocation {
            base_url: Some(&url),
            key: true,
            kill_at: None,
            env: &shell,
        };
        invoke(&at, how, &["run", "--text", text])
    })
    .await
    .unwrap();
    let outcome = lines.last().cloned().unwrap_or(Value::Null);
    assert_eq!(code, Some(0), "{lines:#?}");
    assert_eq!(outcome["outcome"], "committed", "{outcome:#}");
    let verified = lines.iter().any(|e| {
        e["event"] == "phase_finished" && e["outcome"] == "pristine checkout: gates passed"
    });
    assert!(verified, "verified on a pristine checkout: {lines:#?}");
    let message = crate::common::branch_message(work, &outcome);
    assert!(
        message.contains("Verified by the repository's gates"),
        "{message}"
    );
    outcome
}

/// A parent workspace that does not list the crate (it excludes it, so `cargo` works in the
/// user's own checkout too).
const WORKSPACE: (&str, &str) = (
    "Cargo.toml",
    "[workspace]\nmembers = []\nexclude = [\"c\", \"fnv\"]\n",
);

#[tokio::test(flavor = "multi_thread")]
async fn a_new_rust_crate_inside_a_parent_workspace_is_fixed_and_committed() {
    let (dir, work) = nested(
        WORKSPACE,
        "c",
        |work| {
            let out = std::process::Command::new("cargo")
                .args(["init", "--lib", "--vcs", "none", "--name", "c"])
                .arg(work)
                .env_remove("CARGO_TARGET_DIR")
                .output()
                .expect("cargo runs");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            std::fs::write(work.join(".gitignore"), "/target\nCargo.lock\n").unwrap();
        },
        |work| replace(&work.join("src/lib.rs"), "left + right", "left - right"),
    );
    let mock = model_fixing("src/lib.rs", "left - right", "left + right").await;
    // The user's shell points cargo at a shared build directory outside the checkout: the
    // bot's gates build in their own tree (the sandbox would refuse the writes, and the user's
    // builds must not read what the model's code built).
    let shared = dir.path().join("shared-target");
    let shell = vec![
        ("CARGO_TARGET_DIR", shared.display().to_string()),
        ("CARGO_BUILD_TARGET_DIR", shared.display().to_string()),
    ];
    let outcome = committed_by_model(&work, &mock, "Make the tests pass", shell).await;
    assert!(crate::common::file_on_branch(&work, &outcome, "src/lib.rs").contains("left + right"));
    assert!(
        !shared.exists(),
        "the bot built into the user's shared target directory"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_real_crate_from_crates_io_inside_a_parent_workspace_is_fixed_and_committed() {
    let fixture = crate::common::fixtures().join("crates/fnv-1.0.7");
    let (_dir, work) = nested(
        WORKSPACE,
        "fnv",
        |work| {
            copy_tree(&fixture, work);
            // fnv 1.0.7 predates today's rustfmt and clippy: their findings are not this task's.
            std::fs::write(
                work.join(".meta-agent.yml"),
                "version: 1\npreset: rust\ngates:\n  - {name: fmt, enabled: false}\n  - {name: \
                 clippy, enabled: false}\n",
            )
            .unwrap();
        },
        |work| {
            replace(
                &work.join("lib.rs"),
                "hash = hash ^ (*byte as u64);",
                "hash = hash | (*byte as u64);",
            )
        },
    );
    let mock = model_fixing(
        "lib.rs",
        "hash = hash | (*byte as u64);",
        "hash = hash ^ (*byte as u64);",
    )
    .await;
    let outcome = committed_by_model(&work, &mock, "Make the tests pass", Vec::new()).await;
    assert_eq!(
        crate::common::file_on_branch(&work, &outcome, "lib.rs"),
        std::fs::read_to_string(fixture.join("lib.rs")).unwrap(),
        "the crate as crates.io has it"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_python_project_with_a_pyproject_one_level_up_is_fixed_and_committed() {
    // The parent's pytest configuration would fail any run that read it.
    let parent = (
        "pyproject.toml",
        "[project]\nname = \"monorepo\"\nversion = \"0\"\n\n[tool.pytest.ini_options]\naddopts \
         = \"-p no_such_plugin_of_the_parent\"\n",
    );
    let (_dir, work) = nested(
        parent,
        "calc",
        |work| {
            copy_tree(&crate::common::example(), work);
            // Its own pyproject.toml configures no pytest: pytest looks further up for one.
            replace(
                &work.join("pyproject.toml"),
                "[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\npythonpath = [\".\"]\n",
                "",
            );
        },
        |work| {
            replace(
                &work.join("calc.py"),
                "sum(values) / len(values)",
                "sum(values) // len(values)",
            )
        },
    );
    let mock = model_fixing(
        "calc.py",
        "sum(values) // len(values)",
        "sum(values) / len(values)",
    )
    .await;
    let outcome = committed_by_model(&work, &mock, "Make the tests pass", Vec::new()).await;
    assert!(
        crate::common::file_on_branch(&work, &outcome, "calc.py").contains("sum(values) / len")
    );
}
