//! Observe first, end to end through the real binary with the mock LLM and real git: the
//! baseline gate run opens the first prompt (failures, in-repo frames, code at those frames), a
//! first-seen bug is fixed in one model call within the prompt budget, the fix is learned and a
//! recurrence is fixed with no model call though a model is configured, failures a feature task
//! does not ask about are left alone and named, and the commit subject comes from the model.

use std::path::Path;

use serde_json::{Value, json};

use crate::common::git;
use crate::common::mock_llm::{MockLlm, Recorded, openai_answer};
use crate::suite::agent::run_json;
use meta_agent::agent::tokens::TokenCounter;

/// Prompt tokens the first-seen single-file bug may cost, tool schemas included.
pub(crate) const FIRST_PROMPT_BUDGET: usize = 3_000;

/// The example with `//` in `mean`, and an `llm:` section pointing at the mock, committed.
fn broken_example(base_url: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    crate::suite::agent::example_with(&format!(
        "llm: {{provider: openai, base_url: \"{base_url}\", model: test-model, stream: false}}\n"
    ))
}

/// One answer that edits `mean` back and finishes.
fn fix_and_finish() -> crate::common::mock_llm::Reply {
    let edit = json!({"path": "calc.py", "old_string": "sum(values) // len(values)",
        "new_string": "sum(values) / len(values)"})
    .to_string();
    let finish = json!({"summary": "use true division in mean\n\nFloor division dropped the \
        fraction of float averages."})
    .to_string();
    openai_answer(
        "",
        &[
            ("call_e", "edit_file", &edit),
            ("call_f", "finish", &finish),
        ],
        "tool_calls",
    )
}

