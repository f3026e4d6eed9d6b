//! Python read with tree-sitter-python: functions, classes and their methods (decorators
//! included, `@pytest.fixture` functions marked), `import` and `from … import` (relative ones,
//! aliases, `*`), calls on names, attributes and call results, `x = Cls(…)` and annotated
//! parameters, and modules found as `a/b.py` or `a/b/__init__.py` under the repository root,
//! `src/`, `lib/` or a directory above the importing file (where pytest's rootdir puts them).

use tree_sitter::Node;

use super::items::{Binding, Bound, Call, Def, DefKind, Import, Module, Reader, Receiver, Value};
use super::parsed::Parsed;
use super::sources::{Sources, join, parent};

/// The Python reader.
pub struct Python;

impl Reader for Python {
    fn defs(&self, src: &Parsed) -> Vec<Def> {
        let mut out = Vec::new();
        for node in Parsed::children(src.root()) {
            definition(src, node, None, &mut out);
        }
        out
    }

    fn imports(&self, src: &Parsed) -> Vec<Import> {
        Parsed::descendants(src.root())
            .into_iter()
            .flat_map(|node| match node.kind() {
                "import_statement" => plain_import(src, node),
                "import_from_statement" => from_import(src, node),
                _ => Vec::new(),
            })
            .collect()
    }

    fn calls(&self, src: &Parsed, def: &Def) -> Vec<Call> {
        src.nodes_in(&def.bytes, &["call"])
            .into_iter()
            .filter_map(|node| call(src, node))
            .collect()
    }

    fn bindings(&self, src: &Parsed, def: &Def) -> Vec<Binding> {
        let mut out: Vec<Binding> = src
            .nodes_in(&def.bytes, &["assignment"])
            .into_iter()
            .filter_map(|node| {
                let left = node.child_by_field_name("left")?;
                let right = node.child_by_field_name("right")?;
                (left.kind() == "identifier" && right.kind() == "call").then_some(())?;
                Some(Binding {
                    var: src.text(left).to_owned(),
                    value: Value::Call(call(src, right)?),
                })
            })
            .collect();
        out.extend(annotated_parameters(src, def));
        out
    }

    fn returns(&self, src: &Parsed, def: &Def) -> Option<String> {
        let function = function_node(src, def)?;
        if let Some(annotation) = function.child_by_field_name("return_type") {
            return Some(last_segment(src.text(annotation)));
        }
        src.nodes_in(&def.bytes, &["return_statement", "yield"])
            .into_iter()
            .flat_map(Parsed::children)
            .find(|child| child.kind() == "call")
            .and_then(|node| call(src, node))
            .map(|call| call.name)
    }

    fn parameters(&self, src: &Parsed, def: &Def) -> Vec<String> {
        let Some(params) =
            function_node(src, def).and_then(|f| f.child_by_field_name("parameters"))
        else {
            return Vec::new();
        };
        Parsed::children(params)
            .into_iter()
            .filter_map(|param| parameter_name(src, param))
            .filter(|name| name != "self" && name != "cls")
            .collect()
    }

    fn modules(&self, files: &mut Sources, from: &Module, spec: &str) -> Vec<Module> {
        candidates(from, spec)
            .into_iter()
            .filter(|path| files.is_file(path))
            .map(|path| Module::file(&path))
            .collect()
    }

    fn fixture_files(&self, files: &mut Sources, file: &str) -> Vec<String> {
        let mut dir = parent(file);
        let mut out = Vec::new();
        loop {
            let conftest = join(dir, "conftest.py");
            if conftest != file && files.is_file(&conftest) {
                out.push(conftest);
            }
            if dir.is_empty() {
                return out;
            }
            dir = parent(dir);
        }
    }

    fn submodule(&self, module: &str, item: &str) -> Option<String> {
        Some(if module.ends_with('.') {
            format!("{module}{item}")
        } else {
            format!("{module}.{item}")
        })
    }

