//! Error signatures: turn what gates produce into stable, comparable failure identities.
//!
//! Inputs: JUnit ([`from_junit`]), SARIF ([`from_sarif`]), `cargo build --message-format=json`
//! (`cargo.rs`), and plain logs ([`extract_log`], shapes in `log/`). Each failure becomes an
//! [`ExtractedSignature`]: its template is the failure with incidental detail removed by
//! [`normalize()`], and its id is [`signature_id`] of kind and template. This module reads the files
//! it is given and nothing else; it never prints and never panics on bad input.
//!
//! # Templates (the bundled catalog keys on these; change them only with the catalog)
//! - rustc / clippy (human or JSON): `error[E0308]: mismatched types: expected `u32`, found `&str`
//!   (in src/lib.rs)`; clippy lints use the lint as code: `error[clippy::needless_return]: ...`.
//! - Rust panic: `test tests::x panicked at src/lib.rs: <message>` (kind test_failure), or
//!   `thread 'main' panicked at src/main.rs: <message>` (crash).
//! - nextest timeout: `timeout: test <binary> <test>`.
//! - Formatters (kind lint; the file goes in `location`, not in the template):
//!   `rustfmt: formatting differs in <path>` (cargo fmt --check),
//!   `ruff format: would reformat <path>`, `black: would reformat <path>`,
//!   `prettier: code style issues in <path>` — literally `<path>`.
//! - Lint rules (kind lint, file in `location`): `eslint <rule-id>: <message>`,
//!   `ruff <code>: <message>` (e.g. `ruff F401: `os` imported but unused`),
//!   SARIF: `<tool> <rule-id>: <message>`.
//! - tsc: `tsc TS2322: <message> (in src/x.ts)`.
//! - pytest: `pytest <node id>: <exception type>: <E lines>`; Python traceback:
//!   `python <Exception: message> at <file> in <function>`.
//! - jest / vitest / mocha: `jest <suite › test>: <message>`, `vitest <file > suite > test>:
//!   <message>`, `mocha <suite › test>: <message>`.
//! - Go: `go test <TestName>: <file.go: message>`, `go panic: <message> in <top module frame>`.
//! - JUnit: `<test id>: <type>: <detail>`; the detail is the template of a known shape found in the
//!   body or captured output (nextest puts the panic message only there), else the message.
//!
//! Output is sorted by (kind, template, location) and identical signatures within one input are
//! deduplicated, keeping the first occurrence in input order; at most `limits.max_items` distinct
//! signatures are kept per input (the first ones met).

pub mod assertion;
mod cargo;
pub mod family;
mod hash;
mod junit;
mod log;
pub mod normalize;
mod resolve;
mod sarif;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::SignatureKind;
use meta_agent_report::{JunitSummary, Limits, ReportError, SarifReport, trim_to};

pub use family::{family_key, family_template};
pub use hash::signature_id;
pub use meta_agent_protocol::signature::ExtractedSignature;
use meta_agent_protocol::test_id::TestName;
pub use normalize::normalize;

/// Which reader to use for an input file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum InputFormat {
    /// Guess from the file name and its first bytes.
    #[default]
    Auto,
    /// JUnit XML.
    Junit,
    /// SARIF 2.1.0.
    Sarif,
    /// `cargo build --message-format=json` output.
    CargoJson,
    /// Plain text output of a tool (gate stdout/stderr).
    Log,
}

/// How to extract signatures.
#[derive(Debug, Clone, Default)]
pub struct ExtractOptions {
    pub format: InputFormat,
    /// The repository root: absolute paths under it become repository-relative, and so do
    /// absolute paths from another checkout (another runner's prefix) whose suffix names a file
    /// in it (see `resolve.rs`).
    pub repo_root: Option<PathBuf>,
    pub limits: Limits,
}

/// Why signatures could not be extracted from a file. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum SignatureError {
    /// A JUnit or SARIF report could not be read.
    #[error(transparent)]
    Report(#[from] ReportError),
    /// The file could not be opened or read.
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is larger than the limit for a log read whole.
    #[error("{path} is {size} bytes, more than the {limit}-byte limit")]
    TooLarge {
        path: PathBuf,
        size: u64,
        limit: u64,
    },
}

/// A failure found by a reader, before normalization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Candidate {
    pub kind: SignatureKind,
    /// The raw template: normalized when the signature is made.
    pub template: String,
    /// `path:line` as the tool printed it (made repository-relative later).
    pub location: Option<String>,
    pub test: Option<String>,
    pub frames: Vec<String>,
    pub excerpt: String,
}

