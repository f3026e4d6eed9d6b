//! From failing tests to the code under test: the test's function (or test block) is found at
//! the failing line or by its name, its calls are resolved to definitions in the repository
//! (through imports and re-exports, module attributes, methods of the classes its variables and
//! fixtures hold, `self`), and the calls of what was reached are followed in turn, breadth
//! first, to [`MAX_DEPTH`] calls from the test. Names the repository does not define (the
//! standard library, dependencies, assertion helpers) resolve to nothing and cost nothing.
//!
//! Pure over [`Sources`]: reads and parses files, nothing else.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use super::Lang;
use super::items::{Binding, Bound, Call, Def, DefKind, Module, Reader, Receiver, Value};
use super::parsed::Parsed;
use super::sources::Sources;
pub use meta_agent_protocol::test_id::TestName;

/// Calls from the test followed at most (2: a helper the test calls, and what it calls).
pub const MAX_DEPTH: u8 = 3;
/// Definitions reached at most, the tests included.
pub const MAX_REACHED: usize = 24;
/// Re-exports and imports followed at most to find one name.
const HOPS: u8 = 6;
/// Calls of one definition resolved at most.
const MAX_CALLS: usize = 40;
/// Definitions one call may resolve to.
const MAX_TARGETS: usize = 3;

/// Where a failing test is: its file, the failing line, and its name as the runner reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    pub path: String,
    pub line: Option<usize>,
    /// `tests.test_calc::test_mean[1-2]`, `winstats::tests::mean`, `suite › adds`, `TestMean/one`.
    pub name: Option<TestName>,
}

/// Why a definition was reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A failing test (its function or test block).
    Test,
    /// A pytest fixture the test receives.
    Fixture,
    /// Called by a test, directly or through what it calls.
    UnderTest,
}

/// One definition reached from a failing test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reached {
    pub path: String,
    pub def: Def,
    pub role: Role,
    /// Calls from the test (0 for the test itself, 1 for what it calls).
    pub depth: u8,
    /// The definition whose call reached it (`Owner.name`).
    pub via: Option<String>,
}

/// The tests at `sites` and the code they call, tests first, then by depth.
pub fn under_test(files: &mut Sources, sites: &[Site]) -> Vec<Reached> {
    let mut walk = Walk {
        files,
        reached: Vec::new(),
        seen: HashSet::new(),
        queue: VecDeque::new(),
    };
    for site in sites {
        if let Some(test) = walk.test_at(site) {
            walk.reach(test, Role::Test, 0, None);
        }
    }
    while let Some((caller, depth)) = walk.queue.pop_front() {
        if walk.reached.len() >= MAX_REACHED {
            break;
        }
        walk.expand(&caller, depth);
    }
    walk.reached.truncate(MAX_REACHED);
    walk.reached
}

/// The innermost function, method or test block of `path` that holds `line` (a class only when
/// no member does).
pub fn enclosing(files: &mut Sources, path: &str, line: usize) -> Option<Def> {
    let parsed = files.parse(path)?;
    super::reader(parsed.lang)?
        .enclosing(&parsed)
        .into_iter()
        .filter(|d| d.contains(line))
        .min_by_key(|d| (d.kind == DefKind::Class, d.end - d.start))
}

/// A definition and the module its names resolve in.
#[derive(Debug, Clone)]
struct Target {
    module: Module,
    def: Def,
}

struct Walk<'a> {
    files: &'a mut Sources,
    reached: Vec<Reached>,
    seen: HashSet<(String, usize)>,
    queue: VecDeque<(Target, u8)>,
}

