//! JavaScript and TypeScript read with tree-sitter-javascript and tree-sitter-typescript:
//! functions (declared, or arrow functions and function expressions held by a `const`), classes
//! and their methods, `import` / `export … from` / `require` (default, named, namespace, `*`),
//! test blocks (`it('…', …)`, `test(…)`, `describe(…)`), calls and `new`, and modules resolved
//! as Node and TypeScript resolve them: relative paths with or without their extension (a `.js`
//! written for a `.ts` source), `index` files, and the package's own name through its
//! `package.json` (a built `dist/` entry mapped back to `src/`). A `.d.ts` never stands in for
//! a source.

use tree_sitter::Node;

use super::is_stub;
use super::items::{Binding, Bound, Call, Def, DefKind, Import, Module, Reader, Receiver, Value};
use super::parsed::Parsed;
use super::sources::{Sources, join, normal, parent};

/// The JavaScript and TypeScript reader.
pub struct Script;

/// Extensions tried after a module path, in order.
const EXTENSIONS: [&str; 8] = ["ts", "tsx", "mts", "cts", "js", "jsx", "mjs", "cjs"];
/// Functions that declare a test block.
const TEST_BLOCKS: [&str; 6] = ["it", "test", "describe", "fit", "xit", "xtest"];
/// Directories a package's built entry points live in, mapped back to `src`.
const BUILD_DIRS: [&str; 5] = ["dist", "lib", "build", "out", "esm"];

impl Reader for Script {
    fn defs(&self, src: &Parsed) -> Vec<Def> {
        let mut out = Vec::new();
        for node in Parsed::children(src.root()) {
            statement(src, node, node, &mut out);
        }
        out
    }

    fn enclosing(&self, src: &Parsed) -> Vec<Def> {
        let mut out = self.defs(src);
        out.extend(
            Parsed::descendants(src.root())
                .into_iter()
                .filter(|node| node.kind() == "call_expression")
                .filter_map(|node| test_block(src, node)),
        );
        out
    }

    fn imports(&self, src: &Parsed) -> Vec<Import> {
        Parsed::descendants(src.root())
            .into_iter()
            .flat_map(|node| match node.kind() {
                "import_statement" => es_import(src, node),
                "export_statement" => re_export(src, node),
                "variable_declarator" => require(src, node),
                "assignment_expression" => exports_required(src, node),
                _ => Vec::new(),
            })
            .collect()
    }

    fn calls(&self, src: &Parsed, def: &Def) -> Vec<Call> {
        src.nodes_in(&def.bytes, &["call_expression", "new_expression"])
            .into_iter()
            .filter_map(|node| call(src, node))
            .collect()
    }

    fn bindings(&self, src: &Parsed, def: &Def) -> Vec<Binding> {
        src.nodes_in(&def.bytes, &["variable_declarator"])
            .into_iter()
            .filter_map(|node| {
                let name = node.child_by_field_name("name")?;
                (name.kind() == "identifier").then_some(())?;
                let var = src.text(name).to_owned();
                if let Some(annotation) = node.child_by_field_name("type") {
                    return Some(Binding {
                        var,
                        value: Value::Type(type_name(src, annotation)?),
                    });
                }
                let value = node.child_by_field_name("value")?;
                Some(Binding {
                    var,
                    value: Value::Call(call(src, value)?),
                })
            })
            .collect()
    }

    fn returns(&self, src: &Parsed, def: &Def) -> Option<String> {
        let function = src.nodes_in(&def.bytes, &FUNCTIONS).into_iter().next()?;
        if let Some(annotation) = function.child_by_field_name("return_type") {
            return type_name(src, annotation);
        }
        src.nodes_in(&def.bytes, &["return_statement"])
            .into_iter()
            .flat_map(Parsed::children)
            .find(|child| child.kind() == "new_expression")
            .and_then(|node| call(src, node))
            .map(|call| call.name)
    }

    fn modules(&self, files: &mut Sources, from: &Module, spec: &str) -> Vec<Module> {
        let paths = if spec.starts_with("./") || spec.starts_with("../") {
            normal(&join(parent(&from.file), spec))
                .map(|base| source_files(files, &base))
                .unwrap_or_default()
        } else {
            own_package(files, &from.file, spec)
        };
        paths.iter().map(|path| Module::file(path)).collect()
    }

