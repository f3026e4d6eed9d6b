//! The live checklist of the status comment: what the run did so far, step by step (the
//! baseline and what failed in it, each act with its tool calls, each gate run with its counts,
//! the verification on a pristine checkout, the result), folded from the run's event stream.
//!
//! [`Checklist::fold`] takes one event at a time and [`Checklist::to_markdown`] renders what
//! was folded; both are pure, so every stage has a snapshot. Tool inputs and signatures come
//! from the model and from test output: they are shown only inside code spans, shortened.

use meta_agent_protocol::event::Event;
use meta_agent_protocol::records::{
    GateCounts, GateOutcome, GateScope, GateStatus, RunOutcome, StepPhase,
};

/// The tool calls shown per act (the latest; the earlier ones are counted).
pub const MAX_TOOL_LINES: usize = 12;
/// The signatures shown per gate run.
pub const MAX_SIGNATURES: usize = 3;
/// The characters of a tool input or signature shown.
const MAX_CODE_CHARS: usize = 60;

/// The run so far, as the checklist shows it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Checklist {
    steps: Vec<Step>,
    outcome: Option<RunOutcome>,
}

/// One step of the loop: an observation (baseline, gates, verification) or an act.
#[derive(Debug, Clone, PartialEq)]
struct Step {
    phase: StepPhase,
    iteration: u32,
    /// `None` while it runs; the step's own outcome line once finished.
    finished: Option<String>,
    /// The gate running now (observations).
    running_gate: Option<String>,
    gates: Vec<GateOutcome>,
    signatures: Vec<String>,
    /// What the act did, one line each (tool calls, known fixes applied).
    actions: Vec<String>,
}

impl Checklist {
    /// Takes in one event of the run; whether it changed what the checklist shows.
    pub fn fold(&mut self, event: &Event) -> bool {
        match event {
            Event::PhaseStarted { phase, iteration } => {
                self.steps.push(Step::new(*phase, *iteration));
            }
            Event::PhaseFinished {
                phase,
                outcome,
                gates,
                ..
            } => self.finish_step(*phase, outcome, gates),
            Event::GateStarted { gate, .. } => {
                self.with_step(|step| step.running_gate = Some(gate.clone()));
            }
            Event::GateFinished {
                gate,
                status,
                counts,
                ..
            } => self.with_step(|step| step.gate_finished(gate, status.passed(), counts)),
            Event::SignatureFound { template, .. } => {
                self.with_step(|step| step.signatures.push(template.clone()));
            }
            Event::ToolCalled {
                tool,
                input,
                success,
                ..
            } => self.with_step(|step| step.actions.push(tool_line(tool, input, *success))),
            Event::ResolutionApplied { signature, .. } => self.with_step(|step| {
                step.actions
                    .push(format!("applied a known fix for {}", code(signature)));
            }),
            Event::RunFinished { outcome, .. } => self.outcome = Some(*outcome),
            Event::RunStarted { .. }
            | Event::Recovered { .. }
            | Event::Paused { .. }
            | Event::StateChanged { .. }
            | Event::GateSkipped { .. }
            | Event::ResolutionOutcome { .. }
            | Event::FlakyTest { .. }
            | Event::ModelExchange { .. }
            | Event::RerunRejected { .. }
            | Event::CommandRun { .. }
            | Event::FileChanged { .. }
            | Event::GitOperation { .. }
            | Event::LlmCall { .. }
            | Event::Decided { .. }
            | Event::TamperRefused { .. }
            | Event::PatchRefused { .. }
            | Event::Committed { .. }
            | Event::Escalated { .. } => return false,
        }
        true
    }

    fn with_step(&mut self, change: impl FnOnce(&mut Step)) {
        if let Some(step) = self.steps.last_mut() {
            change(step);
        }
    }

    /// Ends the running step; an observation after an act that ran on the pristine checkout
    /// finishes as the verification.
    fn finish_step(&mut self, phase: StepPhase, outcome: &str, gates: &[GateOutcome]) {
        self.with_step(|step| {
            step.phase = phase;
            step.finished = Some(outcome.to_owned());
            step.running_gate = None;
            if !gates.is_empty() {
                step.gates = gates.to_vec();
            }
        });
    }