impl Walk<'_> {
    fn source(&mut self, file: &str) -> Option<(&'static dyn Reader, Arc<Parsed>)> {
        let parsed = self.files.parse(file)?;
        Some((super::reader(parsed.lang)?, parsed))
    }

    /// The test function or block at a site: at its line when that is the named test (or no
    /// name is known), else by name in the same file.
    fn test_at(&mut self, site: &Site) -> Option<Target> {
        let (reader, parsed) = self.source(&site.path)?;
        let defs: Vec<Def> = reader
            .enclosing(&parsed)
            .into_iter()
            .filter(|d| d.kind != DefKind::Class)
            .collect();
        let wanted = site.name.as_ref();
        let at_line = site.line.and_then(|line| {
            defs.iter()
                .filter(|d| d.contains(line))
                .min_by_key(|d| d.end - d.start)
        });
        let named = |d: &&Def| wanted.is_none_or(|w| names_test(d, w));
        let def = at_line
            .filter(named)
            .or_else(|| wanted.and_then(|_| defs.iter().find(named)))?;
        Some(Target {
            module: Module {
                file: site.path.clone(),
                scope: def.scope.clone(),
            },
            def: def.clone(),
        })
    }

    fn reach(&mut self, target: Target, role: Role, depth: u8, via: Option<String>) {
        if !self
            .seen
            .insert((target.module.file.clone(), target.def.start))
        {
            return;
        }
        self.reached.push(Reached {
            path: target.module.file.clone(),
            def: target.def.clone(),
            role,
            depth,
            via,
        });
        if depth < MAX_DEPTH && target.def.kind != DefKind::Class {
            self.queue.push_back((target, depth));
        }
    }

    /// Resolves the calls of `caller` (and a test's fixtures) and reaches what they name.
    fn expand(&mut self, caller: &Target, depth: u8) {
        let Some((reader, parsed)) = self.source(&caller.module.file) else {
            return;
        };
        let mut vars = self.typed_vars(caller, &reader.bindings(&parsed, &caller.def));
        if depth == 0 {
            for (param, fixture) in self.fixtures(caller, reader, &parsed) {
                let classes = self.returned_classes(&fixture);
                vars.entry(param).or_default().extend(classes);
                self.reach(fixture, Role::Fixture, 1, Some(caller.def.qualified()));
            }
        }
        let mut calls = reader.calls(&parsed, &caller.def);
        let mut unique = HashSet::new();
        calls.retain(|c| unique.insert((c.receiver.clone(), c.name.clone())));
        for call in calls.iter().take(MAX_CALLS) {
            let targets = self.resolve(caller, call, &vars, HOPS);
            for target in targets.into_iter().take(MAX_TARGETS) {
                let Some(target) = self.constructed(target, reader) else {
                    continue;
                };
                if target.module.file == caller.module.file && target.def.start == caller.def.start
                {
                    continue;
                }
                self.reach(
                    target,
                    Role::UnderTest,
                    depth + 1,
                    Some(caller.def.qualified()),
                );
            }
        }
    }

    /// A class reached by a call (`Window(3)`, `new Window()`) is its constructor; one without
    /// a constructor is nothing to show (its methods are reached by their own calls).
    fn constructed(&mut self, target: Target, reader: &dyn Reader) -> Option<Target> {
        if target.def.kind != DefKind::Class {
            return Some(target);
        }
        let constructor = reader.constructor()?;
        self.methods(&target, constructor, 1).into_iter().next()
    }

    /// The fixtures a test receives: `(parameter, fixture)`.
    fn fixtures(
        &mut self,
        test: &Target,
        reader: &dyn Reader,
        parsed: &Parsed,
    ) -> Vec<(String, Target)> {
        let params = reader.parameters(parsed, &test.def);
        if params.is_empty() {
            return Vec::new();
        }
        let mut places = vec![test.module.file.clone()];
        places.extend(reader.fixture_files(self.files, &test.module.file));
        let mut out = Vec::new();
        for param in params {
            let found = places.iter().find_map(|file| {
                self.lookup(&Module::file(file), &param, HOPS)
                    .into_iter()
                    .find(|t| t.def.kind == DefKind::Fixture)
            });
            if let Some(fixture) = found {
                out.push((param, fixture));
            }
        }
        out
    }

    /// The classes the variables of a definition hold.
    fn typed_vars(&mut self, at: &Target, bindings: &[Binding]) -> HashMap<String, Vec<Target>> {
        let mut vars: HashMap<String, Vec<Target>> = HashMap::new();
        for binding in bindings {
            let classes = match &binding.value {
                Value::Type(name) => self.classes(&at.module, name),
                Value::Call(call) => self.call_classes(at, call, &vars),
            };
            if !classes.is_empty() {
                vars.insert(binding.var.clone(), classes);
            }
        }
        vars
    }

    /// What a call returns, as classes: a class called (a constructor), or the type its
    /// function says it returns.
    fn call_classes(
        &mut self,
        at: &Target,
        call: &Call,
        vars: &HashMap<String, Vec<Target>>,
    ) -> Vec<Target> {
        self.resolve(at, call, vars, HOPS)
            .into_iter()
            .flat_map(|target| {
                if target.def.kind == DefKind::Class {
                    vec![target]
                } else {
                    self.returned_classes(&target)
                }
            })
            .collect()
    }

    fn returned_classes(&mut self, function: &Target) -> Vec<Target> {
        let Some((reader, parsed)) = self.source(&function.module.file) else {
            return Vec::new();
        };
        let Some(name) = reader.returns(&parsed, &function.def) else {
            return Vec::new();
        };
        let name = match (name.as_str(), &function.def.owner) {
            ("Self", Some(owner)) => owner.clone(),
            _ => name,
        };
        self.classes(&function.module, &name)
    }

    fn classes(&mut self, module: &Module, name: &str) -> Vec<Target> {
        self.lookup(module, name, HOPS)
            .into_iter()
            .filter(|t| t.def.kind == DefKind::Class)
            .collect()
    }

    /// The definitions a call names, seen from `at`.
    fn resolve(
        &mut self,
        at: &Target,
        call: &Call,
        vars: &HashMap<String, Vec<Target>>,
        hops: u8,
    ) -> Vec<Target> {
        if hops == 0 {
            return Vec::new();
        }
        match &call.receiver {
            Receiver::Bare => self.lookup(&at.module, &call.name, HOPS),
            Receiver::Result(inner) => {
                let classes = self.call_classes(at, inner, vars);
                self.methods_of(&classes, &call.name)
            }
            Receiver::Path(path) => self.on_path(at, path, &call.name, vars),
        }
    }

    /// `path.name(…)`: a method of `self`, of a variable's class or of a class; a function of a
    /// module.
    fn on_path(
        &mut self,
        at: &Target,
        path: &str,
        name: &str,
        vars: &HashMap<String, Vec<Target>>,
    ) -> Vec<Target> {
        if matches!(path, "self" | "this" | "Self") {
            let Some(owner) = at.def.owner.clone() else {
                return Vec::new();
            };
            let classes = self.classes(&at.module, &owner);
            return self.methods_of(&classes, name);
        }
        if let Some(classes) = vars.get(path) {
            let classes = classes.clone();
            return self.methods_of(&classes, name);
        }
        let classes = self.classes(&at.module, path);
        if !classes.is_empty() {
            return self.methods_of(&classes, name);
        }
        for module in self.modules_named(&at.module, path) {
            let found = self.lookup(&module, name, HOPS);
            if !found.is_empty() {
                return found;
            }
        }
        self.path_type(at, path, name)
    }

    /// `a::b::Type::name(…)` (Rust): `Type` looked up in module `a::b`.
    fn path_type(&mut self, at: &Target, path: &str, name: &str) -> Vec<Target> {
        let Some((prefix, ty)) = path.rsplit_once("::") else {
            return Vec::new();
        };
        let Some((reader, _)) = self.source(&at.module.file) else {
            return Vec::new();
        };
        let modules = reader.modules(self.files, &at.module, prefix);
        let classes: Vec<Target> = modules
            .iter()
            .flat_map(|module| self.classes(module, ty))
            .collect();
        self.methods_of(&classes, name)
    }

    /// The modules a name (or dotted / `::` path) stands for in `at`: an imported module, an
    /// imported item that is a module, or a path the language resolves itself.
    fn modules_named(&mut self, at: &Module, path: &str) -> Vec<Module> {
        let Some((reader, parsed)) = self.source(&at.file) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for import in reader.imports(&parsed) {
            if import.scope != at.scope || import.bound != Bound::Name(path.to_owned()) {
                continue;
            }
            let spec = match &import.item {
                None => Some(import.module.clone()),
                Some(item) => reader.submodule(&import.module, item),
            };
            if let Some(spec) = spec {
                out.extend(reader.modules(self.files, at, &spec));
            }
        }
        if out.is_empty() && parsed.lang == Lang::Rust {
            out.extend(reader.modules(self.files, at, path));
        }
        out
    }

    fn methods_of(&mut self, classes: &[Target], name: &str) -> Vec<Target> {
        classes
            .iter()
            .flat_map(|class| self.methods(class, name, HOPS))
            .collect()
    }

    /// The method `name` of `class`, from its own file, its package (Go), or a base class.
    fn methods(&mut self, class: &Target, name: &str, hops: u8) -> Vec<Target> {
        let Some((reader, _)) = self.source(&class.module.file) else {
            return Vec::new();
        };
        let mut files = vec![class.module.file.clone()];
        files.extend(reader.siblings(self.files, &class.module.file));
        for file in &files {
            let Some((reader, parsed)) = self.source(file) else {
                continue;
            };
            let found: Vec<Target> = reader
                .defs(&parsed)
                .into_iter()
                .filter(|d| d.name == name && d.owner.as_deref() == Some(class.def.name.as_str()))
                .map(|def| Target {
                    module: Module {
                        file: file.clone(),
                        scope: def.scope.clone(),
                    },
                    def,
                })
                .collect();
            if !found.is_empty() {
                return found;
            }
        }
        if hops == 0 {
            return Vec::new();
        }
        let bases: Vec<Target> = class
            .def
            .bases
            .iter()
            .flat_map(|base| self.classes(&class.module, base))
            .collect();
        bases
            .iter()
            .flat_map(|base| self.methods(base, name, hops - 1))
            .collect()
    }

    /// The definitions `name` means at the top of `module`: its own, imported (through
    /// re-exports and `*`), or its package's (Go).
    fn lookup(&mut self, module: &Module, name: &str, hops: u8) -> Vec<Target> {
        if hops == 0 {
            return Vec::new();
        }
        let Some((reader, parsed)) = self.source(&module.file) else {
            return Vec::new();
        };
        let own = defined(reader, &parsed, module, name);
        if !own.is_empty() {
            return own;
        }
        let imports: Vec<_> = reader
            .imports(&parsed)
            .into_iter()
            .filter(|i| i.scope == module.scope)
            .collect();
        for import in imports
            .iter()
            .filter(|i| i.bound == Bound::Name(name.to_owned()))
        {
            let Some(item) = &import.item else {
                continue;
            };
            for target in reader.modules(self.files, module, &import.module) {
                let found = self.lookup(&target, item, hops - 1);
                if !found.is_empty() {
                    return found;
                }
            }
        }
        for import in imports.iter().filter(|i| i.bound == Bound::Glob) {
            for target in reader.modules(self.files, module, &import.module) {
                let found = self.lookup(&target, name, hops - 1);
                if !found.is_empty() {
                    return found;
                }
            }
        }
        for sibling in reader.siblings(self.files, &module.file) {
            if let Some((reader, parsed)) = self.source(&sibling) {
                let found = defined(reader, &parsed, &Module::file(&sibling), name);
                if !found.is_empty() {
                    return found;
                }
            }
        }
        Vec::new()
    }
}

/// The top-level definitions of `module` named `name`.
fn defined(reader: &dyn Reader, parsed: &Parsed, module: &Module, name: &str) -> Vec<Target> {
    reader
        .defs(parsed)
        .into_iter()
        .filter(|d| d.name == name && d.owner.is_none() && d.scope == module.scope)
        .map(|def| Target {
            module: module.clone(),
            def,
        })
        .collect()
}

/// Whether `def` is the test the runner's name is of (a test block's title may hold spaces and
/// dots, so the whole name may also end with it).
fn names_test(def: &Def, name: &TestName) -> bool {
    def.name == name.function()
        || (def.kind == DefKind::Test
            && !def.name.is_empty()
            && name.as_str().trim().ends_with(&def.name))
}

#[cfg(test)]
mod tests;
