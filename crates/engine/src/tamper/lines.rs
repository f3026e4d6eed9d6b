//! What one source line is, for the tamper guard: a comment, an assertion (and whether it compares
//! or is trivially true), a test declaration, a skip marker. Heuristics over text in Rust, Python,
//! Go and JavaScript/TypeScript (a file of any other language, or none, has no tests to read); no
//! parsing of whole files and no I/O.

pub(super) use meta_agent_protocol::lang::Lang;

/// A comment line (Rust attributes `#[...]` are code, not comments).
pub(super) fn is_comment(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("//")
        || t.starts_with("/*")
        || t == "*"
        || t.starts_with("* ")
        || t.starts_with("*/")
        || t.starts_with("<!--")
        || (t.starts_with('#') && !t.starts_with("#[") && !t.starts_with("#!["))
}

/// An identifier in a line, with what comes just before and after it.
struct Ident<'a> {
    name: &'a str,
    before: Option<char>,
    after: Option<char>,
    /// The identifier before a `.` that precedes this one (`t` in `t.Errorf`).
    receiver: Option<&'a str>,
}

fn idents(line: &str) -> Vec<Ident<'_>> {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    let mut out: Vec<Ident<'_>> = Vec::new();
    let mut start = None;
    for (i, c) in line.char_indices().chain([(line.len(), ' ')]) {
        match (start, is_ident(c) && i < line.len()) {
            (None, true) => start = Some(i),
            (Some(s), false) => {
                let before = line[..s].chars().next_back();
                let after = line[i..].trim_start().chars().next();
                let receiver = (before == Some('.'))
                    .then(|| {
                        out.last()
                            .filter(|prev| prev.after == Some('.'))
                            .map(|p| p.name)
                    })
                    .flatten();
                out.push(Ident {
                    name: &line[s..i],
                    before,
                    after,
                    receiver,
                });
                start = None;
            }
            _ => {}
        }
    }
    out
}

const GO_FAILURES: [&str; 6] = ["Error", "Errorf", "Fatal", "Fatalf", "Fail", "FailNow"];

fn ident_is_assertion(ident: &Ident<'_>, line_start: bool) -> bool {
    let name = ident.name;
    let call = ident.after == Some('(');
    let member = ident.before == Some('.');
    (name.contains("assert") && ident.after == Some('!'))
        || (name.starts_with("assert") && call)
        || (name == "assert" && (ident.after == Some('.') || line_start))
        || (name == "expect" && call && !member)
        || (name == "should" && member)
        || (matches!(name, "require" | "assert") && ident.after == Some('.'))
        || (GO_FAILURES.contains(&name)
            && member
            && matches!(ident.receiver, Some("t" | "b" | "tb")))
        || (name == "raises" && ident.receiver == Some("pytest"))
}

/// A line that asserts something (comments never do).
pub(super) fn is_assertion(line: &str) -> bool {
    if is_comment(line) {
        return false;
    }
    let trimmed = line.trim_start();
    let all = idents(trimmed);
    all.iter().enumerate().any(|(i, ident)| {
        let defined = i > 0 && matches!(all[i - 1].name, "fn" | "def" | "func" | "function");
        !defined && ident_is_assertion(ident, i == 0 && trimmed.starts_with(ident.name))
    })
}

const COMPARING_NAMES: [&str; 20] = [
    "assert_eq",
    "assert_ne",
    "prop_assert_eq",
    "prop_assert_ne",
    "assertEqual",
    "assertEquals",
    "assertNotEqual",
    "assertIn",
    "assertIs",
    "assertAlmostEqual",
    "toBe",
    "toEqual",
    "toStrictEqual",
    "toContain",
    "toMatch",
    "toThrow",
    "equal",
    "strictEqual",
    "deepEqual",
    "Equal",
];

/// An assertion that compares two things (not just "is truthy").
pub(super) fn has_comparison(line: &str) -> bool {
    let code = line.trim();
    [
        "==", "!=", ">=", "<=", " < ", " > ", " in ", " is ", "matches!",
    ]
    .iter()
    .any(|op| code.contains(op))
        || idents(code)
            .iter()
            .any(|i| COMPARING_NAMES.contains(&i.name))
}

