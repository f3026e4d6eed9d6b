//! Integration tests: the GitHub Action's contract and the workflows, read as data.
//!
//! `action.yml` must hand every input to its step only as an environment variable (never a
//! `${{ }}` inside a `run:` script), map every output to `steps.run.outputs.<name>`, and pin every
//! `uses:` to a full commit SHA; `.github/workflows/` likewise; the dogfooding workflow keeps least
//! privilege, a concurrency group per issue and a timeout; the examples cover one trigger each.
//! Every checker is also run on a small bad document, so each assertion is shown able to fail.
//! zizmor and actionlint themselves run in scripts/test.sh, not here; the `pull_request_target`
//! trap is linted in `workflow_trap.rs`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_yaml::Value;

/// Each action input, the id of the step that receives it, and the environment variable it becomes.
const INPUT_ENV: &[(&str, &str, &str)] = &[
    ("config", "run", "META_AGENT_CONFIG"),
    ("llm-provider", "run", "META_AGENT_LLM_PROVIDER"),
    ("model", "run", "META_AGENT_MODEL"),
    ("llm-base-url", "run", "META_AGENT_LLM_BASE_URL"),
    ("max-iterations", "run", "META_AGENT_MAX_ITERATIONS"),
    ("budget", "run", "META_AGENT_BUDGET_USD"),
    ("dry-run", "run", "META_AGENT_DRY_RUN"),
    ("trigger-phrase", "run", "META_AGENT_TRIGGER"),
    ("label", "run", "META_AGENT_LABEL"),
    ("bot-login", "run", "META_AGENT_BOT_LOGIN"),
    ("allow-bots", "run", "META_AGENT_ALLOW_BOTS"),
    ("job-minutes", "run", "META_AGENT_JOB_MINUTES"),
    (
        "pull-request-checks",
        "run",
        "META_AGENT_PULL_REQUEST_CHECKS",
    ),
    ("pull-request-fix", "run", "META_AGENT_PULL_REQUEST_FIX"),
    (
        "pull-request-drafts",
        "run",
        "META_AGENT_PULL_REQUEST_DRAFTS",
    ),
    (
        "pull-request-exclude",
        "run",
        "META_AGENT_PULL_REQUEST_EXCLUDE",
    ),
    ("github-token", "run", "GITHUB_TOKEN"),
    ("app-id", "run", "META_AGENT_APP_ID"),
    ("app-private-key", "run", "META_AGENT_APP_PRIVATE_KEY"),
    (
        "lift-userns-restriction",
        "userns",
        "LIFT_USERNS_RESTRICTION",
    ),
];

/// The action's outputs, each written by `meta-agent github` in the step with id `run`.
const OUTPUTS: &[&str] = &["outcome", "pr-url", "branch", "iterations", "session"];

/// The job permissions of the dogfooding workflow: exactly these, nothing more.
const AGENT_PERMISSIONS: &[(&str, &str)] = &[
    ("contents", "write"),
    ("issues", "write"),
    ("pull-requests", "write"),
    ("actions", "read"),
];

/// What an example job may ask for: the dogfooding job's permissions, or only `contents: read`
/// when a GitHub App does the writing.
const EXAMPLE_PERMISSIONS: &[(&str, &str)] = &[
    ("contents", "write"),
    ("contents", "read"),
    ("issues", "write"),
    ("pull-requests", "write"),
    ("actions", "read"),
];

/// How the examples name the Action before a user copies them: both parts are placeholders.
const EXAMPLE_ACTION: &str = "<owner>/meta-agent@<sha>";

pub(super) fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub(super) fn load(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parse(&text)
}

pub(super) fn parse(text: &str) -> Value {
    serde_yaml::from_str(text).expect("valid YAML")
}

pub(super) fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yml" || e == "yaml"))
        .collect();
    files.sort();
    files
}

pub(super) fn mapping_entries(value: &Value) -> Vec<(String, &Value)> {
    value
        .as_mapping()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| k.as_str().map(|k| (k.to_owned(), v)))
                .collect()
        })
        .unwrap_or_default()
}

pub(super) fn seq(value: &Value) -> &[Value] {
    value.as_sequence().map(Vec::as_slice).unwrap_or_default()
}

fn composite_steps(action: &Value) -> &[Value] {
    seq(&action["runs"]["steps"])
}

