//! Hostile repository content is an outcome, not a crash (issue #29, point 4): `.git` files with
//! `gitdir:` pointers in subdirectories, a `.gitmodules`, nested repositories. The issue's route:
//! the model's command plants them (the act is refused and reported, the work goes on and is
//! committed); ours: the repository's own test run makes a nested repository while the gates run
//! (left out of the commit by construction; the run still ends with its outcome).

use serde_json::json;

use super::{broken_example, call, finish, fix, openai_llm, run};
use crate::common::mock_llm::MockLlm;

/// A `run_command` call running `line` in `sh`.
fn shell(id: &str, line: &str) -> crate::common::mock_llm::Reply {
    call(id, "run_command", &json!({"argv": ["sh", "-c", line]}))
}

#[tokio::test(flavor = "multi_thread")]
async fn gitdir_pointers_and_gitmodules_planted_by_the_model_are_refused_and_reported() {
    let plant = "mkdir -p tools/inner && printf 'gitdir: ../.git/modules/tools\\n' > tools/.git \
                 && printf 'gitdir: /tmp\\n' > tools/inner/.git && echo x > tools/x.py \
                 && printf '[submodule \"tools\"]\\n\\tpath = tools\\n\\turl = ../x\\n' > .gitmodules";
    let mock = MockLlm::start(vec![
        shell("c_plant", plant),
        call("c_fix", "edit_file", &fix()),
        finish("mean divides exactly"),
        call("c_fix2", "edit_file", &fix()),
        finish("mean divides exactly"),
    ])
    .await;
    let (_dir, work) = broken_example(&openai_llm(&mock.base_url), |_| {});
    let ran = run(&work, &["run", "--text", "Fix mean"]).await;
    assert_ne!(ran.code, 3, "never an internal error: {}", ran.stderr);
    assert_eq!(
        ran.outcome["outcome"], "committed",
        "{}\n{}",
        ran.stdout, ran.stderr
    );
    let report = ran.session_file(&work, "report.md");
    assert!(
        report.contains("tools/.git: a nested git repository or `gitdir:` pointer; removed"),
        "{report}"
    );
    let tree = crate::common::git(
        &work,
        &[
            "ls-tree",
            "-r",
            "--name-only",
            crate::common::run_branch(&ran.outcome),
        ],
    );
    assert!(
        !tree.contains("tools/") && !tree.contains(".gitmodules"),
        "{tree}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_nested_repository_made_by_the_test_run_is_left_out_never_a_crash() {
    let mock = MockLlm::start(vec![call("c_fix", "edit_file", &fix()), finish("fixed")]).await;
    let (_dir, work) = broken_example(&openai_llm(&mock.base_url), |work| {
        let conftest = "import os, pathlib\n\
            root = pathlib.Path(__file__).resolve().parent.parent\n\
            for sub in ('vendor/lib', 'Odd name \\u00e9/x'):\n\
            \x20   d = root / sub / '.git'\n\
            \x20   d.mkdir(parents=True, exist_ok=True)\n\
            \x20   (d / 'HEAD').write_text('ref: refs/heads/main\\n')\n\
            (root / 'vendor' / 'lib' / 'code.py').write_text('x = 1\\n')\n\
            (root / 'ptr').mkdir(exist_ok=True)\n\
            (root / 'ptr' / '.git').write_text('gitdir: ../.git\\n')\n";
        std::fs::write(work.join("tests/conftest.py"), conftest).unwrap();
    });
    let ran = run(&work, &["run", "--text", "Fix mean"]).await;
    assert_ne!(ran.code, 3, "never an internal error: {}", ran.stderr);
    let outcome = ran.outcome["outcome"].as_str().unwrap_or_default();
    assert!(
        ["committed", "escalated"].contains(&outcome),
        "{}",
        ran.stdout
    );
    let report = ran.session_file(&work, "report.md");
    assert!(!report.is_empty());
}