/// The top-level, comma-separated arguments of the call whose `(` is at `open`.
fn call_args(code: &str, open: usize) -> Vec<&str> {
    let mut depth = 0usize;
    let mut args = Vec::new();
    let mut start = open + 1;
    for (i, c) in code[open..].char_indices().map(|(i, c)| (i + open, c)) {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    args.push(code[start..i].trim());
                    return args;
                }
            }
            ',' if depth == 1 => {
                args.push(code[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    args
}

fn args_after(code: &str, name: &str) -> Option<Vec<String>> {
    let at = code.find(name)?;
    let open = at + code[at..].find('(')?;
    Some(
        call_args(code, open)
            .into_iter()
            .map(str::to_string)
            .collect(),
    )
}

const TRUE_LITERALS: [&str; 5] = ["true", "True", "1", "!false", "not False"];
const SINGLE_ARG_ASSERTS: [&str; 6] = [
    "assert!(",
    "debug_assert!(",
    "assertTrue(",
    "assert(",
    "assert.ok(",
    "assert.True(",
];
const EQUAL_ARG_ASSERTS: [&str; 8] = [
    "assert_eq!(",
    "assertEqual(",
    "assertEquals(",
    "assert.equal(",
    "assert.strictEqual(",
    "assert.deepEqual(",
    "assert.deepStrictEqual(",
    "prop_assert_eq!(",
];

/// An assertion that cannot fail: `assert True`, `assert!(true)`, `assert_eq!(x, x)`,
/// `expect(true).toBe(true)`, `self.assertTrue(True)`.
pub(super) fn is_trivial_assertion(line: &str) -> bool {
    if !is_assertion(line) {
        return false;
    }
    let code = line.trim().trim_end_matches(';');
    python_trivial(code)
        || SINGLE_ARG_ASSERTS.iter().any(|name| {
            args_after(code, name).is_some_and(|args| args.first().is_some_and(|a| always_true(a)))
        })
        || EQUAL_ARG_ASSERTS.iter().any(|name| {
            args_after(code, name).is_some_and(|args| args.len() >= 2 && args[0] == args[1])
        })
        || expect_trivial(code)
}

fn python_trivial(code: &str) -> bool {
    let Some(rest) = code.strip_prefix("assert ") else {
        return false;
    };
    let expr = rest.split('#').next().unwrap_or("");
    let expr = top_level_prefix(expr);
    let expr = expr
        .strip_prefix('(')
        .and_then(|e| e.strip_suffix(')'))
        .unwrap_or(expr);
    always_true(expr)
}

/// `expr` up to its first comma outside brackets (what precedes an assert's message), trimmed.
fn top_level_prefix(expr: &str) -> &str {
    let mut depth = 0usize;
    for (i, c) in expr.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => return expr[..i].trim(),
            _ => {}
        }
    }
    expr.trim()
}

/// A literal truth or a comparison of a thing with itself (`x == x`).
fn always_true(expr: &str) -> bool {
    let expr = expr.trim();
    if TRUE_LITERALS.contains(&expr) {
        return true;
    }
    let operator = if expr.contains("===") { "===" } else { "==" };
    let mut sides = expr.split(operator);
    match (sides.next(), sides.next(), sides.next()) {
        (Some(left), Some(right), None) => !left.trim().is_empty() && left.trim() == right.trim(),
        _ => false,
    }
}

fn expect_trivial(code: &str) -> bool {
    let Some(subject) = args_after(code, "expect(").and_then(|a| a.into_iter().next()) else {
        return false;
    };
    if code.contains(".toBeTruthy()") || code.contains(".toBeDefined()") {
        return TRUE_LITERALS.contains(&subject.as_str());
    }
    ["toBe(", "toEqual(", "toStrictEqual("]
        .iter()
        .any(|m| args_after(code, &format!(".{m}")).is_some_and(|a| a.first() == Some(&subject)))
}

/// A condition that never holds (`if False:`, `if (false) {`, `if false {`, `if 0:`), or a bare
/// `return`: what follows it in a test never runs.
pub(super) fn is_dead_code_start(line: &str) -> bool {
    let t = line.trim();
    if matches!(t, "return" | "return;") {
        return true;
    }
    let Some(condition) = t.strip_prefix("if ").or_else(|| t.strip_prefix("if(")) else {
        return false;
    };
    let condition = condition.trim_end_matches(['{', ':', ' ']).trim();
    let condition = condition
        .trim_start_matches('(')
        .trim_end_matches(')')
        .trim();
    matches!(condition, "False" | "false" | "0")
}

/// A line that turns a failing assertion into a pass: `except AssertionError`, `#[should_panic]`.
pub(super) fn swallows_failures(line: &str) -> bool {
    let t = line.trim();
    t.starts_with("except AssertionError") || t.starts_with("#[should_panic")
}

/// What a line declares about tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum TestDecl {
    /// A Rust test attribute (`#[test]`, `#[tokio::test]`, …); the name is on a following `fn`.
    RustAttribute,
    /// A named test (Python `def test_*`, Go `func Test*`, JS `it("…")`/`test("…")`).
    Named(String),
}