    /// The checklist as Markdown: one item per step, ticked when done, the result last.
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        for step in &self.steps {
            out.push_str(&step.to_markdown());
        }
        if !self.steps.iter().any(|s| s.phase == StepPhase::Verify) {
            out.push_str("- [ ] Verification on a pristine checkout\n");
        }
        match self.outcome {
            Some(outcome) => {
                out.push_str(&format!("- [x] **Result**: {}\n", outcome_words(outcome)))
            }
            None => out.push_str("- [ ] Result\n"),
        }
        out
    }
}

impl Step {
    fn new(phase: StepPhase, iteration: u32) -> Step {
        Step {
            phase,
            iteration,
            finished: None,
            running_gate: None,
            gates: Vec::new(),
            signatures: Vec::new(),
            actions: Vec::new(),
        }
    }

    fn gate_finished(&mut self, gate: &str, passed: bool, counts: &GateCounts) {
        self.running_gate = None;
        self.gates.retain(|g| g.gate != gate);
        self.gates.push(finished_gate(gate, passed, counts));
    }

    fn to_markdown(&self) -> String {
        let tick = if self.finished.is_some() { "x" } else { " " };
        format!(
            "- [{tick}] **{}**: {}\n{}",
            self.title(),
            self.state_words(),
            self.detail_lines()
        )
    }

    /// An act's outcome, or an observation's gates; what runs now while unfinished.
    fn state_words(&self) -> String {
        let mut words: Vec<String> = Vec::new();
        match &self.finished {
            Some(outcome) if !is_observation(self.phase) => words.push(one_line(outcome)),
            Some(_) | None => words.extend(self.gates.iter().map(gate_word)),
        }
        match (&self.finished, &self.running_gate) {
            (Some(_), _) => {}
            (None, Some(gate)) => words.push(format!("running {}…", code(gate))),
            (None, None) if is_observation(self.phase) && words.is_empty() => {
                words.push("starting…".into());
            }
            (None, None) if is_observation(self.phase) => {}
            (None, None) => words.push("working…".into()),
        }
        words.join(" · ")
    }

    fn title(&self) -> String {
        step_title(self.phase, self.iteration)
    }

    /// The nested lines: the act's tool calls (the latest), the top signatures.
    fn detail_lines(&self) -> String {
        let mut out = String::new();
        let hidden = self.actions.len().saturating_sub(MAX_TOOL_LINES);
        if hidden > 0 {
            out.push_str(&format!("  - … {hidden} earlier\n"));
        }
        for line in &self.actions[hidden..] {
            out.push_str(&format!("  - {line}\n"));
        }
        for signature in self.signatures.iter().take(MAX_SIGNATURES) {
            out.push_str(&format!("  - {}\n", code(signature)));
        }
        let more = self.signatures.len().saturating_sub(MAX_SIGNATURES);
        if more > 0 {
            out.push_str(&format!("  - and {more} more\n"));
        }
        out
    }
}

/// A `gate_finished` event's verdict, as an observation's gate.
pub(crate) fn finished_gate(gate: &str, passed: bool, counts: &GateCounts) -> GateOutcome {
    GateOutcome {
        gate: gate.to_owned(),
        result: if passed {
            GateStatus::Passed
        } else {
            GateStatus::Failed
        },
        counts: counts.clone(),
        problem: None,
    }
}

/// A step's name: "Baseline", "Act 1: fix", "Gates after act 1", ...
pub(crate) fn step_title(phase: StepPhase, iteration: u32) -> String {
    match phase {
        StepPhase::Baseline => "Baseline".to_owned(),
        StepPhase::Build => format!("Act {iteration}: build"),
        StepPhase::Improve => format!("Act {iteration}: fix"),
        StepPhase::Test => format!("Gates after act {iteration}"),
        StepPhase::Verify => "Verification on a pristine checkout".to_owned(),
    }
}

fn is_observation(phase: StepPhase) -> bool {
    match phase {
        StepPhase::Baseline | StepPhase::Test | StepPhase::Verify => true,
        StepPhase::Build | StepPhase::Improve => false,
    }
}

