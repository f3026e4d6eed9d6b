//! Rust read with tree-sitter-rust: functions, structs, enums and traits, the methods of `impl`
//! blocks, inline modules (`mod tests { … }` is a scope of its own), `use` trees (lists,
//! aliases, globs, `pub use` re-exports), calls on paths, variables and call results, and the
//! calls inside macros (`assert_eq!(mean(&v), 2.5)`: a macro's arguments are a token tree to the
//! grammar, read here as calls where a name is followed by parentheses). Module paths resolve
//! as rustc does for the common layouts: `crate::`, `self::`, `super::`, child modules in
//! `a.rs` or `a/mod.rs`, and the package's own library name (from `Cargo.toml`) in integration
//! tests, benches and examples.

use tree_sitter::Node;

use super::items::{Binding, Bound, Call, Def, DefKind, Import, Module, Reader, Receiver, Value};
use super::parsed::Parsed;
use super::sources::{Sources, join, parent};

/// The Rust reader.
pub struct Rust;

/// Generic wrappers whose first argument is what a function really returns.
const WRAPPERS: [&str; 5] = ["Option", "Result", "Box", "Rc", "Arc"];

impl Reader for Rust {
    fn defs(&self, src: &Parsed) -> Vec<Def> {
        let mut out = Vec::new();
        items(src, src.root(), &[], &mut out);
        out
    }

    fn imports(&self, src: &Parsed) -> Vec<Import> {
        Parsed::descendants(src.root())
            .into_iter()
            .filter(|node| node.kind() == "use_declaration")
            .flat_map(|node| {
                let scope = scope_of(src, node);
                let mut paths = Vec::new();
                if let Some(argument) = node.child_by_field_name("argument") {
                    use_tree(src, argument, "", &mut paths);
                }
                paths
                    .into_iter()
                    .map(move |(path, bound)| import(scope.clone(), &path, bound))
            })
            .collect()
    }

    fn calls(&self, src: &Parsed, def: &Def) -> Vec<Call> {
        let mut out = Vec::new();
        for node in src.nodes_in(&def.bytes, &["call_expression", "macro_invocation"]) {
            match node.kind() {
                "call_expression" => out.extend(call(src, node)),
                _ => {
                    for tree in Parsed::children(node)
                        .into_iter()
                        .filter(|c| c.kind() == "token_tree")
                    {
                        token_calls(src, tree, &mut out);
                    }
                }
            }
        }
        out.sort_by_key(|call| call.line);
        out
    }

    fn bindings(&self, src: &Parsed, def: &Def) -> Vec<Binding> {
        src.nodes_in(&def.bytes, &["let_declaration"])
            .into_iter()
            .filter_map(|node| {
                let pattern = node.child_by_field_name("pattern")?;
                let var = match pattern.kind() {
                    "identifier" => src.text(pattern).to_owned(),
                    "mut_pattern" => src
                        .text(Parsed::children(pattern).into_iter().last()?)
                        .to_owned(),
                    _ => return None,
                };
                if let Some(ty) = node.child_by_field_name("type") {
                    return Some(Binding {
                        var,
                        value: Value::Type(type_name(src, ty)?),
                    });
                }
                let value = node.child_by_field_name("value")?;
                let value = match value.kind() {
                    "struct_expression" => Value::Type(src.field(value, "name")?),
                    "try_expression" => {
                        Value::Call(call(src, Parsed::children(value).into_iter().next()?)?)
                    }
                    _ => Value::Call(call(src, value)?),
                };
                Some(Binding { var, value })
            })
            .collect()
    }

    fn returns(&self, src: &Parsed, def: &Def) -> Option<String> {
        let function = src
            .nodes_in(&def.bytes, &["function_item"])
            .into_iter()
            .next()?;
        let ty = function.child_by_field_name("return_type")?;
        type_name(src, ty)
    }

