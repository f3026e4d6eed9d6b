//! A loopback receiver for the telemetry exporters (a Prometheus push gateway, an OTLP/HTTP
//! collector): records every request it gets (method, path, headers, raw body) and answers each
//! with one status, over plain HTTP or over TLS with the fixture certificate for 127.0.0.1
//! (`fixtures/tls/`, signed by `ca.pem`). In [`Answer::Silence`] mode it reads the request and
//! never answers (a collector that hangs). One request per connection, `connection: close`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;

pub use super::http::Recorded;

/// How the receiver answers.
#[derive(Debug, Clone, Copy)]
pub enum Answer {
    /// This status, with an empty body.
    Status(u16),
    /// Nothing, ever (the connection stays open until the test ends).
    Silence,
}

/// The running receiver.
pub struct Collector {
    /// `http://127.0.0.1:PORT` or `https://127.0.0.1:PORT`.
    pub url: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The test CA that signed the TLS receiver's certificate.
pub fn test_ca() -> std::path::PathBuf {
    super::fixtures().join("tls/ca.pem")
}

impl Collector {
    /// A plain HTTP receiver.
    pub async fn start(answer: Answer) -> Self {
        Self::spawn(answer, None).await
    }

    /// A TLS receiver (certificate for 127.0.0.1 and localhost, signed by [`test_ca`]).
    pub async fn start_tls(answer: Answer) -> Self {
        Self::spawn(answer, Some(tls_acceptor())).await
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().expect("lock").clone()
    }

    async fn spawn(answer: Answer, tls: Option<tokio_rustls::TlsAcceptor>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("addr");
        let scheme = if tls.is_some() { "https" } else { "http" };
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = requests.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let recorded = recorded.clone();
                let tls = tls.clone();
                tokio::spawn(async move {
                    match tls {
                        Some(acceptor) => {
                            if let Ok(stream) = acceptor.accept(stream).await {
                                serve(stream, recorded, answer).await;
                            }
                        }
                        None => serve(stream, recorded, answer).await,
                    }
                });
            }
        });
        Self {
            url: format!("{scheme}://{address}"),
            requests,
            task,
        }
    }
}

async fn serve(
    mut stream: impl AsyncRead + AsyncWrite + Unpin,
    requests: Arc<Mutex<Vec<Recorded>>>,
    answer: Answer,
) {
    let Some(request) = super::http::read_request(&mut stream).await else {
        return;
    };
    requests.lock().expect("lock").push(request);
    let status = match answer {
        Answer::Status(status) => status,
        Answer::Silence => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            return;
        }
    };
    let head =
        format!("HTTP/1.1 {status} Collector\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.flush().await;
    let _ = stream.shutdown().await;
}

fn tls_acceptor() -> tokio_rustls::TlsAcceptor {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let dir = super::fixtures().join("tls");
    let chain = vec![CertificateDer::from_pem_file(dir.join("server.pem")).expect("server.pem")];
    let key = PrivateKeyDer::from_pem_file(dir.join("server.key")).expect("server.key");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .expect("the fixture certificate and key");
    tokio_rustls::TlsAcceptor::from(Arc::new(config))
}