/// `tests ✗ 3/5 passed`, `lint ✓`, `coverage ✓ 84.0%`.
pub(crate) fn gate_word(gate: &GateOutcome) -> String {
    let mark = match gate.result {
        GateStatus::Passed => "✓",
        GateStatus::Failed => "✗",
        GateStatus::Skipped => "skipped",
    };
    let mut out = format!("{} {mark}", gate.gate);
    let counts = &gate.counts;
    if let (Some(passed), Some(total)) = (counts.tests_passed, counts.tests_total) {
        out.push_str(&format!(" {passed}/{total} passed"));
    }
    if let Some(findings) = counts.findings.filter(|&n| n > 0) {
        out.push_str(&format!(
            " {findings} finding{}",
            if findings == 1 { "" } else { "s" }
        ));
    }
    if let GateScope::Rerun { .. } = counts.scope {
        out.push_str(" (the failing tests first)");
    }
    if let Some(coverage) = counts.coverage {
        out.push_str(&format!(" {coverage:.1}%"));
    }
    if gate.problem.is_some() {
        out.push_str(" (could not run)");
    }
    out
}

/// One tool call as a person reads it: "read `src/money.py`", "ran `pytest -k mean`".
pub(crate) fn tool_line(tool: &str, input: &str, success: bool) -> String {
    let line = match tool {
        "read_file" => format!("read {}", code(input)),
        "edit_file" => format!("edited {}", code(input)),
        "write_file" => format!("wrote {}", code(input)),
        "run_command" => format!("ran {}", code(&argv_words(input))),
        "search" => format!("searched for {}", code(input)),
        "list_files" => "listed files".to_owned(),
        "finish" => "finished".to_owned(),
        other => format!("{} {}", code(other), code(input)),
    };
    if success {
        line
    } else {
        format!("{line} (failed)")
    }
}

/// `["pytest","-k","mean"]` as `pytest -k mean` (anything else as it is).
fn argv_words(input: &str) -> String {
    serde_json::from_str::<Vec<String>>(input)
        .map(|argv| argv.join(" "))
        .unwrap_or_else(|_| input.to_owned())
}

/// Untrusted `text` as one inline code span: on one line, shortened, in a fence no backtick
/// run inside can close.
pub(crate) fn code(text: &str) -> String {
    let line = one_line(text);
    let fence = "`".repeat(line.split(|c| c != '`').map(str::len).max().unwrap_or(0) + 1);
    let pad = if line.starts_with('`') || line.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{line}{pad}{fence}")
}

/// `text` on one line, at most [`MAX_CODE_CHARS`] characters.
fn one_line(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= MAX_CODE_CHARS {
        return flat;
    }
    let cut: String = flat.chars().take(MAX_CODE_CHARS).collect();
    format!("{cut}…")
}

