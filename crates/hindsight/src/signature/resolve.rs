//! Resolving absolute paths against the repository, whatever the runner's path prefix.
//!
//! A log names files by where the checkout was on the machine that wrote it
//! (`/home/runner/work/x/x/src/app.py` on one runner, `/tmp/ci/x/src/app.py` on another). Given
//! the repository's root, an absolute path in a template, location or frame becomes the longest
//! suffix of it that names a file or directory in the repository (`src/app.py`), so the same
//! failure gets the same signature and repository-relative `file:line` frames on every runner,
//! even when the log came from another machine.
//!
//! A path missing from this checkout (a generated file, one the change deleted, one only the
//! runner had) has no suffix to find; it is made repository-relative by stripping the runner's
//! checkout prefix, known two ways: a prefix [`PathResolver::learn`] saw stripped from another
//! path of the same log whose suffix does exist, or a CI workspace layout (GitHub's
//! `…/work/<repo>/<repo>/`, `/__w/<repo>/<repo>/`, `<drive>:\a\<repo>\<repo>\`). Learning
//! runs over every path before any is rewritten, so the answer does not depend on the order the
//! paths come in. Paths into installed packages (site-packages, dist-packages, node_modules, the
//! Cargo registry, the Go module cache, the Python and Rust standard libraries) are left for the
//! normalizer's placeholders, as are paths no rule makes relative.
//!
//! This is the one place of signature extraction that looks at the file system: it only asks
//! whether repository paths exist (no file is opened), each distinct path once.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::{Captures, Regex};

use super::normalize::compile;

/// An absolute Unix path (after a delimiter), or a Windows drive path.
static ABSOLUTE: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r#"(^|[\s"'(\[=,:;<>|`])((?:/|[A-Za-z]:\\)[^\s"'():;,<>|`\]\[]+(?:\\[^\s"'():;,<>|`\]\[]+)*)"#,
    )
});

/// Path parts that mark installed code rather than the repository's own.
const LIBRARY_MARKERS: &[&str] = &[
    "/site-packages/",
    "/dist-packages/",
    "/node_modules/",
    "/.cargo/registry/",
    "/pkg/mod/",
    "/lib/python",
    "/rustc/",
    "/go/src/",
];

/// Directory names under which GitHub's runners place `<repo>/<repo>/` checkouts.
const WORKSPACE_PARENTS: &[&str] = &["work", "__w", "a"];

/// Resolves absolute paths against one repository root, remembering each answer.
#[derive(Debug, Default)]
pub(crate) struct PathResolver {
    root: Option<PathBuf>,
    /// Existing repository suffixes found for a path (`None`: none exists).
    known: RefCell<HashMap<String, Option<String>>>,
    /// Checkout prefixes (Unix form, no trailing `/`) seen stripped from an existing path.
    prefixes: RefCell<BTreeSet<String>>,
}

impl PathResolver {
    /// A resolver for `root`; it changes nothing when `root` is not an existing directory.
    pub fn new(root: Option<&Path>) -> PathResolver {
        PathResolver {
            root: root.filter(|r| r.is_dir()).map(Path::to_owned),
            known: RefCell::default(),
            prefixes: RefCell::default(),
        }
    }

    /// Remembers the checkout prefixes of the absolute paths in `text` that exist in the
    /// repository, so that [`Self::resolve`] can strip them from paths that do not.
    pub fn learn(&self, text: &str) {
        if self.active(text) {
            for caps in ABSOLUTE.captures_iter(text) {
                if let Some(path) = file_path(&caps[2]) {
                    self.existing(path);
                }
            }
        }
    }

