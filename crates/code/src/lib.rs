//! Source code read as code: which functions, methods and classes a file defines (with their
//! lines), what it imports, and what a function calls, for Python, JavaScript, TypeScript, Rust
//! and Go, parsed with the tree-sitter grammars of those languages (never regular expressions).
//! [`resolve`] follows a failing test's calls through imports and re-exports to the definitions
//! in the repository: the code under test.
//!
//! A leaf: it reads files beneath a trusted root through [`meta_agent_fsafe`] (no link followed,
//! bounded sizes), runs nothing, and decides nothing about what a prompt shows (that is the
//! agent's). Stubs (`.pyi`, `.d.ts`) are never read as a definition: they only describe the
//! source a fix must change.

#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod changed;
mod go;
mod items;
mod parsed;
mod python;
pub mod resolve;
mod rust;
mod script;
mod sources;

pub use items::{Binding, Bound, Call, Def, DefKind, Import, Module, Receiver, Value};
pub use parsed::Parsed;
pub use resolve::{Reached, Role, Site, enclosing, under_test};
pub use sources::Sources;

pub use meta_agent_protocol::lang::Lang;

/// The language `path` is read in as code: a source file (not a stub) of a language this module
/// has a grammar for; `None` for anything else.
pub fn code_lang(path: &str) -> Option<Lang> {
    if is_stub(path) {
        return None;
    }
    Lang::of(path).filter(|lang| grammar(*lang).is_some())
}

/// The tree-sitter grammar of `lang`, when it is read as code.
fn grammar(lang: Lang) -> Option<tree_sitter::Language> {
    Some(match lang {
        Lang::Python => tree_sitter_python::LANGUAGE.into(),
        Lang::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
        Lang::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
        Lang::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
        Lang::Rust => tree_sitter_rust::LANGUAGE.into(),
        Lang::Go => tree_sitter_go::LANGUAGE.into(),
        Lang::Ruby => return None,
    })
}

/// What reads the structure of `lang`, when it is read as code.
fn reader(lang: Lang) -> Option<&'static dyn items::Reader> {
    Some(match lang {
        Lang::Python => &python::Python,
        Lang::JavaScript | Lang::TypeScript | Lang::Tsx => &script::Script,
        Lang::Rust => &rust::Rust,
        Lang::Go => &go::Go,
        Lang::Ruby => return None,
    })
}

/// A type stub or declaration file (`.pyi`, `.d.ts`, `.d.mts`, `.d.cts`): it describes a source
/// and never stands in for it.
pub fn is_stub(path: &str) -> bool {
    path.ends_with(".pyi")
        || [".d.ts", ".d.mts", ".d.cts"]
            .iter()
            .any(|ext| path.ends_with(ext))
}

/// Why a file could not be read as code. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum CodeError {
    /// Not a language read as code (or a stub).
    #[error("`{path}` is not a source file of a language read as code")]
    NotSource { path: String },
    #[error(transparent)]
    Read(#[from] meta_agent_fsafe::FsError),
    #[error("`{path}` is not UTF-8 text")]
    NotText { path: String },
    /// The grammar could not be loaded (a tree-sitter version mismatch: a build problem).
    #[error("the {lang:?} grammar could not be loaded: {source}")]
    Grammar {
        lang: Lang,
        #[source]
        source: tree_sitter::LanguageError,
    },
    #[error("`{path}` could not be parsed")]
    Unparsed { path: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stubs_are_not_sources() {
        assert_eq!(code_lang("pkg/window.py"), Some(Lang::Python));
        assert_eq!(code_lang("pkg/window.pyi"), None);
        assert_eq!(code_lang("src/index.d.ts"), None);
        assert_eq!(code_lang("src/index.ts"), Some(Lang::TypeScript));
        assert_eq!(code_lang("src/app.tsx"), Some(Lang::Tsx));
        assert_eq!(code_lang("lib/a.cjs"), Some(Lang::JavaScript));
        assert_eq!(code_lang("README.md"), None);
    }

    #[test]
    fn every_grammar_loads() {
        for lang in [
            Lang::Python,
            Lang::JavaScript,
            Lang::TypeScript,
            Lang::Tsx,
            Lang::Rust,
            Lang::Go,
        ] {
            let mut parser = tree_sitter::Parser::new();
            parser.set_language(&grammar(lang).unwrap()).unwrap();
            assert!(reader(lang).is_some(), "{lang:?}");
        }
        assert!(grammar(Lang::Ruby).is_none() && code_lang("spec/a_spec.rb").is_none());
        assert_eq!(code_lang("src/a.d.ts"), None);
        assert_eq!(code_lang("src/a.ts"), Some(Lang::TypeScript));
    }
}