fn step_by_id<'a>(steps: &'a [Value], id: &str) -> Option<&'a Value> {
    steps.iter().find(|s| s["id"].as_str() == Some(id))
}

// ---- checkers: each returns the problems it found, empty when the document keeps the contract ----

/// Inputs reach steps only through `env:` as listed in `INPUT_ENV`, and no `run:` script expands
/// an expression (template injection).
fn input_problems(action: &Value) -> Vec<String> {
    let steps = composite_steps(action);
    let declared: Vec<String> = mapping_entries(&action["inputs"])
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    let mut problems = Vec::new();
    for name in &declared {
        if !INPUT_ENV.iter().any(|(input, _, _)| input == name) {
            problems.push(format!("input `{name}` is not in the contract"));
        }
    }
    for (input, step, var) in INPUT_ENV {
        if !declared.iter().any(|d| d == input) {
            problems.push(format!("input `{input}` is not declared"));
        }
        let expected = format!("${{{{ inputs.{input} }}}}");
        let env = step_by_id(steps, step).map(|s| &s["env"][*var]);
        if env.and_then(Value::as_str) != Some(expected.as_str()) {
            problems.push(format!("step `{step}` does not set {var}: {expected}"));
        }
    }
    problems.extend(run_script_problems(steps));
    problems
}

fn run_script_problems(steps: &[Value]) -> Vec<String> {
    steps
        .iter()
        .filter_map(|s| s["run"].as_str().map(|run| (s, run)))
        .filter(|(_, run)| run.contains("${{"))
        .map(|(s, _)| {
            let name = s["name"].as_str().unwrap_or("unnamed");
            format!("step `{name}` expands an expression inside its `run:` script")
        })
        .collect()
}

/// Exactly the outputs in `OUTPUTS`, each the run step's output of the same name.
fn output_problems(action: &Value) -> Vec<String> {
    let outputs = mapping_entries(&action["outputs"]);
    let mut problems = Vec::new();
    for (name, output) in &outputs {
        let expected = format!("${{{{ steps.run.outputs.{name} }}}}");
        if !OUTPUTS.contains(&name.as_str()) {
            problems.push(format!("output `{name}` is not in the contract"));
        } else if output["value"].as_str() != Some(expected.as_str()) {
            problems.push(format!("output `{name}` is not {expected}"));
        }
    }
    for name in OUTPUTS {
        if !outputs.iter().any(|(n, _)| n == name) {
            problems.push(format!("output `{name}` is missing"));
        }
    }
    problems
}

/// Every `uses:` of a workflow (steps and reusable-workflow jobs) or of a composite action.
fn uses_refs(doc: &Value) -> Vec<String> {
    let mut steps: Vec<&Value> = composite_steps(doc).iter().collect();
    let mut refs = Vec::new();
    for (_, job) in mapping_entries(&doc["jobs"]) {
        refs.extend(job["uses"].as_str().map(str::to_owned));
        steps.extend(seq(&job["steps"]));
    }
    refs.extend(
        steps
            .iter()
            .filter_map(|s| s["uses"].as_str().map(str::to_owned)),
    );
    refs
}

/// Local to the repository, or `owner/repo[/path]@<40 hex digits>`.
fn is_pinned(uses: &str) -> bool {
    if uses.starts_with("./") || uses.starts_with("$/") {
        return true;
    }
    let Some((action, sha)) = uses.rsplit_once('@') else {
        return false;
    };
    let well_formed = action.split('/').count() >= 2 && !action.contains(['<', '>', ' ']);
    well_formed && sha.len() == 40 && sha.bytes().all(|b| b.is_ascii_hexdigit())
}

fn unpinned(doc: &Value, allowed: &[&str]) -> Vec<String> {
    uses_refs(doc)
        .into_iter()
        .filter(|u| !is_pinned(u) && !allowed.contains(&u.as_str()))
        .map(|u| format!("`{u}` is not pinned to a commit SHA"))
        .collect()
}

/// In the source text, every remote `uses:` pinned by SHA carries a `# v…` version comment.
fn version_comment_problems(text: &str) -> Vec<String> {
    let pin =
        regex::Regex::new(r"uses:\s*([^\s#]+@[0-9a-fA-F]{40})(\s*#\s*v\d\S*)?").expect("regex");
    pin.captures_iter(text)
        .filter(|c| c.get(2).is_none())
        .map(|c| format!("`{}` has no `# vX` version comment", &c[1]))
        .collect()
}

