//! Snapshots of every text a person reads, rendered from one escalated and one committed run's
//! records (built from JSON as the state file holds them). Session ids, times and temporary
//! paths go through redaction filters so the snapshots stay stable.

use crate::reason::Describe;
use serde_json::json;

use super::{job, outcome, pull, status, terminal};
use crate::run_report::RunReport;
use meta_agent_protocol::ending::{EscalationReason, WipRefused};
use meta_agent_protocol::refusal::{Refusal, Why};
use meta_agent_protocol::state::LoopState;

fn gate(name: &str, kind: &str, result: &str, passed: u64, total: u64) -> serde_json::Value {
    json!({"name": name, "kind": kind, "result": result, "duration_ms": 1234,
           "reasons": if result == "failed" { vec![format!("{} of {total} tests failed", total - passed)] } else { vec![] },
           "tests_passed": passed, "tests_total": total,
           "failing_tests": if result == "failed" { vec!["tests/test_calc.py::test_mean"] } else { vec![] },
           "coverage": null, "coverage_threshold": null, "findings": null})
}

/// A run's state: `escalated` (two attempts, the model's claims, a refused change) or
/// `committed`.
pub(crate) fn state(escalated: bool) -> LoopState {
    let failing = gate("tests", "tests", "failed", 4, 5);
    let passing = gate("tests", "tests", "passed", 5, 5);
    let last = if escalated { &failing } else { &passing };
    let signature = json!({"id": "5f0c2a9e81b3d4c7", "kind": "test_failure",
        "template": "tests/test_calc.py::test_mean: assert <n> == <n>", "gate": "tests",
        "excerpt": "assert 2 == 2.5", "location": "tests/test_calc.py:28",
        "test": "tests/test_calc.py::test_mean", "frames": ["calc.py:12"]});
    let step = |phase: &str,
                iteration: u32,
                outcome: &str,
                files: Vec<&str>,
                gates: Vec<&serde_json::Value>| {
        json!({"phase": phase, "iteration": iteration, "started_unix_ms": 1_700_000_000_000u64 + u64::from(iteration),
               "duration_ms": 2500, "outcome": outcome, "actions": if files.is_empty() { vec![] } else { vec![format!("edit {}", files[0])] },
               "diff": "", "files_changed": files, "gates": gates, "signatures": [], "resolutions": []})
    };
    let history = vec![
        step("build", 0, "implemented mean", vec!["calc.py"], vec![]),
        step("test", 0, "1 gate failed", vec![], vec![&failing]),
        step("improve", 1, "fixed median", vec!["calc.py"], vec![]),
        step(
            "test",
            1,
            if escalated {
                "1 gate failed"
            } else {
                "all gates passed"
            },
            vec![],
            vec![last],
        ),
    ];
    let value = json!({
        "version": 2, "session": "a1b2c3d4e5-7f", "branch": "meta-agent/make-the-gates-pass",
        "task": {"title": "Make the calculator's gates pass", "requirements": "Make the gates pass.\n\nDetails follow.",
                 "acceptance": [], "issue": 7, "source": {"kind": "issue", "number": 7, "url": "https://github.com/octo/calc/issues/7"},
                 "script": []},
        "base_commit": "0123456789abcdef0123456789abcdef01234567", "dry_run": false,
        "phase": if escalated { "escalated" } else { "complete" }, "iteration": 1, "max_iterations": 3, "plan": null,
        "worktree_diff": "", "builder_calls": 2, "history": history, "gates": [last],
        "signatures": if escalated { vec![signature] } else { vec![] },
        "usage": {"llm_calls": 4, "input_tokens": 1200, "output_tokens": 300, "cost_usd": 0.0123, "elapsed_ms": 9876},
        "flaky": [], "tamper": if escalated { vec!["tests/test_calc.py: an assertion was weakened (== 2.5 became >= 2); refused and undone"] } else { vec![] },
        "transient_retries": 0, "recoveries": [], "started_unix_ms": 1_700_000_000_000u64,
        "outcome": if escalated { "escalated" } else { "committed" },
        "escalation": if escalated { json!({"kind": "iterations_exhausted", "iterations": 1}) } else { json!(null) },
    });
    serde_json::from_value(value).expect("a state as the state file holds it")
}

