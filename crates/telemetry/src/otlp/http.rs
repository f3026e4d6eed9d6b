//! The OTLP exporter's HTTP transport: the telemetry client (reqwest 0.12 with rustls) behind
//! `opentelemetry-http`'s `HttpClient` trait, so the exporter brings no second HTTP stack. The
//! batch processor exports from a thread of its own outside the tokio runtime; each request is
//! therefore spawned onto the run's runtime and awaited from there. The answer's body is read up
//! to a cap. The first failure (no connection, timeout, an answer other than 2xx) is logged once
//! as a warning naming the endpoint; the request's headers (the collector's credentials) never
//! appear in it.

use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};

/// Bytes of a collector's answer kept (its body says at most why it refused).
const ANSWER_CAP: usize = 64 * 1024;

/// See the module documentation.
#[derive(Debug)]
pub struct OtlpHttp {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
    endpoint: String,
    warned: AtomicBool,
}

/// Why an export request failed.
#[derive(Debug, thiserror::Error)]
enum ExportFailure {
    #[error("{0}")]
    Request(String),
    #[error("the collector answered {0}")]
    Status(reqwest::StatusCode),
    #[error("the export task was cancelled: {0}")]
    Cancelled(String),
}

impl OtlpHttp {
    pub fn new(client: reqwest::Client, runtime: tokio::runtime::Handle, endpoint: &str) -> Self {
        Self {
            client,
            runtime,
            endpoint: endpoint.to_owned(),
            warned: AtomicBool::new(false),
        }
    }

    fn warn_once(&self, failure: &ExportFailure) {
        if !self.warned.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "cannot export the trace to {}: {failure} (the run goes on; later failures are not reported)",
                self.endpoint
            );
        }
    }
}

#[async_trait::async_trait]
impl HttpClient for OtlpHttp {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let request = reqwest::Request::try_from(request)?;
        let client = self.client.clone();
        let sent = self.runtime.spawn(async move {
            let response = client
                .execute(request)
                .await
                .map_err(|err| ExportFailure::Request(meta_agent_net::innermost(&err)))?;
            let status = response.status();
            let headers = response.headers().clone();
            let body = meta_agent_net::read_capped(response, ANSWER_CAP)
                .await
                .map_err(|err| ExportFailure::Request(meta_agent_net::innermost(&err)))?;
            Ok::<_, ExportFailure>((status, headers, body))
        });
        let answer = sent
            .await
            .map_err(|err| ExportFailure::Cancelled(err.to_string()))
            .and_then(|answer| answer);
        let (status, headers, body) = answer.inspect_err(|failure| self.warn_once(failure))?;
        if !status.is_success() {
            self.warn_once(&ExportFailure::Status(status));
        }
        let mut response = Response::new(Bytes::from(body));
        *response.status_mut() = status;
        *response.headers_mut() = headers;
        Ok(response)
    }
}