fn permissions(value: &Value) -> BTreeMap<String, String> {
    mapping_entries(value)
        .into_iter()
        .map(|(k, v)| (k, v.as_str().unwrap_or("?").to_owned()))
        .collect()
}

/// Top-level `permissions: {}`; each job its own permissions within `allowed`, a concurrency
/// group that does not cancel a run in progress, a timeout, and checkouts without credentials.
fn job_problems(workflow: &Value, allowed: &[(&str, &str)]) -> Vec<String> {
    let mut problems = Vec::new();
    let top = &workflow["permissions"];
    if !(top.as_mapping().is_some_and(|m| m.is_empty())) {
        problems.push("top-level permissions are not `{}`".to_owned());
    }
    for (name, job) in mapping_entries(&workflow["jobs"]) {
        problems.extend(one_job_problems(&name, job, allowed));
    }
    problems
}

fn one_job_problems(name: &str, job: &Value, allowed: &[(&str, &str)]) -> Vec<String> {
    let mut problems = Vec::new();
    for (scope, level) in permissions(&job["permissions"]) {
        if !allowed.contains(&(scope.as_str(), level.as_str())) {
            problems.push(format!("job `{name}` asks for {scope}: {level}"));
        }
    }
    if job["permissions"].as_mapping().is_none() {
        problems.push(format!("job `{name}` has no permissions of its own"));
    }
    let group = job["concurrency"]["group"].as_str().unwrap_or_default();
    if !group.contains("${{") {
        problems.push(format!("job `{name}` has no concurrency group per issue"));
    }
    if job["concurrency"]["cancel-in-progress"].as_bool() != Some(false) {
        problems.push(format!("job `{name}` may cancel a run in progress"));
    }
    let timeout = job["timeout-minutes"].as_u64().unwrap_or(0);
    if !(1..=360).contains(&timeout) {
        problems.push(format!("job `{name}` has no timeout-minutes"));
    }
    problems.extend(checkout_problems(name, seq(&job["steps"])));
    problems
}

fn checkout_problems(job: &str, steps: &[Value]) -> Vec<String> {
    steps
        .iter()
        .filter(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/checkout@"))
        })
        .filter(|s| s["with"]["persist-credentials"].as_bool() != Some(false))
        .map(|_| format!("job `{job}` checks out with persisted credentials"))
        .collect()
}

/// The dogfooding job's permissions are exactly `AGENT_PERMISSIONS` and its concurrency group
/// names the issue.
fn agent_exact_problems(workflow: &Value) -> Vec<String> {
    let job = &workflow["jobs"]["agent"];
    let want: BTreeMap<String, String> = AGENT_PERMISSIONS
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let mut problems = Vec::new();
    if permissions(&job["permissions"]) != want {
        problems.push(format!("agent job permissions are not {want:?}"));
    }
    let group = job["concurrency"]["group"].as_str().unwrap_or_default();
    if !group.contains("github.event.issue.number") {
        problems.push("agent concurrency group does not name the issue".to_owned());
    }
    problems
}

// ---- the repository's files ----

#[test]
fn every_action_input_reaches_its_step_as_an_env_var_and_no_script_expands_one() {
    let action = load(&repo().join("action.yml"));
    assert_eq!(input_problems(&action), Vec::<String>::new());
}

#[test]
fn every_action_output_is_the_run_steps_output() {
    let action = load(&repo().join("action.yml"));
    assert_eq!(output_problems(&action), Vec::<String>::new());
}

#[test]
fn the_run_step_runs_meta_agent_github_and_the_build_is_locked() {
    let action = load(&repo().join("action.yml"));
    let steps = composite_steps(&action);
    assert_eq!(action["runs"]["using"].as_str(), Some("composite"));
    let run = step_by_id(steps, "run").expect("a step with id `run`");
    let script = run["run"].as_str().unwrap_or_default();
    assert!(
        script.trim_end().ends_with("\"$META_AGENT_BIN\" github"),
        "{script}"
    );
    let build = steps
        .iter()
        .filter_map(|s| s["run"].as_str())
        .find(|r| r.contains("cargo build"))
        .expect("a build step");
    assert!(build.contains("--locked") && build.contains("$GITHUB_ACTION_PATH/Cargo.toml"));
}

