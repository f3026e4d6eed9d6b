//! Near misses: a hindsight entry whose failure is of the same family as a current one (the same
//! failure but for test ids, line numbers and paths) but not the same signature. Its patch is
//! shown to the model as a hint, with its diff, never applied: the code around it may differ.
//! Pure selection over the store's entries; the family key is hindsight's.

use std::collections::BTreeSet;

use meta_agent_hindsight::SignatureKind;
use meta_agent_hindsight::store::{Entry, Fix};
use meta_agent_protocol::records::SignatureRecord;

/// Hints shown at most.
pub const MAX_HINTS: usize = 2;
/// Bytes of one hint's diff shown at most.
const HINT_DIFF_BYTES: usize = 1_500;

/// The family of a failure: its kind and template without test ids, lines and paths.
pub type FamilyKey = fn(SignatureKind, &str) -> String;

/// For the current failures, the patches that fixed a failure of the same family elsewhere
/// (another signature), best known first, each once.
pub fn family_hints(
    entries: &[Entry],
    current: &[SignatureRecord],
    family_key: FamilyKey,
) -> Vec<String> {
    let ids: BTreeSet<&str> = current.iter().map(|s| s.id.as_str()).collect();
    let mut hints = Vec::new();
    let mut shown = BTreeSet::new();
    for failure in current {
        let family = family_key(failure.kind, &failure.template);
        let relatives = entries.iter().filter(|entry| {
            !ids.contains(entry.signature.as_str())
                && entry.kind == failure.kind
                && family_key(entry.kind, &entry.template) == family
        });
        for entry in relatives {
            for resolution in &entry.resolutions {
                let Fix::Patch(patch) = &resolution.fix else {
                    continue;
                };
                if hints.len() < MAX_HINTS && shown.insert(resolution.id.clone()) {
                    hints.push(hint(&entry.template, &patch.diff));
                }
            }
        }
    }
    hints
}

fn hint(template: &str, diff: &str) -> String {
    format!(
        "A near miss from hindsight, a hint only (never applied as it is; the code here may \
         differ): a failure of the same family,\n  {template}\nwas fixed by this change:\n{}",
        meta_agent_report::trim_to(diff, HINT_DIFF_BYTES)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use meta_agent_hindsight::Signature;
    use meta_agent_hindsight::store::{PatchFix, Resolution, Timestamp};

    /// A stand-in family key for the test: the template without its test name.
    fn without_test(kind: SignatureKind, template: &str) -> String {
        let rest = template.split_once(' ').map_or(template, |(_, rest)| rest);
        format!("{}:{rest}", kind.as_str())
    }

    fn entry(id: &str, template: &str, diff: &str) -> Entry {
        let signature = Signature {
            id: id.into(),
            kind: SignatureKind::TestFailure,
            template: template.into(),
        };
        let mut entry = Entry::new(&signature, Timestamp::new(std::time::UNIX_EPOCH));
        entry.resolutions.push(Resolution::new(Fix::Patch(PatchFix {
            diff: diff.into(),
            files: ["calc.py".to_owned()].into(),
            source: None,
        })));
        entry
    }

    fn failure(id: &str, template: &str) -> SignatureRecord {
        SignatureRecord {
            id: id.into(),
            kind: SignatureKind::TestFailure,
            template: template.into(),
            gate: "tests".into(),
            excerpt: String::new(),
            location: None,
            test: None,
            frames: Vec::new(),
            family: String::new(),
            detail: String::new(),
        }
    }

    #[test]
    fn a_relative_shows_its_diff_and_the_same_or_another_family_does_not() {
        let entries = [
            entry("near", "test_mean assert <N> == <N>", "-a // b\n+a / b\n"),
            entry("same", "test_median assert <N> == <N>", "-same\n+same\n"),
            entry("other", "test_add KeyError: <S>", "-other\n+other\n"),
        ];
        let current = [failure("same", "test_median assert <N> == <N>")];
        let hints = family_hints(&entries, &current, without_test);
        assert_eq!(hints.len(), 1, "{hints:?}");
        assert!(hints[0].contains("-a // b\n+a / b"), "{}", hints[0]);
        assert!(hints[0].contains("never applied"), "{}", hints[0]);
        assert!(
            family_hints(
                &entries,
                &[failure("x", "test_q ImportError")],
                without_test
            )
            .is_empty()
        );
    }
}
