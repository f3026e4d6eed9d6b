//! Gate presets: the YAML files of this crate's `presets/` directory, embedded in the binary, and
//! the detection that picks one from what a repository contains.
//!
//! Detection reads files (Cargo.toml, the Python project and test files, package.json, go.mod) and, for
//! Rust, asks `cargo metadata` about the workspace through the exec module. It never fails a
//! run: a repository it cannot classify simply gets no preset, and says why.

use std::path::Path;

use super::ConfigError;
use super::raw::{RawGate, RawPreset};

/// Every bundled preset: name and YAML text.
pub const PRESETS: [(&str, &str); 6] = [
    ("rust", include_str!("../presets/rust.yml")),
    ("python", include_str!("../presets/python.yml")),
    ("node", include_str!("../presets/node.yml")),
    ("node-jest", include_str!("../presets/node-jest.yml")),
    ("node-vitest", include_str!("../presets/node-vitest.yml")),
    ("go", include_str!("../presets/go.yml")),
];

/// Files at the root that make a repository a Python project, most telling first (the packaging
/// files, then pytest's and tox's configuration).
const PYTHON_FILES: [&str; 5] = [
    "pyproject.toml",
    "setup.cfg",
    "setup.py",
    "pytest.ini",
    "tox.ini",
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
    if let Some(file) = python_file(repo_root) {
        return Detection {
            preset: Some("python"),
            reason: format!("{file} at the repository root"),
        };
    }
    if repo_root.join("package.json").is_file() {
        return detect_node(&repo_root.join("package.json"));
    }
    if repo_root.join("go.mod").is_file() {
        return Detection {
            preset: Some("go"),
            reason: "go.mod at the repository root".into(),
        };
    }
    Detection {
        preset: None,
        reason: "no Cargo.toml, pyproject.toml, setup.cfg, setup.py, pytest.ini, tox.ini, \
                 requirements*.txt, package.json or go.mod at the root"
            .into(),
    }
}

/// The file that makes the root a Python project: one of [`PYTHON_FILES`], else the first
/// `requirements*.txt` by name.
fn python_file(repo_root: &Path) -> Option<String> {
    if let Some(file) = PYTHON_FILES
        .into_iter()
        .find(|file| repo_root.join(file).is_file())
    {
        return Some(file.to_owned());
    }
    let mut requirements: Vec<String> = std::fs::read_dir(repo_root)
        .ok()?
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| name.starts_with("requirements") && name.ends_with(".txt"))
        .collect();
    requirements.sort();
    requirements.into_iter().next()
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
    let root = package_json.parent().unwrap_or(Path::new("."));
    let members: Vec<serde_json::Value> = super::layout::workspace_manifests(root)
        .iter()
        .filter_map(|path| super::layout::manifest(path))
        .collect();
    let declares = |name: &str| {
        std::iter::once(&manifest)
            .chain(&members)
            .any(|manifest| declares_dependency(manifest, name))
    };
    let (preset, runner) = if declares("vitest") {
        ("node-vitest", "vitest")
    } else if declares("jest") {
        ("node-jest", "jest")
    } else {
        ("node", "no known test runner")
    };
    let workspaces = match members.len() {
        0 => String::new(),
        count => format!(", {count} workspace member(s)"),
    };
    Detection {
        preset: Some(preset),
        reason: format!("package.json at the root ({runner}{workspaces})"),
    }
}

/// Whether a `package.json` lists `name` among its dependencies or devDependencies.
fn declares_dependency(manifest: &serde_json::Value, name: &str) -> bool {
    ["dependencies", "devDependencies"].iter().any(|section| {
        manifest
            .get(section)
            .and_then(|deps| deps.get(name))
            .is_some()
    })
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
    fn a_runner_declared_only_by_workspace_members_is_found() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("package.json"), r#"{"private": true}"#).expect("write");
        std::fs::write(
            dir.path().join("pnpm-workspace.yaml"),
            "packages: [packages/*]\n",
        )
        .expect("write");
        std::fs::create_dir_all(dir.path().join("packages/core")).expect("mkdir");
        std::fs::write(
            dir.path().join("packages/core/package.json"),
            r#"{"devDependencies":{"vitest":"^3"}}"#,
        )
        .expect("write");
        let detection = detect_files(dir.path());
        assert_eq!(detection.preset, Some("node-vitest"));
        assert_eq!(
            detection.reason,
            "package.json at the root (vitest, 1 workspace member(s))"
        );
    }

    #[test]
    fn python_is_detected_from_test_and_requirement_files_alone() {
        for file in [
            "pytest.ini",
            "tox.ini",
            "requirements.txt",
            "requirements-dev.txt",
        ] {
            let dir = tempfile::tempdir().expect("tempdir");
            std::fs::write(dir.path().join(file), "").expect("write");
            let detection = detect_files(dir.path());
            assert_eq!(detection.preset, Some("python"), "{file}");
            assert_eq!(detection.reason, format!("{file} at the repository root"));
        }
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("requirements.txt")).expect("mkdir");
        std::fs::write(dir.path().join("requirements.in"), "").expect("write");
        assert_eq!(
            detect_files(dir.path()).preset,
            None,
            "a directory named requirements.txt or a requirements.in is not enough"
        );
    }

    #[test]
    fn go_modules_get_the_go_preset_unless_another_language_leads() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("go.mod"), "module example.com/x\n").expect("write");
        let detection = detect_files(dir.path());
        assert_eq!(detection.preset, Some("go"));
        assert_eq!(detection.reason, "go.mod at the repository root");
        let go = preset_gates("go").expect("parses").expect("exists");
        assert_eq!(go.gates.len(), 2);
        std::fs::write(dir.path().join("package.json"), "{}").expect("write");
        assert_eq!(detect_files(dir.path()).preset, Some("node"));
    }

    #[test]
    fn nothing_recognisable_gives_no_preset_and_says_why() {
        let dir = tempfile::tempdir().expect("tempdir");
        let detection = detect_files(dir.path());
        assert_eq!(detection.preset, None);
        assert!(detection.reason.contains("no Cargo.toml"));
    }
}
