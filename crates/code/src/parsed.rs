//! One parsed source file: its text and syntax tree, and the small node helpers every language
//! reader shares (text, lines, descendants, fields). No I/O.

use std::ops::Range;

use tree_sitter::{Node, Parser, Tree};

use super::{CodeError, Lang};

/// A source file and its syntax tree.
pub struct Parsed {
    /// Repository-relative.
    pub path: String,
    pub lang: Lang,
    pub text: String,
    tree: Tree,
}

impl std::fmt::Debug for Parsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parsed")
            .field("path", &self.path)
            .field("lang", &self.lang)
            .finish_non_exhaustive()
    }
}

impl Parsed {
    /// Parses `text` as `lang`.
    pub fn new(path: &str, lang: Lang, text: String) -> Result<Parsed, CodeError> {
        let grammar = super::grammar(lang).ok_or_else(|| CodeError::NotSource {
            path: path.to_owned(),
        })?;
        let mut parser = Parser::new();
        parser
            .set_language(&grammar)
            .map_err(|source| CodeError::Grammar { lang, source })?;
        let tree = parser
            .parse(&text, None)
            .ok_or_else(|| CodeError::Unparsed {
                path: path.to_owned(),
            })?;
        Ok(Parsed {
            path: path.to_owned(),
            lang,
            text,
            tree,
        })
    }

    /// Parses `text` with the language its path names.
    pub fn of(path: &str, text: &str) -> Result<Parsed, CodeError> {
        let lang = super::code_lang(path).ok_or_else(|| CodeError::NotSource {
            path: path.to_owned(),
        })?;
        Parsed::new(path, lang, text.to_owned())
    }

    pub fn root(&self) -> Node<'_> {
        self.tree.root_node()
    }

    /// The source text of `node` (empty if it is not on character boundaries).
    pub fn text(&self, node: Node<'_>) -> &str {
        self.text.get(node.byte_range()).unwrap_or_default()
    }

    /// The text of `node`'s field `field`, if it has one.
    pub fn field(&self, node: Node<'_>, field: &str) -> Option<String> {
        node.child_by_field_name(field)
            .map(|child| self.text(child).to_owned())
    }

    /// The 1-based lines of `node`, first and last.
    pub fn lines(node: Node<'_>) -> (usize, usize) {
        (node.start_position().row + 1, node.end_position().row + 1)
    }

    /// The 1-based last line holding text of `node` (a comment that ends with its newline ends
    /// on the line before).
    pub fn last_line(node: Node<'_>) -> usize {
        let end = node.end_position();
        if end.column == 0 && end.row > node.start_position().row {
            end.row
        } else {
            end.row + 1
        }
    }

    /// The 1-based first line of `node`.
    pub fn line(node: Node<'_>) -> usize {
        node.start_position().row + 1
    }

    /// Every named node under `node` (itself included), in source order.
    pub fn descendants(node: Node<'_>) -> Vec<Node<'_>> {
        let mut out = Vec::new();
        let mut cursor = node.walk();
        loop {
            if cursor.node().is_named() {
                out.push(cursor.node());
            }
            if cursor.goto_first_child() {
                continue;
            }
            while !cursor.goto_next_sibling() {
                if !cursor.goto_parent() || cursor.node() == node {
                    return out;
                }
            }
        }
    }

    /// The named nodes of the kinds in `kinds` inside `bytes`, in source order.
    pub fn nodes_in(&self, bytes: &Range<usize>, kinds: &[&str]) -> Vec<Node<'_>> {
        let Some(top) = self
            .root()
            .descendant_for_byte_range(bytes.start, bytes.end.max(bytes.start))
        else {
            return Vec::new();
        };
        Parsed::descendants(top)
            .into_iter()
            .filter(|node| {
                kinds.contains(&node.kind())
                    && node.start_byte() >= bytes.start
                    && node.end_byte() <= bytes.end
            })
            .collect()
    }

    /// The named children of `node`.
    pub fn children(node: Node<'_>) -> Vec<Node<'_>> {
        let mut cursor = node.walk();
        node.named_children(&mut cursor).collect()
    }

    /// The text of a string literal node without its quotes (its fragments joined).
    pub fn string(&self, node: Node<'_>) -> String {
        let fragments: Vec<Node<'_>> = Parsed::children(node)
            .into_iter()
            .filter(|child| child.kind().contains("fragment") || child.kind().ends_with("content"))
            .collect();
        if fragments.is_empty() {
            return self
                .text(node)
                .trim_matches(|c| c == '"' || c == '\'' || c == '`')
                .to_owned();
        }
        fragments.iter().map(|f| self.text(*f)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descendants_stay_inside_their_node() {
        let parsed = Parsed::of("a.py", "def f():\n    g(1)\n\ndef h():\n    k()\n").unwrap();
        let first = Parsed::children(parsed.root())[0];
        let calls: Vec<&str> = Parsed::descendants(first)
            .into_iter()
            .filter(|n| n.kind() == "call")
            .map(|n| parsed.text(n))
            .collect();
        assert_eq!(calls, ["g(1)"]);
        assert_eq!(Parsed::lines(first), (1, 2));
    }

    #[test]
    fn a_source_that_does_not_parse_cleanly_still_gives_a_tree() {
        let parsed = Parsed::of("a.ts", "export function f( {\n  return 1\n").unwrap();
        assert!(parsed.root().has_error());
    }
}
