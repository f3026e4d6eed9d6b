//! Helpers for the HTTP clients (the LLM providers and the telemetry exporters): an error's
//! most specific cause, a body read up to a cap. No policy; the callers decide what a failure
//! means.

#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

/// The most specific cause of a reqwest error ("connection refused" rather than "error sending
/// request for url").
pub fn innermost(error: &(dyn std::error::Error + 'static)) -> String {
    let mut current = error;
    while let Some(source) = current.source() {
        current = source;
    }
    current.to_string()
}

/// Reads the body, stopping once it passes `cap` bytes (the result is then longer than `cap`).
pub async fn read_capped(
    mut response: reqwest::Response,
    cap: usize,
) -> Result<Vec<u8>, reqwest::Error> {
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        bytes.extend_from_slice(&chunk);
        if bytes.len() > cap {
            break;
        }
    }
    Ok(bytes)
}