    fn constructor(&self) -> Option<&'static str> {
        Some("constructor")
    }
}

/// Node kinds that are functions.
const FUNCTIONS: [&str; 6] = [
    "function_declaration",
    "generator_function_declaration",
    "function_expression",
    "function",
    "arrow_function",
    "method_definition",
];

/// The definitions of one top-level statement; `outer` is what its lines span (an `export`
/// around a declaration).
fn statement(src: &Parsed, outer: Node<'_>, node: Node<'_>, out: &mut Vec<Def>) {
    match node.kind() {
        "export_statement" => {
            if let Some(declaration) = node
                .child_by_field_name("declaration")
                .or_else(|| node.child_by_field_name("value"))
            {
                let before = out.len();
                statement(src, outer, declaration, out);
                if src.text(node).starts_with("export default")
                    && let Some(first) = out.get(before).cloned()
                {
                    out.push(Def {
                        name: "default".into(),
                        ..first
                    });
                }
            }
        }
        "function_declaration" | "generator_function_declaration" => {
            if let Some(name) = src.field(node, "name") {
                out.push(def(name, DefKind::Function, None, outer, Vec::new()));
            }
        }
        "class_declaration" | "abstract_class_declaration" | "class" => {
            class(src, outer, node, out)
        }
        "lexical_declaration" | "variable_declaration" => {
            for declarator in Parsed::children(node) {
                held_function(src, outer, declarator, out);
            }
        }
        "expression_statement" => exported_function(src, outer, node, out),
        _ => {}
    }
}

/// `const f = (…) => …`, `const f = function (…) {…}`, `const C = class {…}`.
fn held_function(src: &Parsed, outer: Node<'_>, declarator: Node<'_>, out: &mut Vec<Def>) {
    let (Some(name), Some(value)) = (
        declarator.child_by_field_name("name"),
        declarator.child_by_field_name("value"),
    ) else {
        return;
    };
    if name.kind() != "identifier" {
        return;
    }
    let name = src.text(name).to_owned();
    match value.kind() {
        "arrow_function" | "function_expression" | "function" => {
            out.push(def(name, DefKind::Function, None, outer, Vec::new()));
        }
        "class" => {
            let mut members = Vec::new();
            class(src, outer, value, &mut members);
            for mut member in members {
                if member.kind == DefKind::Class {
                    member.name = name.clone();
                } else {
                    member.owner = Some(name.clone());
                }
                out.push(member);
            }
        }
        _ => {}
    }
}

/// `exports.f = function …` and `module.exports.f = (…) => …`.
fn exported_function(src: &Parsed, outer: Node<'_>, node: Node<'_>, out: &mut Vec<Def>) {
    let Some(assignment) = Parsed::children(node)
        .into_iter()
        .find(|c| c.kind() == "assignment_expression")
    else {
        return;
    };
    let (Some(left), Some(right)) = (
        assignment.child_by_field_name("left"),
        assignment.child_by_field_name("right"),
    ) else {
        return;
    };
    let target = src.text(left);
    let exported = target.starts_with("exports.") || target.starts_with("module.exports.");
    if exported && FUNCTIONS.contains(&right.kind()) {
        let name = target.rsplit('.').next().unwrap_or_default().to_owned();
        out.push(def(name, DefKind::Function, None, outer, Vec::new()));
    }
}

fn class(src: &Parsed, outer: Node<'_>, node: Node<'_>, out: &mut Vec<Def>) {
    let name = src.field(node, "name").unwrap_or_default();
    let bases = Parsed::descendants(node)
        .into_iter()
        .filter(|n| n.kind() == "extends_clause")
        .flat_map(|clause| {
            let mut cursor = clause.walk();
            clause
                .children_by_field_name("value", &mut cursor)
                .map(|value| src.text(value).to_owned())
                .collect::<Vec<_>>()
        })
        .collect();
    out.push(def(name.clone(), DefKind::Class, None, outer, bases));
    let Some(body) = node.child_by_field_name("body") else {
        return;
    };
    for member in Parsed::children(body) {
        let is_method = member.kind() == "method_definition"
            || (member.kind() == "public_field_definition"
                && member
                    .child_by_field_name("value")
                    .is_some_and(|v| FUNCTIONS.contains(&v.kind())));
        let member_name = src
            .field(member, "name")
            .or_else(|| src.field(member, "property"));
        if let (true, Some(member_name)) = (is_method, member_name) {
            out.push(def(
                member_name,
                DefKind::Method,
                Some(name.clone()),
                member,
                Vec::new(),
            ));
        }
    }
}

