//! The commit subject: an imperative line of at most 72 characters, from the model's finish
//! summary (its first line) or the hindsight resolution applied, never the task text cut short
//! and never why an act stopped (a run whose budget ran out after a fix that the gates verified
//! is named by the definitions its change is in). It follows the repository's convention when
//! its history shows one: Conventional Commits (`fix(scope): …`, the type in lower case, a scope
//! the history uses, the description's case as the history writes it). Pure text over the run's
//! records; [`style_of`] reads the convention from recent subjects.

use std::sync::LazyLock;

use regex::Regex;

use meta_agent_protocol::records::{ActEnd, ChangedFile, CommitStyle, StepPhase, StepRecord};
use meta_agent_protocol::state::LoopState;

/// Longest subject line.
pub const SUBJECT_CHARS: usize = 72;

/// Leading verbs in the forms models write them, and their imperative.
const VERBS: [(&str, &str); 24] = [
    ("fixed", "Fix"),
    ("fixes", "Fix"),
    ("added", "Add"),
    ("adds", "Add"),
    ("updated", "Update"),
    ("updates", "Update"),
    ("changed", "Change"),
    ("changes", "Change"),
    ("removed", "Remove"),
    ("removes", "Remove"),
    ("replaced", "Replace"),
    ("replaces", "Replace"),
    ("corrected", "Correct"),
    ("corrects", "Correct"),
    ("implemented", "Implement"),
    ("implements", "Implement"),
    ("handled", "Handle"),
    ("handles", "Handle"),
    ("made", "Make"),
    ("makes", "Make"),
    ("used", "Use"),
    ("renamed", "Rename"),
    ("restored", "Restore"),
    ("applied", "Apply"),
];

/// Conventional Commits types.
const TYPES: [&str; 11] = [
    "feat", "fix", "chore", "docs", "refactor", "perf", "test", "build", "ci", "style", "revert",
];
/// Subjects a convention is read from at most, and the share that must follow it.
const STYLE_WINDOW: usize = 30;
const STYLE_MIN_SUBJECTS: usize = 5;
const STYLE_SHARE: f32 = 0.6;
/// Scopes remembered at most.
const MAX_SCOPES: usize = 12;

/// `type(scope)!: description`, any case.
static CONVENTIONAL: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^(?i)([a-z]+)(?:\(([^()]*)\))?(!)?:\s+(\S.*)$").ok());

/// A subject's Conventional Commits parts, when it has them and its type is a known one.
struct Conventional<'a> {
    kind: String,
    scope: Option<&'a str>,
    breaking: bool,
    description: &'a str,
}

fn conventional(subject: &str) -> Option<Conventional<'_>> {
    let caps = CONVENTIONAL.as_ref()?.captures(subject.trim())?;
    let kind = caps.get(1)?.as_str().to_lowercase();
    if !TYPES.contains(&kind.as_str()) {
        return None;
    }
    Some(Conventional {
        kind,
        scope: caps.get(2).map(|m| m.as_str()).filter(|s| !s.is_empty()),
        breaking: caps.get(3).is_some(),
        description: caps.get(4)?.as_str(),
    })
}

/// The convention recent subjects (newest first) follow: Conventional Commits when most of
/// them (merges and reverts left out) do, with the scopes they use and the case of their
/// descriptions; plain otherwise, or with too few to tell.
pub fn style_of(subjects: &[String]) -> CommitStyle {
    let considered: Vec<&str> = subjects
        .iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty() && !s.starts_with("Merge ") && !s.starts_with("Revert \""))
        .take(STYLE_WINDOW)
        .collect();
    let parsed: Vec<Conventional<'_>> = considered.iter().filter_map(|s| conventional(s)).collect();
    let enough = considered.len() >= STYLE_MIN_SUBJECTS
        && parsed.len() as f32 >= considered.len() as f32 * STYLE_SHARE;
    if !enough {
        return CommitStyle::Plain;
    }
    let mut scopes: Vec<(String, usize)> = Vec::new();
    for scope in parsed.iter().filter_map(|c| c.scope) {
        match scopes.iter_mut().find(|(known, _)| known == scope) {
            Some((_, count)) => *count += 1,
            None => scopes.push((scope.to_owned(), 1)),
        }
    }
    scopes.sort_by_key(|(_, count)| std::cmp::Reverse(*count));
    let lower = parsed
        .iter()
        .filter(|c| c.description.chars().next().is_some_and(char::is_lowercase))
        .count();
    CommitStyle::Conventional {
        scopes: scopes
            .into_iter()
            .take(MAX_SCOPES)
            .map(|(s, _)| s)
            .collect(),
        lowercase: lower * 2 >= parsed.len(),
    }
}

