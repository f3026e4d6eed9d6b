//! A loopback HTTP/1.1 server of static files, standing in for a GitHub release's download host:
//! `GET` of a known path answers 200 with its bytes, anything else 404 (as a missing release
//! asset does). Every request is recorded. On its own thread and runtime, so a child process
//! (the Action's script, curl) can reach it; stops when dropped.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

use super::http::{Recorded, read_request};

pub struct FileServer {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    files: Arc<Mutex<BTreeMap<String, Vec<u8>>>>,
    requests: Arc<Mutex<Vec<Recorded>>>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for FileServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}

impl FileServer {
    pub fn start() -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let files = Arc::new(Mutex::new(BTreeMap::new()));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (shutdown, stop) = tokio::sync::oneshot::channel();
        let (served, seen) = (files.clone(), requests.clone());
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(serve(listener, served, seen, stop));
        });
        Self {
            url,
            files,
            requests,
            shutdown: Some(shutdown),
        }
    }

    /// Serves `bytes` at `path` (starting with `/`).
    pub fn put(&self, path: &str, bytes: &[u8]) {
        self.files
            .lock()
            .expect("files")
            .insert(path.to_owned(), bytes.to_vec());
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().expect("requests").clone()
    }
}

async fn serve(
    listener: std::net::TcpListener,
    files: Arc<Mutex<BTreeMap<String, Vec<u8>>>>,
    requests: Arc<Mutex<Vec<Recorded>>>,
    mut stop: tokio::sync::oneshot::Receiver<()>,
) {
    let listener = TcpListener::from_std(listener).expect("listener");
    loop {
        let mut stream = tokio::select! {
            _ = &mut stop => return,
            Ok((stream, _)) = listener.accept() => stream,
        };
        let Some(request) = read_request(&mut stream).await else {
            continue;
        };
        let body = (request.method == "GET")
            .then(|| files.lock().expect("files").get(&request.path).cloned())
            .flatten();
        requests.lock().expect("requests").push(request);
        let (status, body) = match body {
            Some(bytes) => ("200 OK", bytes),
            None => ("404 Not Found", b"Not Found".to_vec()),
        };
        let head = format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/octet-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        );
        let _ = stream.write_all(head.as_bytes()).await;
        let _ = stream.write_all(&body).await;
        let _ = stream.shutdown().await;
    }
}
