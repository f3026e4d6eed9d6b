//! Each runner's own way of selecting tests, from typed [`TestId`]s, and the check that a re-run
//! ran exactly what it selected.
//!
//! `{tests}` in a gate's `rerun_failed.run` becomes (by [`TestFilterFormat`]):
//! - pytest: one node id per test, `tests/test_x.py::TestA::test_y[1-2]`;
//! - nextest: one filterset, `(binary_id(=crate::it) & test(=m::t)) | ...`, every character
//!   outside `[A-Za-z0-9_:]` written as a `\u{..}` escape so no test name can end a matcher;
//! - cargo (libtest): one test path per argument, for `-- --exact`;
//! - jest: one full-name pattern `^(?: ?a| ?b)$`, then each file as a path pattern
//!   (`/a\.test\.js$`);
//! - vitest: one full-name pattern (its JUnit ` > ` between titles matches the space vitest
//!   joins them with, or a ` > ` inside a title), then each file;
//! - go: one `-run` expression, each test's levels `^TestA$/^sub$` joined by `|` (which go
//!   splits at the top level), then each package.
//!
//! Name patterns match more than the names asked for only in corner cases (jest matches names
//! case-insensitively, vitest takes files by substring), so nothing here is trusted blindly: a
//! re-run is judged only when the tests it ran are exactly the tests it selected ([`check`]).
//! Anything else is a harness problem, never a verdict on the code. Pure: no I/O.

use std::collections::BTreeSet;
use std::fmt;

use meta_agent_config::raw::TestFilterFormat;
use meta_agent_protocol::test_id::{Selector, TestId};
use meta_agent_report::{TestOutcome, TestStatus};

/// Why failing tests cannot be re-run alone (the gate then runs whole).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unselectable {
    #[error("no failing test to select")]
    Nothing,
    #[error(
        "`{test}` was not read as a {runner:?} test (its runner is not known), so it cannot be selected"
    )]
    NotTyped {
        test: String,
        runner: TestFilterFormat,
    },
}

/// The arguments `{tests}` becomes for `format`, selecting exactly `tests`.
pub fn arguments(format: TestFilterFormat, tests: &[TestId]) -> Result<Vec<String>, Unselectable> {
    if tests.is_empty() {
        return Err(Unselectable::Nothing);
    }
    if let Some(other) = tests.iter().find(|t| t.select.runner() != Some(format)) {
        return Err(Unselectable::NotTyped {
            test: other.to_string(),
            runner: format,
        });
    }
    let selectors: Vec<&Selector> = tests.iter().map(|t| &t.select).collect();
    Ok(match format {
        TestFilterFormat::Pytest => selectors.iter().filter_map(|s| pytest_node_id(s)).collect(),
        TestFilterFormat::Nextest => vec![nextest_filterset(&selectors)],
        TestFilterFormat::Cargo => selectors.iter().filter_map(|s| libtest_path(s)).collect(),
        TestFilterFormat::Jest => name_pattern_then_files(&selectors, jest_parts),
        TestFilterFormat::Vitest => name_pattern_then_files(&selectors, vitest_parts),
        TestFilterFormat::Go => go_run(&selectors),
    })
}

/// pytest's node id: `file::Class::Inner::function[params]`.
pub fn pytest_node_id(selector: &Selector) -> Option<String> {
    let Selector::Pytest {
        file,
        classes,
        function,
    } = selector
    else {
        return None;
    };
    let mut parts = vec![file.as_str()];
    parts.extend(classes.iter().map(String::as_str));
    parts.push(function);
    Some(parts.join("::"))
}

fn libtest_path(selector: &Selector) -> Option<String> {
    match selector {
        Selector::Cargo { path } => Some(path.clone()),
        _ => None,
    }
}

/// `(binary_id(=B) & test(=T)) | ...`, one term per test.
fn nextest_filterset(selectors: &[&Selector]) -> String {
    let terms: Vec<String> = selectors
        .iter()
        .filter_map(|selector| match selector {
            Selector::Nextest { binary_id, test } => Some(format!(
                "(binary_id(={}) & test(={}))",
                nextest_string(binary_id),
                nextest_string(test)
            )),
            _ => None,
        })
        .collect();
    terms.join(" | ")
}

/// A filterset string: `\u{..}` for every character but ASCII letters, digits, `_` and `:`
/// (nextest's parser reads the escape inside any matcher; `)` or `,` would end it).
pub fn nextest_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == ':' {
            out.push(c);
        } else {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        }
    }
    out
}

/// What one jest or vitest test contributes: its full-name pattern and its file.
type NameAndFile = (String, Option<String>);

fn jest_parts(selector: &Selector) -> Option<NameAndFile> {
    match selector {
        // A space may lead: jest-junit writes none before a first describe title, and a full
        // name read from a report cannot tell a leading space of that title from none.
        Selector::Jest { file, full_name } => Some((
            format!(" ?{}", js_escape(full_name)),
            file.as_ref().map(|f| format!("/{}$", js_escape(f))),
        )),
        _ => None,
    }
}

