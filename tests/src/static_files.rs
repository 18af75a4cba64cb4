//! A plain static file server, as a docs site's host is: GET a file from a
//! folder, nothing else. For the embed tests, which must pass with no
//! `watchlife` process at all.

use std::path::{Component, Path, PathBuf};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How long a docs host lets browsers keep a file (s): GitHub Pages' 600.
pub const HOST_MAX_AGE: u32 = 600;

/// Serves a folder on a loopback port until dropped.
pub struct StaticFiles {
    port: u16,
    task: tokio::task::JoinHandle<()>,
}

impl StaticFiles {
    /// Serves `root` on a free loopback port, with no caching headers.
    pub async fn serve(root: &Path) -> StaticFiles {
        StaticFiles::serve_with(root, None).await
    }

    /// Serves `root` as a docs host does: each answer may be cached for
    /// [`HOST_MAX_AGE`] seconds (GitHub Pages' `Cache-Control`), so that a
    /// page's frames share what the browser downloaded once.
    pub async fn serve_as_host(root: &Path) -> StaticFiles {
        StaticFiles::serve_with(root, Some(HOST_MAX_AGE)).await
    }

    async fn serve_with(root: &Path, max_age: Option<u32>) -> StaticFiles {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("loopback is available");
        let port = listener.local_addr().expect("bound").port();
        let root = root.to_path_buf();
        let task = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(answer(socket, root.clone(), max_age));
            }
        });
        StaticFiles { port, task }
    }

    /// `http://127.0.0.1:PORT/` followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!(
            "http://127.0.0.1:{}/{}",
            self.port,
            path.trim_start_matches('/')
        )
    }
}

impl Drop for StaticFiles {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Copies the folder `from` into `to` (made if missing), subfolders included:
/// a site's files as a docs generator would lay them out.
pub fn copy_folder(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("make a folder");
    for entry in std::fs::read_dir(from).expect("read a folder") {
        let entry = entry.expect("a folder entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("a file type").is_dir() {
            copy_folder(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy a file");
        }
    }
}

/// Answers one request and closes the connection.
async fn answer(mut socket: TcpStream, root: PathBuf, max_age: Option<u32>) {
    let mut request = Vec::new();
    let mut buf = [0u8; 4096];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < 64 * 1024 {
        match socket.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&request);
    let target = text.split_whitespace().nth(1).unwrap_or("/");
    let path = target.split(['?', '#']).next().unwrap_or("/");
    let (status, kind, body) = match file_in(&root, path).map(std::fs::read) {
        Some(Ok(body)) => ("200 OK", content_type(path), body),
        _ => ("404 Not Found", "text/plain", b"not found".to_vec()),
    };
    let cache = max_age
        .map(|age| format!("cache-control: public, max-age={age}\r\n"))
        .unwrap_or_default();
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {kind}\r\ncontent-length: {}\r\n{cache}connection: close\r\n\r\n",
        body.len()
    );
    let _ = socket.write_all(head.as_bytes()).await;
    let _ = socket.write_all(&body).await;
    let _ = socket.shutdown().await;
}

/// The file a URL path names inside `root`, never outside it.
fn file_in(root: &Path, path: &str) -> Option<PathBuf> {
    let relative = Path::new(path.trim_start_matches('/'));
    if relative
        .components()
        .any(|c| !matches!(c, Component::Normal(_)))
    {
        return None;
    }
    let file = root.join(relative);
    file.is_file().then_some(file)
}

fn content_type(path: &str) -> &'static str {
    match path.rsplit('.').next() {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript",
        Some("wasm") => "application/wasm",
        Some("css") => "text/css",
        Some("svg") => "image/svg+xml",
        Some("jsonl") => "application/jsonl",
        Some("gz") => "application/gzip",
        _ => "application/octet-stream",
    }
}
