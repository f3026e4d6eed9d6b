//! `cargo build --message-format=json` to candidates, read with cargo_metadata's message parser.
//!
//! Only error-level compiler messages count (warnings do not fail a build; "aborting due to"
//! summaries repeat the others). The template is the same as for rustc's human output, so a
//! failure seen either way has one signature. Lines that are not JSON are scanned as a log.

use cargo_metadata::Message;
use cargo_metadata::diagnostic::{Diagnostic, DiagnosticLevel};

use super::{Candidate, RustDiagnostic, log};

/// The candidates in a cargo JSON message stream, in order.
pub(super) fn scan(text: &str) -> Vec<Candidate> {
    let mut found = Vec::new();
    let mut plain = String::new();
    for message in Message::parse_stream(text.as_bytes()).flatten() {
        match message {
            Message::CompilerMessage(msg) => found.extend(candidate(&msg.message)),
            Message::TextLine(line) => {
                plain.push_str(&line);
                plain.push('\n');
            }
            _ => {}
        }
    }
    found.extend(log::scan(&plain));
    found
}

/// An error-level diagnostic with its primary span.
fn candidate(diagnostic: &Diagnostic) -> Option<Candidate> {
    if !matches!(
        diagnostic.level,
        DiagnosticLevel::Error | DiagnosticLevel::Ice
    ) || diagnostic.message.starts_with("aborting due to")
    {
        return None;
    }
    let primary = diagnostic.spans.iter().find(|s| s.is_primary);
    let diagnostic = RustDiagnostic {
        code: diagnostic.code.as_ref().map(|c| c.code.clone()),
        message: diagnostic.message.clone(),
        label: primary.and_then(|s| s.label.clone()),
        path: primary.map(|s| s.file_name.clone()),
        line: primary.map(|s| s.line_start as u64),
    };
    Some(diagnostic.into_candidate())
}