fn vitest_parts(selector: &Selector) -> Option<NameAndFile> {
    match selector {
        Selector::Vitest { file, name } => {
            let titles: Vec<String> = name.split(" > ").map(js_escape).collect();
            Some((titles.join("(?: > | )"), Some(file.clone())))
        }
        _ => None,
    }
}

/// `^(?:a|b)$` then the distinct files.
fn name_pattern_then_files(
    selectors: &[&Selector],
    parts: fn(&Selector) -> Option<NameAndFile>,
) -> Vec<String> {
    let (names, files): (Vec<String>, Vec<Option<String>>) =
        selectors.iter().filter_map(|s| parts(s)).unzip();
    let files: BTreeSet<String> = files.into_iter().flatten().collect();
    let mut args = vec![format!("^(?:{})$", names.join("|"))];
    args.extend(files);
    args
}

/// A JavaScript regular expression matching `text` literally.
pub fn js_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\^$.*+?()[]{}|/".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// go's `-run`: `^A$|^B$/^sub$` (go splits at a top-level `|` into alternatives and each at `/`
/// into levels), then the distinct packages. A parent whose subtest is selected too is left to
/// that subtest (go reports a parent as failed when a subtest fails; selecting the parent alone
/// would run every subtest it has).
fn go_run(selectors: &[&Selector]) -> Vec<String> {
    let tests: Vec<(&String, &String)> = selectors
        .iter()
        .filter_map(|selector| match selector {
            Selector::Go { package, test } => Some((package, test)),
            _ => None,
        })
        .collect();
    let mut alternatives = Vec::new();
    let mut packages = BTreeSet::new();
    for (package, test) in &tests {
        packages.insert((*package).clone());
        let parent_of_another = tests.iter().any(|(other_package, other)| {
            other_package == package
                && other
                    .strip_prefix(test.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
        });
        if parent_of_another {
            continue;
        }
        let levels: Vec<String> = test
            .split('/')
            .map(|level| format!("^{}$", regex::escape(level)))
            .collect();
        alternatives.push(levels.join("/"));
    }
    let mut args = vec![alternatives.join("|")];
    args.extend(packages);
    args
}

/// How a re-run's tests differed from what it selected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectionMismatch {
    pub selected: usize,
    /// Selected tests the re-run did not run (or only skipped).
    pub missing: Vec<String>,
    /// Tests the re-run ran that were not selected.
    pub extra: Vec<String>,
    /// The report held more test cases than were kept, so what ran is not known.
    pub unknown: bool,
}

/// Tests named in a mismatch, at most.
const NAMED: usize = 3;

impl fmt::Display for SelectionMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.unknown {
            return write!(
                f,
                "the re-run reported more tests than can be checked against the {} selected",
                self.selected
            );
        }
        let found = self.selected - self.missing.len();
        write!(
            f,
            "the re-run filter selected {found} of the {} failing test(s)",
            self.selected
        )?;
        if !self.missing.is_empty() {
            write!(f, "; not run: {}", named(&self.missing))?;
        }
        if !self.extra.is_empty() {
            write!(
                f,
                "; ran {} other(s): {}",
                self.extra.len(),
                named(&self.extra)
            )?;
        }
        Ok(())
    }
}

fn named(tests: &[String]) -> String {
    let shown: Vec<String> = tests.iter().take(NAMED).map(|t| format!("`{t}`")).collect();
    match tests.len().saturating_sub(NAMED) {
        0 => shown.join(", "),
        more => format!("{} and {more} more", shown.join(", ")),
    }
}

/// Whether a re-run ran exactly the `selected` tests: every one of them, run (not skipped),
/// and nothing else. `outcomes` are every test case of the re-run's report; `omitted` counts
/// the cases not kept.
pub fn check(
    selected: &[TestId],
    outcomes: &[TestOutcome],
    omitted: u64,
) -> Result<(), SelectionMismatch> {
    let ran: Vec<&TestId> = outcomes
        .iter()
        .filter(|o| o.status != TestStatus::Skipped)
        .map(|o| &o.id)
        .collect();
    let missing: Vec<String> = selected
        .iter()
        .filter(|want| !ran.iter().any(|got| got.same_test(want)))
        .map(ToString::to_string)
        .collect();
    let extra: Vec<String> = ran
        .iter()
        .filter(|got| !selected.iter().any(|want| want.same_test(got)))
        .map(ToString::to_string)
        .collect();
    if missing.is_empty() && extra.is_empty() && omitted == 0 {
        return Ok(());
    }
    Err(SelectionMismatch {
        selected: selected.len(),
        missing,
        extra,
        unknown: omitted > 0,
    })
}

#[cfg(test)]
mod tests;
