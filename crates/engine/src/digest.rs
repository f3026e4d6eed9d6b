//! What the next act is told: the failure digest (one entry per failing test or finding, a
//! failure several gates reported told once, the assertion and its diff, the in-repo frames;
//! a failure of the same shape as an earlier one says so instead of repeating it), what earlier
//! attempts did, the output of failed gates whose failures could not be parsed (never a skipped
//! gate's or the loop's own notes), the failures that predate the change, and guidance from
//! hindsight and maintainers. Part of [`Engine`]; pure assembly over the state, no I/O beyond
//! the hindsight view.

use std::collections::BTreeSet;

use super::improve;
use super::machine::Engine;
use super::state::LoopState;
use meta_agent_exec::CommandRunner;
use meta_agent_git::Repository;
use meta_agent_hindsight::SignatureKind;
use meta_agent_protocol::builder::{Builder, FailureContext, FailureDigest};
use meta_agent_protocol::records::{GateRecord, SignatureRecord};

/// Lines of a non-test error's message kept as its detail.
const MAX_ERROR_LINES: usize = 8;
/// In-repo frames named in the one line of a failure the task leaves alone, at most.
const MAX_LINE_FRAMES: usize = 3;

impl<R: CommandRunner, G: Repository, B: Builder> Engine<'_, R, G, B> {
    /// Everything the next attempt should know.
    pub(super) fn failure_context(&self, state: &LoopState) -> FailureContext {
        let preexisting = self.preexisting_at_baseline(state);
        let mut guidance = improve::guidance_for(self.hindsight_ctx(), state);
        guidance.extend(state.task.guidance.iter().cloned());
        guidance.extend(state.tamper.iter().map(|refusal| {
            format!(
                "Your earlier change was refused: {}. Fix the product code; existing tests, \
                 their data and their configuration stay as they are (new tests in new test \
                 functions or files are welcome).",
                meta_agent_render::refusal::line(refusal)
            )
        }));
        guidance.extend(super::hints::family_hints(
            self.hindsight.store.entries(),
            &state.signatures,
            meta_agent_hindsight::signature::family::family_key,
        ));
        let (shown, alone) = the_tasks_failures(state);
        if !alone.is_empty() {
            guidance.push(format!(
                "Failing before this change and not what the task asks (leave them as they \
                 are; they are reported, not yours to fix): {}",
                alone
                    .iter()
                    .map(|record| digest_line(record))
                    .collect::<Vec<_>>()
                    .join("; ")
            ));
        }
        FailureContext {
            unmet: state.review_missing.clone(),
            failures: digests(shown),
            attempts: attempts(state),
            files_changed: files_changed(state),
            output: failed_output(&state.gates, &state.signatures),
            patterns: patterns(state),
            instruction: instruction(state, preexisting),
            guidance,
        }
    }

    /// Whether the current failures are the baseline's and the task does not ask about them.
    fn preexisting_at_baseline(&self, state: &LoopState) -> bool {
        state.before_any_act() && !super::baseline::preexisting_left(state).is_empty()
    }
}

/// The current failures the task asks about, and those it leaves alone (the baseline showed
/// them; see [`super::baseline::not_asked`]). When every failure is left alone, all are shown
/// (with the instruction that they predate the change) and none is set apart.
fn the_tasks_failures(state: &LoopState) -> (Vec<&SignatureRecord>, Vec<&SignatureRecord>) {
    let left_alone = super::baseline::left_alone(state);
    let (alone, asked): (Vec<_>, Vec<_>) = state
        .signatures
        .iter()
        .partition(|record| left_alone.contains(&record.id));
    if asked.is_empty() {
        (alone, Vec::new())
    } else {
        (asked, alone)
    }
}

