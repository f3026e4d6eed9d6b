//! The real binary on real open-source projects, as their developers have them: a Python library
//! (humanize: hatch, a `src/` layout, pytest configured in `pyproject.toml`, ruff configured and
//! pinned), a Rust crate (strsim: nightly-only benchmarks, unit and integration tests) and a Go
//! module (go-cmp). Each comes from its package registry at its released version
//! (`scripts/real-projects.sh`, which `scripts/test.sh` runs; fixtures/README.md names source,
//! version and licence), is committed as it is into a scratch repository, and:
//!
//! - `meta-agent gates` passes at that commit with no configuration at all;
//! - for humanize and strsim, at a real historical bug (the upstream fix reverted, the test that
//!   came with it kept), `meta-agent run` with a scripted model that answers with the upstream
//!   fix commits a verified fix that touches only the fixed file.
//!
//! A project that is missing fails its test loudly, naming the script: nothing here is skipped.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::{Value, json};

use crate::common::git;
use crate::common::mock_llm::{MockLlm, openai_answer};

/// `target/real-projects/<relative>`, which `scripts/real-projects.sh` fills.
fn project(relative: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/real-projects")
        .join(relative);
    assert!(
        path.exists(),
        "{} is missing: run scripts/real-projects.sh (scripts/test.sh runs it) to fetch the real \
         projects from their registries",
        path.display()
    );
    path
}

/// The project committed as it is into a scratch repository (with a local bare remote).
fn committed(relative: &str) -> (tempfile::TempDir, PathBuf) {
    crate::common::scratch_repo(&project(relative))
}

/// `PATH` with the Python project's own environment first (its developers' virtualenv).
fn python_path() -> String {
    let venv = project("python/venv/bin");
    let rest = std::env::var("PATH").unwrap_or_default();
    format!("{}:{rest}", venv.display())
}

/// `meta-agent gates --json` in `work` with `path` as PATH; exit code, summary, seconds.
fn gates(work: &Path, path: Option<&str>) -> (i32, Value, f64) {
    let started = Instant::now();
    let mut cmd = crate::common::meta_agent();
    if let Some(path) = path {
        cmd.env("PATH", path);
    }
    let out = cmd
        .arg("--repo")
        .arg(work)
        .args(["gates", "--json"])
        .output()
        .unwrap();
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|err| {
        panic!("{err}: {}", String::from_utf8_lossy(&out.stderr));
    });
    let seconds = started.elapsed().as_secs_f64();
    eprintln!("real project {}: gates in {seconds:.1} s", work.display());
    (out.status.code().unwrap_or(-1), summary, seconds)
}

/// The names and results of the gates that ran, in order.
fn gate_results(summary: &Value) -> Vec<(String, bool)> {
    summary["gates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|gate| {
            (
                gate["name"].as_str().unwrap().to_owned(),
                gate["passed"].as_bool().unwrap(),
            )
        })
        .collect()
}

fn tests_passed(summary: &Value) -> u64 {
    summary["gates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|gate| gate["name"] == "tests")
        .and_then(|gate| gate["tests"]["passed"].as_u64())
        .unwrap_or(0)
}

/// Replaces the one occurrence of `fixed` by `buggy` in `file`, and commits it: the upstream fix
/// reverted, everything else (its test included) as released.
fn revert_fix(work: &Path, file: &str, fixed: &str, buggy: &str) {
    let path = work.join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.matches(fixed).count(), 1, "the fix in {file}");
    std::fs::write(&path, text.replacen(fixed, buggy, 1)).unwrap();
    git(work, &["commit", "-q", "-am", "Revert the upstream fix"]);
}

/// The scripted model: one answer that makes the upstream fix and finishes.
fn upstream_fix(
    file: &str,
    buggy: &str,
    fixed: &str,
    summary: &str,
) -> Vec<crate::common::mock_llm::Reply> {
    let edit = json!({"path": file, "old_string": buggy, "new_string": fixed}).to_string();
    let finish = json!({ "summary": summary }).to_string();
    vec![openai_answer(
        "",
        &[
            ("call_e", "edit_file", &edit),
            ("call_f", "finish", &finish),
        ],
        "tool_calls",
    )]
}