/// A baseline that failed, then an act with one tool call so far.
fn progress_events() -> Vec<meta_agent_protocol::event::Event> {
    use meta_agent_protocol::event::Event;
    use meta_agent_protocol::records::{GateCounts, StepPhase};
    vec![
        Event::PhaseStarted {
            phase: StepPhase::Baseline,
            iteration: 0,
        },
        Event::GateFinished {
            gate: "tests".into(),
            status: meta_agent_protocol::records::GateStatus::Failed,
            duration_ms: 10,
            detail: String::new(),
            counts: GateCounts {
                tests_passed: Some(2),
                tests_total: Some(3),
                ..GateCounts::default()
            },
        },
        Event::PhaseFinished {
            phase: StepPhase::Baseline,
            iteration: 0,
            duration_ms: 10,
            outcome: "baseline: gates failed".into(),
            gates: Vec::new(),
        },
        Event::PhaseStarted {
            phase: StepPhase::Improve,
            iteration: 1,
        },
        Event::ToolCalled {
            tool: "read_file".into(),
            input: "calc.py".into(),
            success: true,
            started_unix_ms: 0,
            duration_ms: 1,
        },
    ]
}

fn reason() -> EscalationReason {
    EscalationReason::IterationsExhausted { iterations: 1 }
}

/// Redaction filters: session ids, times, temporary paths.
fn stable(text: &str) -> String {
    let rules = [
        (r"\b[0-9a-f]{10}-[0-9a-f]{1,4}\b", "[session]"),
        (r"\d+(\.\d+)? ?(ms|s)\b", "[time]"),
        (r"/tmp/[^\s`)]+", "[temp]"),
        (
            r"<!-- meta-agent:session [A-Za-z0-9+/=]+ -->",
            "<!-- meta-agent:session [record] -->",
        ),
    ];
    rules
        .iter()
        .fold(text.to_owned(), |text, (pattern, replacement)| {
            regex::Regex::new(pattern)
                .map(|re| re.replace_all(&text, *replacement).into_owned())
                .unwrap_or(text)
        })
}

fn report(state: LoopState) -> RunReport {
    let escalated = state.escalation.is_some();
    RunReport {
        commit_message: (!escalated).then(|| outcome::commit_message(&state, true)),
        state,
        diff: String::new(),
        gates: None,
        commit: None,
        wip_refused: None,
    }
}

#[test]
fn terminal_summary_and_report_md() {
    insta::assert_snapshot!(
        "terminal_escalated",
        stable(&terminal::render(&report(state(true)), false))
    );
    insta::assert_snapshot!(
        "terminal_committed_verbose",
        stable(&terminal::render(&report(state(false)), true))
    );
}

#[test]
fn commit_message() {
    insta::assert_snapshot!(
        "commit_message",
        stable(&outcome::commit_message(&state(false), true))
    );
}

/// The escalated run's work-in-progress commit message.
#[test]
fn wip_commit_message() {
    insta::assert_snapshot!(
        "wip_commit_message",
        stable(&outcome::wip_message(
            &state(true),
            "the iteration budget is spent: 2 of 2"
        ))
    );
}

/// The report's note on a refused work in progress: put back and left out, or not committed.
#[test]
fn refusal_notes() {
    let refused = [
        Refusal::of(".github/workflows/ci.yml", Why::Protected),
        Refusal::of(
            "big.bin",
            Why::BinaryTooLarge {
                bytes: 3_355_443,
                max: 1_048_576,
            },
        ),
    ];
    insta::assert_snapshot!(
        "refusal_notes",
        format!(
            "{}\n---{}",
            outcome::refusal_note(&refused, true),
            outcome::refusal_note(&refused, false)
        )
    );
}

