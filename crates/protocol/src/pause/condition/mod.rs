//! The condition language of pause points: `tool == "edit_file" && path ~ "src/auth/**"`.
//!
//! A condition compares a location's fields ([`super::Field`]) with literals, joined by `&&`,
//! `||`, `!` and parentheses. Text fields take `==`, `!=` and `~` (a glob: `*` within a path
//! segment, `**` across segments); number fields take `==`, `!=`, `<`, `<=`, `>`, `>=`. A
//! hand-written recursive descent parser (the grammar is eight lines; no crate is worth the
//! dependency): every error names its 1-based column. [`check`] types a condition against a
//! location's fields; [`holds`] evaluates it. Nothing here reads anything but its arguments.
//!
//! ```text
//! or      := and ("||" and)*
//! and     := unary ("&&" unary)*
//! unary   := "!" unary | "(" or ")" | compare
//! compare := FIELD OP (STRING | NUMBER)
//! OP      := "==" | "!=" | "~" | "<" | "<=" | ">" | ">="
//! STRING  := '"' (any char but '"' and '\', or '\' followed by '"' or '\')* '"'
//! NUMBER  := [0-9]+          FIELD := [a-z_]+
//! ```

use serde::{Deserialize, Serialize};

use super::{Field, FieldKind, Location, Values};

/// A parsed condition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Expr {
    Or(Box<Expr>, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    Compare(Compare),
}

/// `FIELD OP LITERAL`, with the column the field name starts at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Compare {
    pub field: String,
    pub op: Op,
    pub literal: Literal,
    pub column: usize,
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    Eq,
    Ne,
    Glob,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    fn symbol(self) -> &'static str {
        match self {
            Op::Eq => "==",
            Op::Ne => "!=",
            Op::Glob => "~",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
        }
    }
}

/// A literal: text or a whole number.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Literal {
    Text(String),
    Number(u64),
}

/// A condition that does not parse or does not fit its location.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("column {column}: {message}")]
pub struct ConditionError {
    /// 1-based, in characters.
    pub column: usize,
    pub message: String,
}

fn error<T>(column: usize, message: impl Into<String>) -> Result<T, ConditionError> {
    Err(ConditionError {
        column,
        message: message.into(),
    })
}

/// One token and the column it starts at.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    Name(String),
    Text(String),
    Number(u64),
    Op(Op),
    And,
    Or,
    Not,
    Open,
    Close,
}

/// Parses `text` into a condition.
pub fn parse(text: &str) -> Result<Expr, ConditionError> {
    let tokens = lex(text)?;
    let mut parser = Parser {
        tokens: &tokens,
        at: 0,
        end: text.chars().count() + 1,
    };
    let expr = parser.or()?;
    match parser.peek() {
        None => Ok(expr),
        Some((_, column)) => error(*column, "expected `&&`, `||` or the end"),
    }
}

fn lex(text: &str) -> Result<Vec<(Token, usize)>, ConditionError> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let column = i + 1;
        let (token, next) = match chars[i] {
            c if c.is_whitespace() => {
                i += 1;
                continue;
            }
            '"' => lex_text(&chars, i)?,
            c if c.is_ascii_digit() => lex_number(&chars, i)?,
            c if c.is_ascii_lowercase() || c == '_' => {
                let end = run_end(&chars, i, |c| c.is_ascii_lowercase() || c == '_');
                (Token::Name(chars[i..end].iter().collect()), end)
            }
            _ => lex_symbol(&chars, i)?,
        };
        tokens.push((token, column));
        i = next;
    }
    Ok(tokens)
}

fn run_end(chars: &[char], from: usize, keep: impl Fn(char) -> bool) -> usize {
    chars[from..]
        .iter()
        .position(|c| !keep(*c))
        .map_or(chars.len(), |n| from + n)
}