#[test]
fn the_runs_files_are_uploaded_on_every_outcome() {
    let action = load(&repo().join("action.yml"));
    let steps = composite_steps(&action);
    let run = step_by_id(steps, "run").expect("a step with id `run`");
    let out = run["env"]["META_AGENT_OUT"]
        .as_str()
        .expect("the run step names where its files go");
    let upload = steps
        .iter()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/upload-artifact@"))
        })
        .expect("an upload-artifact step");
    assert_eq!(upload["if"].as_str(), Some("always()"), "{upload:?}");
    assert_eq!(upload["with"]["path"].as_str(), Some(out));
    let uses = upload["uses"].as_str().unwrap_or_default();
    let sha = uses.rsplit('@').next().unwrap_or_default();
    assert!(
        sha.len() == 40 && sha.chars().all(|c| c.is_ascii_hexdigit()),
        "pinned by SHA: {uses}"
    );
}

#[test]
fn every_uses_in_the_action_and_the_workflows_is_pinned_with_a_version_comment() {
    let mut files = vec![repo().join("action.yml")];
    files.extend(yaml_files(&repo().join(".github/workflows")));
    for file in files {
        let text = std::fs::read_to_string(&file).expect("readable");
        let problems = [
            unpinned(&parse(&text), &[]),
            version_comment_problems(&text),
        ]
        .concat();
        assert_eq!(problems, Vec::<String>::new(), "{}", file.display());
    }
}

#[test]
fn the_dogfooding_workflow_is_least_privilege_serialized_per_issue_and_bounded() {
    let workflow = load(&repo().join(".github/workflows/agent.yml"));
    let problems = [
        job_problems(&workflow, AGENT_PERMISSIONS),
        agent_exact_problems(&workflow),
    ]
    .concat();
    assert_eq!(problems, Vec::<String>::new());
}

#[test]
fn the_dogfooding_workflow_listens_to_the_documented_triggers() {
    let workflow = load(&repo().join(".github/workflows/agent.yml"));
    let on = &workflow["on"];
    let types = |event: &str| -> Vec<&str> {
        seq(&on[event]["types"])
            .iter()
            .filter_map(Value::as_str)
            .collect()
    };
    assert_eq!(types("issues"), ["opened", "labeled"]);
    assert_eq!(types("issue_comment"), ["created"]);
    assert_eq!(types("workflow_run"), ["completed"]);
    let inputs = &on["workflow_dispatch"]["inputs"];
    assert!(inputs["issue"].is_mapping() && inputs["guidance"].is_mapping());
    let ci = load(&repo().join(".github/workflows/ci.yml"));
    let watched: Vec<&str> = seq(&on["workflow_run"]["workflows"])
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(watched, [ci["name"].as_str().expect("ci.yml has a name")]);
    let uses = uses_refs(&workflow);
    assert!(
        uses.iter().any(|u| u == "./"),
        "dogfooding uses the Action at the root: {uses:?}"
    );
}

#[test]
fn the_examples_cover_each_trigger_and_pin_everything_but_the_placeholder() {
    let dir = repo().join("examples/workflows");
    let mut triggers = Vec::new();
    let mut as_app = Vec::new();
    for file in yaml_files(&dir) {
        let workflow = load(&file);
        triggers.extend(mapping_entries(&workflow["on"]).into_iter().map(|(k, _)| k));
        if let Some(problems) = app_example_problems(&workflow) {
            assert_eq!(problems, Vec::<String>::new(), "{}", file.display());
            as_app.push(file.clone());
        }
        let problems = [
            unpinned(&workflow, &[EXAMPLE_ACTION]),
            job_problems(&workflow, EXAMPLE_PERMISSIONS),
        ]
        .concat();
        assert_eq!(problems, Vec::<String>::new(), "{}", file.display());
        assert_eq!(
            uses_refs(&workflow)
                .iter()
                .filter(|u| *u == EXAMPLE_ACTION)
                .count(),
            1,
            "{}",
            file.display()
        );
    }
    assert_eq!(as_app.len(), 1, "one example acts as a GitHub App");
    triggers.sort();
    triggers.dedup();
    assert_eq!(
        triggers,
        [
            "issue_comment",
            "issues",
            "workflow_dispatch",
            "workflow_run"
        ]
    );
}