/// The committed run, its last act stopped by the LLM budget after the change the gates then
/// verified, in a repository whose history writes `fix(scope): …`.
#[test]
fn commit_message_after_the_budget_ran_out_in_a_conventional_repository() {
    let mut state = state(false);
    let last_act = state
        .history
        .iter_mut()
        .rev()
        .find(|step| step.phase.is_act())
        .expect("an act");
    last_act.outcome = "the LLM budget ran out: 3 of 3 LLM calls made".into();
    last_act.ended = meta_agent_protocol::records::ActEnd::Stopped;
    last_act.changed = vec![meta_agent_protocol::records::ChangedFile {
        path: "calc.py".into(),
        definitions: vec!["median".into()],
    }];
    let plain = outcome::commit_message(&state, false);
    assert!(plain.starts_with("Fix median in calc.py\n"), "{plain}");
    state.commit_style = meta_agent_protocol::records::CommitStyle::Conventional {
        scopes: vec!["calc".into()],
        lowercase: true,
    };
    insta::assert_snapshot!(
        "commit_message_budget_out_conventional",
        stable(&outcome::commit_message(&state, true))
    );
}

#[test]
fn escalation_report() {
    insta::assert_snapshot!(
        "escalation_report",
        stable(&outcome::escalation_report(&state(true), &reason()))
    );
}

/// The gates passed in the worktree only: the report says so and names what the worktree held
/// that the commit does not.
#[test]
fn escalation_report_for_a_failure_only_the_pristine_checkout_shows() {
    let reason = EscalationReason::PristineFailed {
        gates: vec!["tests".into()],
        only_in_worktree: vec!["__pycache__/calc.cpython-312.pyc".into()],
    };
    insta::assert_snapshot!(
        "escalation_report_pristine_failed",
        stable(&outcome::escalation_report(&state(true), &reason))
    );
    let unnamed = EscalationReason::PristineFailed {
        gates: vec!["tests".into(), "lint".into()],
        only_in_worktree: Vec::new(),
    };
    insta::assert_snapshot!("pristine_failed_unnamed", unnamed.describe());
}

/// Gates that could not start: at the baseline (no attempt, the run stopped before any model
/// call) and on the pristine checkout (the attempts shown, the change unverified).
#[test]
fn escalation_report_for_gates_that_could_not_start() {
    use meta_agent_protocol::records::{GateProblem, StartFailure};
    let problem = GateProblem::RunnerMissing {
        runner: "pytest".into(),
        error: "/repo/.venv/bin/python: No module named pytest".into(),
    };
    let mut baseline = state(true);
    baseline.history.retain(|step| !step.phase.is_act());
    baseline.gates[0].problem = Some(problem.clone());
    let reason = |pristine| EscalationReason::Environment {
        failures: vec![StartFailure {
            gate: "tests".into(),
            problem: problem.clone(),
        }],
        pristine,
    };
    insta::assert_snapshot!(
        "escalation_report_environment",
        stable(&outcome::escalation_report(&baseline, &reason(false)))
    );
    let mut pristine = state(true);
    pristine.gates[0].problem = Some(problem.clone());
    insta::assert_snapshot!(
        "escalation_report_environment_pristine",
        stable(&outcome::escalation_report(&pristine, &reason(true)))
    );
}

