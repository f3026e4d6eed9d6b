//! The test part of files that configure more than tests: the pytest sections of `setup.cfg` and
//! `pyproject.toml`, the test targets of `Cargo.toml` (and its build-script key), the test
//! scripts and runner keys of `package.json`, the test rules and variables of a Makefile, the
//! `replace` directives of `go.mod`, Vitest's `test` key in a Vite configuration. Two versions of
//! a file whose test parts are equal configure the tests alike. Pure.

use super::paths::Shared;

/// What [`test_part`] covers in a file of this kind, for a refusal's text.
pub(super) fn describe(kind: Shared) -> &'static str {
    match kind {
        Shared::Sections => {
            "the test configuration (pytest sections, Cargo test targets or the build script)"
        }
        Shared::PackageJson => "the test scripts or the test runner's configuration",
        Shared::Makefile => "the rules or variables that run the tests",
        Shared::GoMod => "module replacements (what the tests compile against)",
        Shared::ViteConfig => "the Vite configuration Vitest runs the tests with",
    }
}

/// The part of `text` that configures tests, normalised for comparison.
pub(super) fn test_part(text: &str, kind: Shared) -> String {
    match kind {
        Shared::Sections => sections(text),
        Shared::PackageJson => package_json(text),
        Shared::Makefile => makefile(text),
        Shared::GoMod => go_replacements(text),
        Shared::ViteConfig if text.contains("test") => text.to_owned(),
        Shared::ViteConfig => String::new(),
    }
}

fn is_test_section(header: &str) -> bool {
    let name = header.trim_matches(|c| c == '[' || c == ']' || c == ' ');
    matches!(
        name,
        "tool:pytest" | "pytest" | "test" | "profile.test" | "lib" | "tool.pytest"
    ) || name.starts_with("tool.pytest.")
        || name.starts_with("tool:pytest")
        || name.starts_with("tool.coverage")
        || name.starts_with("coverage:")
}

/// The lines of INI/TOML sections about tests, and any `build = …` key (a Cargo build script).
fn sections(text: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            inside = is_test_section(t);
        }
        let build_key = t.starts_with("build ") || t.starts_with("build=");
        if (inside || build_key) && !t.is_empty() && !t.starts_with('#') {
            out.push_str(t);
            out.push('\n');
        }
    }
    out
}

/// The `scripts` entries about tests and the runners' top-level keys; a file that does not parse
/// is its whole text (so any change to it counts).
fn package_json(text: &str) -> String {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(text) else {
        return text.to_owned();
    };
    let mut part = serde_json::Map::new();
    if let Some(scripts) = value.get("scripts").and_then(|s| s.as_object()) {
        for (name, script) in scripts {
            if name.contains("test") || name.contains("jest") || name.contains("vitest") {
                part.insert(format!("scripts.{name}"), script.clone());
            }
        }
    }
    for key in [
        "jest", "vitest", "mocha", "ava", "c8", "nyc", "babel", "type",
    ] {
        if let Some(v) = value.get(key) {
            part.insert(key.to_owned(), v.clone());
        }
    }
    serde_json::Value::Object(part).to_string()
}

fn is_test_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    ["test", "check", "spec", "pytest", "jest"]
        .iter()
        .any(|w| lower.contains(w))
}

/// The test rules (header and recipe) and the variables named after tests.
fn makefile(text: &str) -> String {
    let mut out = String::new();
    let mut in_rule = false;
    for line in text.lines() {
        if line.starts_with('\t') {
            if in_rule {
                out.push_str(line);
                out.push('\n');
            }
            continue;
        }
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if let Some((name, _)) = assignment(t) {
            in_rule = false;
            if is_test_name(name) {
                out.push_str(t);
                out.push('\n');
            }
            continue;
        }
        if let Some((targets, _)) = t.split_once(':') {
            in_rule = targets.split_whitespace().any(is_test_name) || targets == ".DEFAULT_GOAL";
            if in_rule {
                out.push_str(t);
                out.push('\n');
            }
        }
    }
    out
}

/// `NAME = value` (also `:=`, `?=`, `+=`, `::=`): the name and the value.
fn assignment(line: &str) -> Option<(&str, &str)> {
    let at = line.find('=')?;
    let name = line[..at].trim_end_matches([':', '?', '+', '!']).trim();
    let valid = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '.' || c == '-');
    valid.then(|| (name, &line[at + 1..]))
}

/// The `replace` directives of a `go.mod`.
fn go_replacements(text: &str) -> String {
    let mut out = String::new();
    let mut block = false;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("replace (") {
            block = true;
            continue;
        }
        if block && t == ")" {
            block = false;
            continue;
        }
        if block || t.starts_with("replace ") {
            out.push_str(t);
            out.push('\n');
        }
    }
    out
}
