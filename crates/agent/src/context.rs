//! The opening context of an attempt, assembled within a token budget: sections in priority order
//! (requirements, the repository's instructions for agents, maintainer guidance, failure digest,
//! relevant files, codebase summary, established patterns, history of earlier attempts), each trimmed so the whole fits, the
//! lowest-priority sections cut first, every cut marked `[... N tokens omitted]`.
//!
//! [`sections`] builds the sections from what the engine passed (untrusted text fenced);
//! [`assemble`] fits them. Pure text work over values: no I/O, no LLM calls.

use std::fmt::Write;

use super::relevant::FileExcerpt;
use super::tokens::{TokenCounter, fits_for_sure};
use meta_agent_hindsight::SignatureKind;
use meta_agent_protocol::builder::{FailureContext, FailureDigest};
use meta_agent_protocol::task::Task;
use meta_agent_protocol::untrusted::fenced;

/// Failures listed at most in the digest.
pub const MAX_FAILURES: usize = 20;
/// Characters of one failure's headline, and of its detail, kept in the digest.
const FAILURE_CHARS: usize = 900;
/// Frames of one failure listed at most.
const MAX_FRAMES: usize = 6;
/// Earlier-attempt lines kept (the most recent).
const MAX_HISTORY: usize = 30;
/// Characters of one earlier-attempt line.
const HISTORY_CHARS: usize = 240;
/// Below this many tokens a section is left out whole (a stub would say nothing).
const MIN_USEFUL: usize = 24;
/// Tokens kept aside per section for its heading and marker.
const SECTION_OVERHEAD: usize = 16;

/// One titled part of the context.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    /// The heading (`# {title}`).
    pub title: String,
    pub body: String,
    /// At most this share of the whole budget (0.0-1.0), so one section cannot starve the rest.
    pub max_share: f32,
}

impl Section {
    pub fn new(title: &str, body: String, max_share: f32) -> Self {
        Section {
            title: title.to_owned(),
            body,
            max_share,
        }
    }
}

/// What went into the context (count its tokens with the same counter when needed: a text that
/// obviously fits is never encoded).
#[derive(Debug, Clone, PartialEq)]
pub struct Assembled {
    pub text: String,
    /// `(section title, tokens omitted)` for every section that was cut.
    pub omitted: Vec<(String, usize)>,
}

/// What the sections are made from.
#[derive(Debug, Clone, Copy)]
pub struct ContextInput<'a> {
    pub task: &'a Task,
    pub context: &'a FailureContext,
    pub files: &'a [FileExcerpt],
    /// The explorer's summary of a large codebase.
    pub codebase: Option<&'a str>,
    /// The repository's instructions that apply, already fitted to their share and fenced
    /// ([`super::instructions::RepoInstructions::choose`]); empty when none apply.
    pub instructions: &'a str,
}

/// The share of the opening's budget the repository's instructions may take.
pub const INSTRUCTIONS_SHARE: f32 = 0.2;

/// The sections, highest priority first; empty ones are left out.
pub fn sections(input: &ContextInput<'_>) -> Vec<Section> {
    let context = input.context;
    let candidates = [
        Section::new(
            "The task",
            fenced("untrusted-task", &input.task.brief()),
            0.5,
        ),
        Section::new(
            "The repository's instructions for agents",
            input.instructions.to_owned(),
            INSTRUCTIONS_SHARE,
        ),
        Section::new(
            "Discussion on the issue (comments when the task was given)",
            if input.task.thread.trim().is_empty() {
                String::new()
            } else {
                fenced("untrusted-thread", &input.task.thread)
            },
            0.3,
        ),
        Section::new(
            "Guidance (from maintainers and hindsight)",
            fenced_list("untrusted-guidance", &context.guidance),
            0.2,
        ),
        Section::new(
            "Failures still present (parsed digests)",
            failure_digest(&context.unmet, &context.failures),
            0.3,
        ),
        Section::new("Relevant files", file_excerpts(input.files), 0.6),
        Section::new(
            "Codebase summary (from the explorer)",
            input
                .codebase
                .map_or(String::new(), |text| fenced("untrusted-summary", text)),
            0.2,
        ),
        Section::new("Failure patterns", patterns(context), 0.1),
        Section::new(
            "Relevant output (excerpt)",
            if context.output.trim().is_empty() {
                String::new()
            } else {
                fenced("untrusted-output", &context.output)
            },
            0.15,
        ),
        Section::new(
            "Earlier attempts (try something different)",
            history(&context.attempts),
            0.2,
        ),
    ];
    candidates
        .into_iter()
        .filter(|section| !section.body.trim().is_empty())
        .collect()
}