#[test]
fn status_comments_and_the_escalation_comment() {
    let footer = status::Footer {
        phrase: "/agent".into(),
        run_url: Some("https://github.com/octo/calc/actions/runs/4242".into()),
        // The hidden record line as the GitHub layer writes it (its content is that layer's).
        record: Some("<!-- meta-agent:session eyJzZXNzaW9uIjoicyJ9 -->".into()),
    };
    let escalated = status::View::Escalated {
        report: outcome::escalation_report(&state(true), &reason()),
        branch: "meta-agent/make-the-gates-pass".into(),
    };
    insta::assert_snapshot!(
        "escalation_comment",
        stable(&status::render(&escalated, &footer))
    );
    let committed = status::View::Committed {
        pull_url: "https://github.com/octo/calc/pull/8".into(),
        summary: job::markdown_result(&state(false)),
    };
    insta::assert_snapshot!(
        "status_committed",
        stable(&status::render(&committed, &footer))
    );
    let mut checklist = super::checklist::Checklist::default();
    for event in progress_events() {
        checklist.fold(&event);
    }
    let progress = status::View::Progress {
        trigger: "issue #7 labelled by @alice".into(),
        checklist,
    };
    insta::assert_snapshot!(
        "status_progress",
        stable(&status::render(&progress, &footer))
    );
    let interrupted = status::View::Interrupted {
        why: "the job was cancelled".into(),
        branch: "meta-agent/make-the-gates-pass".into(),
        refused: None,
    };
    insta::assert_snapshot!(
        "status_interrupted",
        stable(&status::render(&interrupted, &footer))
    );
    let refused = status::View::Interrupted {
        why: "the job was cancelled".into(),
        branch: "meta-agent/make-the-gates-pass".into(),
        refused: Some(
            "\nThe patch gate refused part of the work in progress; these paths were put back as \
             they were and left out of the WIP commit:\n- leaked.txt: adds a secret (github) at line 1\n"
                .into(),
        ),
    };
    insta::assert_snapshot!(
        "status_interrupted_refused",
        stable(&status::render(&refused, &footer))
    );
    let paused = status::View::Paused {
        why: "paused at `after_plan` (iteration=1, plan=build): pause point `after_plan`, hit 1"
            .into(),
        branch: "meta-agent/make-the-gates-pass".into(),
        at: meta_agent_protocol::pause::Location::AfterPlan,
        plan: "- plan: build from the requirements (iteration 1 of 3)\n- baseline (iteration 0): \
               baseline: gates failed"
            .into(),
        refused: None,
    };
    insta::assert_snapshot!("status_paused", stable(&status::render(&paused, &footer)));
    let held = status::View::Held(status::Held {
        why: "paused at `before_push` (files=1, iteration=1, path=calc.py): pause point \
              `before_push`, hit 1"
            .into(),
        commit: "89abcdef0123456789abcdef0123456789abcdef".into(),
        branch: "meta-agent/make-the-gates-pass".into(),
        target: "meta-agent/make-the-gates-pass".into(),
        artifact: "meta-agent-4242-1".into(),
        bundle: "verified.bundle".into(),
        summary: job::markdown_result(&state(false)),
    });
    insta::assert_snapshot!("status_held", stable(&status::render(&held, &footer)));
}

#[test]
fn a_forks_pull_request_is_offered_its_fix_as_a_patch() {
    let footer = status::Footer {
        phrase: "/agent".into(),
        run_url: Some("https://github.com/octo/calc/actions/runs/4242".into()),
        record: None,
    };
    let patch = "diff --git a/calc.py b/calc.py\nindex 1111111..2222222 100644\n--- a/calc.py\n+++ b/calc.py\n@@ -10,3 +10,3 @@ def mean(values):\n     if not values:\n         raise ValueError(\"mean of nothing\")\n-    return sum(values) // len(values)\n+    return sum(values) / len(values)\n";
    let offered = |suggestions, patch: Option<&str>| {
        status::View::PatchOffered(status::PatchOffered {
            head_repo: "mallory/calc".into(),
            patch: patch.map(str::to_owned),
            suggestions,
            summary: job::markdown_result(&state(false)),
        })
    };
    let whole = offered(Some(status::Suggested { count: 1, of: 1 }), Some(patch));
    insta::assert_snapshot!(
        "status_patch_offered",
        stable(&status::render(&whole, &footer))
    );
    let part = offered(Some(status::Suggested { count: 1, of: 3 }), None);
    insta::assert_snapshot!(
        "status_patch_offered_in_part_not_shown",
        stable(&status::render(&part, &footer))
    );
    let none = offered(None, Some(patch));
    assert!(!status::render(&none, &footer).contains("one click"));
    let too_long = "+x\n".repeat(status::MAX_SHOWN_PATCH_CHARS);
    assert_eq!(status::fenced_diff(&too_long), None);
    let fenced = status::fenced_diff("+ ```` \n").unwrap();
    assert!(
        fenced.starts_with("`````diff\n") && fenced.ends_with("\n`````"),
        "{fenced}"
    );
    let not_offered = status::View::PatchNotOffered {
        why: status::NoPatch::Escalated,
        report: outcome::escalation_report(&state(true), &reason()),
    };
    insta::assert_snapshot!(
        "status_patch_not_offered",
        stable(&status::render(&not_offered, &footer))
    );
    let reasons = [
        status::NoPatch::Escalated,
        status::NoPatch::Stopped {
            interrupted: Some("the job was cancelled".into()),
        },
        status::NoPatch::Stopped { interrupted: None },
    ]
    .map(|why| status::no_patch(&why));
    insta::assert_snapshot!("status_no_patch_reasons", reasons.join("\n"));
}

