//! Resolving absolute paths against the repository, whatever the runner's path prefix.
//!
//! A log names files by where the checkout was on the machine that wrote it
//! (`/home/runner/work/x/x/src/app.py` on one runner, `/tmp/ci/x/src/app.py` on another). Given
//! the repository's root, an absolute path in a template, location or frame becomes the longest
//! suffix of it that names a file or directory in the repository (`src/app.py`), so the same
//! failure gets the same signature and repository-relative `file:line` frames on every runner,
//! even when the log came from another machine. Paths into installed packages (site-packages,
//! dist-packages, node_modules, the Cargo registry, the Go module cache, the Python and Rust
//! standard libraries) are left for the normalizer's placeholders, as are paths with no suffix in
//! the repository.
//!
//! This is the one place of signature extraction that looks at the file system: it only asks
//! whether repository paths exist (no file is opened), each distinct path once.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;
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

/// Resolves absolute paths against one repository root, remembering each answer.
#[derive(Debug, Default)]
pub(crate) struct PathResolver {
    root: Option<PathBuf>,
    known: RefCell<HashMap<String, Option<String>>>,
}

impl PathResolver {
    /// A resolver for `root`; it changes nothing when `root` is not an existing directory.
    pub fn new(root: Option<&Path>) -> PathResolver {
        PathResolver {
            root: root.filter(|r| r.is_dir()).map(Path::to_owned),
            known: RefCell::default(),
        }
    }

    /// `text` with every absolute path that has a suffix in the repository replaced by it.
    pub fn resolve<'t>(&self, text: &'t str) -> Cow<'t, str> {
        if self.root.is_none() || !(text.contains('/') || text.contains(":\\")) {
            return Cow::Borrowed(text);
        }
        ABSOLUTE.replace_all(text, |caps: &Captures| {
            let path = &caps[2];
            if path.starts_with("//") {
                return caps[0].to_owned(); // a URL's `//host/...`, not a file
            }
            let trimmed = path.trim_end_matches(['.', ',']);
            match self.relative(trimmed) {
                Some(relative) => format!("{}{relative}{}", &caps[1], &path[trimmed.len()..]),
                None => caps[0].to_owned(),
            }
        })
    }

    /// The repository-relative form of one absolute path, if it has one.
    fn relative(&self, path: &str) -> Option<String> {
        if let Some(known) = self.known.borrow().get(path) {
            return known.clone();
        }
        let found = self.lookup(path);
        self.known
            .borrow_mut()
            .insert(path.to_owned(), found.clone());
        found
    }

    fn lookup(&self, path: &str) -> Option<String> {
        let root = self.root.as_deref()?;
        let unix = path.replace('\\', "/");
        if LIBRARY_MARKERS.iter().any(|marker| unix.contains(marker)) {
            return None;
        }
        let parts: Vec<&str> = unix
            .split('/')
            .filter(|p| !p.is_empty() && *p != ".")
            .collect();
        let start = usize::from(unix.contains(":/"));
        (start..parts.len())
            .map(|from| parts[from..].join("/"))
            .find(|suffix| !suffix.split('/').any(|p| p == "..") && root.join(suffix).exists())
    }
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
            "/home/runner/work/x/x/src/pkg/missing.py",
            "no paths here",
            "see https://example.com/x/app.py",
        ] {
            assert_eq!(resolver.resolve(text), text);
        }
        let inactive = PathResolver::new(Some(Path::new("/no/such/checkout")));
        assert_eq!(inactive.resolve("/tmp/ci/x/app.py"), "/tmp/ci/x/app.py");
    }
}