/// The subject for the run's change: the last acting step that changed files decides, in the
/// repository's style.
pub fn commit_subject(state: &LoopState) -> String {
    let last = state
        .history
        .iter()
        .rev()
        .find(|step| step.phase.is_act() && !step.files_changed.is_empty());
    let fixing = fixes_failures(state);
    let line = last
        .and_then(|step| step_subject(step, fixing))
        .unwrap_or_else(|| format!("Make the gates pass: {}", state.task.title));
    let files = last.map_or(&[][..], |step| step.files_changed.as_slice());
    styled(&line, &state.commit_style, fixing, files)
}

/// Whether the run fixed failures (the baseline had some, or it took an improve step).
fn fixes_failures(state: &LoopState) -> bool {
    state.history.iter().any(|step| {
        step.phase == StepPhase::Improve
            || (step.phase == StepPhase::Baseline && !step.signatures.is_empty())
    })
}

/// From a hindsight step, the resolution; from a builder that finished, its summary's first
/// sentence; from one that stopped, what its change is in.
fn step_subject(step: &StepRecord, fixing: bool) -> Option<String> {
    if let Some(resolution) = step.resolutions.first() {
        return Some(format!("Apply known fix ({})", resolution.description));
    }
    match step.ended {
        ActEnd::Finished => {
            let first = step
                .outcome
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty())?;
            let sentence = first.split(". ").next().unwrap_or(first);
            Some(sentence.trim_end_matches(['.', ' ']).to_owned())
        }
        ActEnd::Stopped => changed_subject(&step.changed, if fixing { "Fix" } else { "Update" }),
    }
}

/// `Fix windows in winstats/window.py`, `Fix mean (calc.py) and span (span.py)`,
/// `Fix calc.py`: what a change is in, when no one said what it does.
fn changed_subject(changed: &[ChangedFile], verb: &str) -> Option<String> {
    let with_names: Vec<&ChangedFile> = changed
        .iter()
        .filter(|c| !c.definitions.is_empty())
        .collect();
    let text = match with_names.as_slice() {
        [] if changed.is_empty() => return None,
        [] => listed(&changed.iter().map(|c| c.path.clone()).collect::<Vec<_>>()),
        [one] => format!("{} in {}", listed(&one.definitions), one.path),
        several => listed(
            &several
                .iter()
                .map(|c| format!("{} ({})", c.definitions.join(", "), c.path))
                .collect::<Vec<_>>(),
        ),
    };
    Some(format!("{verb} {text}"))
}

/// `a`, `a and b`, `a, b and c`.
fn listed(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// `line` as the repository writes subjects, at most [`SUBJECT_CHARS`] characters.
fn styled(line: &str, style: &CommitStyle, fixing: bool, files: &[String]) -> String {
    let parts = conventional(line);
    match (style, parts) {
        // The model wrote a Conventional subject: kept, its type in lower case.
        (CommitStyle::Plain, Some(p)) => {
            let scope = p.scope.map_or_else(String::new, |s| format!("({s})"));
            let bang = if p.breaking { "!" } else { "" };
            fit(&format!("{}{scope}{bang}: {}", p.kind, p.description))
        }
        (CommitStyle::Plain, None) => fit(&imperative(line)),
        (CommitStyle::Conventional { scopes, lowercase }, parts) => {
            let (kind, scope, bang, description) = match parts {
                Some(p) => (
                    p.kind,
                    p.scope.map(str::to_owned),
                    p.breaking,
                    p.description.to_owned(),
                ),
                None => (
                    if fixing { "fix" } else { "feat" }.to_owned(),
                    scope_for(scopes, files),
                    false,
                    imperative(line),
                ),
            };
            // `fix(calc): fix median` says it twice.
            let description = match description.split_once(' ') {
                Some((verb, rest)) if verb.eq_ignore_ascii_case(&kind) => rest.to_owned(),
                _ => description,
            };
            let description = if *lowercase {
                lowered(&description)
            } else {
                capitalised(&description)
            };
            let scope = scope.map_or_else(String::new, |s| format!("({s})"));
            let bang = if bang { "!" } else { "" };
            fit(&format!("{kind}{scope}{bang}: {description}"))
        }
    }
}

/// The first scope of the history that names a directory or file of the change.
fn scope_for(scopes: &[String], files: &[String]) -> Option<String> {
    scopes
        .iter()
        .find(|scope| {
            files.iter().any(|file| {
                file.split('/').any(|part| {
                    part == scope.as_str() || part.split('.').next() == Some(scope.as_str())
                })
            })
        })
        .cloned()
}

/// The first letter in lower case, unless the first word is an acronym or a name with capitals
/// inside (`API`, `HashMap`).
fn lowered(text: &str) -> String {
    let first = text.split(' ').next().unwrap_or_default();
    if first.chars().skip(1).any(char::is_uppercase) {
        return text.to_owned();
    }
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |c| {
        c.to_lowercase().chain(chars).collect::<String>()
    })
}