    fn modules(&self, files: &mut Sources, from: &Module, spec: &str) -> Vec<Module> {
        let mut segments = spec.split("::").filter(|s| !s.is_empty());
        let Some(first) = segments.next() else {
            return Vec::new();
        };
        let start = match first {
            "crate" => Some(crate_root(files, &from.file)),
            "self" => Some(from.clone()),
            "super" => parent_module(files, from),
            name => child(files, from, name).or_else(|| library(files, &from.file, name)),
        };
        let mut module = match start {
            Some(module) => module,
            None => return Vec::new(),
        };
        for segment in segments {
            module = match segment {
                "super" => match parent_module(files, &module) {
                    Some(up) => up,
                    None => return Vec::new(),
                },
                "self" => module,
                name => match child(files, &module, name) {
                    Some(down) => down,
                    None => return Vec::new(),
                },
            };
        }
        vec![module]
    }

    fn submodule(&self, module: &str, item: &str) -> Option<String> {
        Some(format!("{module}::{item}"))
    }
}

/// The items of a file or inline module body.
fn items(src: &Parsed, body: Node<'_>, scope: &[String], out: &mut Vec<Def>) {
    for node in Parsed::children(body) {
        let name = src.field(node, "name");
        match (node.kind(), name) {
            ("function_item", Some(name)) => {
                out.push(def(src, node, name, DefKind::Function, None, scope))
            }
            ("struct_item" | "enum_item" | "union_item" | "trait_item", Some(name)) => {
                out.push(def(src, node, name.clone(), DefKind::Class, None, scope));
                if node.kind() == "trait_item" {
                    methods(src, node, &name, scope, out);
                }
            }
            ("impl_item", _) => {
                if let Some(owner) = node
                    .child_by_field_name("type")
                    .and_then(|t| type_name(src, t))
                {
                    methods(src, node, &owner, scope, out);
                }
            }
            ("mod_item", Some(name)) => {
                if let Some(inner) = node.child_by_field_name("body") {
                    let mut inner_scope = scope.to_vec();
                    inner_scope.push(name);
                    items(src, inner, &inner_scope, out);
                }
            }
            _ => {}
        }
    }
}

fn methods(src: &Parsed, block: Node<'_>, owner: &str, scope: &[String], out: &mut Vec<Def>) {
    let Some(body) = block.child_by_field_name("body") else {
        return;
    };
    for node in Parsed::children(body) {
        if matches!(node.kind(), "function_item" | "function_signature_item")
            && let Some(name) = src.field(node, "name")
        {
            out.push(def(src, node, name, DefKind::Method, Some(owner), scope));
        }
    }
}

/// A definition whose lines start at its first attribute or doc comment.
fn def(
    src: &Parsed,
    node: Node<'_>,
    name: String,
    kind: DefKind,
    owner: Option<&str>,
    scope: &[String],
) -> Def {
    let mut first = node;
    while let Some(previous) = first.prev_named_sibling() {
        let attached = matches!(
            previous.kind(),
            "attribute_item" | "line_comment" | "block_comment"
        ) && !src.text(previous).starts_with("//!")
            && Parsed::last_line(previous) + 1 >= Parsed::line(first);
        if !attached {
            break;
        }
        first = previous;
    }
    Def {
        name,
        kind,
        owner: owner.map(str::to_owned),
        scope: scope.to_vec(),
        start: Parsed::line(first),
        end: Parsed::lines(node).1,
        bytes: first.start_byte()..node.end_byte(),
        bases: Vec::new(),
        doc: leading_comments(first, node),
    }
}

/// The lines of the comments that open a definition's leading siblings (its doc comments).
pub(super) fn leading_comments(first: Node<'_>, item: Node<'_>) -> Option<(usize, usize)> {
    let mut last = None;
    let mut current = Some(first);
    while let Some(node) = current.filter(|n| *n != item && n.kind().contains("comment")) {
        last = Some(Parsed::last_line(node));
        current = node.next_named_sibling();
    }
    last.map(|end| (Parsed::line(first), end))
}

/// The inline modules `node` is in, outermost first.
fn scope_of(src: &Parsed, node: Node<'_>) -> Vec<String> {
    let mut scope = Vec::new();
    let mut current = node.parent();
    while let Some(up) = current {
        if up.kind() == "mod_item"
            && let Some(name) = src.field(up, "name")
        {
            scope.push(name);
        }
        current = up.parent();
    }
    scope.reverse();
    scope
}

