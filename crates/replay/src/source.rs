//! Where a recorded run is read from: a run's directory (a session's, or the artifact a GitHub
//! run uploads, unpacked), the artifact's zip as GitHub serves it, or a trace file itself. Only
//! `trace.jsonl` is read; a zip is unpacked in memory with a cap (zip bombs) and paths that
//! climb out skipped (the GitHub layer's unpacker).

use std::path::Path;

use super::ReplayError;
use meta_agent_telemetry::{TraceEntry, read_trace};

/// The trace file's name in a run's directory and in its artifact.
pub const TRACE_FILE: &str = "trace.jsonl";

/// The most a zip may unpack to.
const ZIP_CAP: usize = 512 * 1024 * 1024;

/// The trace of the run at `path` (a directory, a zip, or the trace file).
pub fn load(path: &Path) -> Result<Vec<TraceEntry>, ReplayError> {
    let text = trace_text(path)?;
    read_trace(&text).map_err(|source| ReplayError::Trace {
        path: path.to_owned(),
        source,
    })
}

fn trace_text(path: &Path) -> Result<String, ReplayError> {
    let unreadable = |source| ReplayError::Read {
        path: path.to_owned(),
        source,
    };
    if path.is_dir() {
        let file = path.join(TRACE_FILE);
        if !file.is_file() {
            return Err(ReplayError::NoTrace {
                path: path.to_owned(),
            });
        }
        return std::fs::read_to_string(&file)
            .map_err(|source| ReplayError::Read { path: file, source });
    }
    let bytes = std::fs::read(path).map_err(unreadable)?;
    if bytes.starts_with(b"PK\x03\x04") || bytes.starts_with(b"PK\x05\x06") {
        return from_zip(path, &bytes);
    }
    String::from_utf8(bytes).map_err(|_| ReplayError::Archive {
        path: path.to_owned(),
        message: "neither a zip nor a UTF-8 trace".into(),
    })
}

/// The `trace.jsonl` of an artifact's zip (at its root or in one folder).
fn from_zip(path: &Path, bytes: &[u8]) -> Result<String, ReplayError> {
    let files =
        meta_agent_github::unzip(bytes, ZIP_CAP, &path.display().to_string()).map_err(|error| {
            ReplayError::Archive {
                path: path.to_owned(),
                message: error.to_string(),
            }
        })?;
    let (_, contents) = files
        .into_iter()
        .filter(|(name, _)| name == TRACE_FILE || name.ends_with(&format!("/{TRACE_FILE}")))
        .min_by_key(|(name, _)| name.len())
        .ok_or_else(|| ReplayError::NoTrace {
            path: path.to_owned(),
        })?;
    String::from_utf8(contents).map_err(|_| ReplayError::Archive {
        path: path.to_owned(),
        message: format!("{TRACE_FILE} is not UTF-8"),
    })
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    const LINE: &str =
        r#"{"time":"2026-11-22T02:29:08.007Z","seq":0,"event":"flaky_test","test":"t"}"#;

    fn zipped(name: &str, text: &str) -> Vec<u8> {
        let mut out = std::io::Cursor::new(Vec::new());
        let mut zip = zip::ZipWriter::new(&mut out);
        zip.start_file(name, zip::write::SimpleFileOptions::default())
            .unwrap();
        zip.write_all(text.as_bytes()).unwrap();
        zip.finish().unwrap();
        out.into_inner()
    }

    #[test]
    fn reads_a_directory_a_zip_and_the_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(TRACE_FILE), LINE).unwrap();
        assert_eq!(load(dir.path()).unwrap().len(), 1);
        assert_eq!(load(&dir.path().join(TRACE_FILE)).unwrap().len(), 1);
        let zip = dir.path().join("meta-agent-results.zip");
        std::fs::write(&zip, zipped("meta-agent-results/trace.jsonl", LINE)).unwrap();
        assert_eq!(load(&zip).unwrap().len(), 1);
    }

    #[test]
    fn says_what_is_missing_and_where() {
        let dir = tempfile::tempdir().unwrap();
        let error = load(dir.path()).unwrap_err().to_string();
        assert_eq!(
            error,
            format!("no {TRACE_FILE} in {}", dir.path().display())
        );
        let zip = dir.path().join("a.zip");
        std::fs::write(&zip, zipped("report.md", "hello")).unwrap();
        let error = load(&zip).unwrap_err().to_string();
        assert_eq!(error, format!("no {TRACE_FILE} in {}", zip.display()));
        let climbing = dir.path().join("b.zip");
        std::fs::write(&climbing, zipped("../trace.jsonl", LINE)).unwrap();
        assert!(load(&climbing).is_err());
    }
}
