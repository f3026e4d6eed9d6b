//! Pushing the run's metrics to a Prometheus push gateway: one HTTP `PUT` of the text exposition
//! format to `{gateway}/metrics/job/meta-agent/session/{session}`. Plain `http://` only, over a
//! std TCP stream with timeouts (the gateway sits beside the runner; there is no TLS client in
//! the crate yet). A failed push is reported, never fatal.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use super::{TelemetryError, push_url};

/// Sends `body` to the push gateway for `session`.
pub fn push(
    gateway: &str,
    session: &str,
    body: &str,
    timeout: Duration,
) -> Result<(), TelemetryError> {
    let url = push_url(gateway, session);
    let fail = |message: String| TelemetryError::Push {
        url: url.clone(),
        message,
    };
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| fail("only http:// push gateways are supported".into()))?;
    let (authority, path) = rest
        .split_once('/')
        .map_or((rest, "/".to_owned()), |(a, p)| (a, format!("/{p}")));
    let address = if authority.contains(':') {
        authority.to_owned()
    } else {
        format!("{authority}:80")
    };
    let target = address
        .to_socket_addrs()
        .map_err(|err| fail(format!("cannot resolve {authority}: {err}")))?
        .next()
        .ok_or_else(|| fail(format!("no address for {authority}")))?;
    let mut stream = TcpStream::connect_timeout(&target, timeout)
        .map_err(|err| fail(format!("cannot connect: {err}")))?;
    let io = |err: std::io::Error| fail(err.to_string());
    stream.set_read_timeout(Some(timeout)).map_err(io)?;
    stream.set_write_timeout(Some(timeout)).map_err(io)?;
    let request = format!(
        "PUT {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).map_err(io)?;
    let mut response = Vec::new();
    stream
        .take(64 * 1024)
        .read_to_end(&mut response)
        .map_err(io)?;
    let status_line = String::from_utf8_lossy(&response)
        .lines()
        .next()
        .unwrap_or("")
        .to_owned();
    let code = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse::<u16>().ok());
    match code {
        Some(code) if (200..300).contains(&code) => Ok(()),
        _ => Err(fail(format!("the gateway answered `{status_line}`"))),
    }
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader};
    use std::net::TcpListener;

    use super::*;

    /// A one-shot loopback gateway that answers `status` and returns the request it got.
    fn gateway(status: &'static str) -> (String, std::thread::JoinHandle<String>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let handle = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut head = String::new();
            let mut length = 0;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if let Some(value) = line.strip_prefix("Content-Length: ") {
                    length = value.trim().parse().unwrap();
                }
                head.push_str(&line);
                if line == "\r\n" {
                    break;
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let mut stream = stream;
            write!(stream, "HTTP/1.1 {status}\r\nContent-Length: 0\r\n\r\n").unwrap();
            head + &String::from_utf8(body).unwrap()
        });
        (url, handle)
    }

    #[test]
    fn metrics_are_put_to_the_session_path() {
        let (url, server) = gateway("200 OK");
        push(
            &url,
            "abc-123",
            "meta_agent_loop_total{outcome=\"committed\"} 1\n",
            Duration::from_secs(5),
        )
        .unwrap();
        let request = server.join().unwrap();
        assert!(
            request.starts_with("PUT /metrics/job/meta-agent/session/abc-123 HTTP/1.1\r\n"),
            "{request}"
        );
        assert!(
            request.ends_with("meta_agent_loop_total{outcome=\"committed\"} 1\n"),
            "{request}"
        );
    }

    #[test]
    fn a_refusal_or_an_unsupported_url_is_an_error_naming_the_url() {
        let (url, server) = gateway("500 Internal Server Error");
        let err = push(&url, "s", "x 1\n", Duration::from_secs(5))
            .unwrap_err()
            .to_string();
        server.join().unwrap();
        assert!(
            err.contains("/metrics/job/meta-agent/session/s") && err.contains("500"),
            "{err}"
        );
        let err = push("https://gateway.example", "s", "", Duration::from_secs(1))
            .unwrap_err()
            .to_string();
        assert!(err.contains("only http://"), "{err}");
    }
}