/// Whether the line declares a test, in the file's language.
pub(super) fn test_declaration(line: &str, lang: Option<Lang>) -> Option<TestDecl> {
    if is_comment(line) {
        return None;
    }
    let t = line.trim_start();
    match lang {
        Some(Lang::Rust) => is_rust_test_attribute(t).then_some(TestDecl::RustAttribute),
        Some(Lang::Python) => python_test_name(t).map(TestDecl::Named),
        Some(Lang::Go) => go_test_name(t).map(TestDecl::Named),
        Some(lang) if lang.is_script() => js_test_name(t).map(TestDecl::Named),
        _ => None,
    }
}

fn is_rust_test_attribute(t: &str) -> bool {
    [
        "#[test]",
        "#[tokio::test",
        "#[rstest",
        "#[test_case",
        "#[async_std::test",
        "#[test_log::test",
    ]
    .iter()
    .any(|a| t.starts_with(a))
}

fn leading_ident(t: &str) -> &str {
    let end = t
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(t.len());
    &t[..end]
}

/// `pub async fn name(` → `name`.
pub(super) fn rust_fn_name(line: &str) -> Option<String> {
    let mut t = line.trim_start();
    for prefix in ["pub(crate) ", "pub ", "async ", "unsafe ", "const "] {
        t = t.strip_prefix(prefix).unwrap_or(t).trim_start();
    }
    let name = leading_ident(t.strip_prefix("fn ")?.trim_start());
    (!name.is_empty()).then(|| name.to_string())
}

fn python_test_name(t: &str) -> Option<String> {
    let t = t.strip_prefix("async ").unwrap_or(t).trim_start();
    let name = leading_ident(t.strip_prefix("def ")?.trim_start());
    name.starts_with("test").then(|| name.to_string())
}

fn go_test_name(t: &str) -> Option<String> {
    let mut rest = t.strip_prefix("func ")?.trim_start();
    if rest.starts_with('(') {
        rest = rest[rest.find(')')? + 1..].trim_start();
    }
    let name = leading_ident(rest);
    let is_test = ["Test", "Benchmark", "Fuzz", "Example"]
        .iter()
        .any(|p| name.starts_with(p));
    is_test.then(|| name.to_string())
}

const JS_TEST_CALLS: [&str; 10] = [
    "it(",
    "test(",
    "it.only(",
    "test.only(",
    "it.skip(",
    "test.skip(",
    "xit(",
    "xtest(",
    "it.concurrent(",
    "test.concurrent(",
];

fn js_test_name(t: &str) -> Option<String> {
    let rest = JS_TEST_CALLS
        .iter()
        .find_map(|c| t.strip_prefix(c))?
        .trim_start();
    let quote = rest
        .chars()
        .next()
        .filter(|q| matches!(q, '\'' | '"' | '`'))?;
    let body = &rest[1..];
    Some(body[..body.find(quote)?].to_string())
}

/// A marker that skips or disables a test. Generic `.skip(` counts only in test files.
pub(super) fn is_skip_marker(line: &str, lang: Option<Lang>, in_test_file: bool) -> bool {
    if is_comment(line) {
        return false;
    }
    if hides_tests(line) {
        return true;
    }
    let t = line.trim();
    match lang {
        Some(Lang::Rust) => t.starts_with("#[ignore"),
        Some(Lang::Python) => [
            "@pytest.mark.skip",
            "@pytest.mark.xfail",
            "@unittest.skip",
            "@skip",
            "pytest.skip(",
            "pytest.xfail(",
            "self.skipTest(",
            "raise unittest.SkipTest",
            "raise SkipTest",
        ]
        .iter()
        .any(|m| t.contains(m)),
        Some(Lang::Go) => idents(t)
            .iter()
            .any(|i| matches!(i.name, "Skip" | "Skipf" | "SkipNow") && i.before == Some('.')),
        Some(lang) if lang.is_script() => {
            [
                "it.skip(",
                "test.skip(",
                "describe.skip(",
                "xit(",
                "xtest(",
                "xdescribe(",
                "it.todo(",
                "test.todo(",
            ]
            .iter()
            .any(|m| t.starts_with(m))
                || (in_test_file && t.contains(".skip("))
        }
        _ => false,
    }
}