#[test]
fn pull_request_body() {
    let state = state(false);
    let message = outcome::commit_message(&state, true);
    insta::assert_snapshot!(
        "pull_request_body",
        stable(&pull::pull_body(&state, Some(&message)))
    );
    let mut stacked = state.clone();
    stacked.task.issue = None;
    stacked.task.source = meta_agent_protocol::task::TaskSource::PullRequest {
        number: 8,
        url: "https://github.com/octo/calc/issues/8".into(),
        head_ref: "feature/mean".into(),
        head_repo: "octo/calc".into(),
        failed_run: None,
    };
    insta::assert_snapshot!(
        "pull_request_body_stacked",
        stable(&pull::pull_body(&stacked, None))
    );
}

#[test]
fn job_summary() {
    let input = job::SummaryInput {
        trigger: "issue #7 labelled by @alice",
        pull_url: Some("https://github.com/octo/calc/pull/8"),
        isolation: "landlock",
        note: None,
    };
    insta::assert_snapshot!(
        "job_summary_committed",
        stable(&job::job_summary(Some(&state(false)), &input))
    );
    insta::assert_snapshot!(
        "job_summary_escalated",
        stable(&job::job_summary(Some(&state(true)), &input))
    );
}

#[test]
fn a_partial_rerun_is_labelled_as_one() {
    let mut rerun = gate("tests", "tests", "failed", 0, 2);
    rerun["scope"] = json!({"kind": "rerun", "ran": 2, "of": 5});
    let record: meta_agent_protocol::records::GateRecord =
        serde_json::from_value(rerun).expect("a gate record as the state file holds it");
    let mut state = state(true);
    state.history[3].gates = vec![record.clone()];
    state.gates = vec![record];
    let trailer = outcome::gates_trailer(&state.gates);
    let table = job::gate_table(&state);
    assert!(!trailer.contains("(0/2)"), "{trailer}");
    assert!(table.contains("re-ran 2 failing of 5"), "{table}");
    insta::assert_snapshot!("partial_rerun", stable(&format!("{trailer}\n\n{table}")));
}

/// A suite whose runner skipped tests (humanize's translation tests without their `.mo` files):
/// the trailer and the tables say so, instead of a total that looks like missing passes.
#[test]
fn skipped_tests_are_named_beside_the_total() {
    let mut passing = gate("tests", "tests", "passed", 549, 572);
    passing["tests_skipped"] = json!(23);
    let record: meta_agent_protocol::records::GateRecord =
        serde_json::from_value(passing).expect("a gate record as the state file holds it");
    let mut state = state(false);
    state.history[3].gates = vec![record.clone()];
    state.gates = vec![record];
    let trailer = outcome::gates_trailer(&state.gates);
    assert_eq!(trailer, "tests=pass(549/572, 23 skipped)");
    let table = job::gate_table(&state);
    assert!(table.contains("549/572, 23 skipped"), "{table}");
    insta::assert_snapshot!("skipped_tests", stable(&format!("{trailer}\n\n{table}")));
}

