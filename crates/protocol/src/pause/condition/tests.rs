//! The condition language: parsing, columns of errors, types, evaluation; properties over
//! generated conditions (printing and parsing agree; no text panics the parser).

use proptest::prelude::*;

use super::*;
use crate::pause::{Field, Location, Values};

fn tool_call(tool: &str, path: &str) -> Values {
    Values::default()
        .text_of(Field::Tool, tool)
        .text_of(Field::Path, path)
        .number_of(Field::Iteration, 1)
        .number_of(Field::Call, 2)
}

fn holds_at(text: &str, values: &Values) -> bool {
    let expr = parse(text).unwrap();
    check(&expr, Location::OnToolCall).unwrap();
    holds(&expr, values)
}

#[test]
fn the_issue_example_holds_for_an_edit_under_the_glob_only() {
    let condition = r#"tool == "edit_file" && path ~ "src/auth/**""#;
    assert!(holds_at(
        condition,
        &tool_call("edit_file", "src/auth/login/token.rs")
    ));
    assert!(!holds_at(
        condition,
        &tool_call("edit_file", "src/billing.rs")
    ));
    assert!(!holds_at(
        condition,
        &tool_call("read_file", "src/auth/a.rs")
    ));
}

#[test]
fn a_single_star_stays_within_a_segment() {
    assert!(holds_at(
        r#"path ~ "src/*.rs""#,
        &tool_call("x", "src/a.rs")
    ));
    assert!(!holds_at(
        r#"path ~ "src/*.rs""#,
        &tool_call("x", "src/a/b.rs")
    ));
}

#[test]
fn precedence_and_parentheses_and_negation() {
    let values = tool_call("run_command", "");
    assert!(holds_at(
        r#"tool == "x" && call == 1 || iteration >= 1"#,
        &values
    ));
    assert!(!holds_at(
        r#"tool == "x" && (call == 1 || iteration >= 1)"#,
        &values
    ));
    assert!(holds_at(
        r#"!(tool == "x") && call > 1 && call <= 2 && call != 3"#,
        &values
    ));
    assert!(holds_at(r#"tool == "say \"hi\"" || call < 3"#, &values));
}

#[test]
fn a_field_the_arrival_lacks_is_false() {
    let values = Values::default().number_of(Field::Iteration, 0);
    assert!(!holds_at(r#"tool != "x""#, &values));
}

#[test]
fn errors_name_their_column() {
    let cases = [
        (r#"tool = "x""#, 6, "unexpected `=`"),
        (r#"tool == "x" &&"#, 15, "found the end"),
        (r#"tool == "x"#, 9, "not closed"),
        (r#"(tool == "x""#, 13, "expected `)`"),
        (r#"tool == "x" call == 1"#, 13, "expected `&&`"),
        (r#"tool == == "x""#, 9, "expected a value"),
        ("tool \"x\"", 6, "expected an operator"),
        ("tool == 99999999999999999999999", 9, "too large"),
        (r#"tool == "a\b""#, 11, "escapes only"),
    ];
    for (text, column, says) in cases {
        let error = parse(text).unwrap_err();
        assert_eq!(error.column, column, "{text}: {error}");
        assert!(error.to_string().contains(says), "{text}: {error}");
    }
}

#[test]
fn check_names_unknown_fields_and_type_mismatches_with_their_column() {
    let at = |text: &str, location| check(&parse(text).unwrap(), location).unwrap_err();
    let unknown = at(r#"call == 1 && gate == "tests""#, Location::OnToolCall);
    assert_eq!(unknown.column, 14);
    assert_eq!(
        unknown.message,
        "`gate` is not a field of `on_tool_call` (its fields: iteration, call, tool, path)"
    );
    let text_vs_number = at("tool == 3", Location::OnToolCall);
    assert_eq!(text_vs_number.column, 1);
    assert!(
        text_vs_number.message.contains("`tool` is text"),
        "{text_vs_number}"
    );
    let glob_on_number = at(r#"iteration ~ "1*""#, Location::AfterGates);
    assert!(
        glob_on_number.message.contains("is a number"),
        "{glob_on_number}"
    );
    let less_on_text = at(r#"gate < "b""#, Location::AfterGates);
    assert!(less_on_text.message.contains("is text"), "{less_on_text}");
    let bad_glob = at(r#"path ~ "src/[a""#, Location::BeforeCommit);
    assert!(bad_glob.message.contains("is not a glob"), "{bad_glob}");
    assert!(
        check(
            &parse(r#"gate == "tests" && result == "failed""#).unwrap(),
            Location::AfterGates
        )
        .is_ok()
    );
}

/// Prints a condition back as text (fully parenthesised).
fn print(expr: &Expr) -> String {
    match expr {
        Expr::Or(l, r) => format!("({} || {})", print(l), print(r)),
        Expr::And(l, r) => format!("({} && {})", print(l), print(r)),
        Expr::Not(inner) => format!("!{}", print(inner)),
        Expr::Compare(c) => {
            let literal = match &c.literal {
                Literal::Text(t) => format!("\"{}\"", t.replace('\\', "\\\\").replace('"', "\\\"")),
                Literal::Number(n) => n.to_string(),
            };
            format!("{} {} {literal}", c.field, c.op.symbol())
        }
    }
}

/// Drops the columns (they depend on the spelling).
fn shape(expr: &Expr) -> Expr {
    match expr {
        Expr::Or(l, r) => Expr::Or(Box::new(shape(l)), Box::new(shape(r))),
        Expr::And(l, r) => Expr::And(Box::new(shape(l)), Box::new(shape(r))),
        Expr::Not(inner) => Expr::Not(Box::new(shape(inner))),
        Expr::Compare(c) => Expr::Compare(Compare {
            column: 0,
            ..c.clone()
        }),
    }
}

fn arb_expr() -> impl Strategy<Value = Expr> {
    let op = prop_oneof![
        Just(Op::Eq),
        Just(Op::Ne),
        Just(Op::Glob),
        Just(Op::Lt),
        Just(Op::Le),
        Just(Op::Gt),
        Just(Op::Ge)
    ];
    let literal = prop_oneof![
        "[ -~]{0,12}".prop_map(Literal::Text),
        any::<u64>().prop_map(Literal::Number)
    ];
    let leaf = ("[a-z_]{1,9}", op, literal).prop_map(|(field, op, literal)| {
        Expr::Compare(Compare {
            field,
            op,
            literal,
            column: 0,
        })
    });
    leaf.prop_recursive(4, 24, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(l, r)| Expr::Or(Box::new(l), Box::new(r))),
            (inner.clone(), inner.clone()).prop_map(|(l, r)| Expr::And(Box::new(l), Box::new(r))),
            inner.prop_map(|e| Expr::Not(Box::new(e))),
        ]
    })
}

proptest! {
    #[test]
    fn printing_then_parsing_gives_the_same_condition(expr in arb_expr()) {
        let parsed = parse(&print(&expr)).unwrap();
        prop_assert_eq!(shape(&parsed), shape(&expr));
    }

    #[test]
    fn any_text_parses_or_names_a_column_within_it(text in "[ -~]{0,40}") {
        if let Err(error) = parse(&text) {
            prop_assert!(error.column >= 1 && error.column <= text.chars().count() + 1, "{error}");
        }
    }

    #[test]
    fn a_negation_never_agrees_with_its_condition(expr in arb_expr(), tool in "[a-z_]{1,6}", call in 0u64..5) {
        let values = tool_call(&tool, "src/a.rs").number_of(Field::Call, call);
        prop_assert_ne!(holds(&expr, &values), holds(&Expr::Not(Box::new(expr.clone())), &values));
    }
}
