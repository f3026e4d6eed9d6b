//! Pushing a run's metrics to a Prometheus push gateway: one HTTP `PUT` of the text exposition
//! format (as `metrics.prom` holds it) to `{gateway}/metrics/job/meta-agent/session/{session}`,
//! once, when the run ends, through the telemetry HTTP client (reqwest and rustls: `http://` and
//! `https://`, bounded by a timeout, never blocking a runtime thread).
//!
//! Not the exporter's own push gateway: that one pushes on a timer and never at exit, so a run
//! shorter than its interval would push nothing (metrics-rs/metrics#413). A failed push is an
//! error for the caller to report as a warning; it never fails a run.

use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE;

use super::TelemetryError;

/// The content type of the text exposition format.
const CONTENT_TYPE: &str = "text/plain; version=0.0.4";
/// How long a push may take, connection included.
pub const PUSH_TIMEOUT: Duration = Duration::from_secs(10);

/// A push gateway and the client that reaches it.
pub struct PushGateway {
    gateway: String,
    client: reqwest::Client,
}

impl PushGateway {
    /// A gateway at `gateway` (`http://` or `https://`), trusting `ca_file`'s certificates too.
    pub fn new(
        gateway: &str,
        ca_file: Option<&Path>,
        timeout: Duration,
    ) -> Result<Self, TelemetryError> {
        let unsupported = !(gateway.starts_with("http://") || gateway.starts_with("https://"));
        if unsupported {
            return Err(TelemetryError::Push {
                url: gateway.to_owned(),
                message: "a push gateway URL starts with http:// or https://".into(),
            });
        }
        Ok(Self {
            gateway: gateway.to_owned(),
            client: super::http::client(timeout, ca_file)?,
        })
    }

    /// `PUT`s `body` (Prometheus text) as the metrics of `session`; any answer but 2xx is an error.
    pub async fn push(&self, session: &str, body: String) -> Result<(), TelemetryError> {
        let url = push_url(&self.gateway, session);
        let fail = |message: String| TelemetryError::Push {
            url: url.clone(),
            message,
        };
        let response = self
            .client
            .put(&url)
            .header(reqwest::header::CONTENT_TYPE, CONTENT_TYPE)
            .body(body)
            .send()
            .await
            .map_err(|err| fail(meta_agent_net::innermost(&err)))?;
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        let answer = meta_agent_net::read_capped(response, 300)
            .await
            .unwrap_or_default();
        let answer = String::from_utf8_lossy(&answer);
        let answer: String = answer.trim().chars().take(300).collect();
        Err(fail(format!("the gateway answered {status}: {answer}")))
    }
}

/// The push gateway URL for a session's metrics: `{gateway}/metrics/job/meta-agent/session/{session}`.
/// A session id with characters outside RFC 3986's unreserved set is sent in the gateway's
/// `session@base64/{base64url}` form, so no id can change the path.
pub fn push_url(gateway: &str, session: &str) -> String {
    let gateway = gateway.trim_end_matches('/');
    let unreserved = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~');
    if !session.is_empty() && session.chars().all(unreserved) && session != "." && session != ".." {
        format!("{gateway}/metrics/job/meta-agent/session/{session}")
    } else {
        format!(
            "{gateway}/metrics/job/meta-agent/session@base64/{}",
            base64_url(session)
        )
    }
}

/// RFC 4648 base64url with padding, and `=` alone for the empty string (the gateway's form).
fn base64_url(text: &str) -> String {
    if text.is_empty() {
        "=".to_owned()
    } else {
        URL_SAFE.encode(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_url_plain_and_encoded() {
        assert_eq!(
            push_url("http://gw:9091/", "s-20261122.1"),
            "http://gw:9091/metrics/job/meta-agent/session/s-20261122.1"
        );
        assert_eq!(
            push_url("http://gw:9091", "a/b"),
            "http://gw:9091/metrics/job/meta-agent/session@base64/YS9i"
        );
        assert_eq!(
            push_url("http://gw", ".."),
            "http://gw/metrics/job/meta-agent/session@base64/Li4="
        );
        assert_eq!(
            push_url("http://gw", ""),
            "http://gw/metrics/job/meta-agent/session@base64/="
        );
        assert_eq!(base64_url("\u{fb}\u{ff}"), "w7vDvw==");
    }

    #[test]
    fn only_http_and_https_gateways_are_accepted() {
        let err = PushGateway::new("ftp://gw", None, PUSH_TIMEOUT)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("cannot push metrics to ftp://gw"), "{err}");
        assert!(PushGateway::new("https://gw:9091", None, PUSH_TIMEOUT).is_ok());
    }
}