fn def(
    name: String,
    kind: DefKind,
    owner: Option<String>,
    node: Node<'_>,
    bases: Vec<String>,
) -> Def {
    let (start, end) = Parsed::lines(node);
    Def {
        name,
        kind,
        owner,
        scope: Vec::new(),
        start,
        end,
        bytes: node.byte_range(),
        bases,
        doc: None,
    }
}

/// `it('adds', () => …)`, `test.each(…)('…', …)`, `describe('…', …)`: a test block named by
/// its first string argument.
fn test_block(src: &Parsed, node: Node<'_>) -> Option<Def> {
    let function = node.child_by_field_name("function")?;
    let head = src.text(function);
    let word = head.split(['.', '(']).next().unwrap_or_default();
    if !TEST_BLOCKS.contains(&word) {
        return None;
    }
    let arguments = node.child_by_field_name("arguments")?;
    let title = Parsed::children(arguments)
        .into_iter()
        .find(|a| matches!(a.kind(), "string" | "template_string"))?;
    Some(def(
        src.string(title),
        DefKind::Test,
        None,
        node,
        Vec::new(),
    ))
}

/// `import d, { a, b as c } from './m'`, `import * as ns from './m'`.
fn es_import(src: &Parsed, node: Node<'_>) -> Vec<Import> {
    let Some(module) = node.child_by_field_name("source").map(|s| src.string(s)) else {
        return Vec::new();
    };
    let Some(clause) = Parsed::children(node)
        .into_iter()
        .find(|c| c.kind() == "import_clause")
    else {
        return Vec::new();
    };
    let import = |bound: &str, item: Option<&str>| Import {
        scope: Vec::new(),
        bound: Bound::Name(bound.to_owned()),
        module: module.clone(),
        item: item.map(str::to_owned),
    };
    let mut out = Vec::new();
    for part in Parsed::children(clause) {
        match part.kind() {
            "identifier" => out.push(import(src.text(part), Some("default"))),
            "namespace_import" => {
                if let Some(name) = Parsed::children(part)
                    .into_iter()
                    .find(|c| c.kind() == "identifier")
                {
                    out.push(import(src.text(name), None));
                }
            }
            "named_imports" => {
                for spec in Parsed::children(part) {
                    if let Some((item, bound)) = specifier(src, spec) {
                        out.push(import(&bound, Some(&item)));
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// `export { a, b as c } from './m'`, `export * from './m'`, `export * as ns from './m'`.
fn re_export(src: &Parsed, node: Node<'_>) -> Vec<Import> {
    let Some(module) = node.child_by_field_name("source").map(|s| src.string(s)) else {
        return Vec::new();
    };
    let import = |bound: Bound, item: Option<String>| Import {
        scope: Vec::new(),
        bound,
        module: module.clone(),
        item,
    };
    let children = Parsed::children(node);
    if let Some(clause) = children.iter().find(|c| c.kind() == "export_clause") {
        return Parsed::children(*clause)
            .into_iter()
            .filter_map(|spec| specifier(src, spec))
            .map(|(item, bound)| import(Bound::Name(bound), Some(item)))
            .collect();
    }
    if let Some(namespace) = children.iter().find(|c| c.kind() == "namespace_export") {
        let name = Parsed::children(*namespace)
            .into_iter()
            .next()
            .map(|n| src.text(n).to_owned())
            .unwrap_or_default();
        return vec![import(Bound::Name(name), None)];
    }
    vec![import(Bound::Glob, None)]
}

/// `(item, bound name)` of an import or export specifier.
fn specifier(src: &Parsed, spec: Node<'_>) -> Option<(String, String)> {
    if !matches!(spec.kind(), "import_specifier" | "export_specifier") {
        return None;
    }
    let item = src.field(spec, "name")?;
    let bound = src.field(spec, "alias").unwrap_or_else(|| item.clone());
    Some((item.trim_matches(['"', '\'']).to_owned(), bound))
}

/// `const m = require('./m')`, `const { a, b: c } = require('./m')`.
fn require(src: &Parsed, declarator: Node<'_>) -> Vec<Import> {
    let (Some(name), Some(value)) = (
        declarator.child_by_field_name("name"),
        declarator.child_by_field_name("value"),
    ) else {
        return Vec::new();
    };
    let Some(module) = required(src, value) else {
        return Vec::new();
    };
    let import = |bound: &str, item: Option<&str>| Import {
        scope: Vec::new(),
        bound: Bound::Name(bound.to_owned()),
        module: module.clone(),
        item: item.map(str::to_owned),
    };
    match name.kind() {
        "identifier" => vec![import(src.text(name), None)],
        "object_pattern" => Parsed::children(name)
            .into_iter()
            .filter_map(|part| match part.kind() {
                "shorthand_property_identifier_pattern" => {
                    Some(import(src.text(part), Some(src.text(part))))
                }
                "pair_pattern" => {
                    let key = src.field(part, "key")?;
                    let value = src.field(part, "value")?;
                    Some(import(&value, Some(&key)))
                }
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// `module.exports = require('./m')`: everything `./m` exports.
fn exports_required(src: &Parsed, assignment: Node<'_>) -> Vec<Import> {
    let (Some(left), Some(right)) = (
        assignment.child_by_field_name("left"),
        assignment.child_by_field_name("right"),
    ) else {
        return Vec::new();
    };
    if src.text(left) != "module.exports" {
        return Vec::new();
    }
    required(src, right)
        .map(|module| Import {
            scope: Vec::new(),
            bound: Bound::Glob,
            module,
            item: None,
        })
        .into_iter()
        .collect()
}

/// The module of `require('…')`.
fn required(src: &Parsed, value: Node<'_>) -> Option<String> {
    if value.kind() != "call_expression" || src.field(value, "function")? != "require" {
        return None;
    }
    let arguments = value.child_by_field_name("arguments")?;
    let first = Parsed::children(arguments).into_iter().next()?;
    (first.kind() == "string").then(|| src.string(first))
}

/// A `call_expression` or `new_expression` as a [`Call`].
fn call(src: &Parsed, node: Node<'_>) -> Option<Call> {
    let line = Parsed::line(node);
    if node.kind() == "new_expression" {
        let constructor = node.child_by_field_name("constructor")?;
        return (constructor.kind() == "identifier")
            .then(|| Call::bare(src.text(constructor), line));
    }
    if node.kind() != "call_expression" {
        return None;
    }
    let function = node.child_by_field_name("function")?;
    match function.kind() {
        "identifier" => Some(Call::bare(src.text(function), line)),
        "member_expression" => {
            let object = function.child_by_field_name("object")?;
            let name = src.field(function, "property")?;
            let receiver = match object.kind() {
                "identifier" | "this" => Receiver::Path(src.text(object).to_owned()),
                "member_expression" if is_dotted(object) => {
                    Receiver::Path(src.text(object).to_owned())
                }
                "call_expression" | "new_expression" => {
                    Receiver::Result(Box::new(call(src, object)?))
                }
                "parenthesized_expression" => {
                    let inner = Parsed::children(object).into_iter().next()?;
                    Receiver::Result(Box::new(call(src, inner)?))
                }
                _ => return None,
            };
            Some(Call::on(receiver, name, line))
        }
        _ => None,
    }
}

fn is_dotted(node: Node<'_>) -> bool {
    match node.kind() {
        "identifier" | "this" => true,
        "member_expression" => node.child_by_field_name("object").is_some_and(is_dotted),
        _ => false,
    }
}

/// The class a type annotation names (`: Window`, `: Promise<Window>` is not one).
fn type_name(src: &Parsed, annotation: Node<'_>) -> Option<String> {
    let named = Parsed::descendants(annotation)
        .into_iter()
        .find(|n| n.kind() == "type_identifier")?;
    Some(src.text(named).to_owned())
}

/// The source files a module path (without or with an extension) may be.
fn source_files(files: &mut Sources, base: &str) -> Vec<String> {
    let mut tried: Vec<String> = Vec::new();
    let name = base.rsplit('/').next().unwrap_or(base);
    if let Some((stem, ext)) = name.rsplit_once('.') {
        let stem = format!("{}{stem}", &base[..base.len() - name.len()]);
        if EXTENSIONS.contains(&ext) {
            tried.push(base.to_owned());
            let sources: &[&str] = match ext {
                "js" => &["ts", "tsx"],
                "mjs" => &["mts"],
                "cjs" => &["cts"],
                "jsx" => &["tsx"],
                _ => &[],
            };
            tried.extend(sources.iter().map(|e| format!("{stem}.{e}")));
        }
    }
    tried.extend(EXTENSIONS.iter().map(|ext| format!("{base}.{ext}")));
    tried.extend(EXTENSIONS.iter().map(|ext| format!("{base}/index.{ext}")));
    tried
        .into_iter()
        .filter(|path| !is_stub(path) && files.is_file(path))
        .take(1)
        .collect()
}

/// A bare specifier naming the package the file is in (`winstats`, `winstats/window`): its
/// entry point, a built one mapped back to its source.
fn own_package(files: &mut Sources, from: &str, spec: &str) -> Vec<String> {
    let Some((dir, manifest)) = package_of(files, from) else {
        return Vec::new();
    };
    let Some(name) = manifest.get("name").and_then(|n| n.as_str()) else {
        return Vec::new();
    };
    let rest = if spec == name {
        ""
    } else if let Some(rest) = spec.strip_prefix(name).and_then(|r| r.strip_prefix('/')) {
        rest
    } else {
        return Vec::new();
    };
    let mut entries: Vec<String> = Vec::new();
    if rest.is_empty() {
        for field in ["source", "module", "main"] {
            if let Some(entry) = manifest.get(field).and_then(|v| v.as_str()) {
                entries.push(entry.to_owned());
            }
        }
        entries.extend(export_entry(manifest.get("exports")));
        entries.extend(["src/index".to_owned(), "index".to_owned()]);
    } else {
        entries.extend([rest.to_owned(), format!("src/{rest}")]);
    }
    for entry in entries {
        let Some(path) = normal(&join(&dir, &entry)) else {
            continue;
        };
        let found = source_files(files, &path);
        if !found.is_empty() {
            return found;
        }
        if let Some(rebuilt) = from_build_dir(&dir, &entry) {
            let found = source_files(files, &rebuilt);
            if !found.is_empty() {
                return found;
            }
        }
    }
    Vec::new()
}

/// `dist/index.js` → `src/index` (its source, extension left to [`source_files`]).
fn from_build_dir(dir: &str, entry: &str) -> Option<String> {
    let entry = entry.trim_start_matches("./");
    let (top, rest) = entry.split_once('/')?;
    if !BUILD_DIRS.contains(&top) {
        return None;
    }
    let stem = rest
        .strip_suffix(".d.ts")
        .or_else(|| rest.rsplit_once('.').map(|(stem, _)| stem))
        .unwrap_or(rest);
    normal(&join(dir, &format!("src/{stem}")))
}

/// The `"."` entry of an `exports` map, if it is a path.
fn export_entry(exports: Option<&serde_json::Value>) -> Option<String> {
    let exports = exports?;
    let main = exports.get(".").unwrap_or(exports);
    if let Some(path) = main.as_str() {
        return Some(path.to_owned());
    }
    ["source", "import", "require", "default", "node"]
        .iter()
        .find_map(|key| main.get(key).and_then(|v| v.as_str()).map(str::to_owned))
}

/// The nearest `package.json` above `from`: its directory and contents.
fn package_of(files: &mut Sources, from: &str) -> Option<(String, serde_json::Value)> {
    let mut dir = parent(from);
    loop {
        let manifest = join(dir, "package.json");
        if files.is_file(&manifest) {
            let text = files.read(&manifest).ok()?;
            return Some((dir.to_owned(), serde_json::from_str(&text).ok()?));
        }
        if dir.is_empty() {
            return None;
        }
        dir = parent(dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "import { windows, Window as W } from '../src';\nimport * as calc from './calc';\nimport def from './d';\nconst { mean, sum: total } = require('../lib/mean');\nconst m2 = require('./m2');\nexport { windows } from './window';\nexport * from './other';\nexport function f(a: number): number { return a; }\nexport const g = (a: number) => a + 1;\nexport class Box extends Base {\n  get(x: number): Window { return this.inner(x); }\n}\ndescribe('w', () => {\n  it('works', () => {\n    const w = new W(2);\n    expect(windows([1], 1)).toEqual(calc.mean(mean(1)));\n    w.push(3);\n  });\n});\n";

    fn parsed() -> Parsed {
        Parsed::of("test/w.test.ts", SOURCE).unwrap()
    }

    #[test]
    fn definitions_and_test_blocks() {
        let src = parsed();
        let found: Vec<(String, DefKind, usize)> = Script
            .enclosing(&src)
            .iter()
            .map(|d| (d.qualified(), d.kind, d.start))
            .collect();
        assert_eq!(
            found,
            [
                ("f".to_owned(), DefKind::Function, 8),
                ("g".to_owned(), DefKind::Function, 9),
                ("Box".to_owned(), DefKind::Class, 10),
                ("Box.get".to_owned(), DefKind::Method, 11),
                ("w".to_owned(), DefKind::Test, 13),
                ("works".to_owned(), DefKind::Test, 14),
            ]
        );
    }

    #[test]
    fn imports_re_exports_and_requires() {
        let found: Vec<(Bound, String, Option<String>)> = Script
            .imports(&parsed())
            .into_iter()
            .map(|i| (i.bound, i.module, i.item))
            .collect();
        let name = |n: &str| Bound::Name(n.to_owned());
        let some = |s: &str| Some(s.to_owned());
        assert_eq!(
            found,
            [
                (name("windows"), "../src".into(), some("windows")),
                (name("W"), "../src".into(), some("Window")),
                (name("calc"), "./calc".into(), None),
                (name("def"), "./d".into(), some("default")),
                (name("mean"), "../lib/mean".into(), some("mean")),
                (name("total"), "../lib/mean".into(), some("sum")),
                (name("m2"), "./m2".into(), None),
                (name("windows"), "./window".into(), some("windows")),
                (Bound::Glob, "./other".into(), None),
            ]
        );
    }

    #[test]
    fn calls_in_a_test_block_and_what_a_method_returns() {
        let src = parsed();
        let defs = Script.enclosing(&src);
        let works = defs.iter().find(|d| d.name == "works").unwrap();
        let calls: Vec<String> = Script
            .calls(&src, works)
            .iter()
            .map(|c| c.written("."))
            .collect();
        assert_eq!(
            calls,
            [
                "it",
                "W",
                "expect().toEqual",
                "expect",
                "windows",
                "calc.mean",
                "mean",
                "w.push"
            ]
        );
        let bindings = Script.bindings(&src, works);
        assert_eq!(bindings[0].var, "w");
        let get = defs.iter().find(|d| d.name == "get").unwrap();
        assert_eq!(Script.returns(&src, get).as_deref(), Some("Window"));
    }

    #[test]
    fn relative_modules_index_files_and_the_own_package() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for (path, text) in [
            (
                "package.json",
                r#"{"name": "winstats", "main": "dist/index.js"}"#,
            ),
            ("src/index.ts", "export * from './window';\n"),
            ("src/window.ts", "export function windows() {}\n"),
            (
                "src/window.d.ts",
                "export declare function windows(): void;\n",
            ),
            ("src/esm.ts", "export const x = 1;\n"),
            ("test/w.test.ts", ""),
        ] {
            std::fs::create_dir_all(root.join(path).parent().unwrap()).unwrap();
            std::fs::write(root.join(path), text).unwrap();
        }
        let mut files = Sources::new(root);
        let from = Module::file("test/w.test.ts");
        let found = |files: &mut Sources, spec: &str| -> Vec<String> {
            Script
                .modules(files, &from, spec)
                .into_iter()
                .map(|m| m.file)
                .collect()
        };
        assert_eq!(found(&mut files, "../src"), ["src/index.ts"]);
        assert_eq!(found(&mut files, "../src/window"), ["src/window.ts"]);
        assert_eq!(found(&mut files, "../src/esm.js"), ["src/esm.ts"]);
        assert_eq!(found(&mut files, "winstats"), ["src/index.ts"]);
        assert_eq!(found(&mut files, "winstats/window"), ["src/window.ts"]);
        assert!(found(&mut files, "vitest").is_empty());
    }
}