/// A run paused by SIGTERM during `observing`, its checkpoint `commit` (if any).
fn paused_report(commit: Option<&str>, wip_refused: Option<WipRefused>) -> RunReport {
    let mut state = state(false);
    state.outcome = Some(meta_agent_protocol::records::RunOutcome::Interrupted);
    state.phase = meta_agent_protocol::event::LoopPhase::Observing;
    state.interrupted = Some("received SIGTERM (the job was cancelled or timed out)".into());
    RunReport {
        commit: commit.map(str::to_owned),
        commit_message: None,
        wip_refused,
        state,
        diff: String::new(),
        gates: None,
    }
}

#[test]
fn a_paused_run_says_where_the_work_is_and_how_to_go_on() {
    let report = paused_report(Some("89abcdef0123456789abcdef0123456789abcdef"), None);
    insta::assert_snapshot!(
        "terminal_interrupted",
        stable(&terminal::render(&report, false))
    );
}

/// The patch gate's refusal of a paused run's work in progress is said under its own heading,
/// never as an escalation report, and the `Kept:` line does not claim there was nothing to commit.
#[test]
fn a_paused_run_whose_work_the_patch_gate_refused_is_not_an_escalation() {
    let refused = WipRefused {
        refusals: vec![Refusal::of(".github/workflows/ci.yml", Why::Protected)],
        committed_without: false,
    };
    let text = terminal::render(&paused_report(None, Some(refused)), false);
    assert!(!text.contains("escalation"), "{text}");
    insta::assert_snapshot!("terminal_interrupted_refused", stable(&text));
}

#[test]
fn the_repository_instructions_shown_are_named_in_the_result_and_the_terminal() {
    let mut shown = state(false);
    shown.instructions = vec![
        "AGENTS.md".into(),
        ".github/instructions/python.instructions.md".into(),
    ];
    insta::assert_snapshot!(
        "result_with_instructions",
        stable(&job::markdown_result(&shown))
    );
    insta::assert_snapshot!(
        "terminal_with_instructions",
        stable(&terminal::render(&report(shown), false))
    );
}

/// A report whose untrusted texts are hostile: the task's title, an action, a diff line and a
/// failing test's name carry markup that must stay text.
fn hostile_report(escalated: bool) -> RunReport {
    let mut state = state(escalated);
    state.task.title = "Fix <script>alert(1)</script> mean".into();
    state.history[0]
        .actions
        .push("said </details><img src=x onerror=alert(2)>".into());
    state.history[0].diff = "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n\
        @@ -1,2 +1,2 @@\n def mean(values):\n-    return sum(values) // len(values)\n\
        +    return sum(values) / len(values)  # <script>x</script>\n"
        .into();
    state.gates[0].failing_tests = vec![meta_agent_protocol::test_id::TestId::junit(
        "tests.test_calc",
        "test_<b>bold</b>",
        None,
    )];
    report(state)
}

fn html_of(report: &RunReport) -> String {
    let trace = super::timeline::tests::sample();
    let page = super::html::report_html(&super::html::HtmlInput {
        report,
        trace: &trace,
    });
    page.replace(include_str!("html.css"), "[the style]")
}

#[test]
fn report_html_committed_and_escalated() {
    // One tag a line, for a snapshot a person can review.
    let lines = |page: String| page.replace("><", ">\n<");
    insta::assert_snapshot!(
        "report_html_committed",
        lines(html_of(&hostile_report(false)))
    );
    insta::assert_snapshot!(
        "report_html_escalated",
        lines(html_of(&hostile_report(true)))
    );
}

#[test]
fn report_html_keeps_hostile_text_as_text() {
    let page = html_of(&hostile_report(true));
    assert!(!page.contains("<script"), "{page}");
    assert!(!page.contains("<img"), "{page}");
    assert!(!page.contains("<b>"), "{page}");
    assert_eq!(
        page.matches("</details>").count(),
        page.matches("<details").count()
    );
    assert!(page.contains("Fix &lt;script&gt;alert(1)&lt;/script&gt; mean"));
    assert!(page.contains("said &lt;/details&gt;&lt;img src=x onerror=alert(2)&gt;"));
}
