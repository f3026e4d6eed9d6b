//! A test's identity, typed end to end (and, in [`TestName`], the text a failure names its test
//! by, from a report or a log): what the runner's JUnit report called it (the identity
//! and the text people and signatures see) and how that runner selects it again (the parts its
//! re-run filter needs: nextest's binary id and test path, pytest's file, classes and
//! parametrised name, jest's or vitest's file and full name, go's package and test).
//!
//! A [`TestId`] is built once, from a JUnit test case's attributes ([`TestId::junit`]), and
//! typed for the gate's runner ([`TestId::typed`]); nothing downstream joins it into a string
//! and splits it again. Ids saved by older versions were `classname::name` strings: they still
//! load ([`TestId`]'s serde accepts both shapes), with no selector (a re-run of them falls back to
//! the whole gate). Pure data and pure parsing: the one outside fact, whether a pytest module
//! file exists, is asked of the caller.

use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::kinds::TestFilterFormat;

mod name;
pub use name::TestName;

/// One test, as its runner's JUnit report named it and as its runner selects it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(from = "Wire")]
pub struct TestId {
    /// The test case's `classname` attribute, as written (empty when it had none).
    pub classname: String,
    /// The test case's `name` attribute, as written.
    pub name: String,
    /// The test case's `file` attribute, when the report has one (jest-junit, pytest xunit1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// How the runner selects this test; [`Selector::Unknown`] when the runner is not known.
    #[serde(default, skip_serializing_if = "Selector::is_unknown")]
    pub select: Selector,
}

/// What a runner's own filter needs to select one test, by runner.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "runner", rename_all = "snake_case")]
pub enum Selector {
    /// pytest: the module file (relative to where pytest runs), the classes it is nested in,
    /// and the function's name with its parametrisation (`test_div[2-0]`).
    Pytest {
        file: String,
        classes: Vec<String>,
        function: String,
    },
    /// cargo-nextest: the binary id (`crate`, `crate::integration_test`, `crate::bin/name`) and
    /// the test's path inside that binary (`module::test`).
    Nextest { binary_id: String, test: String },
    /// `cargo test` (libtest): the test's path inside its test binary.
    Cargo { path: String },
    /// jest: the test file (when the report names it) and the full name jest matches
    /// `--testNamePattern` against (describe titles and the test title, joined by spaces).
    Jest {
        file: Option<String>,
        full_name: String,
    },
    /// vitest: the test file and the name as its JUnit reporter writes it (describe titles and
    /// the test title joined by ` > `).
    Vitest { file: String, name: String },
    /// go test: the package's import path and the test (`TestTable/two` for a subtest).
    Go { package: String, test: String },
    /// No runner known: a report read on its own, a gate without `rerun_failed`, or an id
    /// saved by an older version. Such a test cannot be re-run alone.
    #[default]
    Unknown,
}

impl Selector {
    pub fn is_unknown(&self) -> bool {
        *self == Selector::Unknown
    }

    /// The runner this selector is for, if any.
    pub fn runner(&self) -> Option<TestFilterFormat> {
        match self {
            Selector::Pytest { .. } => Some(TestFilterFormat::Pytest),
            Selector::Nextest { .. } => Some(TestFilterFormat::Nextest),
            Selector::Cargo { .. } => Some(TestFilterFormat::Cargo),
            Selector::Jest { .. } => Some(TestFilterFormat::Jest),
            Selector::Vitest { .. } => Some(TestFilterFormat::Vitest),
            Selector::Go { .. } => Some(TestFilterFormat::Go),
            Selector::Unknown => None,
        }
    }
}

impl TestId {
    /// A test case as a JUnit report wrote it, its runner not known yet.
    pub fn junit(classname: &str, name: &str, file: Option<&str>) -> TestId {
        TestId {
            classname: classname.to_owned(),
            name: name.to_owned(),
            file: file.map(str::to_owned),
            select: Selector::Unknown,
        }
    }

    /// The same test with the selector of `runner`, parsed from the report's attributes.
    /// `exists` answers whether a path (relative to where the runner runs) is a file: pytest's
    /// class name is a dotted module path whose file only the file system knows.
    pub fn typed(mut self, runner: TestFilterFormat, exists: &dyn Fn(&Path) -> bool) -> TestId {
        self.select = selector_of(
            runner,
            &self.classname,
            &self.name,
            self.file.as_deref(),
            exists,
        );
        self
    }

    /// Whether the name already holds the class name, as jest-junit writes it (the full name as
    /// both, or the describe titles then the test title). Only a jest report, or one whose
    /// runner is not known, is read that way: a nextest test `n` in crate `n`, or a pytest
    /// function named like its module, is `n::n`.
    fn name_holds_class(&self) -> bool {
        let jest_shaped = matches!(self.select, Selector::Jest { .. } | Selector::Unknown);
        jest_shaped
            && (self.name == self.classname
                || self
                    .name
                    .strip_prefix(self.classname.as_str())
                    .is_some_and(|rest| rest.starts_with(' ')))
    }