    /// `text` with every absolute path that has a suffix in the repository, or a known checkout
    /// prefix, replaced by its repository-relative form.
    pub fn resolve<'t>(&self, text: &'t str) -> Cow<'t, str> {
        if !self.active(text) {
            return Cow::Borrowed(text);
        }
        ABSOLUTE.replace_all(text, |caps: &Captures| {
            let path = &caps[2];
            let Some(trimmed) = file_path(path) else {
                return caps[0].to_owned();
            };
            match self.relative(trimmed) {
                Some(relative) => format!("{}{relative}{}", &caps[1], &path[trimmed.len()..]),
                None => caps[0].to_owned(),
            }
        })
    }

    fn active(&self, text: &str) -> bool {
        self.root.is_some() && (text.contains('/') || text.contains(":\\"))
    }

    /// The repository-relative form of one absolute path, if it has one.
    fn relative(&self, path: &str) -> Option<String> {
        self.existing(path).or_else(|| self.without_prefix(path))
    }

    /// The longest suffix of `path` that exists in the repository (each path asked once); the
    /// prefix it leaves is learned.
    fn existing(&self, path: &str) -> Option<String> {
        if let Some(known) = self.known.borrow().get(path) {
            return known.clone();
        }
        let found = self.lookup(path);
        if let Some((prefix, _)) = &found {
            self.prefixes.borrow_mut().insert(prefix.clone());
        }
        let found = found.map(|(_, suffix)| suffix);
        self.known
            .borrow_mut()
            .insert(path.to_owned(), found.clone());
        found
    }

    /// `(prefix, suffix)` of `path` where `suffix` is the longest that exists in the repository.
    fn lookup(&self, path: &str) -> Option<(String, String)> {
        let root = self.root.as_deref()?;
        let parts = own_parts(path)?;
        let start = usize::from(parts.first().is_some_and(|p| p.ends_with(':')));
        (start..parts.len()).find_map(|from| {
            let suffix = parts[from..].join("/");
            let exists = !parts[from..].iter().any(|p| p == "..") && root.join(&suffix).exists();
            exists.then(|| (parts[..from].join("/"), suffix))
        })
    }

    /// A path missing from the checkout, relative to the longest learned prefix or a CI
    /// workspace layout it starts with.
    fn without_prefix(&self, path: &str) -> Option<String> {
        let parts = own_parts(path)?;
        let prefixes = self.prefixes.borrow();
        let learned = (1..parts.len())
            .rev()
            .find(|&len| prefixes.contains(&parts[..len].join("/")));
        let strip = learned.or_else(|| workspace_layout(&parts))?;
        let rest = &parts[strip..];
        (!rest.is_empty() && !rest.iter().any(|p| p == "..")).then(|| rest.join("/"))
    }
}

/// A path as the regex found it, without the sentence's trailing `.` or `,`; `None` for a URL's
/// `//host/...`.
fn file_path(path: &str) -> Option<&str> {
    (!path.starts_with("//")).then(|| path.trim_end_matches(['.', ',']))
}

/// The components of an absolute path (Unix form), or `None` for installed code.
fn own_parts(path: &str) -> Option<Vec<String>> {
    let unix = path.replace('\\', "/");
    if LIBRARY_MARKERS.iter().any(|marker| unix.contains(marker)) {
        return None;
    }
    Some(
        unix.split('/')
            .filter(|p| !p.is_empty() && *p != ".")
            .map(str::to_owned)
            .collect(),
    )
}