/// Configuration that hides test files from the runner (pytest `collect_ignore`, Jest
/// `testPathIgnorePatterns`), whatever the file.
fn hides_tests(line: &str) -> bool {
    ["collect_ignore", "testPathIgnorePatterns"]
        .iter()
        .any(|m| line.contains(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assertions_in_each_language() {
        for line in [
            "    assert_eq!(mean(&[]), None);",
            "assert!(x.is_empty());",
            "    assert x == 3",
            "self.assertEqual(a, b)",
            "with pytest.raises(ValueError):",
            "expect(sum(1, 2)).toBe(3);",
            "assert.strictEqual(a, b);",
            "\t\tt.Errorf(\"got %v\", got)",
            "require.NoError(t, err)",
            "    prop_assert_eq!(a, b);",
            "    insta::assert_snapshot!(report);",
            "    assert_json_snapshot!(value, @r###\"{}\"###);",
        ] {
            assert!(is_assertion(line), "{line}");
        }
        for line in [
            "let x = value.expect(\"present\");",
            "// assert_eq!(a, b);",
            "# assert x == 3",
            "let assertion = 1;",
            "log.Errorf(\"x\")",
            "fn assert_ok() {}",
            "use assert_cmd::Command;",
        ] {
            assert!(!is_assertion(line), "{line}");
        }
    }

    #[test]
    fn trivial_assertions() {
        for line in [
            "assert True",
            "    assert True, 'later'",
            "assert!(true);",
            "assert_eq!(x, x);",
            "self.assertTrue(True)",
            "expect(true).toBe(true);",
            "expect(1).toBeTruthy();",
            "assert.ok(true);",
        ] {
            assert!(is_trivial_assertion(line), "{line}");
        }
        for line in [
            "assert x",
            "assert_eq!(x, 1);",
            "expect(a).toBe(b);",
            "assert!(ok);",
        ] {
            assert!(!is_trivial_assertion(line), "{line}");
        }
    }

    #[test]
    fn comparisons() {
        assert!(has_comparison("assert x == y"));
        assert!(has_comparison("assert_eq!(a, b);"));
        assert!(has_comparison("expect(a).toEqual(b)"));
        assert!(!has_comparison("assert x"));
        assert!(!has_comparison("assert!(ok);"));
    }

    #[test]
    fn test_declarations() {
        assert_eq!(
            test_declaration("    #[test]", Some(Lang::Rust)),
            Some(TestDecl::RustAttribute)
        );
        assert_eq!(
            rust_fn_name("    pub async fn it_works() {"),
            Some("it_works".into())
        );
        assert_eq!(
            test_declaration("    def test_mean(self):", Some(Lang::Python)),
            Some(TestDecl::Named("test_mean".into()))
        );
        assert_eq!(
            test_declaration("func (s *S) TestMean(t *testing.T) {", Some(Lang::Go)),
            Some(TestDecl::Named("TestMean".into()))
        );
        assert_eq!(
            test_declaration("  it('adds numbers', () => {", Some(Lang::JavaScript)),
            Some(TestDecl::Named("adds numbers".into()))
        );
        assert_eq!(test_declaration("def helper():", Some(Lang::Python)), None);
        assert_eq!(
            test_declaration("  expect(test(x))", Some(Lang::JavaScript)),
            None
        );
    }

    #[test]
    fn dead_code_and_swallowed_failures() {
        for line in [
            "    if False:",
            "  if (false) {",
            "if false {",
            "if 0:",
            "    return",
            "return;",
        ] {
            assert!(is_dead_code_start(line), "{line}");
        }
        for line in ["if x:", "return x", "if (falsey) {"] {
            assert!(!is_dead_code_start(line), "{line}");
        }
        assert!(swallows_failures("    except AssertionError:"));
        assert!(swallows_failures("#[should_panic(expected = \"boom\")]"));
    }

    #[test]
    fn skip_markers() {
        assert!(is_skip_marker(
            "collect_ignore = [\"test_x.py\"]",
            Some(Lang::Python),
            false
        ));
        assert!(is_skip_marker(
            "  testPathIgnorePatterns: ['/slow/'],",
            Some(Lang::JavaScript),
            false
        ));
        assert!(is_skip_marker(
            "    #[ignore = \"slow\"]",
            Some(Lang::Rust),
            false
        ));
        assert!(is_skip_marker(
            "@pytest.mark.skipif(True, reason='x')",
            Some(Lang::Python),
            false
        ));
        assert!(is_skip_marker("\tt.Skip(\"later\")", Some(Lang::Go), false));
        assert!(is_skip_marker(
            "  it.skip('x', () => {",
            Some(Lang::JavaScript),
            false
        ));
        assert!(is_skip_marker(
            "  describe.skip('x', () => {",
            Some(Lang::JavaScript),
            false
        ));
        assert!(is_skip_marker(
            "  foo.skip(1)",
            Some(Lang::JavaScript),
            true
        ));
        assert!(!is_skip_marker(
            "  query.skip(10)",
            Some(Lang::JavaScript),
            false
        ));
        assert!(!is_skip_marker("// #[ignore]", Some(Lang::Rust), false));
    }
}
