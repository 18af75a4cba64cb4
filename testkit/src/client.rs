//! A minimal Kubernetes HTTP client for tests: plain HTTP (the demo API) or
//! TLS trusting one CA (a real kube-apiserver), an optional bearer token,
//! whole answers as JSON, and watch streams read one line at a time.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;

/// Why a request got no whole answer.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// An HTTP client for one API server, with an optional bearer token (for a
/// real cluster). Cloning shares the connection pool.
#[derive(Clone)]
pub struct Client {
    pub base: String,
    pub token: Option<String>,
    http: HyperClient<HttpsConnector<HttpConnector>, Full<Bytes>>,
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
    /// A client for `http://` bases; an `https://` base would fail every
    /// request, since it trusts no certificate authority.
    pub fn new(base: &str, token: Option<String>) -> Self {
        Client::trusting(base, token, RootCertStore::empty())
    }

    /// A client for an `https://` base whose certificate is signed by the CA
    /// in the PEM file `ca`, and by no other.
    ///
    /// Panics if the file cannot be read or holds no certificate.
    pub fn with_ca(base: &str, token: Option<String>, ca: &Path) -> Self {
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_file_iter(ca)
            .unwrap_or_else(|e| panic!("reading {}: {e}", ca.display()))
        {
            let cert =
                cert.unwrap_or_else(|e| panic!("a PEM certificate in {}: {e}", ca.display()));
            roots.add(cert).expect("a valid CA certificate");
        }
        assert!(!roots.is_empty(), "no certificate in {}", ca.display());
        Client::trusting(base, token, roots)
    }

    fn trusting(base: &str, token: Option<String>, roots: RootCertStore) -> Self {
        // ring is named explicitly: with rustls's process-wide default, the
        // build would depend on which providers other crates switch on.
        let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("ring supports the default TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .build();
        Client {
            base: base.trim_end_matches('/').to_string(),
            token,
            http: HyperClient::builder(TokioExecutor::new()).build(connector),
        }
    }

    /// Sends a request and returns the response as it starts, its body
    /// unread: for callers that read bytes as they come (a watch, a bench).
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        content_type: Option<&str>,
        body: Vec<u8>,
        accept: Option<&str>,
    ) -> Result<hyper::Response<Incoming>, Error> {
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
        let resp = self
            .http
            .request(req.body(Full::new(Bytes::from(body))).unwrap())
            .await?;
        Ok(resp)
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
        self.try_call(method, path, content_type, body, accept)
            .await
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
    }

    /// `GET path`, or the error that kept it from being answered whole
    /// (nothing listening yet, a TLS failure, a connection cut short).
    pub async fn try_get(&self, path: &str) -> Result<Reply, Error> {
        self.try_call("GET", path, None, Vec::new(), None).await
    }

    /// Sends a request and reads the whole answer, or the error that kept
    /// it from being answered whole.
    pub async fn try_call(
        &self,
        method: &str,
        path: &str,
        content_type: Option<&str>,
        body: Vec<u8>,
        accept: Option<&str>,
    ) -> Result<Reply, Error> {
        let resp = self.send(method, path, content_type, body, accept).await?;
        let code = resp.status().as_u16();
        let content_type = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let bytes = resp.into_body().collect().await?.to_bytes();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        Ok(Reply {
            code,
            content_type,
            body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            text,
        })
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
        let resp = self
            .send("GET", path, None, Vec::new(), None)
            .await
            .unwrap_or_else(|e| panic!("GET {path}: {e}"));
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
