//! Where and how to export the run's trace, from the standard OpenTelemetry variables of the bot's
//! own environment. Off unless an endpoint is set: no variable, no exporter, no cost.
//!
//! | Variable | Meaning |
//! |---|---|
//! | `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` | the traces URL, used as it is |
//! | `OTEL_EXPORTER_OTLP_ENDPOINT` | the collector's base URL; traces go to `{base}/v1/traces` |
//! | `OTEL_EXPORTER_OTLP[_TRACES]_HEADERS` | `key=value,...` (values percent-decoded): secrets |
//! | `OTEL_EXPORTER_OTLP[_TRACES]_PROTOCOL` | `http/protobuf` (the only one this build speaks) |
//! | `OTEL_EXPORTER_OTLP[_TRACES]_TIMEOUT` | milliseconds per export (default 10000) |
//! | `OTEL_EXPORTER_OTLP[_TRACES]_CERTIFICATE` | PEM CAs trusted besides the bundled roots |
//! | `OTEL_SERVICE_NAME` | `service.name` (default `meta-agent`) |
//! | `OTEL_SDK_DISABLED=true`, `OTEL_TRACES_EXPORTER=none` | off, whatever else is set |
//!
//! The signal-specific variable wins over the general one. Errors name the variable, never a
//! header's value.

pub use meta_agent_redact::secrets::parse_headers;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// The default `OTEL_EXPORTER_OTLP_TIMEOUT`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// The default `service.name`.
pub const DEFAULT_SERVICE_NAME: &str = "meta-agent";
/// The protocol this build speaks.
pub const PROTOCOL: &str = "http/protobuf";

/// The OTLP trace export as configured. `Debug` shows header names, never their values.
#[derive(Clone, PartialEq, Eq)]
pub struct OtlpSettings {
    /// The full URL spans are `POST`ed to.
    pub endpoint: String,
    /// Extra request headers (typically the collector's credentials).
    pub headers: Vec<(String, String)>,
    pub timeout: Duration,
    pub certificate: Option<PathBuf>,
    pub service_name: String,
}

impl fmt::Debug for OtlpSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("OtlpSettings")
            .field("endpoint", &self.endpoint)
            .field("header_names", &names)
            .field("timeout", &self.timeout)
            .field("certificate", &self.certificate)
            .field("service_name", &self.service_name)
            .finish()
    }
}

/// A variable that cannot be used; the export stays off.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OtlpConfigError {
    #[error("{variable}={value}: this build exports traces over {PROTOCOL} only")]
    Protocol {
        variable: &'static str,
        value: String,
    },
    #[error("{variable}={value}: not an http:// or https:// URL")]
    Endpoint {
        variable: &'static str,
        value: String,
    },
    #[error("{variable}: entry {entry} is not `key=value` with a valid header name and value")]
    Headers {
        variable: &'static str,
        entry: usize,
    },
    #[error("{variable}={value}: not a whole number of milliseconds")]
    Timeout {
        variable: &'static str,
        value: String,
    },
}

/// A signal-specific variable and the general one it overrides.
struct Pair {
    traces: &'static str,
    general: &'static str,
}

const ENDPOINT: Pair = Pair {
    traces: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    general: "OTEL_EXPORTER_OTLP_ENDPOINT",
};
const HEADERS: Pair = Pair {
    traces: "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    general: "OTEL_EXPORTER_OTLP_HEADERS",
};
const PROTOCOL_VARS: Pair = Pair {
    traces: "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    general: "OTEL_EXPORTER_OTLP_PROTOCOL",
};
const TIMEOUT: Pair = Pair {
    traces: "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
    general: "OTEL_EXPORTER_OTLP_TIMEOUT",
};
const CERTIFICATE: Pair = Pair {
    traces: "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
    general: "OTEL_EXPORTER_OTLP_CERTIFICATE",
};

