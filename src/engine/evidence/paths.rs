//! What a path is to the tests, by each ecosystem's own collection rules: test code (pytest,
//! unittest, Rust integration tests, Jest/Vitest, Go, RSpec), test data (snapshots, testdata,
//! fixtures), test configuration (whole files, or sections of shared files), interpreter start-up
//! hooks, and the places that change what an import resolves to. Pure functions over paths.

/// What a path holds, for the evidence check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PathRole {
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
pub(super) enum Shared {
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

fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

fn in_dir(path: &str, names: &[&str]) -> bool {
    let parts: Vec<&str> = components(path).collect();
    parts[..parts.len().saturating_sub(1)]
        .iter()
        .any(|part| names.contains(part))
}

/// The file's extension, without the dot ("" when there is none).
pub(super) fn extension(path: &str) -> &str {
    basename(path).rsplit_once('.').map_or("", |(_, ext)| ext)
}

/// The role of `path` in the repository's tests.
pub(super) fn role(path: &str) -> PathRole {
    let name = basename(path);
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
pub(super) fn is_source(name: &str) -> bool {
    matches!(
        extension(name),
        "py" | "rs" | "go" | "js" | "jsx" | "ts" | "tsx" | "mjs" | "cjs" | "mts" | "cts" | "rb"
    )
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

/// A Python file's import name: `pkg/mod.py` → `mod`, `pkg/__init__.py` → `pkg`.
pub(super) fn python_module(path: &str) -> Option<&str> {
    let name = basename(path);
    let stem = name.strip_suffix(".py")?;
    if stem != "__init__" {
        return Some(stem);
    }
    let parent = path.strip_suffix(name)?.trim_end_matches('/');
    Some(basename(parent)).filter(|p| !p.is_empty())
}

/// The directory of `path` ("" at the root).
pub(super) fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}

/// `src/a.ts` for `src/a.js`: the path without its extension, for JavaScript/TypeScript files
/// (a new `a.js` beside an `a.ts` changes what `import "./a"` loads).
pub(super) fn js_resolution_key(path: &str) -> Option<&str> {
    let ext = extension(path);
    matches!(
        ext,
        "js" | "jsx" | "ts" | "tsx" | "mjs" | "cjs" | "mts" | "cts"
    )
    .then(|| &path[..path.len() - ext.len() - 1])
}

/// Modules of Python's standard library that tests commonly import (a new file with one of these
/// names shadows it for every test that imports it).
pub(super) const PYTHON_STDLIB: &[&str] = &[
    "abc",
    "argparse",
    "array",
    "ast",
    "asyncio",
    "base64",
    "builtins",
    "bisect",
    "collections",
    "contextlib",
    "copy",
    "csv",
    "dataclasses",
    "datetime",
    "decimal",
    "enum",
    "fractions",
    "functools",
    "glob",
    "hashlib",
    "heapq",
    "importlib",
    "inspect",
    "io",
    "itertools",
    "json",
    "logging",
    "math",
    "operator",
    "os",
    "pathlib",
    "pickle",
    "random",
    "re",
    "shutil",
    "signal",
    "socket",
    "sqlite3",
    "statistics",
    "string",
    "struct",
    "subprocess",
    "sys",
    "tempfile",
    "textwrap",
    "threading",
    "time",
    "types",
    "typing",
    "unittest",
    "uuid",
    "warnings",
    "weakref",
    // The test runners themselves.
    "pytest",
    "_pytest",
    "pluggy",
    "hypothesis",
];