/// `[kind] template — excerpt (at file:line, …)`: one line for a failure the task leaves alone.
pub(crate) fn digest_line(record: &SignatureRecord) -> String {
    let mut frames: Vec<&str> = record.location.iter().map(String::as_str).collect();
    for frame in &record.frames {
        let known = frames
            .iter()
            .any(|f| *f == frame || f.starts_with(&format!("{frame}:")));
        if !known {
            frames.push(frame);
        }
    }
    frames.truncate(MAX_LINE_FRAMES);
    let at = if frames.is_empty() {
        String::new()
    } else {
        format!(" (at {})", frames.join(", "))
    };
    format!(
        "[{}] {} — {}{at}",
        record.kind.as_str(),
        record.template,
        record.excerpt
    )
}

/// The failures of an observation, compile errors first, then failing tests by where they
/// failed: a test two gates reported (pytest's JUnit and a coverage run's log) is one entry
/// naming both gates, the richer report's detail kept.
pub(crate) fn digests<'a>(
    signatures: impl IntoIterator<Item = &'a SignatureRecord>,
) -> Vec<FailureDigest> {
    let mut ordered: Vec<&SignatureRecord> = signatures.into_iter().collect();
    ordered.sort_by(|a, b| {
        let key = |r: &SignatureRecord| {
            (
                kind_rank(r.kind),
                r.location.clone(),
                r.detail.is_empty(),
                r.test.clone(),
            )
        };
        key(a).cmp(&key(b))
    });
    let mut out: Vec<FailureDigest> = Vec::new();
    let mut families: Vec<(&str, usize)> = Vec::new();
    for record in ordered {
        if let Some(known) = out.iter_mut().find(|d| same_failure(d, record)) {
            absorb(known, record);
            continue;
        }
        let mut digest = digest_of(record);
        let family = record.family.as_str();
        digest.same_as = families
            .iter()
            .find(|(known, _)| !family.is_empty() && *known == family)
            .map(|(_, number)| *number);
        if digest.same_as.is_none() {
            families.push((family, out.len() + 1));
        }
        out.push(digest);
    }
    out
}

/// Root causes first: what does not compile makes tests fail.
fn kind_rank(kind: SignatureKind) -> u8 {
    match kind {
        SignatureKind::Compile => 0,
        SignatureKind::TestFailure => 1,
        SignatureKind::TestError => 2,
        SignatureKind::Crash => 3,
        SignatureKind::Timeout => 4,
        SignatureKind::Lint => 5,
        SignatureKind::Other => 6,
    }
}

/// The same test (and parametrisation) failing at the same place, whichever gate and report
/// said so.
fn same_failure(digest: &FailureDigest, record: &SignatureRecord) -> bool {
    match (&digest.test, &record.test) {
        (Some(known), Some(test)) => {
            known.function() == test.function()
                && known.parameters() == test.parameters()
                && digest.location.is_some()
                && digest.location == record.location
        }
        _ => false,
    }
}

/// The `[…]` of a parametrised test's id (pytest's `test_mean[1-2]`).
fn absorb(digest: &mut FailureDigest, record: &SignatureRecord) {
    if !digest.gates.contains(&record.gate) {
        digest.gates.push(record.gate.clone());
    }
    if digest.detail.is_empty() {
        digest.detail = detail_of(record);
    }
    for frame in frames_of(record) {
        if !digest.frames.contains(&frame) {
            digest.frames.push(frame);
        }
    }
}

fn digest_of(record: &SignatureRecord) -> FailureDigest {
    let headline = match &record.test {
        Some(test) => test.to_string(),
        None => record
            .excerpt
            .lines()
            .map(str::trim)
            .find(|line| !line.is_empty())
            .unwrap_or(&record.template)
            .to_owned(),
    };
    FailureDigest {
        kind: record.kind,
        gates: vec![record.gate.clone()],
        test: record.test.clone(),
        headline,
        detail: detail_of(record),
        location: record.location.clone(),
        frames: frames_of(record),
        same_as: None,
    }
}