/// The `(path, bound)` pairs of a `use` tree under `prefix`.
fn use_tree(src: &Parsed, node: Node<'_>, prefix: &str, out: &mut Vec<(String, Bound)>) {
    let joined = |tail: &str| {
        if prefix.is_empty() {
            tail.to_owned()
        } else {
            format!("{prefix}::{tail}")
        }
    };
    match node.kind() {
        "identifier" | "scoped_identifier" | "crate" | "super" | "self" => {
            let path = joined(src.text(node));
            let bound = last(&path).to_owned();
            out.push((path, Bound::Name(bound)));
        }
        "use_as_clause" => {
            if let (Some(path), Some(alias)) = (src.field(node, "path"), src.field(node, "alias")) {
                out.push((joined(&path), Bound::Name(alias)));
            }
        }
        "use_wildcard" => {
            let path = Parsed::children(node)
                .into_iter()
                .next()
                .map(|p| joined(src.text(p)))
                .unwrap_or_else(|| prefix.to_owned());
            out.push((path, Bound::Glob));
        }
        "scoped_use_list" => {
            let inner = src
                .field(node, "path")
                .map_or_else(|| prefix.to_owned(), |path| joined(&path));
            if let Some(list) = node.child_by_field_name("list") {
                use_tree(src, list, &inner, out);
            }
        }
        "use_list" => {
            for child in Parsed::children(node) {
                if child.kind() == "self" {
                    out.push((prefix.to_owned(), Bound::Name(last(prefix).to_owned())));
                } else {
                    use_tree(src, child, prefix, out);
                }
            }
        }
        _ => {}
    }
}

/// An import of `path` (`a::b::c`: item `c` of module `a::b`; a glob: every item of `path`).
fn import(scope: Vec<String>, path: &str, bound: Bound) -> Import {
    match bound {
        Bound::Glob => Import {
            scope,
            bound,
            module: path.to_owned(),
            item: None,
        },
        Bound::Name(_) => match path.rsplit_once("::") {
            Some((module, item)) => Import {
                scope,
                bound,
                module: module.to_owned(),
                item: Some(item.to_owned()),
            },
            None => Import {
                scope,
                bound,
                module: path.to_owned(),
                item: None,
            },
        },
    }
}

fn last(path: &str) -> &str {
    path.rsplit("::").next().unwrap_or(path)
}

/// A `call_expression` as a [`Call`].
fn call(src: &Parsed, node: Node<'_>) -> Option<Call> {
    if node.kind() != "call_expression" {
        return None;
    }
    let mut function = node.child_by_field_name("function")?;
    if function.kind() == "generic_function" {
        function = function.child_by_field_name("function")?;
    }
    let line = Parsed::line(node);
    match function.kind() {
        "identifier" => Some(Call::bare(src.text(function), line)),
        "scoped_identifier" => Some(Call {
            receiver: Receiver::Path(src.field(function, "path")?),
            name: src.field(function, "name")?,
            line,
        }),
        "field_expression" => {
            let value = function.child_by_field_name("value")?;
            let name = src.field(function, "field")?;
            let receiver = match value.kind() {
                "identifier" | "self" => Receiver::Path(src.text(value).to_owned()),
                "call_expression" => Receiver::Result(Box::new(call(src, value)?)),
                _ => return None,
            };
            Some(Call::on(receiver, name, line))
        }
        _ => None,
    }
}

/// Calls inside a macro's token tree: a name (with its `a::b::` path or `x.` receiver) followed
/// by a parenthesised token tree.
fn token_calls(src: &Parsed, tree: Node<'_>, out: &mut Vec<Call>) {
    let tokens: Vec<Node<'_>> = {
        let mut cursor = tree.walk();
        tree.children(&mut cursor).collect()
    };
    for (at, token) in tokens.iter().enumerate() {
        if token.kind() == "token_tree" {
            token_calls(src, *token, out);
            continue;
        }
        let opens_call = tokens
            .get(at + 1)
            .is_some_and(|next| next.kind() == "token_tree" && src.text(*next).starts_with('('));
        if token.kind() != "identifier" || !opens_call {
            continue;
        }
        let name = src.text(*token).to_owned();
        let line = Parsed::line(*token);
        out.push(Call {
            receiver: token_receiver(src, &tokens[..at]),
            name,
            line,
        });
    }
}