/// Fits `sections` into `budget` tokens, in order: each takes what it needs up to its share and
/// what is left; what does not fit is cut with a marker.
pub fn assemble(sections: &[Section], budget: usize, counter: &TokenCounter) -> Assembled {
    let mut text = String::new();
    for section in sections {
        let _ = write!(
            text,
            "\n# {}\n{}",
            section.title,
            with_newline(&section.body)
        );
    }
    if fits_for_sure(&text, budget) {
        return Assembled {
            text,
            omitted: Vec::new(),
        };
    }
    let mut left = budget.saturating_sub(SECTION_OVERHEAD * sections.len());
    let mut text = String::new();
    let mut omitted = Vec::new();
    for section in sections {
        let share = (budget as f32 * section.max_share.clamp(0.0, 1.0)) as usize;
        let fitted = fit(&with_newline(&section.body), left.min(share), counter);
        left = left.saturating_sub(fitted.tokens);
        let _ = write!(text, "\n# {}\n{}", section.title, fitted.body);
        if fitted.cut > 0 {
            let _ = writeln!(text, "[... {} tokens omitted]", fitted.cut);
            omitted.push((section.title.clone(), fitted.cut));
        }
    }
    Assembled { text, omitted }
}

/// A section body fitted to its allowance.
struct Fitted {
    body: String,
    /// Tokens of `body`.
    tokens: usize,
    /// Tokens cut.
    cut: usize,
}

fn with_newline(body: &str) -> String {
    if body.ends_with('\n') {
        body.to_owned()
    } else {
        format!("{body}\n")
    }
}

/// `body` within `allowed` tokens (ending in a newline); left out whole below [`MIN_USEFUL`].
fn fit(body: &str, allowed: usize, counter: &TokenCounter) -> Fitted {
    let trimmed = counter.trim(body, allowed);
    if trimmed.omitted == 0 {
        let tokens = counter.count(body);
        return Fitted {
            body: body.to_owned(),
            tokens,
            cut: 0,
        };
    }
    if allowed < MIN_USEFUL {
        return Fitted {
            body: String::new(),
            tokens: 0,
            cut: trimmed.omitted + counter.count(&trimmed.text),
        };
    }
    let mut kept = trimmed.text;
    if !kept.is_empty() && !kept.ends_with('\n') {
        kept.push('\n');
    }
    Fitted {
        tokens: counter.count(&kept),
        body: kept,
        cut: trimmed.omitted,
    }
}

/// The parsed failures, at most [`MAX_FAILURES`], numbered: each its test (or first line) with
/// where it failed and which gates said so, its assertion or message indented under it, and its
/// other frames; a failure of the same shape as an earlier one shows only its first line. The
/// unmet requirements come first.
fn failure_digest(unmet: &[String], failures: &[FailureDigest]) -> String {
    if unmet.is_empty() && failures.is_empty() {
        return String::new();
    }
    let mut text: String = unmet
        .iter()
        .map(|missing| {
            format!(
                "- requirement not met yet: {}\n",
                shorten(missing, FAILURE_CHARS)
            )
        })
        .collect();
    for (number, failure) in failures.iter().take(MAX_FAILURES).enumerate() {
        text.push_str(&digest_entry(number + 1, failure));
    }
    if failures.len() > MAX_FAILURES {
        let _ = writeln!(
            text,
            "[{} more failures not shown]",
            failures.len() - MAX_FAILURES
        );
    }
    fenced("untrusted-failures", &text)
}