fn lex_text(chars: &[char], start: usize) -> Result<(Token, usize), ConditionError> {
    let mut text = String::new();
    let mut i = start + 1;
    while i < chars.len() {
        match chars[i] {
            '"' => return Ok((Token::Text(text), i + 1)),
            '\\' if matches!(chars.get(i + 1), Some('"' | '\\')) => {
                text.push(chars[i + 1]);
                i += 2;
            }
            '\\' => return error(i + 1, "a `\\` in text escapes only `\"` or `\\`"),
            c => {
                text.push(c);
                i += 1;
            }
        }
    }
    error(start + 1, "text not closed (a `\"` is missing)")
}

fn lex_number(chars: &[char], start: usize) -> Result<(Token, usize), ConditionError> {
    let end = run_end(chars, start, |c| c.is_ascii_digit());
    let digits: String = chars[start..end].iter().collect();
    match digits.parse() {
        Ok(number) => Ok((Token::Number(number), end)),
        Err(_) => error(start + 1, "number too large"),
    }
}

fn lex_symbol(chars: &[char], i: usize) -> Result<(Token, usize), ConditionError> {
    let next = chars.get(i + 1).copied();
    let (token, width) = match (chars[i], next) {
        ('=', Some('=')) => (Token::Op(Op::Eq), 2),
        ('!', Some('=')) => (Token::Op(Op::Ne), 2),
        ('<', Some('=')) => (Token::Op(Op::Le), 2),
        ('>', Some('=')) => (Token::Op(Op::Ge), 2),
        ('&', Some('&')) => (Token::And, 2),
        ('|', Some('|')) => (Token::Or, 2),
        ('<', _) => (Token::Op(Op::Lt), 1),
        ('>', _) => (Token::Op(Op::Gt), 1),
        ('~', _) => (Token::Op(Op::Glob), 1),
        ('!', _) => (Token::Not, 1),
        ('(', _) => (Token::Open, 1),
        (')', _) => (Token::Close, 1),
        (c, _) => return error(i + 1, format!("unexpected `{c}`")),
    };
    Ok((token, i + width))
}