    fn constructor(&self) -> Option<&'static str> {
        Some("__init__")
    }
}

/// The definition `node` (and a class's methods), if it is one.
fn definition(src: &Parsed, node: Node<'_>, owner: Option<&str>, out: &mut Vec<Def>) {
    let (outer, inner, fixture) = match node.kind() {
        "decorated_definition" => {
            let Some(inner) = node.child_by_field_name("definition") else {
                return;
            };
            let fixture = Parsed::children(node)
                .into_iter()
                .any(|d| d.kind() == "decorator" && src.text(d).contains("fixture"));
            (node, inner, fixture)
        }
        "function_definition" | "class_definition" => (node, node, false),
        _ => return,
    };
    let Some(name) = src.field(inner, "name") else {
        return;
    };
    let (start, end) = Parsed::lines(outer);
    let kind = match (inner.kind(), owner, fixture) {
        ("class_definition", _, _) => DefKind::Class,
        (_, _, true) => DefKind::Fixture,
        (_, Some(_), false) => DefKind::Method,
        (_, None, false) => DefKind::Function,
    };
    out.push(Def {
        name: name.clone(),
        kind,
        owner: owner.map(str::to_owned),
        scope: Vec::new(),
        start,
        end,
        bytes: outer.byte_range(),
        bases: bases(src, inner),
        doc: docstring(inner),
    });
    if kind == DefKind::Class
        && owner.is_none()
        && let Some(body) = inner.child_by_field_name("body")
    {
        for member in Parsed::children(body) {
            definition(src, member, Some(&name), out);
        }
    }
}

/// The lines of the docstring that opens a function's or class's body.
fn docstring(definition: Node<'_>) -> Option<(usize, usize)> {
    let body = definition.child_by_field_name("body")?;
    let first = Parsed::children(body).into_iter().next()?;
    let only_a_string = first.kind() == "expression_statement"
        && Parsed::children(first)
            .first()
            .is_some_and(|s| s.kind() == "string");
    only_a_string.then(|| Parsed::lines(first))
}

fn bases(src: &Parsed, class: Node<'_>) -> Vec<String> {
    class
        .child_by_field_name("superclasses")
        .map(Parsed::children)
        .unwrap_or_default()
        .into_iter()
        .filter(|n| matches!(n.kind(), "identifier" | "attribute"))
        .map(|n| last_segment(src.text(n)))
        .collect()
}

/// The `function_definition` node of a definition (inside its decorators).
fn function_node<'a>(src: &'a Parsed, def: &Def) -> Option<Node<'a>> {
    src.nodes_in(&def.bytes, &["function_definition"])
        .into_iter()
        .next()
}

/// `import a.b`, `import a.b as c`.
fn plain_import(src: &Parsed, node: Node<'_>) -> Vec<Import> {
    let mut cursor = node.walk();
    node.children_by_field_name("name", &mut cursor)
        .filter_map(|name| {
            let (module, bound) = match name.kind() {
                "aliased_import" => (src.field(name, "name")?, src.field(name, "alias")?),
                _ => (src.text(name).to_owned(), src.text(name).to_owned()),
            };
            Some(Import {
                scope: Vec::new(),
                bound: Bound::Name(bound),
                module,
                item: None,
            })
        })
        .collect()
}

/// `from m import a, b as c`, `from .m import *`.
fn from_import(src: &Parsed, node: Node<'_>) -> Vec<Import> {
    let Some(module) = src.field(node, "module_name") else {
        return Vec::new();
    };
    let import = |bound, item| Import {
        scope: Vec::new(),
        bound,
        module: module.clone(),
        item,
    };
    if Parsed::children(node)
        .iter()
        .any(|c| c.kind() == "wildcard_import")
    {
        return vec![import(Bound::Glob, None)];
    }
    let mut cursor = node.walk();
    node.children_by_field_name("name", &mut cursor)
        .filter_map(|name| {
            let (item, bound) = match name.kind() {
                "aliased_import" => (src.field(name, "name")?, src.field(name, "alias")?),
                _ => (src.text(name).to_owned(), src.text(name).to_owned()),
            };
            Some(import(Bound::Name(bound), Some(item)))
        })
        .collect()
}

