//! What the bot refused of a change, and why, as data: the patch gate's refusals (a path, a
//! symlink, a size, a secret), the test-tamper and evidence guards' (a weakened assertion, an
//! altered test) and what the bot removed from a worktree before reading it (a nested git
//! repository, directories deeper than git reads). A [`Refusal`] travels typed in events, the
//! loop's state and the escalation reason; `render::refusal` writes its line, the one text of it.
//!
//! A refusal names the kind of a secret, never the secret. Refusals saved by versions that kept
//! them as lines of text load as [`Why::Said`], their line as it was.

use serde::{Deserialize, Serialize};

use crate::path::LinkEscape;

/// One thing refused of a change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "Wire")]
pub struct Refusal {
    /// The repository path it is about; `None` when it is about the change as a whole (its
    /// size). A path holding a secret is shown with the secret cut out.
    pub path: Option<String>,
    pub why: Why,
}

/// Why a change (or one of its paths) was refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Why {
    /// Absolute, `..`, a NUL byte or a `.git` component (in any case).
    NotPlainPath,
    /// A protected glob covers the path (`.git`, workflows, the bot's configuration,
    /// `commit.protected_paths`).
    Protected,
    /// A directory between the root and the path is a symlink.
    SymlinkOnTheWay {
        dir: String,
    },
    /// A symlink leading out of the tree or into `.git`.
    SymlinkOut {
        escape: LinkEscape,
    },
    TooManyFiles {
        count: usize,
        max: usize,
    },
    TooManyAddedLines {
        count: usize,
        max: usize,
    },
    TooManyAddedBytes {
        count: usize,
        max: usize,
    },
    FileTooLarge {
        bytes: u64,
        max: u64,
    },
    BinaryTooLarge {
        bytes: u64,
        max: u64,
    },
    /// A secret (an exact value the bot holds, in any encoding, or a token pattern): the
    /// redactor's name for its kind, and where it was.
    Secret {
        secret: String,
        place: SecretPlace,
    },
    /// The test-tamper guard's finding: what it saw (at most a line of the diff quoted).
    Tampered {
        tamper: TamperKind,
        seen: String,
    },
    /// The evidence guard's finding: a change to the existing tests' evidence, undone.
    AltersEvidence {
        evidence: EvidenceKind,
        seen: String,
    },
    /// A nested git repository or `gitdir:` pointer, removed.
    NestedGit,
    /// Directories nested deeper than git reads, removed.
    TooDeep,
    /// A refusal saved by an older version, as its line read.
    Said {
        line: String,
    },
}

/// Where the patch gate found a secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "at", rename_all = "snake_case")]
pub enum SecretPlace {
    /// In the file's name, a rename's source or a symlink's target.
    Name,
    /// In the bytes of a binary file.
    BinaryFile,
    /// In one added line.
    Line { line: usize },
    /// Spread over several added lines.
    AcrossLines,
}

/// The kind of tampering the test-tamper guard found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TamperKind {
    ProtectedFileChanged,
    TestFileDeleted,
    TestRemoved,
    TestSkipped,
    AssertionWeakened,
}

impl TamperKind {
    /// The snake_case name (as serialised).
    pub fn as_str(self) -> &'static str {
        match self {
            TamperKind::ProtectedFileChanged => "protected_file_changed",
            TamperKind::TestFileDeleted => "test_file_deleted",
            TamperKind::TestRemoved => "test_removed",
            TamperKind::TestSkipped => "test_skipped",
            TamperKind::AssertionWeakened => "assertion_weakened",
        }
    }
}

/// What kind of evidence a refused change would have altered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceKind {
    /// An existing test's code changed (assertion, expected value, marker, parametrize table).
    TestChanged,
    /// An existing test file was deleted.
    TestDeleted,
    /// An existing snapshot, fixture or testdata file changed or was deleted.
    TestDataChanged,
    /// How tests are collected, configured, built or run changed.
    TestConfigChanged,
    /// A start-up hook or a module-resolution directory was written.
    StartupHook,
    /// A new module shadows one the tests import.
    ShadowingModule,
}

