//! The `pull_request_target` trap, linted in every workflow of the repository and every example:
//! a job that checks out a pull request's head (`refs/pull/…`, `…pull_request.head…`,
//! `github.head_ref`, a head repository) must be started by a maintainer's command, never by
//! `pull_request_target` or `workflow_run` (which a stranger's push starts, with the repository's
//! secrets and a write token); no step after that checkout may run the checked-out code itself
//! (a `run:` step, or a local action `uses: ./…` read from that checkout); and the checkout keeps
//! no credentials. The pull request's code then runs only inside meta-agent's sandbox. Each rule
//! is also shown failing on a small bad document. scripts/test.sh runs this beside zizmor and
//! actionlint.

use serde_yaml::Value;

use super::workflows::{load, mapping_entries, parse, repo, seq, yaml_files};

/// What in a checkout's `ref:` or `repository:` names a pull request's head.
const HEAD_MARKERS: [&str; 7] = [
    "refs/pull/",
    "pull_request.head",
    "head_ref",
    "head.sha",
    "head.ref",
    "head.repo",
    "workflow_run.head",
];

/// Events a stranger's push or pull request starts.
const STRANGER_EVENTS: [&str; 2] = ["pull_request_target", "workflow_run"];

/// The events that start a workflow (`on:` as a word, a list or a mapping).
fn events(workflow: &Value) -> Vec<String> {
    let on = &workflow["on"];
    if let Some(word) = on.as_str() {
        return vec![word.to_owned()];
    }
    if let Some(list) = on.as_sequence() {
        return list
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
    }
    mapping_entries(on)
        .into_iter()
        .map(|(name, _)| name)
        .collect()
}

/// Whether `step` checks out a pull request's head.
fn checks_out_head(step: &Value) -> bool {
    let checkout = step["uses"]
        .as_str()
        .is_some_and(|uses| uses.starts_with("actions/checkout@"));
    let names_head = |field: &str| {
        step["with"][field]
            .as_str()
            .is_some_and(|text| HEAD_MARKERS.iter().any(|marker| text.contains(marker)))
    };
    checkout && (names_head("ref") || names_head("repository"))
}

/// Every way a workflow falls into the trap.
fn trap_problems(workflow: &Value) -> Vec<String> {
    let strangers: Vec<String> = events(workflow)
        .into_iter()
        .filter(|event| STRANGER_EVENTS.contains(&event.as_str()))
        .collect();
    let mut problems = Vec::new();
    for (name, job) in mapping_entries(&workflow["jobs"]) {
        let steps = seq(&job["steps"]);
        let Some(at) = steps.iter().position(checks_out_head) else {
            continue;
        };
        for event in &strangers {
            problems.push(format!(
                "job `{name}` checks out a pull request's head on `{event}`: a stranger's push \
                 starts it, with the repository's secrets"
            ));
        }
        if steps[at]["with"]["persist-credentials"].as_bool() != Some(false) {
            problems.push(format!(
                "job `{name}` keeps credentials in the checkout of a pull request's head"
            ));
        }
        for step in &steps[at + 1..] {
            if step["run"].as_str().is_some() {
                problems.push(format!(
                    "job `{name}` runs a `run:` step after checking out a pull request's head"
                ));
            }
            if step["uses"]
                .as_str()
                .is_some_and(|uses| uses.starts_with("./"))
            {
                problems.push(format!(
                    "job `{name}` runs a local action from the checkout of a pull request's head"
                ));
            }
        }
    }
    problems
}

#[test]
fn no_workflow_of_the_repository_or_the_examples_falls_into_the_pull_request_target_trap() {
    let mut files = yaml_files(&repo().join(".github/workflows"));
    files.extend(yaml_files(&repo().join("examples/workflows")));
    files.extend(yaml_files(&repo().join("examples/eval")));
    let mut head_checkouts = 0;
    for file in files {
        let workflow = load(&file);
        assert_eq!(
            trap_problems(&workflow),
            Vec::<String>::new(),
            "{}",
            file.display()
        );
        head_checkouts += mapping_entries(&workflow["jobs"])
            .iter()
            .filter(|(_, job)| seq(&job["steps"]).iter().any(checks_out_head))
            .count();
    }
    assert_eq!(
        head_checkouts, 1,
        "the pull request example checks out the head"
    );
}

/// The trap as it is usually written: secrets, a write token, the fork's head, its build.
const TRAP: &str = r#"
on:
  pull_request_target:
    types: [opened, synchronize]
permissions: {contents: write, pull-requests: write}
jobs:
  test:
    runs-on: ubuntu-24.04
    steps:
      - uses: actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683
        with:
          ref: ${{ github.event.pull_request.head.sha }}
      - run: npm ci && npm test
        env:
          NPM_TOKEN: ${{ secrets.NPM_TOKEN }}
"#;

/// A maintainer's command, but a step builds the checked-out code and the action comes from it.
const COMMAND_THAT_RUNS_THE_HEAD: &str = r#"
on:
  issue_comment:
    types: [created]
jobs:
  agent:
    runs-on: ubuntu-24.04
    steps:
      - uses: actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683
        with:
          ref: refs/pull/${{ github.event.issue.number }}/head
          persist-credentials: false
      - run: make
      - uses: ./
"#;

/// A failed run of a fork, its head checked out.
const WORKFLOW_RUN_HEAD: &str = r#"
on: [workflow_run]
jobs:
  heal:
    runs-on: ubuntu-24.04
    steps:
      - uses: actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683
        with:
          repository: ${{ github.event.workflow_run.head_repository.full_name }}
          ref: ${{ github.event.workflow_run.head_sha }}
          persist-credentials: false
"#;

#[test]
fn the_trap_lint_catches_each_way_into_the_trap() {
    let has = |text: &str, needle: &str| {
        let problems = trap_problems(&parse(text));
        assert!(
            problems.iter().any(|p| p.contains(needle)),
            "{needle}: {problems:?}"
        );
    };
    has(TRAP, "on `pull_request_target`");
    has(TRAP, "keeps credentials");
    has(TRAP, "runs a `run:` step");
    has(COMMAND_THAT_RUNS_THE_HEAD, "runs a `run:` step");
    has(COMMAND_THAT_RUNS_THE_HEAD, "runs a local action");
    has(WORKFLOW_RUN_HEAD, "on `workflow_run`");
    let safe = load(&repo().join("examples/workflows/pull-request-comment.yml"));
    assert_eq!(trap_problems(&safe), Vec::<String>::new());
}