/// A `call` node as a [`Call`]: on a name, a dotted path, or another call's result.
fn call(src: &Parsed, node: Node<'_>) -> Option<Call> {
    let function = node.child_by_field_name("function")?;
    let line = Parsed::line(node);
    match function.kind() {
        "identifier" => Some(Call::bare(src.text(function), line)),
        "attribute" => {
            let object = function.child_by_field_name("object")?;
            let name = src.field(function, "attribute")?;
            let receiver = match object.kind() {
                "identifier" => Receiver::Path(src.text(object).to_owned()),
                "attribute" if is_dotted(object) => Receiver::Path(src.text(object).to_owned()),
                "call" => Receiver::Result(Box::new(call(src, object)?)),
                _ => return None,
            };
            Some(Call::on(receiver, name, line))
        }
        _ => None,
    }
}

/// `a.b.c`: names and dots only.
fn is_dotted(node: Node<'_>) -> bool {
    match node.kind() {
        "identifier" => true,
        "attribute" => node.child_by_field_name("object").is_some_and(is_dotted),
        _ => false,
    }
}

fn parameter_name(src: &Parsed, param: Node<'_>) -> Option<String> {
    match param.kind() {
        "identifier" => Some(src.text(param).to_owned()),
        "typed_parameter" => Parsed::children(param)
            .into_iter()
            .find(|c| c.kind() == "identifier")
            .map(|c| src.text(c).to_owned()),
        "default_parameter" | "typed_default_parameter" => src.field(param, "name"),
        _ => None,
    }
}

/// `win: Window` parameters: `win` holds a `Window`.
fn annotated_parameters(src: &Parsed, def: &Def) -> Vec<Binding> {
    src.nodes_in(&def.bytes, &["typed_parameter", "typed_default_parameter"])
        .into_iter()
        .filter_map(|param| {
            let var = parameter_name(src, param)?;
            let annotation = param.child_by_field_name("type")?;
            Some(Binding {
                var,
                value: Value::Type(last_segment(src.text(annotation))),
            })
        })
        .collect()
}

