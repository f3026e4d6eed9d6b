//! What a run leaves for people: the commit message with its trailers, the escalation report, and
//! the final summary. Pure functions of the [`LoopState`]; snapshot-tested.

use crate::reason::Describe;
use std::collections::BTreeSet;
use std::fmt::Write;

use meta_agent_protocol::ending::EscalationReason;
use meta_agent_protocol::records::{
    GateProblem, GateRecord, ResolutionTried, RunOutcome, SignatureRecord, StartFailure, StepPhase,
    StepRecord,
};
use meta_agent_protocol::refusal::Refusal;
use meta_agent_protocol::state::LoopState;

/// Failures the escalation report shows in full; the rest are counted (and listed in
/// `report.md`, see [`failures_beyond_report`]).
pub const FAILURES_IN_FULL: usize = 25;

/// `tests=pass(120/120) lint=pass coverage=pass(84.2%>=80%)`; skipped tests are named, since the
/// total counts them: `tests=pass(549/572, 23 skipped)`.
pub fn gates_trailer(gates: &[GateRecord]) -> String {
    gates.iter().map(gate_word).collect::<Vec<_>>().join(" ")
}

fn gate_word(gate: &GateRecord) -> String {
    let detail = match (
        gate.tests_passed,
        gate.tests_total,
        gate.coverage,
        gate.coverage_threshold,
    ) {
        (Some(passed), Some(total), _, _) => {
            let skipped = skipped_note(gate.tests_skipped);
            match gate.scope.describe() {
                Some(scope) => format!("({scope}: {passed}/{total} passed{skipped})"),
                None => format!("({passed}/{total}{skipped})"),
            }
        }
        (_, _, Some(percent), Some(threshold)) => {
            let cmp = if percent >= threshold { ">=" } else { "<" };
            format!("({percent:.1}%{cmp}{threshold}%)")
        }
        _ => String::new(),
    };
    format!("{}={}{detail}", gate.name, gate.result.short())
}

/// `, 23 skipped` when the runner skipped tests, else nothing.
pub(crate) fn skipped_note(skipped: Option<u64>) -> String {
    match skipped {
        Some(skipped) if skipped > 0 => format!(", {skipped} skipped"),
        _ => String::new(),
    }
}

/// Every resolution applied in the run, in order.
fn resolutions(state: &LoopState) -> Vec<&ResolutionTried> {
    state
        .history
        .iter()
        .flat_map(|step| step.resolutions.iter())
        .collect()
}

/// The acting steps (build and improve), in order.
fn acting_steps(state: &LoopState) -> impl Iterator<Item = &StepRecord> {
    state.history.iter().filter(|step| step.phase.is_act())
}

/// Files changed across the run, sorted.
fn files_changed(state: &LoopState) -> BTreeSet<&str> {
    acting_steps(state)
        .flat_map(|step| step.files_changed.iter().map(String::as_str))
        .collect()
}

/// The commit message: subject, what changed per iteration, the task reference, trailers. All
/// but the trailers pass the Markdown neutraliser comments pass.
pub fn commit_message(state: &LoopState, trailers: bool) -> String {
    let subject = super::subject::commit_subject(state);
    let mut body = format!("Task: {}\n\n", state.task.title);
    for step in acting_steps(state).filter(|step| !step.files_changed.is_empty()) {
        let label = if step.phase == StepPhase::Build {
            "build".to_owned()
        } else {
            format!("iteration {}", step.iteration)
        };
        let what = step_description(step);
        let _ = writeln!(
            body,
            "- {label}: {what} ({})",
            step.files_changed.join(", ")
        );
    }
    if !state.flaky.is_empty() {
        let _ = writeln!(
            body,
            "- flaky (failed, then passed unchanged): {}",
            super::test_names(&state.flaky)
        );
    }
    if let Some(snapshot) = &state.snapshot {
        let _ = writeln!(
            body,
            "- on top of your uncommitted changes, committed apart as snapshot {} (this \
             commit's parent; not meta-agent's work): {}",
            short(&snapshot.commit),
            super::local::path_list(&snapshot.paths, super::local::PATHS_IN_A_LINE)
        );
    }
    let preexisting = preexisting_failures(state);
    if !preexisting.is_empty() {
        let _ = writeln!(
            body,
            "- left as they were (failing before this change, not asked about): {}",
            preexisting.join("; ")
        );
    }
    let mut message = format!("{subject}\n\n");
    if !body.is_empty() {
        message.push_str(&body);
        message.push('\n');
    }
    message.push_str("Verified by the repository's gates before this commit.\n");
    if let Some(issue) = state.task.issue {
        let _ = write!(message, "\nFixes #{issue}\n");
    }
    // The title and the step descriptions come from the task and the model: outbound text,
    // neutralised as comments are (foreign images and links, mention floods).
    let mut message = meta_agent_protocol::markdown::neutralize_markdown(&message, &["github.com"]);
    if trailers {
        message.push('\n');
        message.push_str(&trailer_block(state));
    }
    message
}