fn digest_entry(number: usize, failure: &FailureDigest) -> String {
    let kind = match failure.kind {
        SignatureKind::TestFailure | SignatureKind::TestError if failure.test.is_some() => {
            String::new()
        }
        other => format!("[{}] ", other.as_str()),
    };
    let mut place: Vec<String> = failure.location.iter().cloned().collect();
    let gates = if failure.gates.len() == 1 {
        "gate"
    } else {
        "gates"
    };
    place.push(format!("{gates} {}", failure.gates.join(", ")));
    let mut entry = format!(
        "{number}. {kind}{} ({})",
        shorten(&failure.headline, FAILURE_CHARS),
        place.join("; ")
    );
    let detail: Vec<&str> = match failure.same_as {
        Some(earlier) => {
            let _ = write!(entry, ": the same failure as {earlier}");
            failure.detail.lines().take(1).collect()
        }
        None => failure.detail.lines().collect(),
    };
    entry.push('\n');
    let mut left = FAILURE_CHARS;
    for line in detail {
        let line = shorten(line, left.max(40));
        left = left.saturating_sub(line.chars().count());
        let _ = writeln!(entry, "   {line}");
        if left == 0 {
            break;
        }
    }
    if failure.same_as.is_none() && !failure.frames.is_empty() {
        let frames: Vec<&str> = failure
            .frames
            .iter()
            .take(MAX_FRAMES)
            .map(String::as_str)
            .collect();
        let _ = writeln!(entry, "   frames: {}", frames.join(", "));
    }
    entry
}

fn file_excerpts(files: &[FileExcerpt]) -> String {
    files
        .iter()
        .map(|file| {
            let body = format!("{} ({})\n{}", file.path, file.reason, file.text);
            fenced("untrusted-file", &body)
        })
        .collect()
}

fn patterns(context: &FailureContext) -> String {
    let mut text = String::new();
    if !context.patterns.trim().is_empty() {
        let _ = writeln!(text, "{}", context.patterns.trim());
    }
    if !context.files_changed.is_empty() {
        let _ = writeln!(
            text,
            "Files changed so far: {}",
            context.files_changed.join(", ")
        );
    }
    text
}

/// The most recent attempts, oldest first, each line shortened.
fn history(attempts: &[String]) -> String {
    let skipped = attempts.len().saturating_sub(MAX_HISTORY);
    let mut items: Vec<String> = Vec::new();
    if skipped > 0 {
        items.push(format!("[{skipped} earlier actions not shown]"));
    }
    items.extend(
        attempts[skipped..]
            .iter()
            .map(|line| shorten(line, HISTORY_CHARS)),
    );
    if attempts.is_empty() {
        return String::new();
    }
    fenced("untrusted-history", &bullets(&items))
}

fn fenced_list(tag: &str, items: &[String]) -> String {
    if items.is_empty() {
        return String::new();
    }
    fenced(tag, &bullets(items))
}

fn bullets(items: &[String]) -> String {
    items.iter().map(|item| format!("- {item}\n")).collect()
}