struct Parser<'t> {
    tokens: &'t [(Token, usize)],
    at: usize,
    /// The column just past the text (where "the end" is).
    end: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&(Token, usize)> {
        self.tokens.get(self.at)
    }

    fn next(&mut self, expected: &str) -> Result<(Token, usize), ConditionError> {
        let Some(token) = self.tokens.get(self.at).cloned() else {
            return error(self.end, format!("expected {expected}, found the end"));
        };
        self.at += 1;
        Ok(token)
    }

    fn or(&mut self) -> Result<Expr, ConditionError> {
        let mut left = self.and()?;
        while matches!(self.peek(), Some((Token::Or, _))) {
            self.at += 1;
            left = Expr::Or(Box::new(left), Box::new(self.and()?));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Expr, ConditionError> {
        let mut left = self.unary()?;
        while matches!(self.peek(), Some((Token::And, _))) {
            self.at += 1;
            left = Expr::And(Box::new(left), Box::new(self.unary()?));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Expr, ConditionError> {
        match self.next("a field, `!` or `(`")? {
            (Token::Not, _) => Ok(Expr::Not(Box::new(self.unary()?))),
            (Token::Open, _) => {
                let inner = self.or()?;
                match self.next("`)`")? {
                    (Token::Close, _) => Ok(inner),
                    (_, column) => error(column, "expected `)`"),
                }
            }
            (Token::Name(field), column) => self.compare(field, column),
            (_, column) => error(column, "expected a field, `!` or `(`"),
        }
    }

    fn compare(&mut self, field: String, column: usize) -> Result<Expr, ConditionError> {
        let op = match self.next("an operator")? {
            (Token::Op(op), _) => op,
            (_, column) => return error(column, "expected an operator (==, !=, ~, <, <=, >, >=)"),
        };
        let literal = match self.next("a value")? {
            (Token::Text(text), _) => Literal::Text(text),
            (Token::Number(number), _) => Literal::Number(number),
            (_, column) => return error(column, "expected a value (\"text\" or a number)"),
        };
        Ok(Expr::Compare(Compare {
            field,
            op,
            literal,
            column,
        }))
    }
}

/// Checks that every field of `expr` is one of `location`'s and is compared with a value of its
/// type by an operator its type has.
pub fn check(expr: &Expr, location: Location) -> Result<(), ConditionError> {
    match expr {
        Expr::Or(left, right) | Expr::And(left, right) => {
            check(left, location)?;
            check(right, location)
        }
        Expr::Not(inner) => check(inner, location),
        Expr::Compare(compare) => check_compare(compare, location),
    }
}

fn check_compare(compare: &Compare, location: Location) -> Result<(), ConditionError> {
    let known = location.fields();
    let Some(field) = known.iter().find(|f| f.as_str() == compare.field) else {
        let names: Vec<&str> = known.iter().map(|f| f.as_str()).collect();
        return error(
            compare.column,
            format!(
                "`{}` is not a field of `{}` (its fields: {})",
                compare.field,
                location.as_str(),
                names.join(", ")
            ),
        );
    };
    let fits = match (field.kind(), &compare.literal) {
        (FieldKind::Text, Literal::Text(_)) => matches!(compare.op, Op::Eq | Op::Ne | Op::Glob),
        (FieldKind::Number, Literal::Number(_)) => compare.op != Op::Glob,
        (FieldKind::Text, Literal::Number(_)) | (FieldKind::Number, Literal::Text(_)) => false,
    };
    if fits {
        return check_glob(compare);
    }
    let (kind, ops) = match field.kind() {
        FieldKind::Text => ("text", "==, != or ~ with \"text\""),
        FieldKind::Number => ("a number", "==, !=, <, <=, > or >= with a number"),
    };
    error(
        compare.column,
        format!(
            "`{}` is {kind}: compare it with {ops} (not `{}` {})",
            compare.field,
            compare.op.symbol(),
            match &compare.literal {
                Literal::Text(_) => "text",
                Literal::Number(_) => "a number",
            }
        ),
    )
}

fn check_glob(compare: &Compare) -> Result<(), ConditionError> {
    let (Literal::Text(pattern), Op::Glob) = (&compare.literal, compare.op) else {
        return Ok(());
    };
    match globset::Glob::new(pattern) {
        Ok(_) => Ok(()),
        Err(bad) => error(compare.column, format!("`{pattern}` is not a glob: {bad}")),
    }
}

/// Whether `expr` holds for `values` (a field the values lack is false in every comparison).
pub fn holds(expr: &Expr, values: &Values) -> bool {
    match expr {
        Expr::Or(left, right) => holds(left, values) || holds(right, values),
        Expr::And(left, right) => holds(left, values) && holds(right, values),
        Expr::Not(inner) => !holds(inner, values),
        Expr::Compare(compare) => compares(compare, values),
    }
}

fn compares(compare: &Compare, values: &Values) -> bool {
    let Some(field) = Field::named(&compare.field) else {
        return false;
    };
    match (&compare.literal, values.text(field), values.number(field)) {
        (Literal::Text(want), Some(have), _) => match compare.op {
            Op::Eq => have == want,
            Op::Ne => have != want,
            Op::Glob => glob_matches(want, have),
            Op::Lt | Op::Le | Op::Gt | Op::Ge => false,
        },
        (Literal::Number(want), _, Some(have)) => match compare.op {
            Op::Eq => have == *want,
            Op::Ne => have != *want,
            Op::Lt => have < *want,
            Op::Le => have <= *want,
            Op::Gt => have > *want,
            Op::Ge => have >= *want,
            Op::Glob => false,
        },
        (Literal::Text(_) | Literal::Number(_), _, _) => false,
    }
}

fn glob_matches(pattern: &str, text: &str) -> bool {
    globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .is_ok_and(|glob| glob.compile_matcher().is_match(text))
}

#[cfg(test)]
mod tests;