#[test]
fn the_shared_memory_example_reads_the_database_url_from_a_secret_and_keeps_the_queue() {
    let workflow = load(&repo().join("examples/workflows/shared-memory.yml"));
    let steps = seq(&workflow["jobs"]["agent"]["steps"]);
    let agent = steps
        .iter()
        .find(|step| step["uses"].as_str() == Some(EXAMPLE_ACTION))
        .expect("the action step");
    assert_eq!(
        agent["env"]["META_AGENT_DATABASE_URL"].as_str(),
        Some("${{ secrets.META_AGENT_DATABASE_URL }}")
    );
    let upload = steps
        .iter()
        .find(|step| {
            step["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/upload-artifact@"))
        })
        .expect("the queue is uploaded");
    assert_eq!(upload["if"].as_str(), Some("always()"));
    assert_eq!(
        upload["with"]["path"].as_str(),
        Some(".git/meta-agent/sessions/*/memory-pending.jsonl")
    );
}

/// For an example that passes `app-id` to the Action: `None` otherwise; else its problems
/// (the key must come from a secret, and the job's own token needs no write access).
fn app_example_problems(workflow: &Value) -> Option<Vec<String>> {
    let job = &workflow["jobs"]["agent"];
    let step = seq(&job["steps"])
        .iter()
        .find(|s| s["uses"].as_str() == Some(EXAMPLE_ACTION))?;
    step["with"]["app-id"].as_str()?;
    let mut problems = Vec::new();
    let key = step["with"]["app-private-key"].as_str().unwrap_or_default();
    if !key.contains("secrets.") {
        problems.push(format!("the App's private key is not a secret: {key:?}"));
    }
    let writes: Vec<String> = permissions(&job["permissions"])
        .into_iter()
        .filter(|(_, level)| level == "write")
        .map(|(scope, _)| scope)
        .collect();
    if !writes.is_empty() {
        problems.push(format!("the job's own token still writes: {writes:?}"));
    }
    Some(problems)
}

/// The release workflow: tag-triggered, both musl targets, checksums and attestations, and
/// each job with only what it needs.
fn release_problems(workflow: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let tags: Vec<&str> = seq(&workflow["on"]["push"]["tags"])
        .iter()
        .filter_map(Value::as_str)
        .collect();
    if tags != ["v*"] {
        problems.push(format!("not triggered by version tags: {tags:?}"));
    }
    if !(workflow["permissions"]
        .as_mapping()
        .is_some_and(|m| m.is_empty()))
    {
        problems.push("top-level permissions are not `{}`".to_owned());
    }
    let targets: Vec<&str> = seq(&workflow["jobs"]["build"]["strategy"]["matrix"]["include"])
        .iter()
        .filter_map(|entry| entry["target"].as_str())
        .collect();
    if targets != ["x86_64-unknown-linux-musl", "aarch64-unknown-linux-musl"] {
        problems.push(format!("targets are {targets:?}"));
    }
    let expect = |job: &str, want: &[(&str, &str)]| {
        let want: BTreeMap<String, String> = want
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let have = permissions(&workflow["jobs"][job]["permissions"]);
        (have != want).then(|| format!("job `{job}` asks for {have:?}, not {want:?}"))
    };
    problems.extend(expect("build", &[("contents", "read")]));
    problems.extend(expect(
        "publish",
        &[
            ("contents", "write"),
            ("id-token", "write"),
            ("attestations", "write"),
        ],
    ));
    for (name, job) in mapping_entries(&workflow["jobs"]) {
        problems.extend(checkout_problems(&name, seq(&job["steps"])));
        if job["timeout-minutes"].as_u64().is_none() {
            problems.push(format!("job `{name}` has no timeout-minutes"));
        }
    }
    let uses = uses_refs(workflow);
    if !uses
        .iter()
        .any(|u| u.starts_with("actions/attest-build-provenance@"))
    {
        problems.push("no build-provenance attestation".to_owned());
    }
    let scripts: String = mapping_entries(&workflow["jobs"])
        .into_iter()
        .flat_map(|(_, job)| seq(&job["steps"]).iter().filter_map(|s| s["run"].as_str()))
        .collect();
    for needle in [
        "--locked",
        "sha256sum",
        "--only-keep-debug",
        "action-binary.sh manifest",
    ] {
        if !scripts.contains(needle) {
            problems.push(format!("no step runs `{needle}`"));
        }
    }
    problems.extend(run_script_problems(
        &mapping_entries(&workflow["jobs"])
            .into_iter()
            .flat_map(|(_, job)| seq(&job["steps"]).to_vec())
            .collect::<Vec<_>>(),
    ));
    problems
}