impl EvidenceKind {
    /// The snake_case name (as serialised).
    pub fn as_str(self) -> &'static str {
        match self {
            EvidenceKind::TestChanged => "test_changed",
            EvidenceKind::TestDeleted => "test_deleted",
            EvidenceKind::TestDataChanged => "test_data_changed",
            EvidenceKind::TestConfigChanged => "test_config_changed",
            EvidenceKind::StartupHook => "startup_hook",
            EvidenceKind::ShadowingModule => "shadowing_module",
        }
    }
}

/// What the stage was about to commit when the patch gate refused it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PatchStage {
    /// The verified change.
    Commit,
    /// The work in progress a run that did not finish keeps.
    WipCommit,
}

impl PatchStage {
    /// The snake_case name (as serialised).
    pub fn as_str(self) -> &'static str {
        match self {
            PatchStage::Commit => "commit",
            PatchStage::WipCommit => "wip_commit",
        }
    }
}

impl Why {
    /// The snake_case name of the kind (as serialised, the `kind` field).
    pub fn as_str(&self) -> &'static str {
        match self {
            Why::NotPlainPath => "not_plain_path",
            Why::Protected => "protected",
            Why::SymlinkOnTheWay { .. } => "symlink_on_the_way",
            Why::SymlinkOut { .. } => "symlink_out",
            Why::TooManyFiles { .. } => "too_many_files",
            Why::TooManyAddedLines { .. } => "too_many_added_lines",
            Why::TooManyAddedBytes { .. } => "too_many_added_bytes",
            Why::FileTooLarge { .. } => "file_too_large",
            Why::BinaryTooLarge { .. } => "binary_too_large",
            Why::Secret { .. } => "secret",
            Why::Tampered { .. } => "tampered",
            Why::AltersEvidence { .. } => "alters_evidence",
            Why::NestedGit => "nested_git",
            Why::TooDeep => "too_deep",
            Why::Said { .. } => "said",
        }
    }
}

impl Refusal {
    /// A refusal of `path`.
    pub fn of(path: &str, why: Why) -> Refusal {
        Refusal {
            path: Some(path.to_owned()),
            why,
        }
    }

    /// A refusal of the change as a whole.
    pub fn whole(why: Why) -> Refusal {
        Refusal { path: None, why }
    }
}

/// A refusal as stored: typed, or a line of text from a version before refusals were typed.
#[derive(Deserialize)]
#[serde(untagged)]
enum Wire {
    Typed { path: Option<String>, why: Why },
    Line(String),
}

impl From<Wire> for Refusal {
    fn from(wire: Wire) -> Refusal {
        match wire {
            Wire::Typed { path, why } => Refusal { path, why },
            Wire::Line(line) => Refusal {
                path: None,
                why: Why::Said { line },
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_refusals_round_trip_and_old_lines_load_as_said() {
        let refusals = vec![
            Refusal::of(
                "a.env",
                Why::Secret {
                    secret: "github_token".into(),
                    place: SecretPlace::Line { line: 3 },
                },
            ),
            Refusal::of(
                "l",
                Why::SymlinkOut {
                    escape: LinkEscape::IntoGit,
                },
            ),
            Refusal::whole(Why::TooManyFiles { count: 9, max: 3 }),
        ];
        let json = serde_json::to_string(&refusals).unwrap();
        let back: Vec<Refusal> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, refusals);
        for refusal in &refusals {
            let value = serde_json::to_value(&refusal.why).unwrap();
            assert_eq!(value["kind"], refusal.why.as_str());
        }

        let old: Vec<Refusal> =
            serde_json::from_str(r#"[".github/workflows/ci.yml: changes a protected path"]"#)
                .unwrap();
        assert_eq!(
            old,
            [Refusal {
                path: None,
                why: Why::Said {
                    line: ".github/workflows/ci.yml: changes a protected path".into()
                }
            }]
        );
    }
}