impl Candidate {
    /// A formatter check failure: a fixed template, the file in `location`.
    pub fn formatter(template: &str, path: &str, line: &str, excerpt: &str) -> Candidate {
        let location = if line.is_empty() {
            path.to_owned()
        } else {
            format!("{path}:{line}")
        };
        Candidate {
            kind: SignatureKind::Lint,
            template: template.to_owned(),
            location: Some(location),
            test: None,
            frames: Vec::new(),
            excerpt: excerpt.trim().to_owned(),
        }
    }
}

/// A rustc diagnostic, from human output or JSON: both give the same template.
#[derive(Debug, Clone, Default)]
pub(crate) struct RustDiagnostic {
    pub code: Option<String>,
    pub message: String,
    /// The primary span's label.
    pub label: Option<String>,
    pub path: Option<String>,
    pub line: Option<u64>,
}

impl RustDiagnostic {
    pub fn into_candidate(self) -> Candidate {
        let head = self
            .code
            .as_ref()
            .map_or_else(|| "error".to_owned(), |c| format!("error[{c}]"));
        let label = self
            .label
            .as_ref()
            .map_or_else(String::new, |l| format!(": {l}"));
        let path = self.path.clone().unwrap_or_default();
        Candidate {
            kind: SignatureKind::Compile,
            template: format!("{head}: {}{label} (in {path})", self.message),
            location: self
                .path
                .map(|p| self.line.map_or(p.clone(), |l| format!("{p}:{l}"))),
            test: None,
            frames: Vec::new(),
            excerpt: format!("{head}: {}{label}", self.message),
        }
    }
}

/// Extracts the signatures of every failure in one file.
pub fn extract_file(
    path: &Path,
    opts: &ExtractOptions,
) -> Result<Vec<ExtractedSignature>, SignatureError> {
    let format = match opts.format {
        InputFormat::Auto => detect(path)?,
        chosen => chosen,
    };
    match format {
        InputFormat::Junit => Ok(from_junit(
            &meta_agent_report::parse_junit_file(path, &opts.limits)?,
            opts,
        )),
        InputFormat::Sarif => {
            let report = meta_agent_report::parse_sarif_file(path, &opts.limits)?;
            let mut signatures = from_sarif(&report, opts);
            signatures.iter_mut().for_each(|s| s.file = path.to_owned());
            Ok(signatures)
        }
        InputFormat::CargoJson => {
            let text = read_text(path, &opts.limits)?;
            Ok(finish(cargo::scan(&text), path, opts))
        }
        InputFormat::Auto | InputFormat::Log => {
            Ok(extract_log(&read_text(path, &opts.limits)?, path, opts))
        }
    }
}

/// Guesses the format from the extension and the first bytes.
fn detect(path: &Path) -> Result<InputFormat, SignatureError> {
    use std::io::Read;
    let io = |source| SignatureError::Io {
        path: path.to_owned(),
        source,
    };
    let mut head = Vec::with_capacity(4096);
    std::fs::File::open(path)
        .map_err(io)?
        .take(4096)
        .read_to_end(&mut head)
        .map_err(io)?;
    let head = String::from_utf8_lossy(&head);
    let start = head.trim_start();
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default();
    let xml = start.starts_with("<?xml") || start.starts_with("<testsuite");
    Ok(if xml || ext == "xml" {
        InputFormat::Junit
    } else if ext == "sarif" || (start.starts_with('{') && head.contains("\"runs\"")) {
        InputFormat::Sarif
    } else if start.starts_with("{\"reason\":") || head.contains("\n{\"reason\":\"compiler-") {
        InputFormat::CargoJson
    } else {
        InputFormat::Log
    })
}

/// Reads a text file whole, refusing files over the document limit; invalid UTF-8 is replaced.
fn read_text(path: &Path, limits: &Limits) -> Result<String, SignatureError> {
    let io = |source| SignatureError::Io {
        path: path.to_owned(),
        source,
    };
    let size = std::fs::metadata(path).map_err(io)?.len();
    if size > limits.max_document_bytes {
        return Err(SignatureError::TooLarge {
            path: path.to_owned(),
            size,
            limit: limits.max_document_bytes,
        });
    }
    let bytes = std::fs::read(path).map_err(io)?;
    Ok(match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(err) => String::from_utf8_lossy(err.as_bytes()).into_owned(),
    })
}

/// Extracts signatures from plain tool output (gate stdout/stderr).
pub fn extract_log(text: &str, source: &Path, opts: &ExtractOptions) -> Vec<ExtractedSignature> {
    finish(log::scan(&normalize::strip_ansi(text)), source, opts)
}

/// One signature per failing or erroring test case.
pub fn from_junit(summary: &JunitSummary, opts: &ExtractOptions) -> Vec<ExtractedSignature> {
    let mut out = Vec::new();
    for failure in &summary.failures {
        let texts = [
            failure.body.as_str(),
            &failure.stderr,
            &failure.stdout,
            &failure.message,
        ];
        let detail = assertion::assertion(&texts);
        out.extend(
            finish(vec![junit::candidate(failure)], &failure.report, opts)
                .into_iter()
                .map(|mut found| {
                    if let Some(detail) = &detail {
                        found.detail.clone_from(detail);
                    }
                    found
                }),
        );
    }
    sort_dedupe(out, opts.limits.max_items)
}