    /// Whether `other` names the same test case (same class name, name and file), whatever
    /// either knows of its runner.
    pub fn same_test(&self, other: &TestId) -> bool {
        self.classname == other.classname && self.name == other.name && self.file == other.file
    }
}

/// The text people, signatures and evaluation suites know a test by: `classname::name`, or the
/// name alone when there is no class name or, in a jest report or one of no known runner, the
/// name already holds it (jest-junit writes the full name as both).
impl fmt::Display for TestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.classname.is_empty() || self.name_holds_class() {
            f.write_str(&self.name)
        } else {
            write!(f, "{}::{}", self.classname, self.name)
        }
    }
}

/// The selector of one test case for `runner`.
fn selector_of(
    runner: TestFilterFormat,
    classname: &str,
    name: &str,
    file: Option<&str>,
    exists: &dyn Fn(&Path) -> bool,
) -> Selector {
    match runner {
        TestFilterFormat::Pytest => pytest(classname, name, file, exists),
        TestFilterFormat::Nextest => Selector::Nextest {
            binary_id: classname.to_owned(),
            test: name.to_owned(),
        },
        TestFilterFormat::Cargo => Selector::Cargo {
            path: libtest_path(classname, name),
        },
        TestFilterFormat::Jest => Selector::Jest {
            file: file.map(str::to_owned),
            full_name: name.strip_prefix(' ').unwrap_or(name).to_owned(),
        },
        TestFilterFormat::Vitest => Selector::Vitest {
            file: file.unwrap_or(classname).to_owned(),
            name: name.to_owned(),
        },
        TestFilterFormat::Go => Selector::Go {
            package: classname.to_owned(),
            test: name.to_owned(),
        },
    }
}

/// pytest writes `tests.sub.test_x.TestThing` (the module path with `/` as `.`, `.py` dropped,
/// then the classes) and the function with its parameters (`test_y[a-b]`). The module file is
/// the report's `file` attribute when it has one (xunit1), else the longest dotted prefix that
/// is a file; when none is, the whole class name is taken for the module.
fn pytest(
    classname: &str,
    name: &str,
    file: Option<&str>,
    exists: &dyn Fn(&Path) -> bool,
) -> Selector {
    let parts: Vec<&str> = classname.split('.').filter(|p| !p.is_empty()).collect();
    let module_len = file
        .and_then(|file| module_parts_of(file, &parts))
        .or_else(|| {
            (1..=parts.len())
                .rev()
                .find(|&split| exists(Path::new(&module_file(&parts[..split]))))
        })
        .unwrap_or(parts.len());
    Selector::Pytest {
        file: module_file(&parts[..module_len]),
        classes: parts[module_len..]
            .iter()
            .map(|p| (*p).to_owned())
            .collect(),
        function: name.to_owned(),
    }
}

/// How many leading parts of the class name the report's `file` (`tests/test_x.py`) spells.
fn module_parts_of(file: &str, parts: &[&str]) -> Option<usize> {
    let module: Vec<&str> = file.strip_suffix(".py")?.split('/').collect();
    (parts.len() >= module.len() && parts[..module.len()] == module[..]).then_some(module.len())
}

fn module_file(parts: &[&str]) -> String {
    format!("{}.py", parts.join("/"))
}

/// libtest's JUnit formatter (`--format junit`) writes a unit test's module path as the class
/// name (`crate` at the top level) and the function as the name; an integration test (or a
/// binary's) as `integration` (`unknown`) and its whole path; a doc test as its file and
/// `item (line N)`. The path is what `--exact` matches.
fn libtest_path(classname: &str, name: &str) -> String {
    match classname {
        "" | "crate" | "integration" | "unknown" => name.to_owned(),
        file if file.ends_with(".rs") => format!("{file} - {name}"),
        module => format!("{module}::{name}"),
    }
}

/// What serde reads: the typed form, or the `classname::name` string older versions wrote.
#[derive(Deserialize)]
#[serde(untagged)]
enum Wire {
    Legacy(String),
    Typed {
        classname: String,
        name: String,
        #[serde(default)]
        file: Option<String>,
        #[serde(default)]
        select: Selector,
    },
}

impl From<Wire> for TestId {
    fn from(wire: Wire) -> TestId {
        match wire {
            // Kept whole, so it shows as it was; it was never typed, so it selects nothing.
            Wire::Legacy(text) => TestId::junit("", &text, None),
            Wire::Typed {
                classname,
                name,
                file,
                select,
            } => TestId {
                classname,
                name,
                file,
                select,
            },
        }
    }
}

#[cfg(test)]
mod tests;
