//! Gate presets: the YAML files of the top-level `gates/` directory, embedded in the binary, and
//! the detection that picks one from what a repository contains.
//!
//! Detection reads files (Cargo.toml, pyproject.toml, setup.cfg, setup.py, package.json) and, for
//! Rust, asks `cargo metadata` about the workspace through the exec module. It never fails a
//! run: a repository it cannot classify simply gets no preset, and says why.

use std::path::Path;

use super::ConfigError;
use super::raw::{RawGate, RawPreset};

/// Every bundled preset: name and YAML text.
pub const PRESETS: [(&str, &str); 5] = [
    ("rust", include_str!("../../gates/rust.yml")),
    ("python", include_str!("../../gates/python.yml")),
    ("node", include_str!("../../gates/node.yml")),
    ("node-jest", include_str!("../../gates/node-jest.yml")),
    ("node-vitest", include_str!("../../gates/node-vitest.yml")),
];

/// The names of the bundled presets, comma-separated (for messages).
pub fn known_presets() -> String {
    PRESETS
        .iter()
        .map(|(name, _)| *name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Parses a bundled preset by name; `Ok(None)` when no preset has that name.
pub fn preset_gates(name: &str) -> Result<Option<RawPreset>, ConfigError> {
    let Some((_, text)) = PRESETS.iter().find(|(known, _)| *known == name) else {
        return Ok(None);
    };
    serde_yaml::from_str(text)
        .map(Some)
        .map_err(|err| ConfigError::BadPreset {
            name: name.to_owned(),
            message: err.to_string(),
        })
}

/// Which preset a repository looks like, and the evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detection {
    pub preset: Option<&'static str>,
    pub reason: String,
}

/// What the repository's files say, before any child process runs.
pub fn detect_files(repo_root: &Path) -> Detection {
    if repo_root.join("Cargo.toml").is_file() {
        return Detection {
            preset: Some("rust"),
            reason: "Cargo.toml at the repository root".into(),
        };
    }
    if let Some(file) = ["pyproject.toml", "setup.cfg", "setup.py"]
        .into_iter()
        .find(|file| repo_root.join(file).is_file())
    {
        return Detection {
            preset: Some("python"),
            reason: format!("{file} at the repository root"),
        };
    }
    if repo_root.join("package.json").is_file() {
        return detect_node(&repo_root.join("package.json"));
    }
    Detection {
        preset: None,
        reason: "no Cargo.toml, pyproject.toml, setup.cfg, setup.py or package.json at the root"
            .into(),
    }
}

/// Jest or Vitest from package.json's dependencies; plain `npm test` otherwise.
fn detect_node(package_json: &Path) -> Detection {
    let manifest: serde_json::Value = match std::fs::read(package_json)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
    {
        Some(manifest) => manifest,
        None => {
            return Detection {
                preset: Some("node"),
                reason: "package.json at the root (unreadable, so the test runner is unknown)"
                    .into(),
            };
        }
    };
    let has = |name: &str| {
        ["dependencies", "devDependencies"].iter().any(|section| {
            manifest
                .get(section)
                .and_then(|deps| deps.get(name))
                .is_some()
        })
    };
    let (preset, runner) = if has("vitest") {
        ("node-vitest", "vitest")
    } else if has("jest") {
        ("node-jest", "jest")
    } else {
        ("node", "no known test runner")
    };
    Detection {
        preset: Some(preset),
        reason: format!("package.json at the root ({runner})"),
    }
}

/// A one-line description of a Cargo workspace from `cargo metadata` JSON output.
pub fn describe_cargo_metadata(json: &[u8]) -> Result<String, serde_json::Error> {
    let metadata: cargo_metadata::Metadata = serde_json::from_slice(json)?;
    let mut names: Vec<&str> = metadata
        .workspace_packages()
        .iter()
        .map(|package| package.name.as_str())
        .collect();
    names.sort_unstable();
    let shown = names.iter().take(5).copied().collect::<Vec<_>>().join(", ");
    let more = names.len().saturating_sub(5);
    let tail = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    Ok(format!(
        "Cargo workspace with {} package(s): {shown}{tail}",
        names.len()
    ))
}

/// Turns a chosen preset into its gates.
pub fn gates_of(name: &str, config_path: &Path) -> Result<Vec<RawGate>, ConfigError> {
    preset_of(name, config_path).map(|preset| preset.gates)
}

/// A chosen preset: its gates and its setup commands.
pub fn preset_of(name: &str, config_path: &Path) -> Result<RawPreset, ConfigError> {
    match preset_gates(name)? {
        Some(preset) => Ok(preset),
        None => Err(ConfigError::UnknownPreset {
            path: config_path.to_owned(),
            name: name.to_owned(),
            known: known_presets(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bundled_preset_parses_and_has_a_tests_gate() {
        for (name, _) in PRESETS {
            let preset = preset_gates(name).expect("parses").expect("exists");
            assert!(
                preset
                    .gates
                    .iter()
                    .any(|gate| gate.name.as_str() == "tests"),
                "{name}"
            );
        }
    }

    #[test]
    fn node_runner_is_read_from_package_json() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join("package.json"),
            r#"{"devDependencies":{"vitest":"^3"}}"#,
        )
        .expect("write");
        assert_eq!(detect_files(dir.path()).preset, Some("node-vitest"));
        std::fs::write(
            dir.path().join("package.json"),
            r#"{"devDependencies":{"jest":"^29"}}"#,
        )
        .expect("write");
        assert_eq!(detect_files(dir.path()).preset, Some("node-jest"));
        std::fs::write(dir.path().join("Cargo.toml"), "[package]").expect("write");
        assert_eq!(detect_files(dir.path()).preset, Some("rust"));
    }

    #[test]
    fn nothing_recognisable_gives_no_preset_and_says_why() {
        let dir = tempfile::tempdir().expect("tempdir");
        let detection = detect_files(dir.path());
        assert_eq!(detection.preset, None);
        assert!(detection.reason.contains("no Cargo.toml"));
    }
}