/// A test's assertion (its message when no assertion was found); the rest of an error's
/// message after its first line.
fn detail_of(record: &SignatureRecord) -> String {
    if !record.detail.is_empty() {
        return record.detail.clone();
    }
    let lines: Vec<&str> = record
        .excerpt
        .lines()
        .filter(|line| !line.trim().is_empty())
        .collect();
    let skip = usize::from(record.test.is_none());
    lines
        .iter()
        .skip(skip)
        .take(MAX_ERROR_LINES)
        .copied()
        .collect::<Vec<_>>()
        .join("\n")
}

/// The record's in-repo frames that name a file and line, its location left out.
fn frames_of(record: &SignatureRecord) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for frame in &record.frames {
        let plain = frame.split(" in ").next().unwrap_or(frame).trim();
        let names_a_line = plain.rsplit_once(':').is_some_and(|(path, line)| {
            !path.is_empty()
                && !path.contains(char::is_whitespace)
                && line.chars().all(|c| c.is_ascii_digit())
                && !line.is_empty()
        });
        let is_location = record.location.as_deref() == Some(plain);
        if names_a_line && !is_location && !out.iter().any(|f| f == plain) {
            out.push(plain.to_owned());
        }
    }
    out
}

fn attempts(state: &LoopState) -> Vec<String> {
    state
        .history
        .iter()
        .filter(|step| step.phase.is_act())
        .flat_map(|step| {
            step.actions
                .iter()
                .map(move |a| format!("iteration {}: {a}", step.iteration))
        })
        .collect()
}

fn files_changed(state: &LoopState) -> Vec<String> {
    let files: BTreeSet<String> = state
        .history
        .iter()
        .flat_map(|s| s.files_changed.iter().cloned())
        .collect();
    files.into_iter().collect()
}

/// The reasons of the failed gates whose failures could not be parsed (no failing test or
/// place was read from them), without the loop's own notes: a skipped or passing gate, or one
/// whose failures the digest already tells, says nothing more the model needs.
pub(crate) fn failed_output(gates: &[GateRecord], signatures: &[SignatureRecord]) -> String {
    let parsed = |gate: &GateRecord| {
        signatures
            .iter()
            .any(|s| s.gate == gate.name && (s.test.is_some() || s.location.is_some()))
    };
    gates
        .iter()
        .filter(|g| g.failed() && !parsed(g))
        .flat_map(|g| g.reasons.iter())
        .cloned()
        .collect::<Vec<_>>()
        .join("\n")
}

fn patterns(state: &LoopState) -> String {
    let persistent = state
        .previous_signature_ids()
        .is_some_and(|prev| prev == state.signature_ids());
    let failed: Vec<&str> = state
        .gates
        .iter()
        .filter(|g| g.failed())
        .map(|g| g.name.as_str())
        .collect();
    format!(
        "{} failure signature(s) across gates {}{}",
        state.signatures.len(),
        failed.join(", "),
        if persistent {
            "; the same failures persisted through the last attempt"
        } else {
            ""
        }
    )
}

