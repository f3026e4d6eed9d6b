//! What a path is to the tests, by each ecosystem's own collection rules: test code (pytest,
//! unittest, Rust integration tests, Jest/Vitest, Go, RSpec), test data (snapshots, testdata,
//! fixtures), test configuration (whole files, or sections of shared files), interpreter start-up
//! hooks. The one rule of what a test path is: the evidence check reads [`role`], the policy (and
//! through it the tamper guard and the agent's choice of sites) and the eval miner read
//! [`is_test_path`]. Pure functions over paths (`/`-separated, relative to the repository).

use crate::lang::Lang;

/// What a path holds for the tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathRole {
    /// Test source code: declarations are read line by line.
    TestCode,
    /// Test data (snapshots, fixtures, testdata): any change to an existing file counts.
    TestData,
    /// A file that configures how tests are collected, built or run: any change counts.
    TestConfig,
    /// A shared file with test configuration in some sections or keys only.
    SharedConfig(Shared),
    /// Runs at interpreter start-up or changes module resolution wherever it is added.
    Hook,
    /// Anything else (product code, documentation).
    Other,
}

/// Which shared file a [`PathRole::SharedConfig`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shared {
    /// `setup.cfg`, `pyproject.toml`, `Cargo.toml`: INI/TOML sections.
    Sections,
    /// `package.json`: test scripts and the runners' keys.
    PackageJson,
    /// `Makefile` and `*.mk`: rules and variables about tests.
    Makefile,
    /// `go.mod`: `replace` directives.
    GoMod,
    /// `vite.config.*`: Vitest reads its `test` key.
    ViteConfig,
}

fn components(path: &str) -> impl Iterator<Item = &str> {
    path.split('/')
}

fn in_dir(path: &str, names: &[&str]) -> bool {
    let parts: Vec<&str> = components(path).collect();
    parts[..parts.len().saturating_sub(1)]
        .iter()
        .any(|part| names.contains(part))
}

/// The file's extension, without the dot ("" when there is none).
pub fn extension(path: &str) -> &str {
    crate::path::basename(path)
        .rsplit_once('.')
        .map_or("", |(_, ext)| ext)
}

/// The role of `path` in the repository's tests.
pub fn role(path: &str) -> PathRole {
    let name = crate::path::basename(path);
    if is_hook(path, name) {
        return PathRole::Hook;
    }
    if is_test_config(path, name) {
        return PathRole::TestConfig;
    }
    if let Some(shared) = shared_config(name) {
        return PathRole::SharedConfig(shared);
    }
    if is_test_data(path, name) {
        return PathRole::TestData;
    }
    if is_test_code(path, name) {
        return PathRole::TestCode;
    }
    PathRole::Other
}

fn is_hook(path: &str, name: &str) -> bool {
    matches!(name, "sitecustomize.py" | "usercustomize.py")
        || extension(name) == "pth"
        || components(path).any(|part| matches!(part, "node_modules" | "__mocks__" | "vendor"))
}

fn is_test_config(path: &str, name: &str) -> bool {
    let stem = name.split('.').next().unwrap_or(name);
    matches!(
        name,
        "pytest.ini" | "conftest.py" | "tox.ini" | "noxfile.py" | "build.rs" | ".babelrc"
    ) || (matches!(
        stem,
        "jest" | "vitest" | "babel" | "karma" | "setupTests" | ".mocharc"
    ) && is_config_name(name))
        || path == ".cargo/config.toml"
        || path == ".cargo/config"
        || path.ends_with("/.cargo/config.toml")
}

/// `jest.config.js`, `vitest.workspace.ts`, `babel.config.json`, `jest.setup.js`, `.mocharc.yml`,
/// `setupTests.ts`: a runner's configuration or setup file (not `jest.js` product code).
fn is_config_name(name: &str) -> bool {
    let parts: Vec<&str> = name.split('.').collect();
    parts.len() >= 2
        && (parts.contains(&"config")
            || parts.contains(&"setup")
            || parts.contains(&"workspace")
            || parts[0] == "setupTests"
            || parts[0] == ".mocharc"
            || name.starts_with("karma.conf"))
}

fn shared_config(name: &str) -> Option<Shared> {
    match name {
        "setup.cfg" | "pyproject.toml" | "Cargo.toml" => Some(Shared::Sections),
        "package.json" => Some(Shared::PackageJson),
        "Makefile" | "makefile" | "GNUmakefile" => Some(Shared::Makefile),
        "go.mod" => Some(Shared::GoMod),
        _ if name.ends_with(".mk") => Some(Shared::Makefile),
        _ if name.starts_with("vite.config.") => Some(Shared::ViteConfig),
        _ => None,
    }
}

fn is_test_data(path: &str, name: &str) -> bool {
    in_dir(
        path,
        &[
            "__snapshots__",
            "snapshots",
            "testdata",
            "fixtures",
            "__fixtures__",
        ],
    ) || name.ends_with(".snap")
        || name.ends_with(".snap.new")
        || (in_dir(path, &["tests", "test", "__tests__", "spec"]) && !is_source(name))
}

/// Source code in the languages whose tests are read line by line.
pub fn is_source(name: &str) -> bool {
    Lang::of(name).is_some()
}

/// Whether `path` holds tests: test code or test data, or pytest's `conftest.py` (fixtures and
/// hooks: test code that also configures collection, so its [`role`] is the stricter
/// [`PathRole::TestConfig`]). A runner's configuration alone (`pytest.ini`, `jest.config.js`) is
/// not a test.
pub fn is_test_path(path: &str) -> bool {
    matches!(role(path), PathRole::TestCode | PathRole::TestData)
        || crate::path::basename(path) == "conftest.py"
}

fn is_test_code(path: &str, name: &str) -> bool {
    let ext = extension(name);
    let stem = name.strip_suffix(&format!(".{ext}")).unwrap_or(name);
    match ext {
        "py" => {
            stem.starts_with("test_") || stem.ends_with("_test") || in_dir(path, &["tests", "test"])
        }
        "rs" => in_dir(path, &["tests"]),
        "go" => stem.ends_with("_test"),
        "rb" => stem.ends_with("_spec") || stem.ends_with("_test") || in_dir(path, &["spec"]),
        "js" | "jsx" | "ts" | "tsx" | "mjs" | "cjs" | "mts" | "cts" => {
            stem.ends_with(".test")
                || stem.ends_with(".spec")
                || in_dir(path, &["__tests__", "tests", "test"])
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_files_are_known_by_each_ecosystems_rules() {
        for path in [
            "tests/test_calc.py",
            "pkg/calc_test.py",
            "pkg/test_calc.py",
            "pkg/conftest.py",
            "src/a_test.go",
            "web/button.test.tsx",
            "web/button.spec.ts",
            "crate/tests/it.rs",
            "js/__tests__/x.js",
            "spec/models/user_spec.rb",
            "pkg/testdata/input.json",
            "src/__snapshots__/a.snap",
        ] {
            assert!(is_test_path(path), "{path}");
        }
        for path in [
            "calc.py",
            "src/lib.rs",
            "testing.md",
            "contest.py",
            "src/attest.go",
            "Cargo.toml",
            "jest.config.js",
            "tox.ini",
            "sitecustomize.py",
        ] {
            assert!(!is_test_path(path), "{path}");
        }
    }
}
