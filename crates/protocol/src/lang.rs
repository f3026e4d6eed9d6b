//! The programming languages the bot reads, known by a file's extension: one [`Lang`] for the
//! code reader (which grammar), the evidence check and the tamper guard (which test syntax), and
//! the test-path rule (which files are source).

use serde::{Deserialize, Serialize};

/// A language the bot reads, by file extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lang {
    Python,
    /// `.js`, `.jsx`, `.mjs`, `.cjs`.
    JavaScript,
    /// `.ts`, `.mts`, `.cts`.
    TypeScript,
    /// TypeScript with JSX (`.tsx`).
    Tsx,
    Rust,
    Go,
    Ruby,
}

impl Lang {
    /// The language of `path` by its extension; `None` for anything else.
    pub fn of(path: &str) -> Option<Lang> {
        let name = path.rsplit('/').next().unwrap_or(path);
        let (_, ext) = name.rsplit_once('.')?;
        Some(match ext {
            "py" => Lang::Python,
            "js" | "jsx" | "mjs" | "cjs" => Lang::JavaScript,
            "ts" | "mts" | "cts" => Lang::TypeScript,
            "tsx" => Lang::Tsx,
            "rs" => Lang::Rust,
            "go" => Lang::Go,
            "rb" => Lang::Ruby,
            _ => return None,
        })
    }

    /// JavaScript or TypeScript, with or without JSX: one syntax for tests (`it(`, `test(`).
    pub fn is_script(self) -> bool {
        matches!(self, Lang::JavaScript | Lang::TypeScript | Lang::Tsx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn languages_are_known_by_extension() {
        assert_eq!(Lang::of("src/a.py"), Some(Lang::Python));
        assert_eq!(Lang::of("web/b.test.tsx"), Some(Lang::Tsx));
        assert_eq!(Lang::of("web/c.mjs"), Some(Lang::JavaScript));
        assert_eq!(Lang::of("spec/d_spec.rb"), Some(Lang::Ruby));
        assert_eq!(Lang::of("README.md"), None);
        assert_eq!(Lang::of("dir.rs/Makefile"), None);
        assert!(Lang::TypeScript.is_script() && !Lang::Go.is_script());
    }
}
