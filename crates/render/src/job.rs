//! What a GitHub Actions step shows: the job summary (Markdown for `GITHUB_STEP_SUMMARY`), the
//! workflow commands for annotations and log groups, and the step outputs (`GITHUB_OUTPUT`).
//! Rendered from the run's state, which the engine's events built; the step's own one-line texts
//! are [`super::step`]'s. Pure: the caller writes the files and prints the commands (after the
//! redactor).

use meta_agent_protocol::records::{GateRecord, GateStatus};
use meta_agent_protocol::state::LoopState;

/// What the summary needs besides the state.
#[derive(Debug, Clone, Default)]
pub struct SummaryInput<'a> {
    pub trigger: &'a str,
    pub pull_url: Option<&'a str>,
    /// What isolation the machine gave the children (from `exec::detect`).
    pub isolation: &'a str,
    /// Set when the run never reached the engine (refused, ignored, failed early).
    pub note: Option<&'a str>,
}

/// The job summary in Markdown.
pub fn job_summary(state: Option<&LoopState>, input: &SummaryInput<'_>) -> String {
    let mut out = String::from("## meta-agent\n\n");
    out.push_str(&format!("- Trigger: {}\n", input.trigger));
    out.push_str(&format!("- Isolation: {}\n", input.isolation));
    if let Some(note) = input.note {
        out.push_str(&format!("- Note: {note}\n"));
    }
    let Some(state) = state else {
        return out;
    };
    let outcome = state.outcome.as_ref().map_or("running", |o| o.as_str());
    out.push_str(&format!("- Outcome: **{outcome}**\n"));
    out.push_str(&format!("- Branch: `{}`\n", state.branch));
    if let Some(url) = input.pull_url {
        out.push_str(&format!("- Pull request: {url}\n"));
    }
    out.push_str(&format!(
        "- Iterations: {} (max {})\n",
        state.iterations_run(),
        state.max_iterations
    ));
    let usage = &state.usage;
    out.push_str(&format!(
        "- LLM: {} calls, {} input / {} output tokens, ${:.4}\n",
        usage.llm_calls, usage.input_tokens, usage.output_tokens, usage.cost_usd
    ));
    out.push_str(&format!(
        "- Time: {:.1} s\n\n",
        usage.elapsed_ms as f64 / 1000.0
    ));
    out.push_str(&gate_table(state));
    out
}

/// One table row per gate per observation (iteration).
pub fn gate_table(state: &LoopState) -> String {
    let rows: Vec<(u32, &GateRecord)> = state
        .history
        .iter()
        .filter(|step| !step.gates.is_empty())
        .flat_map(|step| step.gates.iter().map(move |gate| (step.iteration, gate)))
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut out =
        String::from("| Iteration | Gate | Result | Tests | Time |\n|---:|---|---|---|---:|\n");
    for (iteration, gate) in rows {
        let skipped = super::outcome::skipped_note(gate.tests_skipped);
        let tests = match (gate.tests_passed, gate.tests_total, gate.scope.describe()) {
            (Some(passed), Some(total), Some(scope)) => {
                format!("{scope}: {passed}/{total} passed{skipped}")
            }
            (Some(passed), Some(total), None) => format!("{passed}/{total}{skipped}"),
            _ => String::new(),
        };
        let result = status_cell(gate.result);
        out.push_str(&format!(
            "| {iteration} | {} | {result} | {tests} | {:.1} s |\n",
            table_cell(&gate.name),
            gate.duration_ms as f64 / 1000.0
        ));
    }
    out
}

/// A gate status with its mark, for tables.
fn status_cell(status: GateStatus) -> &'static str {
    match status {
        GateStatus::Passed => "✅ pass",
        GateStatus::Failed => "❌ fail",
        GateStatus::Skipped => "⏭ skip",
    }
}

