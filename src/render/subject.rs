//! The commit subject: an imperative line of at most 72 characters, from the model's finish
//! summary (its first line) or the hindsight resolution applied, never the task text cut short.
//! Pure text over the run's acting steps.

use crate::engine::state::LoopState;
use crate::protocol::records::StepRecord;

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

/// The subject for the run's change: the last acting step that changed files decides.
pub fn commit_subject(state: &LoopState) -> String {
    let last = state
        .history
        .iter()
        .rev()
        .find(|step| step.phase.is_act() && !step.files_changed.is_empty());
    let line = last
        .and_then(step_subject)
        .unwrap_or_else(|| format!("Make the gates pass: {}", state.task.title));
    fit(&imperative(&line))
}

/// From a hindsight step, the resolution; from the model, its summary's first line.
fn step_subject(step: &StepRecord) -> Option<String> {
    if let Some(resolution) = step.resolutions.first() {
        return Some(format!("Apply known fix ({})", resolution.description));
    }
    let first = step
        .outcome
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())?;
    let sentence = first.split(". ").next().unwrap_or(first);
    Some(sentence.trim_end_matches(['.', ' ']).to_owned())
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
}