/// `Window` of `winstats.Window` (and of `"Window"`, a forward reference).
fn last_segment(text: &str) -> String {
    text.trim_matches(|c| c == '"' || c == '\'')
        .rsplit('.')
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// Where `spec` may be, as repository paths, most likely first.
fn candidates(from: &Module, spec: &str) -> Vec<String> {
    let dots = spec.chars().take_while(|c| *c == '.').count();
    let rest = spec[dots..].replace('.', "/");
    let module_paths = |base: &str| {
        if rest.is_empty() {
            vec![join(base, "__init__.py")]
        } else {
            let stem = join(base, &rest);
            vec![format!("{stem}.py"), format!("{stem}/__init__.py")]
        }
    };
    if dots > 0 {
        let mut base = parent(&from.file);
        for _ in 1..dots {
            if base.is_empty() {
                return Vec::new();
            }
            base = parent(base);
        }
        return module_paths(base);
    }
    let mut roots = vec!["", "src", "lib"];
    let mut dir = parent(&from.file);
    while !dir.is_empty() {
        roots.push(dir);
        dir = parent(dir);
    }
    let mut out: Vec<String> = Vec::new();
    for root in roots {
        for path in module_paths(root) {
            if !out.contains(&path) {
                out.push(path);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "import calc\nimport pkg.sub as ps\nfrom winstats import windows, Window as W\nfrom .window import *\nimport pytest\n\n\n@pytest.fixture\ndef win():\n    return W(3)\n\n\nclass Box(Base):\n    def get(self, x: int = 1) -> int:\n        return self.inner(x)\n\n\ndef test_x(win, other: W):\n    w = W(2)\n    assert windows([1], 1) == calc.mean(ps.f(1))\n    w.push(3)\n    W(1).pop()\n";

    fn parsed() -> Parsed {
        Parsed::of("tests/test_x.py", SOURCE).unwrap()
    }

    #[test]
    fn definitions_with_their_lines_kinds_and_owners() {
        let defs = Python.defs(&parsed());
        let found: Vec<(String, DefKind, usize, usize)> = defs
            .iter()
            .map(|d| (d.qualified(), d.kind, d.start, d.end))
            .collect();
        assert_eq!(
            found,
            [
                ("win".to_owned(), DefKind::Fixture, 8, 10),
                ("Box".to_owned(), DefKind::Class, 13, 15),
                ("Box.get".to_owned(), DefKind::Method, 14, 15),
                ("test_x".to_owned(), DefKind::Function, 18, 22),
            ]
        );
        assert_eq!(defs[1].bases, ["Base"]);
    }

    #[test]
    fn imports_bind_names_modules_and_globs() {
        let imports = Python.imports(&parsed());
        let found: Vec<(Bound, &str, Option<&str>)> = imports
            .iter()
            .map(|i| (i.bound.clone(), i.module.as_str(), i.item.as_deref()))
            .collect();
        let name = |n: &str| Bound::Name(n.to_owned());
        assert_eq!(
            found,
            [
                (name("calc"), "calc", None),
                (name("ps"), "pkg.sub", None),
                (name("windows"), "winstats", Some("windows")),
                (name("W"), "winstats", Some("Window")),
                (Bound::Glob, ".window", None),
                (name("pytest"), "pytest", None),
            ]
        );
    }

    #[test]
    fn calls_bindings_parameters_and_returns() {
        let src = parsed();
        let defs = Python.defs(&src);
        let test = defs.iter().find(|d| d.name == "test_x").unwrap();
        let calls: Vec<String> = Python
            .calls(&src, test)
            .iter()
            .map(|c| c.written("."))
            .collect();
        assert_eq!(
            calls,
            [
                "W",
                "windows",
                "calc.mean",
                "ps.f",
                "w.push",
                "W().pop",
                "W"
            ]
        );
        let bindings = Python.bindings(&src, test);
        assert_eq!(bindings[0].var, "w");
        assert_eq!(bindings[1].value, Value::Type("W".into()));
        assert_eq!(Python.parameters(&src, test), ["win", "other"]);
        let fixture = defs.iter().find(|d| d.name == "win").unwrap();
        assert_eq!(Python.returns(&src, fixture).as_deref(), Some("W"));
        let get = defs.iter().find(|d| d.name == "get").unwrap();
        assert_eq!(Python.returns(&src, get).as_deref(), Some("int"));
    }

    #[test]
    fn modules_are_looked_for_where_pytest_finds_them() {
        let from = Module::file("tests/unit/test_x.py");
        let found = candidates(&from, "winstats.window");
        assert_eq!(
            found[..4],
            [
                "winstats/window.py",
                "winstats/window/__init__.py",
                "src/winstats/window.py",
                "src/winstats/window/__init__.py"
            ]
        );
        assert!(found.contains(&"tests/unit/winstats/window.py".to_owned()));
        let pkg = Module::file("winstats/__init__.py");
        assert_eq!(
            candidates(&pkg, ".window"),
            ["winstats/window.py", "winstats/window/__init__.py"]
        );
        assert_eq!(candidates(&pkg, "."), ["winstats/__init__.py"]);
        assert_eq!(
            candidates(&Module::file("a/b/c.py"), "..x"),
            ["a/x.py", "a/x/__init__.py"]
        );
        assert!(candidates(&Module::file("c.py"), "..x").is_empty());
    }
}