/// What the tokens just before a name say it is called on: `a::b::` or `x.`.
fn token_receiver(src: &Parsed, before: &[Node<'_>]) -> Receiver {
    let word = |node: &Node<'_>| matches!(node.kind(), "identifier" | "crate" | "super" | "self");
    match before {
        [.., owner, dot] if src.text(*dot) == "." && word(owner) => {
            Receiver::Path(src.text(*owner).to_owned())
        }
        [.., _, sep] if src.text(*sep) == "::" => {
            let mut parts = Vec::new();
            let mut rest = before;
            while let [head @ .., segment, sep] = rest {
                if src.text(*sep) != "::" || !word(segment) {
                    break;
                }
                parts.push(src.text(*segment).to_owned());
                rest = head;
            }
            parts.reverse();
            if parts.is_empty() {
                Receiver::Bare
            } else {
                Receiver::Path(parts.join("::"))
            }
        }
        _ => Receiver::Bare,
    }
}

/// The type a type expression names: `Window`, `Self`, the `T` of `Option<T>`/`Result<T, E>`
/// and of references.
fn type_name(src: &Parsed, ty: Node<'_>) -> Option<String> {
    match ty.kind() {
        "type_identifier" => Some(src.text(ty).to_owned()),
        "scoped_type_identifier" => src.field(ty, "name"),
        "reference_type" | "pointer_type" => type_name(src, ty.child_by_field_name("type")?),
        "generic_type" => {
            let base = ty.child_by_field_name("type")?;
            let name = type_name(src, base)?;
            if !WRAPPERS.contains(&name.as_str()) {
                return Some(name);
            }
            let arguments = ty.child_by_field_name("type_arguments")?;
            let first = Parsed::children(arguments).into_iter().next()?;
            type_name(src, first)
        }
        _ => None,
    }
}

/// The crate a file belongs to: its manifest's directory, library name and library root.
struct Package {
    dir: String,
    library: Option<String>,
    lib_root: String,
}

fn package_of(files: &mut Sources, file: &str) -> Option<Package> {
    let mut dir = parent(file);
    loop {
        let manifest = join(dir, "Cargo.toml");
        if files.is_file(&manifest) {
            let text = files.read(&manifest).ok()?;
            let table: toml::Table = text.parse().ok()?;
            let lib = table.get("lib");
            let name = lib
                .and_then(|l| l.get("name"))
                .or_else(|| table.get("package").and_then(|p| p.get("name")))
                .and_then(|n| n.as_str())
                .map(|n| n.replace('-', "_"));
            let lib_path = lib
                .and_then(|l| l.get("path"))
                .and_then(|p| p.as_str())
                .unwrap_or("src/lib.rs");
            return Some(Package {
                dir: dir.to_owned(),
                library: name,
                lib_root: join(dir, lib_path),
            });
        }
        if dir.is_empty() {
            return None;
        }
        dir = parent(dir);
    }
}

/// The root of the crate `file` is compiled in: the library, a binary, or the test, bench or
/// example file itself.
fn crate_root(files: &mut Sources, file: &str) -> Module {
    let Some(package) = package_of(files, file) else {
        return Module::file(file);
    };
    let relative = file
        .strip_prefix(&package.dir)
        .map_or(file, |rest| rest.trim_start_matches('/'));
    let own_crate = ["tests/", "benches/", "examples/", "src/bin/"]
        .iter()
        .any(|dir| relative.starts_with(dir) && !relative[dir.len()..].contains('/'));
    if own_crate || relative == "src/main.rs" && !files.is_file(&package.lib_root) {
        return Module::file(file);
    }
    Module::file(&package.lib_root)
}

/// The package's own library when `name` is its name (integration tests: `use winstats::…`).
fn library(files: &mut Sources, file: &str, name: &str) -> Option<Module> {
    let package = package_of(files, file)?;
    (package.library.as_deref() == Some(name) && files.is_file(&package.lib_root))
        .then(|| Module::file(&package.lib_root))
}

/// Whether `file` is a crate root or a `mod.rs`: its child modules' files are beside it.
fn owns_directory(files: &mut Sources, file: &str) -> bool {
    let name = file.rsplit('/').next().unwrap_or(file);
    name == "mod.rs" || crate_root(files, file).file == file
}

/// The child module `name` of `module`: inline, or in its own file.
fn child(files: &mut Sources, module: &Module, name: &str) -> Option<Module> {
    let parsed = files.parse(&module.file)?;
    let declared = Parsed::descendants(parsed.root())
        .into_iter()
        .filter(|node| node.kind() == "mod_item")
        .find(|node| {
            parsed.field(*node, "name").as_deref() == Some(name)
                && scope_of(&parsed, *node) == module.scope
        })?;
    let mut scope = module.scope.clone();
    scope.push(name.to_owned());
    if declared.child_by_field_name("body").is_some() {
        return Some(Module {
            file: module.file.clone(),
            scope,
        });
    }
    let base = if owns_directory(files, &module.file) {
        parent(&module.file).to_owned()
    } else {
        module.file.trim_end_matches(".rs").to_owned()
    };
    let dir = module
        .scope
        .iter()
        .fold(base, |dir, inner| join(&dir, inner));
    [
        join(&dir, &format!("{name}.rs")),
        join(&dir, &format!("{name}/mod.rs")),
    ]
    .into_iter()
    .find(|path| files.is_file(path))
    .map(|path| Module::file(&path))
}

/// The module `module` is declared in.
fn parent_module(files: &mut Sources, module: &Module) -> Option<Module> {
    if let Some((_, outer)) = module.scope.split_last() {
        return Some(Module {
            file: module.file.clone(),
            scope: outer.to_vec(),
        });
    }
    if crate_root(files, &module.file).file == module.file {
        return None;
    }
    let dir = parent(&module.file);
    let owner_dir = if module.file.ends_with("/mod.rs") {
        parent(dir)
    } else {
        dir
    };
    let candidates = [
        format!("{owner_dir}.rs"),
        join(owner_dir, "mod.rs"),
        join(owner_dir, "lib.rs"),
        join(owner_dir, "main.rs"),
    ];
    candidates
        .into_iter()
        .find(|path| files.is_file(path))
        .map(|path| Module::file(&path))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "use crate::a::b::{f, g as h};\nuse super::*;\npub use window::windows;\nmod window;\npub struct Window { size: usize }\nimpl Window {\n    /// Makes one.\n    pub fn new(size: usize) -> Self { Self { size } }\n    pub fn push(&mut self, x: i32) { helper(x); }\n}\n#[cfg(test)]\nmod tests {\n    use super::*;\n    #[test]\n    fn t() {\n        let mut w = Window::new(2);\n        w.push(1);\n        assert_eq!(windows(&[1], 1), crate::a::mean(&w));\n        let y = f(2).len();\n    }\n}\n";

    fn parsed() -> Parsed {
        Parsed::of("src/lib.rs", SOURCE).unwrap()
    }

    #[test]
    fn items_methods_and_inline_modules() {
        let found: Vec<(String, DefKind, Vec<String>, usize, usize)> = Rust
            .defs(&parsed())
            .into_iter()
            .map(|d| (d.qualified(), d.kind, d.scope, d.start, d.end))
            .collect();
        assert_eq!(
            found,
            [
                ("Window".into(), DefKind::Class, vec![], 5, 5),
                ("Window.new".into(), DefKind::Method, vec![], 7, 8),
                ("Window.push".into(), DefKind::Method, vec![], 9, 9),
                (
                    "t".into(),
                    DefKind::Function,
                    vec!["tests".to_owned()],
                    14,
                    20
                ),
            ]
        );
    }

    #[test]
    fn doc_comments_and_attributes_belong_to_their_item_and_a_file_doc_does_not() {
        let src = Parsed::of(
            "src/window.rs",
            "//! Sliding windows.\n\n/// Every run.\n#[must_use]\npub fn windows() {}\n\n// A note.\n\npub fn other() {}\n",
        )
        .unwrap();
        let lines: Vec<(String, usize, usize)> = Rust
            .defs(&src)
            .into_iter()
            .map(|d| (d.name, d.start, d.end))
            .collect();
        assert_eq!(lines, [("windows".into(), 3, 5), ("other".into(), 9, 9)]);
    }

    #[test]
    fn use_trees_become_imports() {
        let found: Vec<(Vec<String>, Bound, String, Option<String>)> = Rust
            .imports(&parsed())
            .into_iter()
            .map(|i| (i.scope, i.bound, i.module, i.item))
            .collect();
        let name = |n: &str| Bound::Name(n.to_owned());
        let some = |s: &str| Some(s.to_owned());
        assert_eq!(
            found,
            [
                (vec![], name("f"), "crate::a::b".into(), some("f")),
                (vec![], name("h"), "crate::a::b".into(), some("g")),
                (vec![], Bound::Glob, "super".into(), None),
                (vec![], name("windows"), "window".into(), some("windows")),
                (vec!["tests".into()], Bound::Glob, "super".into(), None),
            ]
        );
    }

    #[test]
    fn calls_in_macros_paths_and_methods() {
        let src = parsed();
        let defs = Rust.defs(&src);
        let test = defs.iter().find(|d| d.name == "t").unwrap();
        let calls: Vec<String> = Rust
            .calls(&src, test)
            .iter()
            .map(|c| c.written("::"))
            .collect();
        assert_eq!(
            calls,
            [
                "Window::new",
                "w::push",
                "windows",
                "crate::a::mean",
                "f()::len",
                "f"
            ]
        );
        let bindings = Rust.bindings(&src, test);
        assert_eq!(bindings.len(), 2, "{bindings:?}");
        assert_eq!(bindings[0].var, "w");
        let new = defs.iter().find(|d| d.name == "new").unwrap();
        assert_eq!(Rust.returns(&src, new).as_deref(), Some("Self"));
    }

    #[test]
    fn module_paths_resolve_to_files_and_inline_modules() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for (path, text) in [
            (
                "Cargo.toml",
                "[package]\nname = \"win-stats\"\nversion = \"0.1.0\"\n",
            ),
            (
                "src/lib.rs",
                "pub mod stats;\nmod window;\n#[cfg(test)]\nmod tests {}\n",
            ),
            ("src/window.rs", "mod inner;\n"),
            ("src/window/inner.rs", ""),
            ("src/stats/mod.rs", "pub mod mean;\n"),
            ("src/stats/mean.rs", ""),
            ("tests/api.rs", ""),
        ] {
            std::fs::create_dir_all(root.join(path).parent().unwrap()).unwrap();
            std::fs::write(root.join(path), text).unwrap();
        }
        let mut files = Sources::new(root);
        let mut at = |file: &str, scope: &[&str], spec: &str| -> Vec<(String, Vec<String>)> {
            let from = Module {
                file: file.to_owned(),
                scope: scope.iter().map(|s| (*s).to_owned()).collect(),
            };
            Rust.modules(&mut files, &from, spec)
                .into_iter()
                .map(|m| (m.file, m.scope))
                .collect()
        };
        let file = |f: &str| vec![(f.to_owned(), Vec::<String>::new())];
        assert_eq!(at("src/lib.rs", &["tests"], "super"), file("src/lib.rs"));
        assert_eq!(at("src/lib.rs", &[], "window"), file("src/window.rs"));
        assert_eq!(
            at("src/window.rs", &[], "inner"),
            file("src/window/inner.rs")
        );
        assert_eq!(
            at("src/window/inner.rs", &[], "super::super"),
            file("src/lib.rs")
        );
        assert_eq!(
            at("src/stats/mean.rs", &[], "crate::stats"),
            file("src/stats/mod.rs")
        );
        assert_eq!(
            at("src/stats/mean.rs", &[], "super"),
            file("src/stats/mod.rs")
        );
        assert_eq!(
            at("tests/api.rs", &[], "win_stats::stats::mean"),
            file("src/stats/mean.rs")
        );
        assert_eq!(
            at("src/lib.rs", &[], "self::tests"),
            vec![("src/lib.rs".to_owned(), vec!["tests".to_owned()])]
        );
        assert!(at("tests/api.rs", &[], "serde::de").is_empty());
    }
}
