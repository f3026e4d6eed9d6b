//! Go read with tree-sitter-go: functions, methods (owned by their receiver's type) and types,
//! calls on names, selectors and call results, `x := NewT(…)` / `x := &T{…}` / `var x T`, and
//! the package: every `.go` file of the directory sees the others' names without an import.

use tree_sitter::Node;

use super::items::{Binding, Call, Def, DefKind, Import, Module, Reader, Receiver, Value};
use super::parsed::Parsed;
use super::sources::{Sources, parent};

/// The Go reader.
pub struct Go;

impl Reader for Go {
    fn defs(&self, src: &Parsed) -> Vec<Def> {
        let mut out = Vec::new();
        for node in Parsed::children(src.root()) {
            match node.kind() {
                "function_declaration" => {
                    if let Some(name) = src.field(node, "name") {
                        out.push(def(node, name, DefKind::Function, None));
                    }
                }
                "method_declaration" => {
                    let owner = node
                        .child_by_field_name("receiver")
                        .and_then(|r| receiver_type(src, r));
                    if let (Some(name), Some(owner)) = (src.field(node, "name"), owner) {
                        out.push(def(node, name, DefKind::Method, Some(owner)));
                    }
                }
                "type_declaration" => {
                    for spec in Parsed::children(node)
                        .into_iter()
                        .filter(|s| s.kind() == "type_spec")
                    {
                        if let Some(name) = src.field(spec, "name") {
                            out.push(def(node, name, DefKind::Class, None));
                        }
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// Imports of other packages are not followed (same-package calls only).
    fn imports(&self, _src: &Parsed) -> Vec<Import> {
        Vec::new()
    }

    fn calls(&self, src: &Parsed, def: &Def) -> Vec<Call> {
        src.nodes_in(&def.bytes, &["call_expression"])
            .into_iter()
            .filter_map(|node| call(src, node))
            .collect()
    }

    fn bindings(&self, src: &Parsed, def: &Def) -> Vec<Binding> {
        let mut out = Vec::new();
        for node in src.nodes_in(&def.bytes, &["short_var_declaration", "var_spec"]) {
            match node.kind() {
                "short_var_declaration" => short_vars(src, node, &mut out),
                _ => {
                    if let (Some(name), Some(ty)) = (
                        src.field(node, "name"),
                        node.child_by_field_name("type")
                            .and_then(|t| type_name(src, t)),
                    ) {
                        out.push(Binding {
                            var: name,
                            value: Value::Type(ty),
                        });
                    }
                }
            }
        }
        out
    }

    fn returns(&self, src: &Parsed, def: &Def) -> Option<String> {
        let function = src
            .nodes_in(&def.bytes, &["function_declaration", "method_declaration"])
            .into_iter()
            .next()?;
        let result = function.child_by_field_name("result")?;
        if result.kind() == "parameter_list" {
            let first = Parsed::children(result).into_iter().next()?;
            return type_name(src, first.child_by_field_name("type")?);
        }
        type_name(src, result)
    }

    fn modules(&self, _files: &mut Sources, _from: &Module, _spec: &str) -> Vec<Module> {
        Vec::new()
    }

    fn siblings(&self, files: &mut Sources, file: &str) -> Vec<String> {
        files
            .list(parent(file))
            .into_iter()
            .filter(|path| path.ends_with(".go") && path != file)
            .collect()
    }
}

fn def(node: Node<'_>, name: String, kind: DefKind, owner: Option<String>) -> Def {
    let mut first = node;
    while let Some(previous) = first.prev_named_sibling() {
        if previous.kind() != "comment"
            || previous.end_position().row + 1 < first.start_position().row
        {
            break;
        }
        first = previous;
    }
    Def {
        name,
        kind,
        owner,
        scope: Vec::new(),
        start: Parsed::line(first),
        end: Parsed::lines(node).1,
        bytes: first.start_byte()..node.end_byte(),
        bases: Vec::new(),
        doc: super::rust::leading_comments(first, node),
    }
}

/// `T` of a receiver `(w *T)`, `(w T)`, `(w *T[K])`.
fn receiver_type(src: &Parsed, receiver: Node<'_>) -> Option<String> {
    let param = Parsed::children(receiver).into_iter().next()?;
    type_name(src, param.child_by_field_name("type")?)
}

fn type_name(src: &Parsed, ty: Node<'_>) -> Option<String> {
    match ty.kind() {
        "type_identifier" => Some(src.text(ty).to_owned()),
        "pointer_type" | "generic_type" => Parsed::children(ty)
            .into_iter()
            .find_map(|inner| type_name(src, inner)),
        "qualified_type" => src.field(ty, "name"),
        _ => None,
    }
}

fn call(src: &Parsed, node: Node<'_>) -> Option<Call> {
    let function = node.child_by_field_name("function")?;
    let line = Parsed::line(node);
    match function.kind() {
        "identifier" => Some(Call::bare(src.text(function), line)),
        "selector_expression" => {
            let operand = function.child_by_field_name("operand")?;
            let name = src.field(function, "field")?;
            let receiver = match operand.kind() {
                "identifier" => Receiver::Path(src.text(operand).to_owned()),
                "call_expression" => Receiver::Result(Box::new(call(src, operand)?)),
                _ => return None,
            };
            Some(Call::on(receiver, name, line))
        }
        _ => None,
    }
}

/// `a, b := f(), &T{}`: each name with the value at its position.
fn short_vars(src: &Parsed, node: Node<'_>, out: &mut Vec<Binding>) {
    let (Some(left), Some(right)) = (
        node.child_by_field_name("left"),
        node.child_by_field_name("right"),
    ) else {
        return;
    };
    let values = Parsed::children(right);
    for (name, value) in Parsed::children(left).into_iter().zip(values) {
        let value = match value.kind() {
            "call_expression" => call(src, value).map(Value::Call),
            "composite_literal" => value
                .child_by_field_name("type")
                .and_then(|t| type_name(src, t))
                .map(Value::Type),
            "unary_expression" => value
                .child_by_field_name("operand")
                .filter(|o| o.kind() == "composite_literal")
                .and_then(|o| o.child_by_field_name("type"))
                .and_then(|t| type_name(src, t))
                .map(Value::Type),
            _ => None,
        };
        if let Some(value) = value {
            out.push(Binding {
                var: src.text(name).to_owned(),
                value,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "package calc\n\nimport \"testing\"\n\n// Window holds values.\ntype Window struct{ size int }\n\nfunc NewWindow(n int) *Window { return &Window{size: n} }\n\nfunc (w *Window) Push(x int) { helper(x) }\n\nfunc TestMean(t *testing.T) {\n\tw := NewWindow(2)\n\tw.Push(1)\n\tv := &Window{}\n\tif got := Mean([]float64{1, 2}); got != 1.5 {\n\t\tt.Errorf(\"got %v\", got)\n\t}\n}\n";

    #[test]
    fn functions_methods_types_calls_and_bindings() {
        let src = Parsed::of("calc_test.go", SOURCE).unwrap();
        let defs = Go.defs(&src);
        let found: Vec<(String, DefKind, usize)> = defs
            .iter()
            .map(|d| (d.qualified(), d.kind, d.start))
            .collect();
        assert_eq!(
            found,
            [
                ("Window".into(), DefKind::Class, 5),
                ("NewWindow".into(), DefKind::Function, 8),
                ("Window.Push".into(), DefKind::Method, 10),
                ("TestMean".into(), DefKind::Function, 12),
            ]
        );
        let test = &defs[3];
        let calls: Vec<String> = Go
            .calls(&src, test)
            .iter()
            .map(|c| c.written("."))
            .collect();
        assert_eq!(calls, ["NewWindow", "w.Push", "Mean", "t.Errorf"]);
        let bindings = Go.bindings(&src, test);
        let vars: Vec<&str> = bindings.iter().map(|b| b.var.as_str()).collect();
        assert_eq!(vars, ["w", "v", "got"]);
        assert_eq!(bindings[1].value, Value::Type("Window".into()));
        assert_eq!(Go.returns(&src, &defs[1]).as_deref(), Some("Window"));
    }
}
