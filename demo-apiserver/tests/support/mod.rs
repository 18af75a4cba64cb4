//! Test support: an in-process demo API on a free loopback port, and a
//! minimal HTTP client that reads watch streams line by line.
#![allow(dead_code)] // each test file uses a different part

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;
use watchlife_controlplane::{Clock, ControlPlane};

/// A running demo API.
pub struct Server {
    pub base: String,
    pub cp: ControlPlane,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Starts the API over a fresh control plane on 127.0.0.1 and a free port.
pub async fn start() -> Server {
    let cp = ControlPlane::new(Clock::system());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(watchlife_demo_apiserver::serve(
        cp.clone(),
        listener,
        async {
            let _ = stopped.await;
        },
    ));
    Server {
        base,
        cp,
        stop: Some(stop),
    }
}

/// An HTTP client for one API server, with an optional bearer token (for a
/// real cluster).
#[derive(Clone)]
pub struct Client {
    pub base: String,
    pub token: Option<String>,
    http: HyperClient<HttpConnector, Full<Bytes>>,
}

/// A response read whole.
#[derive(Debug)]
pub struct Reply {
    pub code: u16,
    pub content_type: String,
    pub body: Value,
    pub text: String,
}

impl Client {
    pub fn new(base: &str, token: Option<String>) -> Self {
        Client {
            base: base.trim_end_matches('/').to_string(),
            token,
            http: HyperClient::builder(TokioExecutor::new()).build_http(),
        }
    }

    async fn send(
        &self,
        method: &str,
        path: &str,
        content_type: Option<&str>,
        body: Vec<u8>,
        accept: Option<&str>,
    ) -> hyper::Response<Incoming> {
        let mut req = hyper::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base));
        if let Some(ct) = content_type {
            req = req.header("content-type", ct);
        }
        if let Some(accept) = accept {
            req = req.header("accept", accept);
        }
        if let Some(token) = &self.token {
            req = req.header("authorization", format!("Bearer {token}"));
        }
        self.http
            .request(req.body(Full::new(Bytes::from(body))).unwrap())
            .await
            .expect("the server answers")
    }

    /// Sends a request and reads the whole answer.
    pub async fn call(
        &self,
        method: &str,
        path: &str,
        content_type: Option<&str>,
        body: Vec<u8>,
    ) -> Reply {
        self.call_accepting(method, path, content_type, body, None)
            .await
    }

    pub async fn call_accepting(
        &self,
        method: &str,
        path: &str,
        content_type: Option<&str>,
        body: Vec<u8>,
        accept: Option<&str>,
    ) -> Reply {
        let resp = self.send(method, path, content_type, body, accept).await;
        let code = resp.status().as_u16();
        let content_type = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        Reply {
            code,
            content_type,
            body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            text,
        }
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.call("GET", path, None, Vec::new()).await
    }

    pub async fn post(&self, path: &str, body: &Value) -> Reply {
        self.call(
            "POST",
            path,
            Some("application/json"),
            body.to_string().into_bytes(),
        )
        .await
    }

    pub async fn put(&self, path: &str, body: &Value) -> Reply {
        self.call(
            "PUT",
            path,
            Some("application/json"),
            body.to_string().into_bytes(),
        )
        .await
    }

    pub async fn patch(&self, path: &str, content_type: &str, body: &Value) -> Reply {
        self.call(
            "PATCH",
            path,
            Some(content_type),
            body.to_string().into_bytes(),
        )
        .await
    }

    pub async fn delete(&self, path: &str) -> Reply {
        self.call("DELETE", path, None, Vec::new()).await
    }

    /// Opens a watch (or any streaming GET).
    pub async fn stream(&self, path: &str) -> Stream {
        let resp = self.send("GET", path, None, Vec::new(), None).await;
        Stream {
            code: resp.status().as_u16(),
            body: resp.into_body(),
            pending: Vec::new(),
        }
    }
}

/// A streaming answer, read one line at a time.
pub struct Stream {
    pub code: u16,
    body: Incoming,
    pending: Vec<u8>,
}

impl Stream {
    /// The next line as JSON, or `None` when the stream has ended. Tests
    /// open every watch with a `timeoutSeconds`, so a missing event ends the
    /// stream (and fails the test) instead of hanging it.
    pub async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(i) = self.pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=i).collect();
                return Some(serde_json::from_slice(&line).expect("each line is JSON"));
            }
            match self.body.frame().await {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.pending.extend_from_slice(&data);
                    }
                }
                _ => {
                    assert!(self.pending.is_empty(), "a partial line at the end");
                    return None;
                }
            }
        }
    }

    /// The next event that is not a BOOKMARK.
    pub async fn next_change(&mut self) -> Option<Value> {
        loop {
            let event = self.next().await?;
            if event["type"] != "BOOKMARK" {
                return Some(event);
            }
        }
    }
}

/// `(type, name)` of an event.
pub fn summary(event: &Value) -> (String, String) {
    (
        event["type"].as_str().unwrap_or("").to_string(),
        event["object"]["metadata"]["name"]
            .as_str()
            .unwrap_or("")
            .to_string(),
    )
}
