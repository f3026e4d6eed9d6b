//! The front matter of an instruction file (`.github/instructions/*.instructions.md`): the YAML
//! block between a first line `---` and the next line `---`, read with the YAML parser, and the
//! two keys the bot acts on: `applyTo` (the globs of the files the instructions are for: one
//! string, comma-separated as GitHub documents it, or a YAML list) and `excludeAgent`
//! (`coding-agent` keeps a file from coding agents like this one). Other keys (`description`,
//! `name`, ...) are allowed and left alone.
//!
//! Real repositories often write `applyTo: **/*.cs, **/*.razor` unquoted, which YAML reads as an
//! alias (`*`) and refuses; GitHub's tools accept it. So when the block does not parse, the
//! values of those two keys that are not quoted are quoted (single quotes, YAML's escaping) and
//! the block is parsed again; a block that still fails is an error naming its line and column.
//! Pure text work: no I/O.

use serde_yaml::Value;

/// The keys read from the front matter.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Front {
    /// `applyTo`'s globs, each trimmed, empty ones dropped.
    pub apply_to: Vec<String>,
    /// `excludeAgent`'s values (`coding-agent`, `code-review`).
    pub exclude_agent: Vec<String>,
}

/// A front matter that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("front matter, line {line}: {message}")]
pub struct FrontError {
    /// The line in the file (1-based; the first `---` is line 1).
    pub line: usize,
    pub message: String,
}

/// A file cut into its front matter (when it has one) and the text after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Split<'a> {
    pub front: Option<&'a str>,
    pub body: &'a str,
}

/// Cuts `text` after its front matter: a first line `---` and the next line that is `---`
/// (trailing spaces and a CR allowed). Without both, the whole text is the body.
pub fn split(text: &str) -> Split<'_> {
    let whole = Split {
        front: None,
        body: text,
    };
    let text_after_bom = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(first_end) = text_after_bom.find('\n') else {
        return whole;
    };
    if !is_fence(&text_after_bom[..first_end]) {
        return whole;
    }
    let rest = &text_after_bom[first_end + 1..];
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if is_fence(line.trim_end_matches(['\n', '\r'])) {
            return Split {
                front: Some(&rest[..offset]),
                body: &rest[offset + line.len()..],
            };
        }
        offset += line.len();
    }
    whole
}

fn is_fence(line: &str) -> bool {
    line.trim_end() == "---"
}

/// Reads the keys of a front matter block (the text between the fences).
pub fn parse(front: &str) -> Result<Front, FrontError> {
    let value = match serde_yaml::from_str::<Value>(front) {
        Ok(value) => value,
        Err(first) => {
            serde_yaml::from_str::<Value>(&quote_globs(front)).map_err(|_| yaml_error(&first))?
        }
    };
    let mapping = match value {
        Value::Mapping(mapping) => mapping,
        Value::Null => return Ok(Front::default()),
        _ => {
            return Err(FrontError {
                line: 2,
                message: "not a mapping of keys to values".into(),
            });
        }
    };
    let list = |key: &str| -> Result<Vec<String>, FrontError> {
        match mapping.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(value) => globs(value).ok_or_else(|| FrontError {
                line: key_line(front, key),
                message: format!("`{key}` is neither a string nor a list of strings"),
            }),
        }
    };
    Ok(Front {
        apply_to: list("applyTo")?,
        exclude_agent: list("excludeAgent")?,
    })
}

/// A string (comma-separated) or a list of strings, each item split at commas.
fn globs(value: &Value) -> Option<Vec<String>> {
    let items: Vec<&str> = match value {
        Value::String(text) => vec![text.as_str()],
        Value::Sequence(items) => items.iter().map(Value::as_str).collect::<Option<_>>()?,
        _ => return None,
    };
    Some(
        items
            .iter()
            .flat_map(|item| split_globs(item))
            .map(str::trim)
            .filter(|glob| !glob.is_empty())
            .map(str::to_owned)
            .collect(),
    )
}