fn outcome_words(outcome: RunOutcome) -> &'static str {
    match outcome {
        RunOutcome::Committed => "verified and committed",
        RunOutcome::Escalated => "escalated to a maintainer",
        RunOutcome::Failed => "the run could not finish",
        RunOutcome::NothingToDo => "nothing to change",
        RunOutcome::Interrupted => "stopped; the work so far is kept",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use meta_agent_protocol::kinds::SignatureKind;

    fn gate(gate: &str, passed: bool, counts: GateCounts) -> Vec<Event> {
        vec![
            Event::GateStarted {
                gate: gate.into(),
                command: "pytest".into(),
            },
            Event::GateFinished {
                gate: gate.into(),
                status: if passed {
                    GateStatus::Passed
                } else {
                    GateStatus::Failed
                },
                duration_ms: 900,
                detail: String::new(),
                counts,
            },
        ]
    }

    fn tests_counted(passed: u64, total: u64) -> GateCounts {
        GateCounts {
            tests_passed: Some(passed),
            tests_total: Some(total),
            ..GateCounts::default()
        }
    }

    fn observation(phase: StepPhase, iteration: u32, passed: u64) -> Vec<Event> {
        let mut events = vec![Event::PhaseStarted { phase, iteration }];
        events.extend(gate(
            "lint",
            true,
            GateCounts {
                findings: Some(0),
                ..GateCounts::default()
            },
        ));
        events.extend(gate("tests", passed == 5, tests_counted(passed, 5)));
        if passed < 5 {
            events.push(Event::SignatureFound {
                signature: "a1".into(),
                kind: SignatureKind::TestFailure,
                template: "test_mean: assert 2 == 2.5".into(),
            });
        }
        events.push(Event::PhaseFinished {
            phase,
            iteration,
            duration_ms: 1_000,
            outcome: "gates".into(),
            gates: Vec::new(),
        });
        events
    }

    fn tool(tool: &str, input: &str) -> Event {
        Event::ToolCalled {
            tool: tool.into(),
            input: input.into(),
            success: true,
            started_unix_ms: 0,
            duration_ms: 1,
        }
    }

    fn act_started() -> Vec<Event> {
        vec![
            Event::PhaseStarted {
                phase: StepPhase::Improve,
                iteration: 1,
            },
            tool("read_file", "src/money.py"),
            tool("edit_file", "src/money.py"),
            tool("run_command", r#"["pytest","-k","mean"]"#),
        ]
    }

    fn act_finished() -> Vec<Event> {
        vec![
            tool("finish", "{}"),
            Event::PhaseFinished {
                phase: StepPhase::Improve,
                iteration: 1,
                duration_ms: 10,
                outcome: "mean uses true division again".into(),
                gates: Vec::new(),
            },
        ]
    }

    fn finished(outcome: RunOutcome) -> Event {
        Event::RunFinished {
            outcome,
            iterations: 1,
            llm_calls: 3,
            duration_ms: 9,
        }
    }

    fn folded(events: &[Event]) -> String {
        let mut checklist = Checklist::default();
        for event in events {
            checklist.fold(event);
        }
        checklist.to_markdown()
    }

    #[test]
    fn the_checklist_at_each_stage() {
        let mut events = observation(StepPhase::Baseline, 0, 3);
        insta::assert_snapshot!("checklist_baseline", folded(&events));
        events.extend(act_started());
        insta::assert_snapshot!("checklist_mid_act", folded(&events));
        events.extend(act_finished());
        let gates = observation(StepPhase::Test, 1, 5);
        let mut running = events.clone();
        running.extend(gates[..4].iter().cloned());
        insta::assert_snapshot!("checklist_gates_running", folded(&running));
        events.extend(gates);
        events.extend(observation(StepPhase::Verify, 1, 5));
        insta::assert_snapshot!("checklist_verified", folded(&events));
        let mut committed = events.clone();
        committed.push(finished(RunOutcome::Committed));
        insta::assert_snapshot!("checklist_committed", folded(&committed));
        let mut escalated = observation(StepPhase::Baseline, 0, 3);
        escalated.extend(act_started());
        escalated.extend(act_finished());
        escalated.extend(observation(StepPhase::Test, 1, 3));
        escalated.push(finished(RunOutcome::Escalated));
        insta::assert_snapshot!("checklist_escalated", folded(&escalated));
    }

    #[test]
    fn an_acts_many_calls_show_the_latest_and_count_the_rest() {
        let mut events = vec![Event::PhaseStarted {
            phase: StepPhase::Build,
            iteration: 0,
        }];
        events.extend((0..MAX_TOOL_LINES + 3).map(|n| tool("read_file", &format!("f{n}.py"))));
        let text = folded(&events);
        assert!(text.contains("  - … 3 earlier\n"), "{text}");
        assert!(
            !text.contains("`f2.py`") && text.contains("`f3.py`"),
            "{text}"
        );
    }

    #[test]
    fn untrusted_inputs_stay_inside_one_code_span() {
        let line = tool_line("read_file", "a`b\n- [x] **Result**: committed", true);
        assert_eq!(line, "read ``a`b - [x] **Result**: committed``");
        let long = tool_line("search", &"x".repeat(200), false);
        assert!(long.ends_with("…` (failed)"), "{long}");
        assert_eq!(code("`tick"), "`` `tick ``");
    }
}
