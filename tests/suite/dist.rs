//! Distribution, read as data: the crate package (`include` in Cargo.toml) carries every file the
//! binary embeds and none of the tests' fixtures, and cargo-binstall's metadata names the assets
//! the release workflow attaches. (`cargo package --list` itself is shown in the README.)

use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The quoted entries of the `include = [...]` array of `[package]`.
fn include_patterns(manifest: &str) -> Vec<String> {
    let start = manifest.find("\ninclude = [").expect("an include list");
    let rest = &manifest[start..];
    let end = rest.find(']').expect("the list ends");
    rest[..end]
        .split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

fn glob_set(patterns: &[String]) -> GlobSet {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        builder.add(Glob::new(pattern.trim_start_matches('/')).expect("a glob"));
    }
    builder.build().expect("globs")
}

/// Files `include_str!`/`include_bytes!` embed from non-test code, relative to the repository.
fn embedded_files(src: &Path) -> Vec<PathBuf> {
    let pattern = regex::Regex::new(r#"include_(?:str|bytes)!\("([^"]+)"\)"#).expect("regex");
    let mut found = Vec::new();
    for entry in walkdir::WalkDir::new(src) {
        let entry = entry.expect("walk");
        if entry.path().extension().is_none_or(|ext| ext != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(entry.path()).expect("source");
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        let dir = entry.path().parent().expect("parent");
        for capture in pattern.captures_iter(code) {
            let path = dir.join(&capture[1]);
            let path =
                std::fs::canonicalize(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            found.push(path);
        }
    }
    found
}

#[test]
fn the_package_carries_every_embedded_file_and_no_fixture() {
    let manifest = std::fs::read_to_string(repo().join("Cargo.toml")).expect("Cargo.toml");
    let included = glob_set(&include_patterns(&manifest));
    let root = std::fs::canonicalize(repo()).expect("repo");
    let embedded = embedded_files(&repo().join("src"));
    assert!(embedded.len() >= 9, "presets and catalog: {embedded:?}");
    for file in &embedded {
        let relative = file.strip_prefix(&root).expect("inside the repository");
        assert!(
            included.is_match(relative),
            "{} is not packaged",
            relative.display()
        );
    }
    for needed in ["src/main.rs", "src/lib.rs", "Cargo.lock", "README.md"] {
        assert!(included.is_match(needed), "{needed} is not packaged");
    }
    for excluded in [
        "fixtures/github-app/test-only-private-key.pem",
        "fixtures/reports/junit/pytest.xml",
        "tests/all.rs",
        "benches/reports.rs",
        "examples/broken-calc/calc.py",
        ".github/workflows/release.yml",
        "target/debug/meta-agent",
    ] {
        assert!(!included.is_match(excluded), "{excluded} is packaged");
    }
}

#[test]
fn binstall_fetches_the_assets_the_release_workflow_attaches() {
    let manifest = std::fs::read_to_string(repo().join("Cargo.toml")).expect("Cargo.toml");
    let table = manifest
        .split("[package.metadata.binstall]")
        .nth(1)
        .expect("binstall metadata");
    assert!(
        table.contains(
            r#"pkg-url = "{ repo }/releases/download/v{ version }/meta-agent-{ target }""#
        ),
        "{table}"
    );
    assert!(table.contains(r#"pkg-fmt = "bin""#), "{table}");
    let release =
        std::fs::read_to_string(repo().join(".github/workflows/release.yml")).expect("release");
    assert!(
        release.contains(r#"bin="out/meta-agent-$TARGET""#),
        "asset name"
    );
    assert!(
        release.contains(r#"[ "$TAG" != "v$version" ]"#),
        "tags are v{{version}}"
    );
}
