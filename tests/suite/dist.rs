//! Distribution, read as data: every package of the workspace (the main one and each crate under
//! `crates/`, by its `include` list, or its whole directory without one) carries every file its
//! code embeds, the main package none of the tests' fixtures, and cargo-binstall's metadata names
//! the assets the release workflow attaches. (`cargo package --list` itself is shown in the
//! README.)

use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The quoted entries of the `include = [...]` array of `[package]`, if it has one.
fn include_patterns(manifest: &str) -> Option<Vec<String>> {
    let start = manifest.find("\ninclude = [")?;
    let rest = &manifest[start..];
    let end = rest.find(']').expect("the list ends");
    Some(
        rest[..end]
            .split('"')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect(),
    )
}

/// The main package's directory and each crate's under `crates/`.
fn packages() -> Vec<PathBuf> {
    let mut dirs = vec![repo()];
    for entry in std::fs::read_dir(repo().join("crates")).expect("crates/") {
        dirs.push(entry.expect("entry").path());
    }
    dirs
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
    let mut embedded_in_all = 0;
    for dir in packages() {
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).expect("Cargo.toml");
        let root = std::fs::canonicalize(&dir).expect("package directory");
        let included = include_patterns(&manifest).map(|patterns| glob_set(&patterns));
        for file in embedded_files(&dir.join("src")) {
            embedded_in_all += 1;
            let relative = file.strip_prefix(&root).unwrap_or_else(|_| {
                panic!(
                    "{} embeds {} from outside it",
                    dir.display(),
                    file.display()
                )
            });
            assert!(
                included.as_ref().is_none_or(|set| set.is_match(relative)),
                "{} is not packaged with {}",
                relative.display(),
                dir.display()
            );
        }
    }
    assert!(
        embedded_in_all >= 13,
        "presets, catalog, migrations and the report's style: {embedded_in_all}"
    );
    let manifest = std::fs::read_to_string(repo().join("Cargo.toml")).expect("Cargo.toml");
    let included = glob_set(&include_patterns(&manifest).expect("the main package's include list"));
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