/// The first word in the imperative (a known verb form), the first letter capitalised.
pub fn imperative(line: &str) -> String {
    let line = line.trim();
    let (first, rest) = line.split_once(' ').unwrap_or((line, ""));
    let lowered = first.to_lowercase();
    let verb = VERBS
        .iter()
        .find(|(form, _)| *form == lowered)
        .map(|(_, base)| (*base).to_owned());
    let head = verb.unwrap_or_else(|| capitalised(first));
    if rest.is_empty() {
        head
    } else {
        format!("{head} {rest}")
    }
}

fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map_or_else(String::new, |c| {
        c.to_uppercase().chain(chars).collect::<String>()
    })
}

/// At most [`SUBJECT_CHARS`] characters, cut at a word boundary, on one line.
pub fn fit(line: &str) -> String {
    let line: String = line.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= SUBJECT_CHARS {
        return line;
    }
    let mut out = String::new();
    for word in line.split(' ') {
        let next = if out.is_empty() {
            word.to_owned()
        } else {
            format!("{out} {word}")
        };
        if next.chars().count() > SUBJECT_CHARS {
            break;
        }
        out = next;
    }
    if out.is_empty() {
        line.chars().take(SUBJECT_CHARS).collect()
    } else {
        out.trim_end_matches([',', ';', ':', '-']).to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_becomes_an_imperative_subject() {
        assert_eq!(
            imperative("fixed the floor division in mean"),
            "Fix the floor division in mean"
        );
        assert_eq!(
            imperative("use true division in mean"),
            "Use true division in mean"
        );
        assert_eq!(imperative("Adds a --verbose flag"), "Add a --verbose flag");
    }

    #[test]
    fn a_long_subject_is_cut_at_a_word_within_72_characters() {
        let long = "Use true division in mean so that the average of floats keeps its \
                    fractional part and the tests pass";
        let subject = fit(long);
        assert!(subject.chars().count() <= SUBJECT_CHARS, "{subject}");
        assert_eq!(
            subject,
            "Use true division in mean so that the average of floats keeps its"
        );
        assert!(!subject.contains('…'));
        assert_eq!(fit("a\nb"), "a b");
    }

    fn subjects(lines: &[&str]) -> Vec<String> {
        lines.iter().map(|l| (*l).to_owned()).collect()
    }

    #[test]
    fn the_convention_is_read_from_the_history() {
        let conventional = subjects(&[
            "fix(window): include the last window",
            "feat(stats): add median",
            "Merge pull request #4 from x/y",
            "docs: say how to install",
            "fix(window): empty input",
            "chore(deps): bump pytest",
            "Fix typo",
        ]);
        assert_eq!(
            style_of(&conventional),
            CommitStyle::Conventional {
                scopes: vec!["window".into(), "stats".into(), "deps".into()],
                lowercase: true,
            }
        );
        let plain = subjects(&["Fix typo", "Add median", "feat: x", "Update docs", "Bump"]);
        assert_eq!(style_of(&plain), CommitStyle::Plain);
        assert_eq!(
            style_of(&subjects(&["fix: a", "fix: b"])),
            CommitStyle::Plain,
            "too few"
        );
    }

    #[test]
    fn a_subject_takes_the_repositorys_style() {
        let style = CommitStyle::Conventional {
            scopes: vec!["stats".into(), "window".into()],
            lowercase: true,
        };
        let files = ["winstats/window.py".to_owned()];
        assert_eq!(
            styled("Use a closed range in windows", &style, true, &files),
            "fix(window): use a closed range in windows"
        );
        assert_eq!(
            styled("Fix(Window): Include the last window", &style, true, &files),
            "fix(Window): include the last window",
            "never `Fix(scope)`"
        );
        assert_eq!(
            styled("add median", &style, false, &["README.md".to_owned()]),
            "feat: add median"
        );
        assert_eq!(
            styled(
                "fix(window): include the last window",
                &CommitStyle::Plain,
                true,
                &files
            ),
            "fix(window): include the last window",
            "a Conventional subject the model wrote keeps its lower-case type"
        );
        assert_eq!(
            styled("use true division", &CommitStyle::Plain, true, &files),
            "Use true division"
        );
    }

    #[test]
    fn a_stopped_act_is_named_by_what_its_change_is_in() {
        let file = |path: &str, names: &[&str]| ChangedFile {
            path: path.into(),
            definitions: names.iter().map(|n| (*n).to_owned()).collect(),
        };
        assert_eq!(
            changed_subject(&[file("winstats/window.py", &["windows"])], "Fix").as_deref(),
            Some("Fix windows in winstats/window.py")
        );
        assert_eq!(
            changed_subject(
                &[
                    file("calc.py", &["mean", "Stats.median"]),
                    file("span.py", &["span"]),
                    file("README.md", &[]),
                ],
                "Fix"
            )
            .as_deref(),
            Some("Fix mean, Stats.median (calc.py) and span (span.py)")
        );
        assert_eq!(
            changed_subject(&[file("a.cfg", &[]), file("b.cfg", &[])], "Update").as_deref(),
            Some("Update a.cfg and b.cfg")
        );
        assert_eq!(changed_subject(&[], "Fix"), None);
    }
}