/// Everything the model was sent: the messages' text and the tool schemas.
pub(crate) fn prompt_text(request: &Recorded) -> String {
    let body = request.json();
    let messages: String = body["messages"]
        .as_array()
        .map(|all| {
            all.iter()
                .filter_map(|m| m["content"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default();
    format!("{messages}\n{}", body["tools"])
}

pub(crate) fn first_user_message(request: &Recorded) -> String {
    request.json()["messages"][1]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

pub(crate) async fn run(work: &Path, args: &[&str]) -> (i32, Value) {
    let work = work.to_owned();
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_json(&work, &args)
    })
    .await
    .unwrap()
}

fn subject(work: &Path, commit: &str) -> String {
    git(work, &["log", "-1", "--format=%s", commit])
        .trim()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_first_seen_bug_is_fixed_in_one_call_opened_by_the_baseline() {
    let mock = MockLlm::start(vec![fix_and_finish()]).await;
    let (_dir, work) = broken_example(&mock.base_url);
    let (code, outcome) = run(&work, &["run", "--text", "Fix mean of floats"]).await;
    assert_eq!(code, 0, "{outcome:#}");
    assert_eq!(outcome["outcome"], "committed", "{outcome:#}");
    assert_eq!(outcome["llm_calls"], 1, "{outcome:#}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 1, "one call: edit and finish in one answer");
    let opening = first_user_message(&requests[0]);
    assert!(opening.contains("<untrusted-failures>"), "{opening}");
    assert!(
        opening.contains("test_mean"),
        "the baseline's failure: {opening}"
    );
    assert!(
        opening.contains("sum(values) // len(values)"),
        "the code at the failing frame: {opening}"
    );
    assert!(
        !opening.contains("not on PATH"),
        "no skipped gate's noise: {opening}"
    );
    let counter = TokenCounter::for_model("gpt-4.1");
    let tokens = counter.count(&prompt_text(&requests[0]));
    assert!(
        tokens <= FIRST_PROMPT_BUDGET,
        "{tokens} prompt tokens (tool schemas included) > {FIRST_PROMPT_BUDGET}"
    );
    let commit = outcome["commit"].as_str().expect("a commit");
    assert_eq!(subject(&work, commit), "Use true division in mean");
    let body = git(&work, &["log", "-1", "--format=%b", commit]);
    assert!(body.contains("Task: Fix mean of floats"), "{body}");
    assert!(body.contains("Meta-Agent-"), "trailers in the body: {body}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_recurrence_is_fixed_from_hindsight_with_no_model_call() {
    let first = MockLlm::start(vec![fix_and_finish()]).await;
    let (_dir, work) = broken_example(&first.base_url);
    let (code, outcome) = run(&work, &["run", "--text", "Fix mean of floats"]).await;
    assert_eq!(code, 0, "{outcome:#}");
    let fix = outcome["commit"].as_str().expect("a commit").to_owned();
    let learned = git(&work, &["show", "--stat", "--format=", &fix]);
    assert!(
        learned.contains(".meta-agent/hindsight"),
        "the fix is learned with its signatures: {learned}"
    );
    // The fix is merged, then the bug comes back.
    git(&work, &["checkout", "-q", "main"]);
    git(&work, &["merge", "-q", "--ff-only", &fix]);
    let config = work.join(".meta-agent.yml");
    let second = MockLlm::start(Vec::new()).await;
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace(&first.base_url, &second.base_url);
    std::fs::write(&config, text).unwrap();
    let calc = work.join("calc.py");
    let source = std::fs::read_to_string(&calc).unwrap();
    std::fs::write(
        &calc,
        source.replacen("sum(values) / len(values)", "sum(values) // len(values)", 1),
    )
    .unwrap();
    git(&work, &["commit", "-q", "-am", "the bug comes back"]);
    let (code, outcome) = run(&work, &["run", "--text", "Fix mean of floats again"]).await;
    assert_eq!(code, 0, "{outcome:#}");
    assert_eq!(outcome["outcome"], "committed", "{outcome:#}");
    assert_eq!(outcome["llm_calls"], 0, "{outcome:#}");
    assert!(
        second.requests().is_empty(),
        "the model was configured but not called: {:?}",
        second.requests().len()
    );
    let fixed = crate::common::file_on_branch(&work, &outcome, "calc.py");
    assert!(fixed.contains("sum(values) / len(values)"), "{fixed}");
    let commit = outcome["commit"].as_str().expect("a commit");
    assert!(
        subject(&work, commit).starts_with("Apply known fix (patch: calc.py"),
        "{}",
        subject(&work, commit)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn failures_a_feature_task_does_not_ask_about_are_left_alone_and_named() {
    let write =
        json!({"path": "CHANGELOG.md", "content": "# 0.1.0\n- first release\n"}).to_string();
    let finish = json!({"summary": "add a changelog for 0.1.0"}).to_string();
    let mock = MockLlm::start(vec![openai_answer(
        "",
        &[
            ("call_w", "write_file", &write),
            ("call_f", "finish", &finish),
        ],
        "tool_calls",
    )])
    .await;
    let (_dir, work) = broken_example(&mock.base_url);
    let (code, outcome) = run(
        &work,
        &["run", "--text", "Write a CHANGELOG.md for version 0.1.0"],
    )
    .await;
    assert_eq!(code, 0, "{outcome:#}");
    assert_eq!(outcome["outcome"], "committed", "{outcome:#}");
    assert_eq!(mock.requests().len(), 1);
    let opening = first_user_message(&mock.requests()[0]);
    assert!(
        opening.contains("were there before any change"),
        "the model is told the failures are not its own: {opening}"
    );
    let commit = outcome["commit"].as_str().expect("a commit");
    assert_eq!(subject(&work, commit), "Add a changelog for 0.1.0");
    let body = git(&work, &["log", "-1", "--format=%b", commit]);
    assert!(
        body.contains("left as they were (failing before this change, not asked about)"),
        "{body}"
    );
    let calc = git(&work, &["show", &format!("{commit}:calc.py")]);
    assert!(
        calc.contains("sum(values) // len(values)"),
        "untouched: {calc}"
    );
}

/// Commits what `work` holds, runs `task` (the scripted model fixes `mean`), and checks the
/// verified commit changes `calc.py` alone; returns the commit.
async fn commit_then_fix_calc(work: &Path, message: &str, task: &str) -> String {
    git(work, &["add", "-A"]);
    git(work, &["commit", "-q", "-m", message]);
    let (code, outcome) = run(work, &["run", "--text", task]).await;
    assert_eq!(code, 0, "{outcome:#}");
    assert_eq!(outcome["outcome"], "committed", "{outcome:#}");
    assert_eq!(
        crate::common::committed_project_files(work, &outcome),
        ["calc.py"],
        "{outcome:#}"
    );
    outcome["commit"].as_str().expect("a commit").to_owned()
}

/// A "fix the failing test" task on a project whose configured ruff already finds an unused
/// import in another module: the test is fixed, the old finding is reported and left (the
/// catalog's `ruff check --fix` never runs; the model is told it is not its to fix), and the
/// commit changes only the file the fix needed.
#[tokio::test(flavor = "multi_thread")]
async fn an_old_lint_finding_is_reported_not_fixed_by_a_test_fixing_task() {
    let mock = MockLlm::start(vec![fix_and_finish()]).await;
    let (_dir, work) = broken_example(&mock.base_url);
    std::fs::write(
        work.join("util.py"),
        "import os\n\n\ndef noop():\n    return None\n",
    )
    .unwrap();
    let commit = commit_then_fix_calc(
        &work,
        "a module with an old unused import",
        "Fix the failing test",
    )
    .await;
    let util = git(&work, &["show", &format!("{commit}:util.py")]);
    assert!(util.starts_with("import os"), "left as it was: {util}");
    let body = git(&work, &["log", "-1", "--format=%B", &commit]);
    assert!(
        body.contains("left as they were (failing before this change, not asked about)")
            && body.contains("F401"),
        "{body}"
    );
    let opening = first_user_message(&mock.requests()[0]);
    assert!(
        opening.contains("not what the task asks") && opening.contains("F401"),
        "the model is told the finding is not its to fix: {opening}"
    );
}

/// What the setup commands and the gates write is the environment's, never the change: a
/// lockfile and a cache directory setup adds, a tracked file setup rewrites (put back as
/// committed), a report a gate writes beside the code. The verified commit holds the fix alone.
#[tokio::test(flavor = "multi_thread")]
async fn files_written_by_setup_and_by_the_gates_are_never_part_of_the_change() {
    let mock = MockLlm::start(vec![fix_and_finish()]).await;
    let (_dir, work) = broken_example(&mock.base_url);
    std::fs::write(work.join("NOTES.txt"), "as committed\n").unwrap();
    let config = work.join(".meta-agent.yml");
    let text = std::fs::read_to_string(&config).unwrap();
    let text = text.replacen(
        "gates:\n",
        "setup:\n  - run: \"echo '{}' > package-lock.json && mkdir -p .tool-cache && echo x > \
         .tool-cache/blob && echo rewritten >> NOTES.txt\"\ngates:\n  - name: report\n    \
         run: \"echo report > gate-report.txt\"\n",
        1,
    );
    std::fs::write(&config, text).unwrap();
    let commit = commit_then_fix_calc(
        &work,
        "setup and a gate that write files",
        "Fix mean of floats",
    )
    .await;
    let notes = git(&work, &["show", &format!("{commit}:NOTES.txt")]);
    assert_eq!(notes, "as committed\n");
}

/// The learned entry files a commit added, with their text.
fn learned_entries(work: &Path, commit: &str) -> Vec<(String, String)> {
    git(
        work,
        &[
            "show",
            "--name-only",
            "--format=",
            commit,
            "--",
            ".meta-agent/hindsight/entries",
        ],
    )
    .lines()
    .filter(|line| line.ends_with(".yaml"))
    .map(|path| {
        let text = git(work, &["show", &format!("{commit}:{path}")]);
        (path.to_owned(), text)
    })
    .collect()
}

/// A store entry of the same family as the `test_mean` failure but another signature (another
/// test id), whose patch would fix the bug if applied: shown to the model as a hint with its
/// diff, and never applied (the model is called, once).
#[tokio::test(flavor = "multi_thread")]
async fn a_near_miss_is_a_hint_with_its_diff_in_the_first_prompt_never_applied() {
    let learn = MockLlm::start(vec![fix_and_finish()]).await;
    let (_dir, first) = broken_example(&learn.base_url);
    let (code, outcome) = run(&first, &["run", "--text", "Fix mean of floats"]).await;
    assert_eq!(code, 0, "{outcome:#}");
    let entries = learned_entries(&first, outcome["commit"].as_str().expect("a commit"));
    let (learned_path, learned) = entries
        .iter()
        .find(|(_, text)| text.contains("test_mean"))
        .unwrap_or_else(|| panic!("the fix was learned: {entries:?}"));
    let old_id = Path::new(learned_path)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap();
    // Another repository's entry: the same failure in a test of another name.
    let near_id = "0123456789abcdef";
    let near = learned
        .replace(old_id, near_id)
        .replace("test_mean", "test_average_of_floats");
    let mock = MockLlm::start(vec![fix_and_finish()]).await;
    let (_dir2, work) = broken_example(&mock.base_url);
    let store = work.join(".meta-agent/hindsight/entries/01");
    std::fs::create_dir_all(&store).unwrap();
    std::fs::write(store.join(format!("{near_id}.yaml")), &near).unwrap();
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "a store with a near miss"]);
    let (code, outcome) = run(&work, &["run", "--text", "Fix mean of floats"]).await;
    assert_eq!(code, 0, "{outcome:#}");
    assert_eq!(outcome["outcome"], "committed", "{outcome:#}");
    let requests = mock.requests();
    assert_eq!(
        requests.len(),
        1,
        "a near miss is never applied: the model is called"
    );
    let opening = first_user_message(&requests[0]);
    assert!(opening.contains("A near miss from hindsight"), "{opening}");
    assert!(opening.contains("test_average_of_floats"), "{opening}");
    assert!(
        opening.contains("-    return sum(values) // len(values)")
            && opening.contains("+    return sum(values) / len(values)"),
        "the hint carries its diff: {opening}"
    );
}

/// A Go module (only a go.mod to detect it by): the Go preset's gate runs for real (`go test`,
/// which runs vet's high-confidence checks itself), the failing test is read with its file:line into the first prompt, and the fix
/// is verified by the same gates.
#[tokio::test(flavor = "multi_thread")]
async fn a_go_module_is_detected_and_its_failing_test_read_with_file_and_line() {
    if std::process::Command::new("go")
        .arg("version")
        .output()
        .is_err()
    {
        panic!("`go` is not on PATH: scripts/test.sh installs golang-go; this test needs it");
    }
    let edit = json!({"path": "calc.go", "old_string": "float64(len(values)-1)",
        "new_string": "float64(len(values))"})
    .to_string();
    let finish = json!({"summary": "divide the mean by the number of values"}).to_string();
    let mock = MockLlm::start(vec![openai_answer(
        "",
        &[
            ("call_e", "edit_file", &edit),
            ("call_f", "finish", &finish),
        ],
        "tool_calls",
    )])
    .await;
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/go-calc");
    let (_dir, work) = crate::common::scratch_repo(&source);
    let calc = work.join("calc.go");
    let text = std::fs::read_to_string(&calc).unwrap();
    std::fs::write(
        &calc,
        text.replacen("float64(len(values))", "float64(len(values)-1)", 1),
    )
    .unwrap();
    std::fs::write(
        work.join(".meta-agent.yml"),
        format!(
            "version: 1\nllm: {{provider: openai, base_url: \"{}\", model: test-model, \
             stream: false}}\n",
            mock.base_url
        ),
    )
    .unwrap();
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "break Mean"]);
    let (code, outcome) = run(&work, &["run", "--text", "Fix the failing Go test"]).await;
    assert_eq!(code, 0, "{outcome:#}");
    assert_eq!(outcome["outcome"], "committed", "{outcome:#}");
    let gates = outcome["gates"].as_str().unwrap_or_default();
    assert!(
        gates.contains("tests=pass") && !gates.contains("vet"),
        "the Go preset's tests gate, verified; no vet gate, since the module shows no `go vet` \
         run: {outcome:#}"
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    let opening = first_user_message(&requests[0]);
    assert!(
        opening.contains("1. TestMean (calc_test.go:13; gate tests)"),
        "the failure with its file:line: {opening}"
    );
    assert!(
        opening.contains("Mean([]float64{1, 2, 3, 4})"),
        "the code at the failing frame: {opening}"
    );
}

/// The model edits `mean` and the LLM budget ends the act before it calls `finish`; the gates
/// verify the edit: the commit is named by the definition its change is in, never by why the
/// act stopped, and in the style of the repository's history (Conventional Commits here).
#[tokio::test(flavor = "multi_thread")]
async fn a_fix_verified_after_the_budget_ran_out_is_named_by_its_change_in_the_repositorys_style() {
    let edit = json!({"path": "calc.py", "old_string": "sum(values) // len(values)",
        "new_string": "sum(values) / len(values)"})
    .to_string();
    let mock = MockLlm::start(vec![openai_answer(
        "",
        &[("call_e", "edit_file", &edit)],
        "tool_calls",
    )])
    .await;
    let (_dir, work) = crate::suite::agent::example_with(&format!(
        "llm: {{provider: openai, base_url: \"{}\", model: test-model, stream: false, \
         max_calls: 1}}\n",
        mock.base_url
    ));
    for subject in [
        "feat(calc): add divide",
        "fix(calc): divide by zero raises",
        "docs: say how to run the tests",
        "test(calc): cover the empty mean",
        "chore(ci): pin ruff",
    ] {
        git(&work, &["commit", "-q", "--allow-empty", "-m", subject]);
    }
    let (code, outcome) = run(&work, &["run", "--text", "Fix mean of floats"]).await;
    assert_eq!(code, 0, "{outcome:#}");
    assert_eq!(outcome["outcome"], "committed", "{outcome:#}");
    assert_eq!(mock.requests().len(), 1, "the budget allowed one call");
    let commit = outcome["commit"].as_str().expect("a commit");
    assert_eq!(subject(&work, commit), "fix(calc): mean in calc.py");
    let body = git(&work, &["log", "-1", "--format=%b", commit]);
    assert!(
        body.contains("the LLM budget ran out: 1 of 1 LLM calls made"),
        "the body still says how the act ended: {body}"
    );
}
