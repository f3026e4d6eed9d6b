//! What a repository's own files say about how it is built and tested, and the preset tailored
//! to it: a Python project's `src/` layout, its virtual environment and whether it configured
//! ruff; a Node project's package manager and workspaces; whether a Cargo project configured
//! clippy's lints or has nightly benchmarks; whether a Go module runs `go vet`. The rule for
//! linters: run what the project configured, with the project's rules.
//!
//! A bundled preset (`gates/*.yml`) is the common case; [`tailor`] adapts it to the layout the
//! files show, and says what it changed in [`Tailored::notes`] (shown with the preset's reason by
//! `config check`). Pure: files are read, nothing runs. Gates the configuration file names are
//! never dropped: what the maintainers wrote wins.

mod go;
mod node;
mod python;
mod rust;
pub(crate) mod toml_tables;

use std::path::Path;

use super::raw::{RawGate, RawPreset};

pub use node::{PackageManager, manifest, package_manager, workspace_manifests};

/// A preset adapted to the repository, and what was adapted.
#[derive(Debug, Clone)]
pub struct Tailored {
    pub preset: RawPreset,
    /// One line per adaptation, for the preset's reason.
    pub notes: Vec<String>,
}

/// What [`tailor`] reads.
pub struct TailorInput<'a> {
    /// The chosen preset's name.
    pub name: &'a str,
    pub preset: RawPreset,
    pub repo_root: &'a Path,
    /// Gates the configuration file defines or overrides: never dropped.
    pub file_gates: &'a [RawGate],
}

/// Adapts the preset `input.name` to the repository's layout.
pub fn tailor(input: TailorInput<'_>) -> Tailored {
    let mut tailored = Tailored {
        preset: input.preset,
        notes: Vec::new(),
    };
    let keep = |gate: &str| input.file_gates.iter().any(|g| g.name.as_str() == gate);
    match input.name {
        "python" => python::tailor(&mut tailored, input.repo_root, &keep),
        "node" | "node-jest" | "node-vitest" => node::tailor(&mut tailored, input.repo_root),
        "rust" => rust::tailor(&mut tailored, input.repo_root, &keep),
        "go" => go::tailor(&mut tailored, input.repo_root, &keep),
        _ => {}
    }
    tailored
}

impl Tailored {
    /// Drops the gate `name` (unless `keep` says the file names it), noting why.
    fn drop_gate(&mut self, name: &str, why: &str, keep: &dyn Fn(&str) -> bool) {
        if keep(name) {
            return;
        }
        let before = self.preset.gates.len();
        self.preset.gates.retain(|gate| gate.name.as_str() != name);
        if self.preset.gates.len() < before {
            self.notes.push(format!("no `{name}` gate: {why}"));
        }
    }

    /// The preset gate `name`, to adapt.
    fn gate_mut(&mut self, name: &str) -> Option<&mut RawGate> {
        self.preset
            .gates
            .iter_mut()
            .find(|gate| gate.name.as_str() == name)
    }
}

/// The text of `name` at the root, when it is a readable UTF-8 file.
fn read(repo_root: &Path, name: &str) -> Option<String> {
    std::fs::read_to_string(repo_root.join(name)).ok()
}
