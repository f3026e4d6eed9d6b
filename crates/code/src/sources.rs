//! The repository's files as the readers see them: read beneath the root without following a
//! link ([`Beneath`]), at most [`MAX_FILE_BYTES`] each and [`MAX_PARSED`] in all, parsed once
//! and kept. A file that cannot be read or parsed is simply not there for the resolver (the
//! reason goes to the debug log): a prompt loses an excerpt, never the run.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use super::CodeError;
use super::parsed::Parsed;
use meta_agent_fsafe::{Beneath, EntryKind};

/// Source files larger than this are not read.
pub const MAX_FILE_BYTES: u64 = 512 * 1024;
/// Files parsed at most by one [`Sources`].
pub const MAX_PARSED: usize = 96;
/// Entries listed at most per directory.
const MAX_LISTED: usize = 400;

/// The files of one repository, read and parsed on demand.
pub struct Sources {
    beneath: Option<Beneath>,
    parsed: HashMap<String, Option<Arc<Parsed>>>,
    kinds: HashMap<String, Option<EntryKind>>,
}

impl std::fmt::Debug for Sources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sources")
            .field("parsed", &self.parsed.len())
            .finish_non_exhaustive()
    }
}

impl Sources {
    /// The files under `root` (nothing is readable if `root` cannot be opened).
    pub fn new(root: &Path) -> Sources {
        let beneath = Beneath::open(root)
            .inspect_err(|err| tracing::debug!("code: {err}"))
            .ok();
        Sources {
            beneath,
            parsed: HashMap::new(),
            kinds: HashMap::new(),
        }
    }

    /// Whether `path` is a regular file (not a link).
    pub fn is_file(&mut self, path: &str) -> bool {
        self.kind(path) == Some(EntryKind::File)
    }

    /// Whether `path` is a directory (not a link).
    pub fn is_dir(&mut self, path: &str) -> bool {
        path.is_empty() || self.kind(path) == Some(EntryKind::Directory)
    }

    fn kind(&mut self, path: &str) -> Option<EntryKind> {
        if let Some(kind) = self.kinds.get(path) {
            return *kind;
        }
        let kind = self
            .beneath
            .as_ref()
            .and_then(|b| b.kind(Path::new(path)).ok().flatten());
        self.kinds.insert(path.to_owned(), kind);
        kind
    }

    /// The text of a regular file of at most `MAX_FILE_BYTES`.
    pub fn read(&self, path: &str) -> Result<String, CodeError> {
        let Some(beneath) = &self.beneath else {
            return Err(CodeError::NotSource {
                path: path.to_owned(),
            });
        };
        let bytes = beneath.read(Path::new(path), MAX_FILE_BYTES)?;
        String::from_utf8(bytes).map_err(|_| CodeError::NotText {
            path: path.to_owned(),
        })
    }

    /// `path` parsed, once; `None` when it is not a readable source file.
    pub fn parse(&mut self, path: &str) -> Option<Arc<Parsed>> {
        if let Some(parsed) = self.parsed.get(path) {
            return parsed.clone();
        }
        if self.parsed.len() >= MAX_PARSED {
            return None;
        }
        let parsed = self.load(path).map(Arc::new);
        if let Err(err) = &parsed {
            tracing::debug!("code: {err}");
        }
        let parsed = parsed.ok();
        self.parsed.insert(path.to_owned(), parsed.clone());
        parsed
    }

    fn load(&mut self, path: &str) -> Result<Parsed, CodeError> {
        let lang = super::code_lang(path).ok_or_else(|| CodeError::NotSource {
            path: path.to_owned(),
        })?;
        let text = self.read(path)?;
        Parsed::new(path, lang, text)
    }

    /// The regular files directly in `dir` (`""` is the root), sorted.
    pub fn list(&mut self, dir: &str) -> Vec<String> {
        if !self.is_dir(dir) {
            return Vec::new();
        }
        let Some(beneath) = &self.beneath else {
            return Vec::new();
        };
        let Ok(entries) = std::fs::read_dir(beneath.root().join(dir)) else {
            return Vec::new();
        };
        let mut names: Vec<String> = entries
            .take(MAX_LISTED)
            .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
            .map(|name| join(dir, &name))
            .collect();
        names.sort();
        names.retain(|path| self.is_file(path));
        names
    }
}

/// `dir/name`, or `name` at the root.
pub fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}

/// The directory of a repository-relative path (`""` at the root).
pub fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}

/// `path` with `.` and `..` components folded; `None` when it climbs out of the root.
pub fn normal(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            other => parts.push(other),
        }
    }
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_fold_and_never_climb_out() {
        assert_eq!(normal("tests/../src/./a.ts").as_deref(), Some("src/a.ts"));
        assert_eq!(normal("../a.ts"), None);
        assert_eq!(parent("src/a.ts"), "src");
        assert_eq!(parent("a.ts"), "");
        assert_eq!(join("", "a.ts"), "a.ts");
    }

    #[test]
    fn a_link_is_not_a_file_and_a_stub_is_not_parsed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("real.py"), "def f():\n    pass\n").unwrap();
        std::fs::write(dir.path().join("real.pyi"), "def f() -> None: ...\n").unwrap();
        std::os::unix::fs::symlink(dir.path().join("real.py"), dir.path().join("link.py")).unwrap();
        let mut files = Sources::new(dir.path());
        assert!(files.is_file("real.py"));
        assert!(!files.is_file("link.py"));
        assert!(files.parse("link.py").is_none());
        assert!(files.parse("real.pyi").is_none());
        assert!(files.parse("real.py").is_some());
        assert_eq!(files.list(""), ["real.py", "real.pyi"]);
    }
}