/// `text` cut at the commas that separate globs, not at those inside a `{a,b}` alternation
/// (`**/*.{html,liquid},_includes/**` is two globs).
fn split_globs(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (index, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&text[start..index]);
                start = index + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// The keys whose unquoted values are quoted on the second try.
const GLOB_KEYS: [&str; 2] = ["applyTo", "excludeAgent"];

/// `front` with the plain (unquoted, not a list or block) values of [`GLOB_KEYS`] at the top
/// level single-quoted.
fn quote_globs(front: &str) -> String {
    front
        .split_inclusive('\n')
        .map(|line| quote_line(line).unwrap_or_else(|| line.to_owned()))
        .collect()
}

fn quote_line(line: &str) -> Option<String> {
    let content = line.trim_end_matches(['\n', '\r']);
    let ending = &line[content.len()..];
    let (key, value) = content.split_once(':')?;
    if !GLOB_KEYS.contains(&key) {
        return None;
    }
    let value = value.trim();
    let plain = !value.is_empty() && !value.starts_with(['\'', '"', '[', '|', '>', '#']);
    if !plain {
        return None;
    }
    Some(format!("{key}: '{}'{ending}", value.replace('\'', "''")))
}

/// The line of `key` in the file (the block starts on the file's line 2).
fn key_line(front: &str, key: &str) -> usize {
    front
        .lines()
        .position(|line| line.starts_with(&format!("{key}:")))
        .map_or(2, |index| index + 2)
}

fn yaml_error(err: &serde_yaml::Error) -> FrontError {
    let line = err.location().map_or(1, |location| location.line()) + 1;
    FrontError {
        line,
        message: err.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn front_of(text: &str) -> Result<Front, FrontError> {
        parse(split(text).front.expect("a front matter"))
    }

    #[test]
    fn the_shapes_real_repositories_write_all_read() {
        let cases = [
            // GitHub's documented shape.
            (
                "---\napplyTo: \"**/*.ts,**/*.tsx\"\n---\nBody\n",
                vec!["**/*.ts", "**/*.tsx"],
            ),
            // Single quotes, a space after the comma, a description.
            (
                "---\ndescription: 'C# style'\napplyTo: '**/*.cs, **/*.razor'\n---\n",
                vec!["**/*.cs", "**/*.razor"],
            ),
            // Unquoted: YAML alone refuses it.
            (
                "---\napplyTo: **/*.cs, **/*.razor\n---\n",
                vec!["**/*.cs", "**/*.razor"],
            ),
            // A list.
            (
                "---\napplyTo:\n  - \"src/**\"\n  - 'tests/**/*.py'\n---\n",
                vec!["src/**", "tests/**/*.py"],
            ),
            // CRLF line ends.
            ("---\r\napplyTo: \"**\"\r\n---\r\nBody\r\n", vec!["**"]),
            // Brace alternations keep their commas (ASISaga/theme.asisaga.com writes these).
            (
                "---\napplyTo: \"**/*.{html,liquid},_includes/**,_layouts/**\"\ndescription: \"HTML\"\n---\n",
                vec!["**/*.{html,liquid}", "_includes/**", "_layouts/**"],
            ),
        ];
        for (text, globs) in cases {
            let front = front_of(text).unwrap_or_else(|err| panic!("{text:?}: {err}"));
            assert_eq!(front.apply_to, globs, "{text:?}");
        }
        let excluded = front_of("---\napplyTo: \"**\"\nexcludeAgent: \"coding-agent\"\n---\n");
        assert_eq!(excluded.unwrap().exclude_agent, vec!["coding-agent"]);
    }

    #[test]
    fn a_body_without_front_matter_is_all_body() {
        for text in ["# Title\n---\nx", "", "---", "---\nno closing fence\n"] {
            assert_eq!(
                split(text),
                Split {
                    front: None,
                    body: text
                }
            );
        }
        let split = split("---\n---\nBody\n");
        assert_eq!(split.front, Some(""));
        assert_eq!(split.body, "Body\n");
        assert_eq!(parse("").unwrap(), Front::default());
    }

    #[test]
    fn a_broken_front_matter_names_its_line() {
        let err = front_of("---\ndescription: x\napplyTo: [\"a\", \n---\n").unwrap_err();
        assert!(err.line >= 3, "{err}");
        let err = front_of("---\napplyTo: {a: 1}\n---\n").unwrap_err();
        assert_eq!(err.line, 2, "{err}");
        assert!(err.to_string().contains("applyTo"), "{err}");
        let err = front_of("---\n- a\n- b\n---\n").unwrap_err();
        assert!(err.to_string().contains("mapping"), "{err}");
    }

    /// A glob as people write them: path parts of letters, `*`, `**`, `*.ext`.
    fn glob() -> impl Strategy<Value = String> {
        proptest::collection::vec("(\\*\\*|\\*|[a-z_]{1,6}|\\*\\.[a-z]{1,3})", 1..4)
            .prop_map(|parts| parts.join("/"))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        /// Whichever way `applyTo` is written (quoted either way, unquoted, a list), the same
        /// globs come back, and the body is what follows the closing fence.
        #[test]
        fn every_way_of_writing_apply_to_reads_the_same_globs(
            globs in proptest::collection::vec(glob(), 1..4),
            style in 0..4usize,
            body in "[a-zA-Z #*\\n-]{0,60}",
        ) {
            let joined = globs.join(", ");
            let value = match style {
                0 => format!("\"{joined}\""),
                1 => format!("'{joined}'"),
                2 => joined.clone(),
                _ => globs.iter().map(|g| format!("\n  - \"{g}\"")).collect(),
            };
            let text = format!("---\ndescription: x\napplyTo: {value}\n---\n{body}");
            let split = split(&text);
            prop_assert_eq!(split.body, body.as_str());
            let front = parse(split.front.unwrap_or_default());
            prop_assert_eq!(front.map(|f| f.apply_to), Ok(globs));
        }

        /// Any text: no panic, and the body is a suffix of the text.
        #[test]
        fn any_text_splits_and_parses_without_panicking(text in "(---\\n)?[ -~\\n]{0,200}") {
            let split = split(&text);
            prop_assert!(text.ends_with(split.body));
            if let Some(front) = split.front {
                let _ = parse(front);
            }
        }
    }
}
