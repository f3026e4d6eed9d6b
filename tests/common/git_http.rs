//! A loopback git server speaking git's smart HTTP protocol, the way GitHub serves pushes and
//! fetches: real `git http-backend` (CGI) behind a small HTTP/1.1 front that demands the token
//! as Basic authorization (`x-access-token:<token>`, as GitHub accepts it) and records every
//! `Authorization` header and request line it saw. Blocking std networking, a thread per
//! connection, one request per connection (`Connection: close`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use base64::Engine as _;

/// What the server saw of one request.
#[derive(Debug, Clone)]
pub struct GitRequest {
    pub method: String,
    pub target: String,
    pub authorization: Option<String>,
}

/// The server; repositories live under `root` as `<owner>/<name>.git` (bare).
pub struct GitHttp {
    /// `http://127.0.0.1:PORT`: use it as `GITHUB_SERVER_URL`.
    pub url: String,
    pub root: PathBuf,
    seen: Arc<Mutex<Vec<GitRequest>>>,
}

impl GitHttp {
    /// Serves `root`, accepting only `token`.
    pub fn start(root: &Path, token: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let expected = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{token}"))
        );
        let server = Server {
            root: root.to_path_buf(),
            expected,
            seen: seen.clone(),
        };
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let server = server.clone();
                std::thread::spawn(move || server.serve(stream));
            }
        });
        Self {
            url,
            root: root.to_path_buf(),
            seen,
        }
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<GitRequest> {
        self.seen.lock().expect("lock").clone()
    }
}

#[derive(Clone)]
struct Server {
    root: PathBuf,
    expected: String,
    seen: Arc<Mutex<Vec<GitRequest>>>,
}

struct Request {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

impl Server {
    fn serve(&self, stream: TcpStream) {
        let mut reader = BufReader::new(stream.try_clone().expect("clone"));
        let Some(request) = read_request(&mut reader) else {
            return;
        };
        let authorization = request.header("authorization").map(str::to_owned);
        self.seen.lock().expect("lock").push(GitRequest {
            method: request.method.clone(),
            target: request.target.clone(),
            authorization: authorization.clone(),
        });
        let mut stream = stream;
        let accepted = authorization.as_deref().is_some_and(|value| {
            let (scheme, credentials) = value.split_once(' ').unwrap_or(("", ""));
            let (want_scheme, want) = self.expected.split_once(' ').unwrap_or(("", ""));
            scheme.eq_ignore_ascii_case(want_scheme) && credentials == want
        });
        if !accepted {
            let _ = stream.write_all(
                b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"git\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
            return;
        }
        let response = self.cgi(&request);
        let _ = stream.write_all(&response);
    }

    /// Runs `git http-backend` for the request and turns its CGI answer into HTTP.
    fn cgi(&self, request: &Request) -> Vec<u8> {
        let (path, query) = request
            .target
            .split_once('?')
            .unwrap_or((&request.target, ""));
        let mut child = Command::new("git")
            .arg("http-backend")
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("GIT_PROJECT_ROOT", &self.root)
            .env("GIT_HTTP_EXPORT_ALL", "1")
            .env("REQUEST_METHOD", &request.method)
            .env("PATH_INFO", path)
            .env("QUERY_STRING", query)
            .env("CONTENT_TYPE", request.header("content-type").unwrap_or(""))
            .env("CONTENT_LENGTH", request.body.len().to_string())
            .env(
                "HTTP_CONTENT_ENCODING",
                request.header("content-encoding").unwrap_or(""),
            )
            .env("GIT_PROTOCOL", request.header("git-protocol").unwrap_or(""))
            .env("REMOTE_USER", "x-access-token")
            .env("REMOTE_ADDR", "127.0.0.1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("git http-backend starts");
        let mut stdin = child.stdin.take().expect("stdin");
        let body = request.body.clone();
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(&body);
        });
        let output = child.wait_with_output().expect("http-backend output");
        let _ = writer.join();
        cgi_to_http(&output.stdout)
    }
}

fn cgi_to_http(cgi: &[u8]) -> Vec<u8> {
    let split = cgi
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|at| (at, 4))
        .or_else(|| cgi.windows(2).position(|w| w == b"\n\n").map(|at| (at, 2)));
    let Some((at, gap)) = split else {
        return b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            .to_vec();
    };
    let head = String::from_utf8_lossy(&cgi[..at]).into_owned();
    let body = &cgi[at + gap..];
    let mut status = "200 OK".to_owned();
    let mut headers = String::new();
    for line in head.lines() {
        match line.split_once(':') {
            Some((name, value)) if name.eq_ignore_ascii_case("status") => {
                status = value.trim().to_owned();
            }
            Some(_) => {
                headers.push_str(line.trim_end());
                headers.push_str("\r\n");
            }
            None => {}
        }
    }
    let mut out = format!(
        "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let target = parts.next()?.to_owned();
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            headers.push((name.trim().to_owned(), value.trim().to_owned()));
        }
    }
    let find = |name: &str| {
        headers
            .iter()
            .find(|(key, _): &&(String, String)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.clone())
    };
    let body = if find("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        read_chunked(reader)?
    } else {
        let length: usize = find("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; length];
        reader.read_exact(&mut body).ok()?;
        body
    };
    Some(Request {
        method,
        target,
        headers,
        body,
    })
}

fn read_chunked(reader: &mut BufReader<TcpStream>) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size_line = String::new();
        reader.read_line(&mut size_line).ok()?;
        let size = usize::from_str_radix(size_line.trim().split(';').next()?, 16).ok()?;
        if size == 0 {
            let mut trailer = String::new();
            reader.read_line(&mut trailer).ok()?;
            return Some(body);
        }
        let mut chunk = vec![0; size + 2];
        reader.read_exact(&mut chunk).ok()?;
        chunk.truncate(size);
        body.extend_from_slice(&chunk);
    }
}