/// `meta-agent run --json` with the model configured outside the repository (so the project
/// itself still has no configuration); exit code, outcome, seconds.
async fn run(work: &Path, base_url: &str, path: Option<String>, task: &str) -> (i32, Value, f64) {
    let config_dir = tempfile::tempdir().unwrap();
    let config = config_dir.path().join("llm.yml");
    std::fs::write(
        &config,
        format!(
            "version: 1\nllm: {{provider: openai, base_url: \"{base_url}\", model: test-model, \
             stream: false}}\n"
        ),
    )
    .unwrap();
    let work = work.to_owned();
    let task = task.to_owned();
    let started = Instant::now();
    let out = tokio::task::spawn_blocking(move || {
        let mut cmd = crate::common::meta_agent();
        if let Some(path) = path {
            cmd.env("PATH", path);
        }
        cmd.env("OPENAI_API_KEY", "sk-test-real-projects")
            .arg("--repo")
            .arg(&work)
            .arg("--config")
            .arg(&config)
            .args(["run", "--text", &task, "--json"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let seconds = started.elapsed().as_secs_f64();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let outcome: Value = stdout
        .lines()
        .last()
        .and_then(|line| serde_json::from_str(line).ok())
        .unwrap_or_else(|| {
            panic!(
                "no outcome line; stderr:\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    eprintln!("real project run: {seconds:.1} s");
    (out.status.code().unwrap_or(-1), outcome, seconds)
}

#[test]
fn humanize_gates_pass_at_head_with_no_configuration() {
    let (_dir, work) = committed("python/humanize");
    let (code, summary, _) = gates(&work, Some(&python_path()));
    assert_eq!(code, 0, "{summary:#}");
    assert_eq!(
        gate_results(&summary),
        [("lint".to_owned(), true), ("tests".to_owned(), true)],
        "ruff (configured in pyproject.toml) and pytest: {summary:#}"
    );
    assert!(tests_passed(&summary) >= 500, "{summary:#}");
}

/// humanize 4.10.0 fixed `metric()` with a precision below the value's digits (a negative
/// format precision raised ValueError) and added the cases to `tests/test_number.py`.
const HUMANIZE_FIXED: &str = "\".%if\" % max(0, precision - (exponent % 3) - 1)";
const HUMANIZE_BUGGY: &str = "\".%if\" % (precision - (exponent % 3) - 1)";

#[tokio::test(flavor = "multi_thread")]
async fn humanize_metric_precision_bug_is_fixed_by_the_upstream_change() {
    let (_dir, work) = committed("python/humanize");
    let file = "src/humanize/number.py";
    revert_fix(&work, file, HUMANIZE_FIXED, HUMANIZE_BUGGY);
    let mock = MockLlm::start(upstream_fix(
        file,
        HUMANIZE_BUGGY,
        HUMANIZE_FIXED,
        "never give format() a negative precision in metric()",
    ))
    .await;
    let (code, outcome, _) = run(
        &work,
        &mock.base_url,
        Some(python_path()),
        "Fix the failing metric tests",
    )
    .await;
    assert_eq!(code, 0, "{outcome:#}");
    assert_eq!(outcome["outcome"], "committed", "{outcome:#}");
    assert_eq!(mock.requests().len(), 1, "{outcome:#}");
    assert_eq!(
        crate::common::committed_project_files(&work, &outcome),
        [file],
        "{outcome:#}"
    );
}

#[test]
fn strsim_gates_pass_at_head_with_no_configuration() {
    let (_dir, work) = committed("rust/strsim");
    let (code, summary, _) = gates(&work, None);
    assert_eq!(code, 0, "{summary:#}");
    assert_eq!(
        gate_results(&summary),
        [
            ("fmt".to_owned(), true),
            ("clippy".to_owned(), true),
            ("tests".to_owned(), true)
        ],
        "clippy leaves out the nightly benchmarks: {summary:#}"
    );
    assert!(tests_passed(&summary) >= 90, "{summary:#}");
}

/// strsim 0.11.0 limited Jaro-Winkler's common prefix to 4 characters (the algorithm's
/// definition) and changed `jaro_winkler_long_prefix` to expect 0.866.
const STRSIM_FIXED: &str = ".into_iter()\n            .take(4)\n            .zip(b)";
const STRSIM_BUGGY: &str = ".into_iter()\n            .zip(b)";

#[tokio::test(flavor = "multi_thread")]
async fn strsim_jaro_winkler_prefix_bug_is_fixed_by_the_upstream_change() {
    let (_dir, work) = committed("rust/strsim");
    let file = "src/lib.rs";
    revert_fix(&work, file, STRSIM_FIXED, STRSIM_BUGGY);
    let mock = MockLlm::start(upstream_fix(
        file,
        STRSIM_BUGGY,
        STRSIM_FIXED,
        "limit the Jaro-Winkler common prefix to 4 characters",
    ))
    .await;
    let (code, outcome, _) = run(
        &work,
        &mock.base_url,
        None,
        "Fix the failing jaro_winkler tests",
    )
    .await;
    assert_eq!(code, 0, "{outcome:#}");
    assert_eq!(outcome["outcome"], "committed", "{outcome:#}");
    assert_eq!(
        crate::common::committed_project_files(&work, &outcome),
        [file],
        "{outcome:#}"
    );
}

#[test]
fn go_cmp_gates_pass_at_head_with_no_configuration() {
    if std::process::Command::new("go")
        .arg("version")
        .output()
        .is_err()
    {
        panic!("`go` is not on PATH: scripts/test.sh installs golang-go; this test needs it");
    }
    let (_dir, work) = committed("go/go-cmp");
    let (code, summary, _) = gates(&work, None);
    assert_eq!(code, 0, "{summary:#}");
    assert_eq!(
        gate_results(&summary),
        [("tests".to_owned(), true)],
        "go test; no vet gate, since the module shows no `go vet` run: {summary:#}"
    );
}
