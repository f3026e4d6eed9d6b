//! The tables a TOML file defines (`pyproject.toml`, `Cargo.toml`), read line by line: enough to
//! tell whether a project configures a tool (`[tool.ruff]`, `[lints.clippy]`), without a TOML
//! parser. Table headers, array-of-tables headers, dotted keys (`ruff.line-length = 100` under
//! `[tool]`) and inline tables (`ruff = { ... }`) count; text inside multi-line strings does not.
//! Malformed lines are skipped: this answers "is it there", it never rejects a file.

use std::collections::BTreeSet;

/// Every table path `text` defines, dotted (`tool.ruff.lint`), keys unquoted.
pub fn tables(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut current: Vec<String> = Vec::new();
    let mut in_string: Option<&str> = None;
    for line in text.lines() {
        if let Some(delimiter) = in_string {
            if line.matches(delimiter).count() % 2 == 1 {
                in_string = None;
            }
            continue;
        }
        let line = line.trim();
        if let Some(header) = header(line) {
            current = header;
            add_prefixes(&mut found, &current, current.len());
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let Some(key) = key_path(key) else {
            continue;
        };
        let value = value.trim();
        let mut path = current.clone();
        let inline = value.starts_with('{');
        let depth = key.len() - usize::from(!inline);
        path.extend(key);
        add_prefixes(&mut found, &path, current.len() + depth);
        in_string = ["\"\"\"", "'''"]
            .into_iter()
            .find(|delimiter| value.matches(delimiter).count() % 2 == 1);
    }
    found
}

/// Whether `text` defines the table `name` or one beneath it.
pub fn has_table(text: &str, name: &str) -> bool {
    let below = format!("{name}.");
    tables(text)
        .iter()
        .any(|table| table == name || table.starts_with(&below))
}

/// `[a.b]` or `[[a.b]]` as its key path.
fn header(line: &str) -> Option<Vec<String>> {
    let inner = line.strip_prefix('[')?;
    let inner = inner.strip_prefix('[').unwrap_or(inner);
    let end = inner.find(']')?;
    key_path(&inner[..end])
}

/// `a . "b" . c` as `[a, b, c]`; `None` when a part is empty or not a plain or quoted key.
fn key_path(text: &str) -> Option<Vec<String>> {
    text.split('.')
        .map(|part| {
            let part = part.trim();
            let unquoted = part
                .strip_prefix('"')
                .and_then(|p| p.strip_suffix('"'))
                .or_else(|| part.strip_prefix('\'').and_then(|p| p.strip_suffix('\'')))
                .unwrap_or(part);
            let plain = unquoted
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            (!unquoted.is_empty() && plain).then(|| unquoted.to_owned())
        })
        .collect()
}

/// Adds the first 1..=`depth` parts of `path`, dotted.
fn add_prefixes(found: &mut BTreeSet<String>, path: &[String], depth: usize) {
    for end in 1..=depth.min(path.len()) {
        found.insert(path[..end].join("."));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn headers_dotted_keys_and_inline_tables_define_tables() {
        let text = "[project]\nname = \"x\"\n\n[tool.ruff.lint]\nselect = [\"E\"]\n\
                    [[tool.mypy.overrides]]\nmodule = \"a\"\n[tool]\npytest.ini_options.addopts = \"-q\"\n\
                    black = { line-length = 90 }\n";
        let found = tables(text);
        for table in [
            "project",
            "tool",
            "tool.ruff",
            "tool.ruff.lint",
            "tool.mypy.overrides",
            "tool.pytest.ini_options",
            "tool.black",
        ] {
            assert!(found.contains(table), "{table} in {found:?}");
        }
        assert!(!found.contains("project.name"), "a plain key is no table");
        assert!(has_table(text, "tool.ruff"));
        assert!(!has_table(text, "tool.poetry"));
    }

    #[test]
    fn text_in_multi_line_strings_is_not_a_header() {
        let text = "[project]\ndescription = \"\"\"\n[tool.ruff]\n\"\"\"\n[tool.uv]\n";
        assert!(!has_table(text, "tool.ruff"));
        assert!(has_table(text, "tool.uv"));
        assert!(has_table("[ tool . \"ruff\" ]\n", "tool.ruff"));
        assert!(!has_table("[tool.ruffian]\n", "tool.ruff"));
    }

    proptest! {
        #[test]
        fn any_text_is_read_without_panicking(text in "\\PC*") {
            let _ = tables(&text);
        }

        #[test]
        fn a_header_among_other_lines_is_always_found(
            parts in prop::collection::vec("[a-z][a-z0-9_-]{0,8}", 1..4),
            before in prop::collection::vec("[a-z]{1,6} = [0-9]{1,3}", 0..4),
            array in any::<bool>(),
        ) {
            let name = parts.join(".");
            let header = if array { format!("[[{name}]]") } else { format!("[{name}]") };
            let text = format!("{}\n{header}\nkey = 1\n", before.join("\n"));
            prop_assert!(has_table(&text, &name));
            prop_assert!(has_table(&text, &parts[0]));
        }
    }
}