fn table_cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// The result of a run in Markdown, for the status comment and the pull request body: the task,
/// iterations and LLM calls, the files changed, the last gate results as a table, flaky tests
/// and refused changes.
pub fn markdown_result(state: &LoopState) -> String {
    let mut out = format!(
        "**Task:** {}

**Iterations:** {} (max {}) · **LLM calls:** {} · **Session:** `{}`
",
        state.task.title.replace('\n', " "),
        state.iterations_run(),
        state.max_iterations,
        state.usage.llm_calls,
        state.session
    );
    let files: std::collections::BTreeSet<&str> = state
        .history
        .iter()
        .flat_map(|step| step.files_changed.iter().map(String::as_str))
        .collect();
    if !files.is_empty() {
        let list: Vec<String> = files.iter().map(|file| format!("`{file}`")).collect();
        out.push_str(&format!("\n**Changed:** {}\n", list.join(", ")));
    }
    if !state.instructions.is_empty() {
        let list: Vec<String> = state
            .instructions
            .iter()
            .map(|file| format!("`{file}`"))
            .collect();
        out.push_str(&format!(
            "\n**The repository's instructions for agents, shown to the model:** {}\n",
            list.join(", ")
        ));
    }
    if !state.gates.is_empty() {
        out.push_str("\n| Gate | Result | Tests | Coverage | Details |\n|---|---|---|---|---|\n");
        for gate in &state.gates {
            out.push_str(&gate_row(gate));
        }
    }
    if !state.flaky.is_empty() {
        out.push_str(&format!(
            "\n**Flaky tests (reported, not fixed):** {}\n",
            super::test_names(&state.flaky)
        ));
    }
    if !state.tamper.is_empty() {
        out.push_str("\n**Refused changes:**\n");
        for refusal in &state.tamper {
            out.push_str(&format!(
                "- {}\n",
                table_cell(&super::refusal::line(refusal))
            ));
        }
    }
    out.push_str(&super::evidence::markdown(state));
    out
}

fn gate_row(gate: &GateRecord) -> String {
    let result = status_cell(gate.result);
    let tests = match (gate.tests_passed, gate.tests_total) {
        (Some(passed), Some(total)) => format!(
            "{passed}/{total}{}",
            super::outcome::skipped_note(gate.tests_skipped)
        ),
        _ => String::new(),
    };
    let coverage = match (gate.coverage, gate.coverage_threshold) {
        (Some(line), Some(threshold)) => format!("{line:.1}% (≥ {threshold:.0}%)"),
        (Some(line), None) => format!("{line:.1}%"),
        _ => String::new(),
    };
    let details = gate
        .failing_tests
        .iter()
        .take(5)
        .map(ToString::to_string)
        .chain(
            super::gates::said(&gate.reasons, &gate.notes)
                .into_iter()
                .take(2),
        )
        .collect::<Vec<_>>()
        .join("; ");
    format!(
        "| {} | {result} | {tests} | {coverage} | {} |\n",
        table_cell(&gate.name),
        table_cell(&details)
    )
}

/// `::error` annotations for the failures of the last observation that have a file and line.
pub fn annotations(state: &LoopState) -> Vec<String> {
    state
        .signatures
        .iter()
        .filter_map(|signature| {
            let location = signature.location.as_deref()?;
            let (file, line) = location.rsplit_once(':')?;
            let line: u32 = line.parse().ok()?;
            let title = signature.test.as_ref().map_or_else(
                || format!("{} failure", signature.kind.as_str()),
                |test| test.to_string(),
            );
            Some(format!(
                "::error file={},line={line},title={}::{}",
                escape_property(file),
                escape_property(&title),
                escape_data(&signature.excerpt)
            ))
        })
        .take(50)
        .collect()
}

/// A workflow command's data, escaped as the runner expects.
pub fn escape_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

/// The step outputs, in `GITHUB_OUTPUT`'s format (one `name=value` line each; values are made
/// single-line).
pub fn outputs(pairs: &[(&str, String)]) -> String {
    pairs
        .iter()
        .map(|(name, value)| {
            let value: String = value.chars().filter(|c| *c != '\n' && *c != '\r').collect();
            format!("{name}={value}\n")
        })
        .collect()
}

/// The run's report in the step's log, folded into a group (`::group::`) Actions shows closed.
pub fn report_group(report: &str) -> String {
    format!("::group::meta-agent report\n{report}\n::endgroup::\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workflow_command_data_cannot_inject_a_second_command() {
        let escaped = escape_data("boom\n::set-output name=x::y 100%");
        assert!(!escaped.contains('\n'));
        assert_eq!(escaped, "boom%0A::set-output name=x::y 100%25");
        assert_eq!(escape_property("a:b,c"), "a%3Ab%2Cc");
    }

    #[test]
    fn outputs_are_single_lines() {
        let text = outputs(&[("outcome", "committed".into()), ("branch", "a\nb=c".into())]);
        assert_eq!(text, "outcome=committed\nbranch=ab=c\n");
    }
}