/// The baseline's failures still failing at the end, when the task does not ask about them.
fn preexisting_failures(state: &LoopState) -> Vec<String> {
    let Some(baseline) = state.baseline() else {
        return Vec::new();
    };
    let left_alone = meta_agent_protocol::asked::not_asked(&state.task, baseline);
    if !meta_agent_protocol::asked::only_preexisting(&state.signature_ids(), &left_alone) {
        return Vec::new();
    }
    state
        .signatures
        .iter()
        .map(|s| s.template.clone())
        .collect()
}

fn step_description(step: &StepRecord) -> String {
    if step.resolutions.is_empty() {
        return step.outcome.clone();
    }
    let mut applied: Vec<&str> = Vec::new();
    for resolution in &step.resolutions {
        if !applied.contains(&resolution.description.as_str()) {
            applied.push(&resolution.description);
        }
    }
    format!("hindsight applied {}", applied.join("; "))
}

/// The `Meta-Agent-*` trailers, in `git interpret-trailers` form.
pub fn trailer_block(state: &LoopState) -> String {
    let applied = resolutions(state);
    let patterns: BTreeSet<&str> = applied
        .iter()
        .filter(|r| r.cured == Some(true))
        .map(|r| r.description.as_str())
        .collect();
    let patterns = if patterns.is_empty() {
        "none".to_owned()
    } else {
        patterns.into_iter().collect::<Vec<_>>().join(", ")
    };
    let used: BTreeSet<&str> = applied.iter().map(|r| r.resolution.as_str()).collect();
    let hindsight = if used.is_empty() {
        "no".to_owned()
    } else {
        format!(
            "yes ({})",
            used.into_iter()
                .map(|id| &id[..id.len().min(12)])
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    format!(
        "Meta-Agent-Iterations: {}\nMeta-Agent-Patterns-Applied: {patterns}\nMeta-Agent-Hindsight-Used: {hindsight}\nMeta-Agent-Gates: {}\n{}Meta-Agent-Session: {}\n",
        state.iterations_run(),
        gates_trailer(&state.gates),
        super::local::changes_trailers(state.snapshot.as_ref(), &bot_changes(state)),
        state.session
    )
}

/// The message of an escalated run's work-in-progress commit: the task, why it escalated, and
/// the trailers (the engine redacts it before committing).
pub fn wip_message(state: &LoopState, reason: &str) -> String {
    format!(
        "WIP: meta-agent: {}\n\nEscalated: {reason}.\nThe gates did not pass; kept for maintainers.\n\n{}",
        state.task.title,
        trailer_block(state)
    )
}

/// The escalation report's lines about a work in progress the patch gate refused (one line per
/// refusal): left out of the WIP commit when `committed_without`, else not committed at all.
pub fn refusal_note(refused: &[Refusal], committed_without: bool) -> String {
    let list: String = refused
        .iter()
        .map(|r| format!("- {}\n", super::refusal::line(r)))
        .collect();
    if committed_without {
        format!(
            "\nThe patch gate refused part of the work in progress; these paths were put back as \
             they were and left out of the WIP commit:\n{list}"
        )
    } else {
        format!("\nThe work in progress was NOT committed: the patch gate refused it:\n{list}")
    }
}

/// The paths the bot changed in the run, sorted.
pub fn bot_changes(state: &LoopState) -> Vec<String> {
    files_changed(state)
        .into_iter()
        .map(str::to_owned)
        .collect()
}

/// The escalation report for maintainers (Markdown).
pub fn escalation_report(state: &LoopState, reason: &EscalationReason) -> String {
    if let EscalationReason::Environment { failures, pristine } = reason {
        return environment_report(state, failures, *pristine);
    }
    let mut out = format!("## meta-agent could not finish: {}\n\n", state.task.title);
    out.push_str(&why(state, reason));
    let _ = writeln!(
        out,
        "**Goal:** {}\n",
        first_line(&state.task.requirements).unwrap_or(&state.task.title)
    );
    out.push_str(&attempts_table(state));
    for resolution in resolutions(state) {
        let result = match resolution.cured {
            Some(true) => "cured",
            Some(false) => "did not cure",
            None => "not observed",
        };
        let _ = writeln!(
            out,
            "\n- hindsight `{}` for `{}`: {result}",
            resolution.description,
            short(&resolution.signature)
        );
    }
    out.push_str(&refusals(state, reason));
    out.push_str(&super::evidence::markdown(state));
    out.push_str("\n### Remaining failures\n\n");
    let shown = state.signatures.len().min(FAILURES_IN_FULL);
    out.push_str(&failure_list(&state.signatures[..shown]));
    let more = state.signatures.len() - shown;
    if more > 0 {
        let _ = writeln!(
            out,
            "- … and {more} more failure signature{}: every one is listed in `report.md` \
             (the run's files)",
            if more == 1 { "" } else { "s" }
        );
    }
    if state.signatures.is_empty() {
        out.push_str("- no failure signature could be extracted; see the gate table\n");
    }
    out.push_str("\n### Gates at the end\n\n");
    for gate in &state.gates {
        let _ = writeln!(
            out,
            "- `{}`: {}{}",
            gate.name,
            gate.result.short(),
            super::gates::said(&gate.reasons, &gate.notes)
                .first()
                .map(|r| format!(" — {}", cell(r)))
                .unwrap_or_default()
        );
    }
    out.push_str(&places_to_investigate(state));
    out.push_str(&next_steps(state));
    out
}

/// The escalation report when gates could not start: each gate with the tool's words and what
/// to do, the gates as they ended, and how to go on; no failure list (nothing of the code was
/// judged), the attempts only when there were some (the pristine verification's case).
fn environment_report(state: &LoopState, failures: &[StartFailure], pristine: bool) -> String {
    let mut out = format!("## meta-agent could not finish: {}\n\n", state.task.title);
    out.push_str(&super::environment::why(failures, pristine));
    let _ = writeln!(
        out,
        "**Goal:** {}\n",
        first_line(&state.task.requirements).unwrap_or(&state.task.title)
    );
    if acting_steps(state).next().is_some() {
        out.push_str(&attempts_table(state));
        out.push('\n');
    }
    let at = if pristine {
        "on the pristine checkout"
    } else {
        "at the baseline"
    };
    let _ = writeln!(out, "### Gates {at}\n");
    for gate in &state.gates {
        let detail = gate
            .problem
            .as_ref()
            .map(super::environment::headline)
            .or_else(|| {
                super::gates::said(&gate.reasons, &gate.notes)
                    .into_iter()
                    .next()
            });
        let _ = writeln!(
            out,
            "- `{}`: {}{}",
            gate.name,
            gate.result.short(),
            detail
                .map(|d| format!(" — {}", cell(&d)))
                .unwrap_or_default()
        );
    }
    let _ = write!(
        out,
        "\n### How to continue\n\n\
         - Change what is said above (the machine, `setup:`, or the gates in `.meta-agent.yml`), \
         check it with `meta-agent gates`, then run the task again.\n\
         - {}\n\
         - Nothing was recorded in hindsight: the code is not at fault.\n",
        work_in_progress(state)
    );
    out
}

/// Why the run stopped: a configuration problem of a gate when there is one (no change to the
/// code fixes it, whatever the reason the loop gave), with the fix to make.
fn why(state: &LoopState, reason: &EscalationReason) -> String {
    let problems: Vec<(&str, &GateProblem)> = state
        .gates
        .iter()
        .filter_map(|gate| Some((gate.name.as_str(), gate.problem.as_ref()?)))
        .collect();
    if problems.is_empty() {
        return format!("**Why it stopped:** {}.\n\n", reason.describe());
    }
    let mut out = String::from(
        "**Why it stopped:** a configuration problem, not the code: no change to the code can \
         make these gates pass.\n\n",
    );
    for (gate, problem) in problems {
        let what = cell(&super::environment::headline(problem));
        let fix = super::environment::advice(problem, false);
        let _ = writeln!(out, "- gate `{gate}` {what}. **Fix:** {fix}.");
    }
    out.push('\n');
    out
}

/// Every remaining failure, in full (what the escalation report shows only the first
/// [`FAILURES_IN_FULL`] of); empty when the report shows them all.
pub fn failures_beyond_report(state: &LoopState) -> String {
    if state.signatures.len() <= FAILURES_IN_FULL {
        return String::new();
    }
    failure_list(&state.signatures)
}

fn failure_list(signatures: &[SignatureRecord]) -> String {
    let mut out = String::new();
    for signature in signatures {
        let _ = writeln!(
            out,
            "- **{}** `{}` (signature `{}`, gate `{}`)",
            signature.kind.as_str(),
            code_cell(&signature.template),
            short(&signature.id),
            signature.gate
        );
        if let Some(test) = &signature.test {
            let _ = writeln!(out, "  - test: `{}`", code_cell(test.as_str()));
        }
        if let Some(excerpt) = first_line(&signature.excerpt) {
            let _ = writeln!(out, "  - message: {}", cell(excerpt));
        }
    }
    out
}

/// Text for inline code: one line, no backtick to end the span early.
fn code_cell(text: &str) -> String {
    cell(text).replace('`', "'")
}

/// What each attempt was, what the model said of it, and what the gates showed after it: a
/// claim is never shown as the outcome.
fn attempts_table(state: &LoopState) -> String {
    let mut out = String::from(
        "### What was tried\n\n| Iteration | Step | Actions | The model said | The gates showed |\n\
         |---|---|---|---|---|\n",
    );
    for step in acting_steps(state) {
        let actions = if step.actions.is_empty() {
            "—".to_owned()
        } else {
            step.actions.join("; ")
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            step.iteration,
            step.phase.as_str(),
            cell(&actions),
            cell(&step.outcome),
            cell(&observed_after(state, step))
        );
    }
    out
}

/// The gates of the observation that followed an acting step, labelled when only the tests
/// that failed before were re-run.
fn observed_after(state: &LoopState, step: &StepRecord) -> String {
    let observation = state
        .history
        .iter()
        .find(|test| test.phase.is_check_after_act() && test.iteration == step.iteration);
    match observation {
        Some(test) if !test.gates.is_empty() => gates_trailer(&test.gates),
        Some(_) | None => "not observed".to_owned(),
    }
}

/// The changes refused during the run (tamper guard, patch gate), with their reasons.
fn refusals(state: &LoopState, reason: &EscalationReason) -> String {
    let mut lines: Vec<String> = state.tamper.iter().map(super::refusal::line).collect();
    if let EscalationReason::PatchRefused { refusals, .. } = reason {
        lines.extend(refusals.iter().map(super::refusal::line));
    }
    if lines.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n### Refused changes\n\n");
    for line in lines {
        let _ = writeln!(out, "- {}", cell(&line));
    }
    out
}

fn places_to_investigate(state: &LoopState) -> String {
    let places: BTreeSet<&str> = state
        .signatures
        .iter()
        .flat_map(|s| {
            s.location
                .iter()
                .map(String::as_str)
                .chain(s.frames.iter().map(String::as_str))
        })
        .collect();
    let files: BTreeSet<&str> = files_changed(state);
    let mut out = String::from("\n### Where to look\n\n");
    if places.is_empty() && files.is_empty() {
        out.push_str(
            "- the failing gates' output (no repository frames were found in the traces)\n",
        );
    }
    for place in places {
        let _ = writeln!(out, "- `{place}`");
    }
    if !files.is_empty() {
        let _ = writeln!(
            out,
            "- files changed by the attempts: {}",
            files
                .into_iter()
                .map(|f| format!("`{f}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    out
}

fn next_steps(state: &LoopState) -> String {
    format!(
        "\n### How to continue\n\n\
         - Reply with guidance: comment `/agent fix <what to try>` on the issue, or run \
         `meta-agent resume {} --guidance \"<what to try>\"` locally; the next plan receives it.\n\
         - {}\n\
         - The remaining signatures are recorded in hindsight as unresolved.\n",
        state.session,
        work_in_progress(state)
    )
}

/// What the work-in-progress branch holds, said by what it holds.
fn work_in_progress(state: &LoopState) -> String {
    let files = files_changed(state);
    if files.is_empty() {
        return format!(
            "Branch `{}` holds no code change of this run (only the hindsight records of its \
             failures, if any); nothing was thrown away.",
            state.branch
        );
    }
    format!(
        "Branch `{}` keeps the attempts' changes to {}; nothing was thrown away.",
        state.branch,
        files
            .into_iter()
            .map(|file| format!("`{file}`"))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// A concise summary for a person: what changed, what was verified. `verbose` adds every step.
pub fn final_summary(state: &LoopState, verbose: bool) -> String {
    let outcome = match (&state.outcome, state.dry_run) {
        (Some(RunOutcome::Committed), true) => "would commit (dry run)",
        (Some(outcome), _) => outcome.as_str(),
        (None, _) => "stopped",
    };
    let mut out = format!(
        "meta-agent {outcome}: {} (session {})\n",
        state.task.title, state.session
    );
    let _ = writeln!(
        out,
        "iterations: {}, LLM calls: {}",
        state.iterations_run(),
        state.usage.llm_calls
    );
    let files = files_changed(state);
    if state.snapshot.is_some() {
        out.push_str(&super::local::changes_lines(
            state.snapshot.as_ref(),
            &bot_changes(state),
        ));
    } else if !files.is_empty() {
        let _ = writeln!(
            out,
            "changed: {}",
            files.into_iter().collect::<Vec<_>>().join(", ")
        );
    }
    let _ = writeln!(out, "gates: {}", gates_trailer(&state.gates));
    if !state.instructions.is_empty() {
        let _ = writeln!(
            out,
            "repository instructions shown to the model: {}",
            state.instructions.join(", ")
        );
    }
    if !state.flaky.is_empty() {
        let _ = writeln!(
            out,
            "flaky tests (reported, not fixed): {}",
            super::test_names(&state.flaky)
        );
    }
    if !state.tamper.is_empty() {
        let _ = writeln!(
            out,
            "refused changes: {}",
            super::refusal::lines(&state.tamper)
        );
    }
    if let Some(line) = super::evidence::split_line(state) {
        let _ = writeln!(out, "{line}");
    }
    for edit in &state.evidence.allowed_edits {
        let _ = writeln!(out, "allowed test edit: {}: {}", edit.path, edit.reason);
    }
    if verbose {
        for step in &state.history {
            let _ = writeln!(
                out,
                "  [{} {}] {} in {} ms",
                step.iteration,
                step.phase.as_str(),
                step.outcome,
                step.duration_ms
            );
            for action in &step.actions {
                let _ = writeln!(out, "      {action}");
            }
        }
    }
    out
}

fn first_line(text: &str) -> Option<&str> {
    text.lines().map(str::trim).find(|line| !line.is_empty())
}

fn short(id: &str) -> &str {
    &id[..id.len().min(12)]
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}
