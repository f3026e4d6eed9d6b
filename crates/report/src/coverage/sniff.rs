//! Tells lcov from Cobertura by the first bytes of a file, and refuses what is neither (an empty
//! file, JSON, plain text). Reads only the start of the file and rewinds it; does not validate
//! the rest.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use super::CoverageFormat;
use crate::ReportError;

const EXPECTED: &str = "coverage (lcov or Cobertura)";
/// How many leading bytes are looked at once whitespace is skipped.
const PEEK: usize = 512;

/// Detects the format of `file` from its first non-blank bytes, then rewinds it.
pub(super) fn detect(path: &Path, file: &mut File) -> Result<CoverageFormat, ReportError> {
    let head = first_content(path, file)?;
    file.seek(SeekFrom::Start(0))
        .map_err(|source| ReportError::Io {
            path: path.to_owned(),
            source,
        })?;
    classify(&head).ok_or_else(|| ReportError::WrongFormat {
        path: path.to_owned(),
        expected: EXPECTED,
        found: describe(&head),
    })
}

/// Up to [`PEEK`] bytes starting at the first byte that is not whitespace or a byte-order mark.
fn first_content(path: &Path, file: &mut File) -> Result<Vec<u8>, ReportError> {
    let mut head = Vec::with_capacity(PEEK);
    let mut chunk = [0u8; 8 * 1024];
    loop {
        let n = file.read(&mut chunk).map_err(|source| ReportError::Io {
            path: path.to_owned(),
            source,
        })?;
        if n == 0 {
            break;
        }
        let bytes = if head.is_empty() {
            skip_blank(&chunk[..n])
        } else {
            &chunk[..n]
        };
        let room = PEEK - head.len();
        head.extend_from_slice(&bytes[..bytes.len().min(room)]);
        if head.len() == PEEK {
            break;
        }
    }
    if head.is_empty() {
        return Err(ReportError::Empty {
            path: path.to_owned(),
            expected: EXPECTED,
        });
    }
    Ok(head)
}

fn skip_blank(bytes: &[u8]) -> &[u8] {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let start = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(bytes.len());
    &bytes[start..]
}

fn classify(head: &[u8]) -> Option<CoverageFormat> {
    if head.starts_with(b"<") {
        return Some(CoverageFormat::Cobertura);
    }
    looks_like_lcov(head).then_some(CoverageFormat::Lcov)
}

/// An lcov file starts with a `KEY:` line (`TN:`, `SF:`, `VER:`...) or `end_of_record`.
fn looks_like_lcov(head: &[u8]) -> bool {
    if head.starts_with(b"end_of_record") {
        return true;
    }
    let key_len = head
        .iter()
        .take_while(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || **b == b'_')
        .count();
    key_len > 0 && head.get(key_len) == Some(&b':')
}

fn describe(head: &[u8]) -> String {
    match head.first() {
        Some(b'{' | b'[') => "a JSON document".to_owned(),
        _ => {
            let line = head.split(|b| *b == b'\n').next().unwrap_or_default();
            let shown = String::from_utf8_lossy(&line[..line.len().min(60)]);
            format!("text starting with {:?}", shown.trim_end())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_by_content() {
        assert_eq!(classify(b"TN:\nSF:a"), Some(CoverageFormat::Lcov));
        assert_eq!(classify(b"SF:/x/y.rs\n"), Some(CoverageFormat::Lcov));
        assert_eq!(classify(b"<?xml version"), Some(CoverageFormat::Cobertura));
        assert_eq!(classify(b"{\"runs\": []}"), None);
        assert_eq!(classify(b"hello: world"), None);
        assert_eq!(skip_blank(b"\xEF\xBB\xBF \n TN:"), b"TN:");
    }
}
