//! What the language readers find in a file, in one shape for every language: definitions with
//! their lines, imports, calls and the variables that hold an instance of something. The
//! [`Reader`] trait is what each language implements; [`super::resolve`] only speaks this shape.

use std::ops::Range;

use super::parsed::Parsed;
use super::sources::Sources;

/// What a definition is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DefKind {
    Function,
    /// A function of a class, impl block or receiver type (its `owner`).
    Method,
    /// A class, struct, enum, trait or interface: something with methods.
    Class,
    /// A pytest fixture (a function decorated with `fixture`).
    Fixture,
    /// A test block that is a call, not a declaration (`it('…', () => …)`, `test(…)`).
    Test,
}

/// One definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Def {
    pub name: String,
    pub kind: DefKind,
    /// The class, impl type or receiver type a method belongs to.
    pub owner: Option<String>,
    /// Rust's inline modules the item is in (`["tests"]` in `mod tests { … }`); empty elsewhere.
    pub scope: Vec<String>,
    /// First and last line, 1-based and inclusive, decorators and attributes included.
    pub start: usize,
    pub end: usize,
    /// The bytes of the whole definition.
    pub bytes: Range<usize>,
    /// Base classes as written (`Base` in `class Box(Base)`, `extends Base`).
    pub bases: Vec<String>,
    /// The lines of its documentation (a Python docstring, Rust's `///` or Go's comments
    /// above it), which an excerpt may shorten.
    pub doc: Option<(usize, usize)>,
}

impl Def {
    /// Whether `line` is inside the definition.
    pub fn contains(&self, line: usize) -> bool {
        (self.start..=self.end).contains(&line)
    }

    /// `Owner.name` for a method, the name otherwise.
    pub fn qualified(&self) -> String {
        match &self.owner {
            Some(owner) => format!("{owner}.{}", self.name),
            None => self.name.clone(),
        }
    }
}

/// What an import binds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bound {
    /// One name (`windows` in `from winstats import windows`; `ps` in `import pkg.sub as ps`).
    Name(String),
    /// Every public name of the module (`from .x import *`, `export * from`, `use super::*`).
    Glob,
}

/// One import or re-export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Import {
    /// Rust's inline modules the `use` is in; empty elsewhere.
    pub scope: Vec<String>,
    pub bound: Bound,
    /// The module as written (`pkg.window`, `.window`, `./window`, `crate::a`, `super`).
    pub module: String,
    /// The item imported from it; `None` when the name is bound to the module itself.
    pub item: Option<String>,
}

/// What a call is made on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Receiver {
    /// A bare name: `windows(…)`, `new Window(…)`.
    Bare,
    /// A name or path as written: `calc` in `calc.mean(…)`, `self`, a variable, `Window` in
    /// `Window::new(…)`, `crate::stats` in `crate::stats::mean(…)`, `pkg.sub` in `pkg.sub.f(…)`.
    Path(String),
    /// What another call returned: `Window(3).push(…)`, `Window::new(3).push(…)`.
    Result(Box<Call>),
}

/// One call.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Call {
    pub receiver: Receiver,
    pub name: String,
    /// 1-based.
    pub line: usize,
}

impl Call {
    /// A call of a bare name.
    pub fn bare(name: &str, line: usize) -> Call {
        Call {
            receiver: Receiver::Bare,
            name: name.to_owned(),
            line,
        }
    }

    /// A call of `name` on `receiver`.
    pub fn on(receiver: Receiver, name: String, line: usize) -> Call {
        Call {
            receiver,
            name,
            line,
        }
    }

    /// The call as written, its path joined with `sep` (`calc.mean`, `Window()::push`).
    pub fn written(&self, sep: &str) -> String {
        match &self.receiver {
            Receiver::Bare => self.name.clone(),
            Receiver::Path(path) => format!("{path}{sep}{}", self.name),
            Receiver::Result(inner) => format!("{}(){sep}{}", inner.written(sep), self.name),
        }
    }
}

/// A variable whose value is known to be an instance of something.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    pub var: String,
    pub value: Value,
}

/// Where a variable's value comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// What a call returned: `w = Window(3)`, `let w = Window::new(3)`, `w := NewWindow(3)`.
    Call(Call),
    /// A declared type: `win: Window`, `let w: Window`.
    Type(String),
}

/// A place that holds named items: a file, or an inline module in it (Rust).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Module {
    /// Repository-relative, `/`-separated.
    pub file: String,
    pub scope: Vec<String>,
}

impl Module {
    /// A whole file.
    pub fn file(path: &str) -> Module {
        Module {
            file: path.to_owned(),
            scope: Vec::new(),
        }
    }
}

/// What one language's reader finds. Implementations read the syntax tree only; `modules` and
/// `siblings` also ask `files` which files exist.
pub(crate) trait Reader: Sync {
    /// Every definition a name can reach (top level, class members, inline modules), in order.
    fn defs(&self, src: &Parsed) -> Vec<Def>;
    /// Test blocks and functions a failing line can be in (defaults to [`Reader::defs`]).
    fn enclosing(&self, src: &Parsed) -> Vec<Def> {
        self.defs(src)
    }
    fn imports(&self, src: &Parsed) -> Vec<Import>;
    /// The calls inside `def`, in source order.
    fn calls(&self, src: &Parsed, def: &Def) -> Vec<Call>;
    /// The variables of `def` whose value is known to be an instance of something.
    fn bindings(&self, src: &Parsed, def: &Def) -> Vec<Binding>;
    /// The type name a function returns, when its code says.
    fn returns(&self, src: &Parsed, def: &Def) -> Option<String>;
    /// The parameters a test receives by name (pytest fixtures); empty elsewhere.
    fn parameters(&self, _src: &Parsed, _def: &Def) -> Vec<String> {
        Vec::new()
    }
    /// Where the module `spec`, written in `from`, is in the repository: most likely first.
    fn modules(&self, files: &mut Sources, from: &Module, spec: &str) -> Vec<Module>;
    /// Other files whose names `file` sees without importing them (Go's package).
    fn siblings(&self, _files: &mut Sources, _file: &str) -> Vec<String> {
        Vec::new()
    }
    /// Files whose fixtures a test in `file` may receive by parameter name (pytest's
    /// `conftest.py` files, nearest first).
    fn fixture_files(&self, _files: &mut Sources, _file: &str) -> Vec<String> {
        Vec::new()
    }
    /// The module an imported item names when it is a module itself (`from . import window`,
    /// `use crate::stats;`); `None` where items are never modules.
    fn submodule(&self, _module: &str, _item: &str) -> Option<String> {
        None
    }
    /// The name of the constructor method of a class (`__init__`, `constructor`), if any.
    fn constructor(&self) -> Option<&'static str> {
        None
    }
}