fn instruction(state: &LoopState, preexisting: bool) -> String {
    if preexisting {
        return "The failures above were there before any change (the baseline): they are not \
                yours and the task does not ask about them. Build what the task asks; leave \
                them alone unless the task needs them fixed."
            .into();
    }
    if state.iteration > 1 {
        return "The previous attempts did not make the gates pass. Try a different approach \
                from the ones listed."
            .into();
    }
    "Make the failing gates pass without weakening, skipping or deleting tests.".into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use meta_agent_config::raw::GateKind;
    use meta_agent_protocol::records::{GateNote, GateStatus};
    use meta_agent_protocol::test_id::TestName;

    fn gate(name: &str, result: GateStatus, reasons: &[&str]) -> GateRecord {
        let reasons = reasons.iter().map(|r| (*r).to_owned()).collect();
        GateRecord::judged(name, GateKind::Lint, result, reasons)
    }

    /// A test failure as pytest's JUnit (gate `tests`) or a coverage run's log reports it.
    fn failure(gate: &str, test: &str, line: u32, detail: &str, family: &str) -> SignatureRecord {
        SignatureRecord {
            id: format!("{gate}-{test}"),
            kind: SignatureKind::TestFailure,
            template: format!("{test}: AssertionError"),
            family: family.into(),
            gate: gate.into(),
            excerpt: "assert 2 == 2.5".into(),
            location: Some(format!("tests/test_calc.py:{line}")),
            test: Some(TestName::new(test)),
            frames: vec![
                format!("tests/test_calc.py:{line}"),
                "calc.py:25 in mean".into(),
                "calc::tests::mean".into(),
            ],
            detail: detail.into(),
        }
    }

    #[test]
    fn only_failed_gates_whose_failures_were_not_parsed_speak_in_the_output() {
        let gates = [
            gate(
                "lint",
                GateStatus::Skipped,
                &["requires `ruff`, which is not on PATH"],
            ),
            GateRecord {
                notes: vec![GateNote::FastFeedback, GateNote::NetworkNotCut],
                ..gate("tests", GateStatus::Failed, &["1 of 3 tests failed"])
            },
            gate("coverage", GateStatus::Failed, &["no report found"]),
        ];
        assert_eq!(
            failed_output(&gates, &[]),
            "1 of 3 tests failed\nno report found"
        );
        let parsed = [failure("tests", "tests.test_calc::test_mean", 28, "", "f")];
        assert_eq!(failed_output(&gates, &parsed), "no report found");
    }

    #[test]
    fn one_test_two_gates_is_one_entry_and_a_same_shaped_failure_says_so() {
        let signatures = [
            failure("coverage", "tests/test_calc.py::test_mean", 28, "", "f1"),
            failure(
                "tests",
                "tests.test_calc::test_mean",
                28,
                "assert 2 == 2.5\n +  where 2 = mean([1, 2, 3, 4])",
                "f1",
            ),
            failure(
                "tests",
                "tests.test_calc::test_median",
                31,
                "assert 3 == 3.5",
                "f1",
            ),
            SignatureRecord {
                kind: SignatureKind::Lint,
                test: None,
                location: Some("calc.py:1".into()),
                frames: Vec::new(),
                excerpt: "ruff F401: `os` imported but unused\nhelp: remove it".into(),
                detail: String::new(),
                gate: "lint".into(),
                ..failure("lint", "x", 1, "", "f2")
            },
        ];
        let found = digests(&signatures);
        assert_eq!(found.len(), 3, "{found:#?}");
        let parametrised = [
            failure(
                "tests",
                "tests.test_calc::test_mean[1]",
                28,
                "assert 1 == 2",
                "f",
            ),
            failure(
                "tests",
                "tests.test_calc::test_mean[2]",
                28,
                "assert 2 == 3",
                "f",
            ),
        ];
        let both = digests(&parametrised);
        assert_eq!(both.len(), 2, "two parametrisations are two failures");
        assert_eq!(both[1].same_as, Some(1));
        assert_eq!(
            found[0].test.as_ref().map(TestName::as_str),
            Some("tests.test_calc::test_mean")
        );
        assert_eq!(found[0].gates, ["tests", "coverage"]);
        assert_eq!(
            found[0].detail,
            "assert 2 == 2.5\n +  where 2 = mean([1, 2, 3, 4])"
        );
        assert_eq!(
            found[0].frames,
            ["calc.py:25"],
            "path:line frames, the location left out"
        );
        assert_eq!(found[1].same_as, Some(1));
        assert_eq!(found[1].detail, "assert 3 == 3.5");
        assert_eq!(found[2].headline, "ruff F401: `os` imported but unused");
        assert_eq!(found[2].detail, "help: remove it");
        assert_eq!(found[2].same_as, None);
    }
}