/// At most `max` characters, marked when cut.
fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let kept: String = text.chars().take(max).collect();
    format!("{kept} […]")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counter() -> TokenCounter {
        TokenCounter::for_model("gpt-4.1")
    }

    fn filler(words: usize) -> String {
        (0..words).map(|n| format!("word{n} ")).collect()
    }

    #[test]
    fn everything_fits_when_small() {
        let sections = vec![
            Section::new("A", "alpha".into(), 0.5),
            Section::new("B", "beta".into(), 0.5),
        ];
        let assembled = assemble(&sections, 1000, &counter());
        assert_eq!(assembled.text, "\n# A\nalpha\n\n# B\nbeta\n");
        assert!(assembled.omitted.is_empty());
    }

    #[test]
    fn lower_priority_sections_are_cut_first_and_marked() {
        let counter = counter();
        let sections = vec![
            Section::new("Requirements", filler(300), 1.0),
            Section::new("Files", filler(3000), 1.0),
            Section::new("History", filler(3000), 1.0),
        ];
        let budget = 2000;
        let assembled = assemble(&sections, budget, &counter);
        let tokens = counter.count(&assembled.text);
        assert!(tokens <= budget, "{tokens}");
        let titles: Vec<&str> = assembled.omitted.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(titles, ["Files", "History"]);
        let history_cut = assembled.omitted[1].1;
        assert_eq!(history_cut, counter.count(&format!("{}\n", filler(3000))));
        assert!(
            assembled
                .text
                .contains(&format!("[... {history_cut} tokens omitted]"))
        );
        assert!(assembled.text.contains(&filler(300)));
    }

    #[test]
    fn a_share_keeps_one_section_from_starving_the_rest() {
        let sections = vec![
            Section::new("Task", filler(5000), 0.5),
            Section::new(
                "Failures",
                "- [test] test_mean — assert 2 == 2.5".into(),
                0.3,
            ),
        ];
        let assembled = assemble(&sections, 1000, &counter());
        assert!(counter().count(&assembled.text) <= 1000);
        assert!(
            assembled
                .text
                .contains("- [test] test_mean — assert 2 == 2.5")
        );
        assert_eq!(assembled.omitted.len(), 1);
    }

    #[test]
    fn the_digest_is_capped_and_history_keeps_the_latest() {
        let failures: Vec<FailureDigest> = (0..30)
            .map(|n| FailureDigest::test(&format!("t{n}"), None, "boom"))
            .collect();
        let digest = failure_digest(&[], &failures);
        assert!(digest.contains("20. t19 (gate tests)") && !digest.contains("t20 ("));
        assert!(digest.contains("[10 more failures not shown]"));
        let attempts: Vec<String> = (0..40).map(|n| format!("iteration {n}: x")).collect();
        let text = history(&attempts);
        assert!(text.contains("[10 earlier actions not shown]"));
        assert!(text.contains("iteration 39: x") && !text.contains("iteration 9: x"));
    }

    #[test]
    fn the_failure_digest_as_the_model_reads_it() {
        let mut first = FailureDigest::test(
            "tests.test_window::test_windows",
            Some("tests/test_window.py:5"),
            "assert [[1, 2], [2, 3]] == [[1, 2], [2, 3], [3, 4]]\n  Right contains one more item: [3, 4]",
        );
        first.gates.push("coverage".into());
        first.frames = vec!["winstats/window.py:5".into()];
        let mut second = FailureDigest::test(
            "tests.test_window::test_pairs",
            Some("tests/test_window.py:9"),
            "assert [[1]] == [[1], [2]]\n  Right contains one more item: [2]",
        );
        second.same_as = Some(1);
        let lint = FailureDigest {
            kind: SignatureKind::Lint,
            gates: vec!["lint".into()],
            test: None,
            headline: "ruff F401: `os` imported but unused".into(),
            detail: "help: Remove unused import: `os`".into(),
            location: Some("winstats/window.py:1".into()),
            frames: Vec::new(),
            same_as: None,
        };
        let unmet = ["windows of size 0 raise ValueError".to_owned()];
        insta::assert_snapshot!(meta_agent_protocol::untrusted::plain_ids(&failure_digest(
            &unmet,
            &[first, second, lint]
        )));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        #[test]
        fn the_assembly_never_passes_its_budget(
            bodies in proptest::collection::vec(("[a-z_ (){}:\n]{0,40}", 0usize..400), 1..8),
            budget in 400usize..6000,
            unicode in proptest::bool::ANY,
        ) {
            let counter = counter();
            let sections: Vec<Section> = bodies
                .iter()
                .enumerate()
                .map(|(n, (unit, times))| {
                    let unit = if unicode { format!("{unit}é日本") } else { unit.clone() };
                    Section::new(&format!("S{n}"), unit.repeat(*times), 0.5)
                })
                .collect();
            let assembled = assemble(&sections, budget, &counter);
            let tokens = counter.count(&assembled.text);
            proptest::prop_assert!(tokens <= budget, "{} > {}", tokens, budget);
            for (title, _) in &assembled.omitted {
                let marker = format!("# {title}\n");
                proptest::prop_assert!(assembled.text.contains(&marker));
            }
        }
    }
}