#[test]
fn the_release_workflow_builds_both_musl_targets_with_checksums_and_provenance() {
    let workflow = load(&repo().join(".github/workflows/release.yml"));
    assert_eq!(release_problems(&workflow), Vec::<String>::new());
}

#[test]
fn the_action_chooses_its_binary_by_script_before_building() {
    let action = load(&repo().join("action.yml"));
    let steps = composite_steps(&action);
    let choose = step_by_id(steps, "binary").expect("a step with id `binary`");
    assert_eq!(
        choose["run"]
            .as_str()
            .map(str::trim_end)
            .and_then(|r| r.lines().last()),
        Some("\"$GITHUB_ACTION_PATH/scripts/action-binary.sh\" resolve")
    );
    let build = steps
        .iter()
        .find(|s| s["run"].as_str().is_some_and(|r| r.contains("cargo build")))
        .expect("a build step");
    assert!(
        build["if"]
            .as_str()
            .is_some_and(|c| c.contains("steps.binary.outputs.how == 'build'")),
        "{:?}",
        build["if"]
    );
    let run = step_by_id(steps, "run").expect("the run step");
    assert_eq!(
        run["env"]["META_AGENT_BIN"].as_str(),
        Some("${{ steps.binary.outputs.bin }}")
    );
}

// ---- the checkers fail on bad documents ----

const BAD_ACTION: &str = r#"
inputs:
  config: {}
  model: {}
  surprise: {}
outputs:
  outcome: { value: "${{ steps.build.outputs.outcome }}" }
  extra: { value: "${{ steps.run.outputs.extra }}" }
runs:
  using: composite
  steps:
    - uses: actions/cache@v4
    - id: run
      shell: bash
      env:
        META_AGENT_CONFIG: ${{ inputs.config }}
      run: meta-agent github --model "${{ inputs.model }}"
"#;

const BAD_RELEASE: &str = r#"
on: {push: {branches: [main]}}
permissions: {contents: write}
jobs:
  build:
    strategy: {matrix: {include: [{target: x86_64-unknown-linux-gnu}]}}
    permissions: {contents: write}
    steps:
      - uses: actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683
      - run: cargo build --release --target "${{ matrix.target }}"
  publish:
    permissions: {contents: write}
    timeout-minutes: 5
    steps: []
"#;

#[test]
fn the_release_checker_catches_each_missing_guarantee() {
    let problems = release_problems(&parse(BAD_RELEASE));
    let has = |needle: &str| problems.iter().any(|p| p.contains(needle));
    for needle in [
        "not triggered by version tags",
        "top-level permissions",
        "targets are",
        "job `build` asks for",
        "job `publish` asks for",
        "checks out with persisted credentials",
        "job `build` has no timeout-minutes",
        "no build-provenance attestation",
        "no step runs `--locked`",
        "no step runs `sha256sum`",
        "expands an expression inside its `run:` script",
    ] {
        assert!(has(needle), "{needle}: {problems:?}");
    }
}

#[test]
fn the_input_checker_catches_an_interpolated_input_a_missing_env_and_an_unknown_input() {
    let problems = input_problems(&parse(BAD_ACTION));
    let has = |needle: &str| problems.iter().any(|p| p.contains(needle));
    assert!(
        has("expands an expression inside its `run:` script"),
        "{problems:?}"
    );
    assert!(has("does not set META_AGENT_MODEL"), "{problems:?}");
    assert!(
        has("input `surprise` is not in the contract"),
        "{problems:?}"
    );
    assert!(has("input `budget` is not declared"), "{problems:?}");
    assert!(!has("does not set META_AGENT_CONFIG"), "{problems:?}");
}

