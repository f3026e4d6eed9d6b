//! The Rust preset adapted to the project: clippy's warnings fail the gate only where the project
//! configured clippy (`clippy.toml`, `.clippy.toml`, or `[lints.clippy]` /
//! `[workspace.lints.clippy]` in `Cargo.toml`); elsewhere clippy reports them and fails only on
//! errors, since a newer clippy than the project's finds new warnings in code nobody changed.
//! Benchmarks written for the nightly toolchain (`#![feature(test)]` in `benches/`) are left out
//! of clippy's targets: the stable toolchain cannot build them, and the tests gate never does.

use std::path::Path;

use super::toml_tables::has_table;
use super::{Tailored, read};
use crate::raw::RawCommand;

/// The arguments that turn clippy's warnings into errors, as the preset writes them.
const DENY_WARNINGS: [&str; 3] = ["--", "-D", "warnings"];

/// Whether the project configured clippy.
fn clippy_configured(root: &Path) -> bool {
    let manifest = read(root, "Cargo.toml").unwrap_or_default();
    ["clippy.toml", ".clippy.toml"]
        .iter()
        .any(|file| root.join(file).is_file())
        || has_table(&manifest, "lints.clippy")
        || has_table(&manifest, "workspace.lints.clippy")
}

/// The first file of `benches/` that needs a nightly toolchain (`#![feature(...)]`).
fn nightly_bench(root: &Path) -> Option<String> {
    let mut benches: Vec<_> = std::fs::read_dir(root.join("benches"))
        .ok()?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "rs"))
        .collect();
    benches.sort();
    benches.into_iter().find_map(|path| {
        let text = std::fs::read_to_string(&path).ok()?;
        let nightly = text
            .lines()
            .any(|line| line.trim_start().starts_with("#![feature("));
        let name = path.file_name()?.to_string_lossy().into_owned();
        nightly.then(|| format!("benches/{name}"))
    })
}

pub(super) fn tailor(tailored: &mut Tailored, root: &Path, keep: &dyn Fn(&str) -> bool) {
    if keep("clippy") {
        return;
    }
    if let Some(bench) = nightly_bench(root) {
        without_benches(tailored, &bench);
    }
    if clippy_configured(root) {
        return;
    }
    let Some(gate) = tailored.gate_mut("clippy") else {
        return;
    };
    if let Some(RawCommand::Argv(argv)) = &mut gate.run
        && argv.ends_with(&DENY_WARNINGS.map(str::to_owned))
    {
        argv.truncate(argv.len() - DENY_WARNINGS.len());
        tailored.notes.push(
            "clippy: the project configures no clippy lints (clippy.toml or [lints.clippy]), so \
             its warnings are reported and only errors fail"
                .into(),
        );
    }
}

/// Clippy over every target but the benchmarks (`bench` needs a nightly toolchain).
fn without_benches(tailored: &mut Tailored, bench: &str) {
    let Some(gate) = tailored.gate_mut("clippy") else {
        return;
    };
    let Some(RawCommand::Argv(argv)) = &mut gate.run else {
        return;
    };
    let Some(at) = argv.iter().position(|arg| arg == "--all-targets") else {
        return;
    };
    argv.splice(
        at..=at,
        ["--lib", "--bins", "--tests", "--examples"].map(str::to_owned),
    );
    tailored.notes.push(format!(
        "clippy leaves the benchmarks out: {bench} needs a nightly toolchain (#![feature])"
    ));
}

#[cfg(test)]
mod tests {
    use super::super::{TailorInput, tailor};
    use crate::raw::RawCommand;

    fn clippy_argv(root: &std::path::Path) -> Vec<String> {
        let tailored = tailor(TailorInput {
            name: "rust",
            preset: crate::preset::preset_gates("rust").unwrap().unwrap(),
            repo_root: root,
            file_gates: &[],
        });
        let gate = tailored
            .preset
            .gates
            .iter()
            .find(|g| g.name.as_str() == "clippy")
            .unwrap();
        match &gate.run {
            Some(RawCommand::Argv(argv)) => argv.clone(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn clippy_denies_warnings_only_where_the_project_configured_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("Cargo.toml"), "[package]\nname = \"c\"\n").unwrap();
        assert!(!clippy_argv(dir.path()).contains(&"warnings".to_owned()));
        std::fs::write(
            dir.path().join("Cargo.toml"),
            "[package]\nname = \"c\"\n[lints.clippy]\npedantic = \"warn\"\n",
        )
        .unwrap();
        assert!(clippy_argv(dir.path()).ends_with(&["-D".into(), "warnings".into()]));
        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join("clippy.toml"), "").unwrap();
        assert!(clippy_argv(other.path()).ends_with(&["-D".into(), "warnings".into()]));
    }

    #[test]
    fn nightly_benchmarks_are_left_out_of_clippys_targets() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("Cargo.toml"), "[package]\nname = \"c\"\n").unwrap();
        assert!(clippy_argv(dir.path()).contains(&"--all-targets".to_owned()));
        std::fs::create_dir(dir.path().join("benches")).unwrap();
        std::fs::write(
            dir.path().join("benches/b.rs"),
            "//! b\n\n#![feature(test)]\n",
        )
        .unwrap();
        let argv = clippy_argv(dir.path());
        assert!(!argv.contains(&"--all-targets".to_owned()), "{argv:?}");
        for target in ["--lib", "--bins", "--tests", "--examples"] {
            assert!(argv.contains(&target.to_owned()), "{argv:?}");
        }
    }
}
