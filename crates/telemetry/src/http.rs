//! The HTTP client of the telemetry exporters (the push gateway and OTLP): reqwest with rustls (no
//! OpenSSL, so `https://` works everywhere the binary runs), a timeout on every request, no proxy
//! taken from the environment (as the LLM and GitHub clients), and trust in the bundled web PKI
//! roots plus, when a file is named, the certificates of that PEM bundle (a private CA in front
//! of a collector or gateway). It sends nothing itself.

use std::path::Path;
use std::time::Duration;

use super::TelemetryError;

/// A client whose every request ends within `timeout`, trusting `ca_file`'s certificates too.
pub(crate) fn client(
    timeout: Duration,
    ca_file: Option<&Path>,
) -> Result<reqwest::Client, TelemetryError> {
    let mut builder = reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout)
        .no_proxy();
    if let Some(path) = ca_file {
        for certificate in certificates(path)? {
            builder = builder.add_root_certificate(certificate);
        }
    }
    builder.build().map_err(|err| TelemetryError::Client {
        message: meta_agent_net::innermost(&err),
    })
}

/// The certificates of a PEM bundle; an unreadable file or one holding none is an error naming it.
fn certificates(path: &Path) -> Result<Vec<reqwest::Certificate>, TelemetryError> {
    let invalid = |message: String| TelemetryError::Certificate {
        path: path.to_path_buf(),
        message,
    };
    let pem = std::fs::read(path).map_err(|err| invalid(err.to_string()))?;
    let certificates = reqwest::Certificate::from_pem_bundle(&pem)
        .map_err(|err| invalid(meta_agent_net::innermost(&err)))?;
    if certificates.is_empty() {
        return Err(invalid("no PEM certificate in it".into()));
    }
    Ok(certificates)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_or_empty_ca_file_is_an_error_naming_it() {
        let missing = Path::new("/nonexistent/ca.pem");
        let err = client(Duration::from_secs(1), Some(missing)).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("cannot use /nonexistent/ca.pem as trusted certificates"),
            "{err}"
        );
        let empty = tempfile::NamedTempFile::new().unwrap();
        let err = client(Duration::from_secs(1), Some(empty.path())).unwrap_err();
        assert!(err.to_string().contains("no PEM certificate"), "{err}");
    }

    #[test]
    fn without_a_ca_file_the_bundled_roots_suffice() {
        assert!(client(Duration::from_secs(1), None).is_ok());
    }
}