impl OtlpSettings {
    /// The settings `lookup` (an environment) describes; `Ok(None)` when export is off.
    pub fn from_env(
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<OtlpSettings>, OtlpConfigError> {
        let set = |name: &str| lookup(name).filter(|value| !value.trim().is_empty());
        let pick = |pair: &Pair| {
            set(pair.traces)
                .map(|value| (pair.traces, value))
                .or_else(|| set(pair.general).map(|value| (pair.general, value)))
        };
        let switched_off = set("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
            || set("OTEL_TRACES_EXPORTER").is_some_and(|v| v.eq_ignore_ascii_case("none"));
        if switched_off {
            return Ok(None);
        }
        let Some(endpoint) = traces_endpoint(pick(&ENDPOINT))? else {
            return Ok(None);
        };
        if let Some((variable, value)) = pick(&PROTOCOL_VARS)
            && value.trim() != PROTOCOL
        {
            return Err(OtlpConfigError::Protocol { variable, value });
        }
        let headers = match pick(&HEADERS) {
            Some((variable, value)) => parse_headers(&value)
                .map_err(|entry| OtlpConfigError::Headers { variable, entry })?,
            None => Vec::new(),
        };
        Ok(Some(OtlpSettings {
            endpoint,
            headers,
            timeout: timeout(pick(&TIMEOUT))?,
            certificate: pick(&CERTIFICATE).map(|(_, path)| PathBuf::from(path)),
            service_name: set("OTEL_SERVICE_NAME")
                .unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_owned()),
        }))
    }
}

/// The traces URL: the signal's own as it is, or `{base}/v1/traces`.
fn traces_endpoint(
    chosen: Option<(&'static str, String)>,
) -> Result<Option<String>, OtlpConfigError> {
    let Some((variable, value)) = chosen else {
        return Ok(None);
    };
    let url = value.trim();
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(OtlpConfigError::Endpoint { variable, value });
    }
    if variable == ENDPOINT.traces {
        Ok(Some(url.to_owned()))
    } else {
        Ok(Some(format!("{}/v1/traces", url.trim_end_matches('/'))))
    }
}

fn timeout(chosen: Option<(&'static str, String)>) -> Result<Duration, OtlpConfigError> {
    match chosen {
        None => Ok(DEFAULT_TIMEOUT),
        Some((variable, value)) => value
            .trim()
            .parse::<u64>()
            .map(Duration::from_millis)
            .map_err(|_| OtlpConfigError::Timeout { variable, value }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(vars: &[(&str, &str)]) -> Result<Option<OtlpSettings>, OtlpConfigError> {
        OtlpSettings::from_env(|name| {
            vars.iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        })
    }

    #[test]
    fn nothing_set_is_off() {
        assert_eq!(settings(&[]), Ok(None));
        assert_eq!(settings(&[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")]), Ok(None));
        assert_eq!(settings(&[("OTEL_SERVICE_NAME", "x")]), Ok(None));
    }

    #[test]
    fn the_base_endpoint_gets_the_traces_path_and_the_signal_one_is_kept() {
        let base = settings(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/")])
            .unwrap()
            .unwrap();
        assert_eq!(base.endpoint, "http://collector:4318/v1/traces");
        assert_eq!(base.timeout, DEFAULT_TIMEOUT);
        assert_eq!(base.service_name, "meta-agent");
        let own = settings(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://ignored:4318"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "https://c.example/otlp/spans",
            ),
            ("OTEL_SERVICE_NAME", "ci-bot"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(own.endpoint, "https://c.example/otlp/spans");
        assert_eq!(own.service_name, "ci-bot");
        assert_eq!(own.timeout, Duration::from_millis(2500));
    }

    #[test]
    fn switches_turn_it_off() {
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318");
        assert_eq!(
            settings(&[endpoint, ("OTEL_SDK_DISABLED", "TRUE")]),
            Ok(None)
        );
        assert_eq!(
            settings(&[endpoint, ("OTEL_TRACES_EXPORTER", "none")]),
            Ok(None)
        );
    }

    #[test]
    fn headers_are_decoded_and_the_signal_ones_win() {
        let parsed = settings(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "a=1"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
                "X-Api-Key = s3cr%3Dt ,, authorization=Basic%20abc",
            ),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(
            parsed.headers,
            [
                ("x-api-key".to_owned(), "s3cr=t".to_owned()),
                ("authorization".to_owned(), "Basic abc".to_owned())
            ]
        );
        let debug = format!("{parsed:?}");
        assert!(
            !debug.contains("s3cr") && debug.contains("x-api-key"),
            "{debug}"
        );
    }

    #[test]
    fn bad_values_are_errors_naming_the_variable_but_not_the_secret() {
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318");
        let err =
            settings(&[endpoint, ("OTEL_EXPORTER_OTLP_HEADERS", "ok=1,secretvalue")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "OTEL_EXPORTER_OTLP_HEADERS: entry 2 is not `key=value` with a valid header name and value"
        );
        let err = settings(&[endpoint, ("OTEL_EXPORTER_OTLP_HEADERS", "k=line%0Abreak")]);
        assert!(matches!(
            err,
            Err(OtlpConfigError::Headers { entry: 1, .. })
        ));
        let err = settings(&[endpoint, ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "OTEL_EXPORTER_OTLP_PROTOCOL=grpc: this build exports traces over http/protobuf only"
        );
        let err = settings(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4317")]).unwrap_err();
        assert!(matches!(err, OtlpConfigError::Endpoint { .. }));
        let err = settings(&[endpoint, ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "10s")]).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT=10s")
        );
    }

    proptest::proptest! {
        #[test]
        fn encoded_headers_read_back(
            pairs in proptest::collection::vec(("[a-z][a-z0-9-]{0,15}", "[ -~]{0,40}"), 0..6),
            junk in "\\PC{0,60}",
        ) {
            use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
            let text: Vec<String> = pairs
                .iter()
                .map(|(name, value)| format!("{name}={}", utf8_percent_encode(value, NON_ALPHANUMERIC)))
                .collect();
            let parsed = parse_headers(&text.join(",")).unwrap();
            let expected: Vec<(String, String)> = pairs
                .iter()
                .map(|(name, value)| (name.clone(), value.clone()))
                .collect();
            proptest::prop_assert_eq!(parsed, expected);
            let _ = parse_headers(&junk);
        }
    }
}
