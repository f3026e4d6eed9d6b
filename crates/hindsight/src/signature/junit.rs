//! JUnit test failures to candidates: one per failing or erroring test case.
//!
//! The template is `<test id>: <type>: <detail>` (the id as [`meta_agent_protocol::test_id::TestId`]
//! shows it). When the body or captured output holds a shape
//! the log scanner knows (a Rust panic under nextest, a Python traceback), its template is the
//! detail, because reports such as nextest's put only `thread 'x' panicked at file:line` in the
//! message. Location and frames come from the shape found, else from a pytest traceback in the
//! body (`path.py:N:` lines). This module reads no files.

use super::{Candidate, log};
use crate::SignatureKind;
use meta_agent_report::{FailureKind, TestFailure};

/// The candidate for one failing test case.
pub(super) fn candidate(failure: &TestFailure) -> Candidate {
    let test = failure.id().to_string();
    let found = [&failure.body, &failure.stderr, &failure.stdout]
        .into_iter()
        .find_map(|text| log::scan(text).into_iter().next());
    let detail = found
        .as_ref()
        .map_or_else(|| failure.message.clone(), |c| c.template.clone());
    let kind = kind_of(failure, found.as_ref());
    let mut template = test.clone();
    for part in [failure.failure_type.as_str(), detail.as_str()] {
        if !part.trim().is_empty() {
            template.push_str(": ");
            template.push_str(part);
        }
    }
    let (found_location, frames) = match found {
        Some(c) if c.location.is_some() || !c.frames.is_empty() => (c.location, c.frames),
        _ => traceback_frames(failure),
    };
    Candidate {
        kind,
        template,
        location: found_location.or_else(|| location(failure)),
        test: Some(test),
        frames,
        excerpt: if failure.message.is_empty() {
            failure.body.clone()
        } else {
            failure.message.clone()
        },
    }
}

/// The frames of a pytest traceback in the failure's text (pytest's JUnit report carries no
/// file or line for a failure, only the text), and the innermost one as the location.
fn traceback_frames(failure: &TestFailure) -> (Option<String>, Vec<String>) {
    let frames = log::pytest_frames(failure.body.lines());
    (frames.first().cloned(), frames)
}

fn kind_of(failure: &TestFailure, found: Option<&Candidate>) -> SignatureKind {
    let timeout = failure.failure_type.to_lowercase().contains("timeout")
        || failure.message.contains("Timeout")
        || found.is_some_and(|c| c.kind == SignatureKind::Timeout);
    match (timeout, failure.kind) {
        (true, _) => SignatureKind::Timeout,
        (false, FailureKind::Failure) => SignatureKind::TestFailure,
        (false, FailureKind::Error) => SignatureKind::TestError,
    }
}

fn location(failure: &TestFailure) -> Option<String> {
    let file = failure.file.as_ref()?;
    Some(
        failure
            .line
            .map_or_else(|| file.clone(), |line| format!("{file}:{line}")),
    )
}
