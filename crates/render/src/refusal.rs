//! A refused change's line: the path (or "the change", for its size) and why, as the reports,
//! the timeline, the model's guidance and the run's JSON state it. Never a secret: a refusal holds
//! the kind of a secret, not its value.

use meta_agent_protocol::refusal::{Refusal, SecretPlace, Why};

/// What a change refused by the evidence guard is told (the line ends with it).
const EVIDENCE_NOTE: &str = "refused and undone: existing tests are evidence (a maintainer can \
                             allow test edits: `/agent fix --allow-test-edits`)";

/// One refusal on one line: `path: why`, or `the change: why`.
pub fn line(refusal: &Refusal) -> String {
    if let Why::Said { line } = &refusal.why {
        return line.clone();
    }
    let path = refusal.path.as_deref().unwrap_or("the change");
    match &refusal.why {
        Why::AltersEvidence { seen, .. } => format!("{path}: {seen} — {EVIDENCE_NOTE}"),
        why => format!("{path}: {}", reason(why)),
    }
}

/// Every refusal's line, joined by `; `.
pub fn lines(refusals: &[Refusal]) -> String {
    refusals.iter().map(line).collect::<Vec<_>>().join("; ")
}

/// Why, in words.
fn reason(why: &Why) -> String {
    match why {
        Why::NotPlainPath => "not a plain path inside the repository".to_owned(),
        Why::Protected => "changes a protected path".to_owned(),
        Why::SymlinkOnTheWay { dir } => format!("{dir} on the way is a symlink"),
        Why::SymlinkOut { escape } => format!("a symlink {escape}"),
        Why::TooManyFiles { count, max } => format!("{count} changed files (at most {max})"),
        Why::TooManyAddedLines { count, max } => format!("{count} added lines (at most {max})"),
        Why::TooManyAddedBytes { count, max } => format!("{count} added bytes (at most {max})"),
        Why::FileTooLarge { bytes, max } => format!("{bytes} bytes (at most {max})"),
        Why::BinaryTooLarge { bytes, max } => {
            format!("a binary file of {bytes} bytes (at most {max})")
        }
        Why::Secret { secret, place } => secret_reason(secret, *place),
        Why::Tampered { seen, .. } | Why::AltersEvidence { seen, .. } => seen.clone(),
        Why::NestedGit => "a nested git repository or `gitdir:` pointer; removed".to_owned(),
        Why::TooDeep => "nested deeper than git reads; removed".to_owned(),
        Why::Said { line } => line.clone(),
    }
}

fn secret_reason(secret: &str, place: SecretPlace) -> String {
    match place {
        SecretPlace::Name => format!("a secret ({secret}) in the file's name or link target"),
        SecretPlace::BinaryFile => format!("a binary file holding a secret ({secret})"),
        SecretPlace::Line { line } => format!("adds a secret ({secret}) at line {line}"),
        SecretPlace::AcrossLines => format!("adds a secret ({secret}) across lines"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use meta_agent_protocol::path::LinkEscape;
    use meta_agent_protocol::refusal::{EvidenceKind, TamperKind};

    #[test]
    fn every_refusal_line() {
        let secret = |place| Why::Secret {
            secret: "github_token".into(),
            place,
        };
        let refusals = [
            Refusal::of("/etc/passwd", Why::NotPlainPath),
            Refusal::of(".github/workflows/ci.yml", Why::Protected),
            Refusal::of("out/a.txt", Why::SymlinkOnTheWay { dir: "out".into() }),
            Refusal::of(
                "link",
                Why::SymlinkOut {
                    escape: LinkEscape::OutOfTree,
                },
            ),
            Refusal::whole(Why::TooManyFiles { count: 60, max: 50 }),
            Refusal::whole(Why::TooManyAddedLines {
                count: 5001,
                max: 5000,
            }),
            Refusal::whole(Why::TooManyAddedBytes {
                count: 600_000,
                max: 500_000,
            }),
            Refusal::of(
                "big.txt",
                Why::FileTooLarge {
                    bytes: 2_000_000,
                    max: 1_000_000,
                },
            ),
            Refusal::of(
                "blob.bin",
                Why::BinaryTooLarge {
                    bytes: 300_000,
                    max: 262_144,
                },
            ),
            Refusal::of("[secret].txt", secret(SecretPlace::Name)),
            Refusal::of("blob.bin", secret(SecretPlace::BinaryFile)),
            Refusal::of("config.py", secret(SecretPlace::Line { line: 4 })),
            Refusal::of("config.py", secret(SecretPlace::AcrossLines)),
            Refusal::of(
                "tests/test_calc.py",
                Why::Tampered {
                    tamper: TamperKind::AssertionWeakened,
                    seen: "an assertion was weakened (== 2.5 became >= 2)".into(),
                },
            ),
            Refusal::of(
                "tests/test_calc.py",
                Why::AltersEvidence {
                    evidence: EvidenceKind::TestChanged,
                    seen: "changes the existing test test_mean".into(),
                },
            ),
            Refusal::of("vendor/lib", Why::NestedGit),
            Refusal::of("a/b/c", Why::TooDeep),
            Refusal {
                path: None,
                why: Why::Said {
                    line: "tests/test_a.py: assertion loosened".into(),
                },
            },
        ];
        let text: String = refusals.iter().map(|r| line(r) + "\n").collect();
        insta::assert_snapshot!(text);
    }
}