#[test]
fn the_output_checker_catches_a_wrong_step_an_extra_and_a_missing_output() {
    let problems = output_problems(&parse(BAD_ACTION));
    let has = |needle: &str| problems.iter().any(|p| p.contains(needle));
    assert!(
        has("output `outcome` is not ${{ steps.run.outputs.outcome }}"),
        "{problems:?}"
    );
    assert!(has("output `extra` is not in the contract"), "{problems:?}");
    assert!(has("output `pr-url` is missing"), "{problems:?}");
}

#[test]
fn the_pin_checker_catches_tags_short_shas_and_placeholders() {
    assert_eq!(
        unpinned(&parse(BAD_ACTION), &[]),
        ["`actions/cache@v4` is not pinned to a commit SHA"]
    );
    let workflow = parse(
        "jobs:\n  a:\n    uses: org/repo/.github/workflows/x.yml@main\n  b:\n    steps:\n      - uses: actions/checkout@11bd719\n      - uses: <owner>/meta-agent@0123456789012345678901234567890123456789\n      - uses: ./\n",
    );
    assert_eq!(
        unpinned(&workflow, &[]).len(),
        3,
        "{:?}",
        unpinned(&workflow, &[])
    );
    assert!(is_pinned(
        "actions/cache/restore@0057852bfaa89a56745cba8c7296529d2fc39830"
    ));
    let text = "      - uses: actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683\n      - uses: actions/cache@0057852bfaa89a56745cba8c7296529d2fc39830 # v4.3.0\n";
    assert_eq!(version_comment_problems(text).len(), 1);
}

#[test]
fn the_job_checker_catches_broad_permissions_no_concurrency_no_timeout_and_persisted_credentials() {
    let workflow = parse(
        "permissions: write-all\njobs:\n  agent:\n    permissions:\n      contents: write\n      packages: write\n    concurrency: { group: meta-agent, cancel-in-progress: true }\n    steps:\n      - uses: actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683\n",
    );
    let problems = [
        job_problems(&workflow, AGENT_PERMISSIONS),
        agent_exact_problems(&workflow),
    ]
    .concat();
    let has = |needle: &str| problems.iter().any(|p| p.contains(needle));
    assert!(has("top-level permissions are not `{}`"), "{problems:?}");
    assert!(has("asks for packages: write"), "{problems:?}");
    assert!(has("no concurrency group per issue"), "{problems:?}");
    assert!(has("may cancel a run in progress"), "{problems:?}");
    assert!(has("has no timeout-minutes"), "{problems:?}");
    assert!(has("persisted credentials"), "{problems:?}");
    assert!(has("agent job permissions are not"), "{problems:?}");
    assert!(has("does not name the issue"), "{problems:?}");
}

/// The failing-checks examples run only for failed runs of this repository's own branches and
/// ask for the policy they document (stacked by default; pushed onto the branch in the other).
#[test]
fn the_pull_request_checks_examples_skip_forks_and_set_their_policy() {
    let cases = [
        ("pull-request-checks.yml", "pull_request", None),
        ("pull-request-checks-push.yml", "all", Some("push")),
    ];
    for (file, checks, fix) in cases {
        let workflow = load(&repo().join("examples/workflows").join(file));
        let job = &workflow["jobs"]["agent"];
        let condition = job["if"].as_str().unwrap_or_default();
        for needed in [
            "github.event.workflow_run.conclusion == 'failure'",
            "github.event.workflow_run.head_repository.full_name == github.repository",
        ] {
            assert!(condition.contains(needed), "{file}: {condition}");
        }
        let steps = job["steps"].as_sequence().expect("steps");
        let agent = steps
            .iter()
            .find(|step| step["uses"].as_str() == Some(EXAMPLE_ACTION))
            .expect("the action's step");
        assert_eq!(
            agent["with"]["pull-request-checks"].as_str(),
            Some(checks),
            "{file}"
        );
        assert_eq!(agent["with"]["pull-request-fix"].as_str(), fix, "{file}");
        let checkout = &steps[0]["with"];
        assert_eq!(
            checkout["persist-credentials"].as_bool(),
            Some(false),
            "{file}"
        );
        assert!(
            checkout["ref"].is_null(),
            "{file}: the default branch is checked out"
        );
    }
}
