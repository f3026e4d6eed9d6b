//! JUnit test failures to candidates: one per failing or erroring test case.
//!
//! The template is `<test id>: <type>: <detail>`. When the body or captured output holds a shape
//! the log scanner knows (a Rust panic under nextest, a Python traceback), its template is the
//! detail, because reports such as nextest's put only `thread 'x' panicked at file:line` in the
//! message. This module reads no files.

use super::{Candidate, log};
use crate::hindsight::SignatureKind;
use crate::report::{FailureKind, TestFailure};

/// The candidate for one failing test case.
pub(super) fn candidate(failure: &TestFailure) -> Candidate {
    let test = test_id(failure);
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
    Candidate {
        kind,
        template,
        location: location(failure).or_else(|| found.as_ref().and_then(|c| c.location.clone())),
        test: Some(test),
        frames: found.map(|c| c.frames).unwrap_or_default(),
        excerpt: if failure.message.is_empty() {
            failure.body.clone()
        } else {
            failure.message.clone()
        },
    }
}

/// `classname::name`, or the name alone when there is no class name.
fn test_id(failure: &TestFailure) -> String {
    if failure.classname.is_empty() || failure.name.starts_with(&failure.classname) {
        failure.name.clone()
    } else {
        format!("{}::{}", failure.classname, failure.name)
    }
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
