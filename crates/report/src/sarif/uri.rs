//! Turns a SARIF artifact URI into the path a person reads: `file://` and `%SRCROOT%`-style
//! prefixes stripped, percent-escapes decoded, and made relative to the run's base directory when
//! the log says what that is. Pure string work; touches no file system.

use std::collections::HashMap;

/// The run's `originalUriBaseIds`: base id to the URI it stands for.
pub(super) type UriBases = HashMap<String, String>;

/// The display path of `uri`, which is relative to `base_id` when that is given.
pub(super) fn display_path(uri: &str, base_id: Option<&str>, bases: &UriBases) -> String {
    let path = decode_percent(strip_scheme(strip_variable(uri)));
    let relative = relative_to_bases(&path, base_id, bases).unwrap_or(path);
    let relative = relative.strip_prefix("./").unwrap_or(&relative);
    if base_id.is_some() {
        return relative.trim_start_matches('/').to_owned();
    }
    relative.to_owned()
}

/// `%SRCROOT%/src/a.rs` → `src/a.rs`.
fn strip_variable(uri: &str) -> &str {
    let Some(rest) = uri.strip_prefix('%') else {
        return uri;
    };
    match rest.split_once('%') {
        Some((name, tail)) if !name.is_empty() && !name.contains('/') => {
            tail.trim_start_matches('/')
        }
        _ => uri,
    }
}

/// `file:///home/a/x.py` → `/home/a/x.py`; `file://host/x` → `/x`; `file:///C:/x` → `C:/x`.
fn strip_scheme(uri: &str) -> &str {
    let Some(rest) = uri
        .strip_prefix("file://")
        .or_else(|| uri.strip_prefix("file:"))
    else {
        return uri;
    };
    let path = match rest.find('/') {
        Some(0) | None => rest,
        Some(slash) => &rest[slash..],
    };
    let bytes = path.as_bytes();
    let windows_drive = bytes.len() > 2 && bytes[0] == b'/' && bytes[2] == b':';
    if windows_drive && bytes[1].is_ascii_alphabetic() {
        return &path[1..];
    }
    path
}

/// Decodes `%XX` escapes; a malformed escape is kept as written.
fn decode_percent(text: &str) -> String {
    if !text.contains('%') {
        return text.to_owned();
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%')
            .then(|| bytes.get(i + 1..i + 3))
            .flatten()
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `path` relative to the directory of `base_id` (or of any base when there is none), when it
/// lies inside it.
fn relative_to_bases(path: &str, base_id: Option<&str>, bases: &UriBases) -> Option<String> {
    if !path.starts_with('/') {
        return None;
    }
    let candidates: Vec<&String> = match base_id {
        Some(id) => bases.get(id).into_iter().collect(),
        None => bases.values().collect(),
    };
    candidates.into_iter().find_map(|base| {
        let base = decode_percent(strip_scheme(base));
        let base = base.trim_end_matches('/');
        if base.is_empty() {
            return None;
        }
        path.strip_prefix(base)
            .and_then(|rest| rest.strip_prefix('/'))
            .map(str::to_owned)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bases(pairs: &[(&str, &str)]) -> UriBases {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn strips_schemes_and_variables() {
        let none = UriBases::new();
        assert_eq!(
            display_path("file:///home/a/x.py", None, &none),
            "/home/a/x.py"
        );
        assert_eq!(display_path("%SRCROOT%/src/a.rs", None, &none), "src/a.rs");
        assert_eq!(
            display_path("src/a%20b.rs", Some("SRCROOT"), &none),
            "src/a b.rs"
        );
        assert_eq!(display_path("file:///C:/w/a.cs", None, &none), "C:/w/a.cs");
        assert_eq!(display_path("./lib/x.js", None, &none), "lib/x.js");
    }

    #[test]
    fn makes_absolute_uris_relative_to_the_run_base() {
        let b = bases(&[("SRCROOT", "file:///work/proj/")]);
        assert_eq!(
            display_path("file:///work/proj/src/a.rs", None, &b),
            "src/a.rs"
        );
        assert_eq!(display_path("/elsewhere/a.rs", None, &b), "/elsewhere/a.rs");
        assert_eq!(display_path("src/a.rs", Some("SRCROOT"), &b), "src/a.rs");
    }
}