/// How many leading components are a GitHub runner's checkout: `<parent>/<repo>/<repo>` with
/// `<parent>` one of [`WORKSPACE_PARENTS`] (`/home/runner/work/x/x`, `/__w/x/x`, `D:/a/x/x`).
fn workspace_layout(parts: &[String]) -> Option<usize> {
    (0..parts.len().saturating_sub(3)).find_map(|at| {
        let parent = parts[at].as_str();
        let drive_root = parent == "a" && at == 1 && parts[0].ends_with(':');
        let named = parent != "a" && WORKSPACE_PARENTS.contains(&parent);
        ((named || drive_root) && parts[at + 1] == parts[at + 2]).then_some(at + 3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/pkg")).unwrap();
        std::fs::write(dir.path().join("src/pkg/app.py"), "").unwrap();
        std::fs::write(dir.path().join("app.py"), "").unwrap();
        dir
    }

    #[test]
    fn any_runner_prefix_becomes_repository_relative() {
        let dir = repo();
        let resolver = PathResolver::new(Some(dir.path()));
        for prefix in [
            "/home/runner/work/x/x",
            "/tmp/ci/x",
            "/__w/x/x",
            "/builds/group/x",
        ] {
            let text = format!(r#"File "{prefix}/src/pkg/app.py", line 3, in main"#);
            assert_eq!(
                resolver.resolve(&text),
                r#"File "src/pkg/app.py", line 3, in main"#,
                "{prefix}"
            );
        }
        assert_eq!(
            resolver.resolve(r"at D:\a\x\x\src\pkg\app.py:3"),
            "at src/pkg/app.py:3"
        );
        assert_eq!(
            resolver.resolve("/elsewhere/app.py:9: in f."),
            "app.py:9: in f.",
            "the longest suffix that exists, here the root's app.py"
        );
    }

    #[test]
    fn installed_code_and_unknown_paths_are_left_alone() {
        let dir = repo();
        let resolver = PathResolver::new(Some(dir.path()));
        for text in [
            "/venv/lib/python3.11/site-packages/src/pkg/app.py:4",
            "/usr/lib/python3.11/json/decoder.py:355",
            "/home/runner/mine/x/src/pkg/missing.py",
            "no paths here",
            "see https://example.com/x/app.py",
        ] {
            assert_eq!(resolver.resolve(text), text);
        }
        let inactive = PathResolver::new(Some(Path::new("/no/such/checkout")));
        assert_eq!(inactive.resolve("/tmp/ci/x/app.py"), "/tmp/ci/x/app.py");
    }

    #[test]
    fn a_missing_path_loses_a_prefix_learned_from_an_existing_one_in_any_order() {
        let dir = repo();
        let log = [
            "/tmp/ci/x/build/generated.py:4 in load",
            "/tmp/ci/x/src/pkg/app.py:3 in main",
        ];
        let resolver = PathResolver::new(Some(dir.path()));
        for line in log {
            resolver.learn(line);
        }
        assert_eq!(resolver.resolve(log[0]), "build/generated.py:4 in load");
        assert_eq!(resolver.resolve(log[1]), "src/pkg/app.py:3 in main");
        let unlearned = PathResolver::new(Some(dir.path()));
        assert_eq!(
            unlearned.resolve(log[0]),
            log[0],
            "no existing path showed the prefix"
        );
    }

    #[test]
    fn github_workspace_layouts_are_stripped_from_missing_paths() {
        let dir = repo();
        let resolver = PathResolver::new(Some(dir.path()));
        for text in [
            "/home/runner/work/repo/repo/gen/x.py:7",
            "/Users/runner/work/repo/repo/gen/x.py:7",
            "/__w/repo/repo/gen/x.py:7",
            r"D:\a\repo\repo\gen\x.py:7",
        ] {
            assert_eq!(resolver.resolve(text), "gen/x.py:7", "{text}");
        }
        assert_eq!(
            resolver.resolve("/home/runner/work/repo/other/gen/x.py:7"),
            "/home/runner/work/repo/other/gen/x.py:7",
            "not a <repo>/<repo> checkout"
        );
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        fn segment() -> impl Strategy<Value = String> {
            "[a-z][a-z0-9_]{0,7}"
        }

        proptest! {
            /// The same log written on two runners (any two checkout prefixes) resolves to the
            /// same text, with no trace of either prefix, for files in the checkout and missing
            /// from it alike, whatever the order of the lines.
            #[test]
            fn two_runners_one_resolution(
                first in prop::collection::vec(segment(), 1..5),
                second in prop::collection::vec(segment(), 1..5),
                missing in prop::collection::vec((segment(), segment()), 1..4),
                line in 1u32..9999,
                reversed: bool,
            ) {
                // A checkout under a library's place (`/go/src/`, `/lib/python…`) is read as
                // installed code on purpose; such prefixes are not two runners' checkouts.
                for prefix in [&first, &second] {
                    let path = format!("/{}/src/pkg/app.py", prefix.join("/"));
                    prop_assume!(!LIBRARY_MARKERS.iter().any(|m| path.contains(m)));
                }
                let dir = repo();
                let mut relative = vec!["src/pkg/app.py".to_owned()];
                relative.extend(missing.iter().map(|(d, f)| format!("zz_{d}/gen_{f}.py")));
                let mut resolved = Vec::new();
                for prefix in [&first, &second] {
                    let prefix = format!("/{}", prefix.join("/"));
                    let mut lines: Vec<String> = relative
                        .iter()
                        .map(|rel| format!("  File \"{prefix}/{rel}\", line {line}, in f"))
                        .collect();
                    if reversed {
                        lines.reverse();
                    }
                    let resolver = PathResolver::new(Some(dir.path()));
                    lines.iter().for_each(|l| resolver.learn(l));
                    let mut out: Vec<String> =
                        lines.iter().map(|l| resolver.resolve(l).into_owned()).collect();
                    out.sort();
                    for text in &out {
                        prop_assert!(!text.contains(&format!("\"{prefix}/")), "{}", text);
                    }
                    resolved.push(out);
                }
                prop_assert_eq!(&resolved[0], &resolved[1]);
                let mut expected: Vec<String> = relative
                    .iter()
                    .map(|rel| format!("  File \"{rel}\", line {line}, in f"))
                    .collect();
                expected.sort();
                prop_assert_eq!(&resolved[0], &expected);
            }
        }
    }
}
