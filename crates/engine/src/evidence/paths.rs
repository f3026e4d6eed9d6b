//! Paths as the evidence check sees them: the one test-path rule is
//! [`meta_agent_protocol::test_path`]; here, what decides where an import resolves (Python modules,
//! JavaScript resolution keys, the standard library names a new file would shadow).

pub(super) use meta_agent_protocol::test_path::{PathRole, Shared, extension, role};

/// A Python file's import name: `pkg/mod.py` → `mod`, `pkg/__init__.py` → `pkg`.
pub(super) fn python_module(path: &str) -> Option<&str> {
    let name = meta_agent_protocol::path::basename(path);
    let stem = name.strip_suffix(".py")?;
    if stem != "__init__" {
        return Some(stem);
    }
    let parent = path.strip_suffix(name)?.trim_end_matches('/');
    Some(meta_agent_protocol::path::basename(parent)).filter(|p| !p.is_empty())
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