/// One signature per SARIF finding at level warning or error (`file` is empty: the report does
/// not know its path; [`extract_file`] fills it in).
pub fn from_sarif(report: &SarifReport, opts: &ExtractOptions) -> Vec<ExtractedSignature> {
    finish(sarif::candidates(report), Path::new(""), opts)
}

/// Normalizes candidates into signatures, sorted and deduplicated.
fn finish(
    candidates: Vec<Candidate>,
    source: &Path,
    opts: &ExtractOptions,
) -> Vec<ExtractedSignature> {
    let root = opts.repo_root.as_deref();
    let resolver = resolve::PathResolver::new(root);
    for c in &candidates {
        for text in std::iter::once(&c.template)
            .chain(&c.location)
            .chain(&c.frames)
        {
            resolver.learn(text);
        }
    }
    let path = |text: &str| normalize::normalize_path(&resolver.resolve(text), root);
    // A raw template seen before normalizes to the same signature, which dedupe would drop:
    // skipping it early saves the normalizer's work on logs that repeat a failure many times.
    let mut seen = std::collections::HashSet::new();
    let signatures = candidates
        .into_iter()
        .filter(|c| seen.insert((c.kind, c.template.clone())))
        .map(|c| {
            let template = normalize(&resolver.resolve(&c.template), root);
            ExtractedSignature {
                id: signature_id(c.kind, &template),
                family: family_key(c.kind, &template),
                kind: c.kind,
                template,
                file: source.to_owned(),
                location: c.location.as_deref().map(path),
                test: c.test.map(|t| TestName::new(normalize(&t, root))),
                frames: c.frames.iter().map(|f| path(f)).collect(),
                detail: test_detail(c.kind, &c.excerpt),
                excerpt: trim_to(c.excerpt.trim(), opts.limits.max_message_bytes),
            }
        })
        .collect();
    sort_dedupe(signatures, opts.limits.max_items)
}

/// The assertion a test failure's message shows (what a log gives of it); nothing for other
/// kinds, whose message is their whole story.
fn test_detail(kind: SignatureKind, excerpt: &str) -> String {
    match kind {
        SignatureKind::TestFailure | SignatureKind::TestError | SignatureKind::Crash => {
            assertion::assertion(&[excerpt]).unwrap_or_default()
        }
        SignatureKind::Compile
        | SignatureKind::Lint
        | SignatureKind::Timeout
        | SignatureKind::Other => String::new(),
    }
}

/// Keeps the first occurrence (in input order) of each id, at most `max` of them, sorted by kind,
/// template and location.
fn sort_dedupe(mut signatures: Vec<ExtractedSignature>, max: usize) -> Vec<ExtractedSignature> {
    let mut seen = std::collections::HashSet::new();
    signatures.retain(|s| seen.insert(s.id.clone()));
    signatures.truncate(max);
    signatures.sort_by(|a, b| {
        (a.kind, &a.template, &a.location).cmp(&(b.kind, &b.template, &b.location))
    });
    signatures
}

#[cfg(test)]
mod tests {
    use clap::ValueEnum;

    use super::*;

    #[test]
    fn format_names_are_the_documented_ones() {
        let names: Vec<String> = InputFormat::value_variants()
            .iter()
            .filter_map(|f| f.to_possible_value().map(|v| v.get_name().to_owned()))
            .collect();
        assert_eq!(names, ["auto", "junit", "sarif", "cargo-json", "log"]);
        let json = serde_json::to_string(&InputFormat::CargoJson).unwrap();
        assert_eq!(json, "\"cargo-json\"");
    }

    #[test]
    fn identical_failures_are_kept_once_and_sorted() {
        let log = "error[E0308]: mismatched types\n --> src/b.rs:1:1\n\n\
                   error[E0308]: mismatched types\n --> src/a.rs:1:1\n\n\
                   error[E0308]: mismatched types\n --> src/b.rs:9:9\n";
        let found = extract_log(log, Path::new("gate.log"), &ExtractOptions::default());
        let templates: Vec<&str> = found.iter().map(|s| s.template.as_str()).collect();
        assert_eq!(
            templates,
            [
                "error[E0308]: mismatched types (in src/a.rs)",
                "error[E0308]: mismatched types (in src/b.rs)"
            ]
        );
        assert_eq!(
            found[1].location.as_deref(),
            Some("src/b.rs:1"),
            "the first one is kept"
        );
        assert_eq!(found[0].file, Path::new("gate.log"));
    }
}
