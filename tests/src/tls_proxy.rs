//! A TLS-terminating proxy in front of the real apiserver, as a load
//! balancer or an API gateway is: it serves the apiserver's own certificate
//! (so the bridge trusts it as it trusts the apiserver), opens its own TLS
//! connection to the apiserver for each one it accepts, and can be told to
//! answer every request with an HTTP error of its own (429 with
//! `Retry-After`, 500, 503) or to cut each response short, a few bytes into
//! its body, without TLS's close_notify. Connections open when a fault
//! begins are closed, so that the client meets it on its next request.
//!
//! With a [`Gate`], it also stands for an authenticating proxy: it checks
//! each request's bearer token and sends it on with a credential of its own.

mod gate;

use crate::proxy::{answer, reply};
pub use gate::Gate;
use gate::Verdict;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio_rustls::rustls::{self, ClientConfig, RootCertStore, ServerConfig};
use tokio_rustls::{TlsAcceptor, TlsConnector};

/// Bytes of a response's body passed before it is cut: into the first
/// object of a LIST, or the first event of a WATCH.
const TRUNCATE_AFTER: usize = 24;

/// What the proxy does to each request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Relays to the apiserver.
    Pass,
    /// Answers with this status, then closes the connection.
    Status(u16),
    /// Relays the request; of the response, the head and
    /// [`TRUNCATE_AFTER`] bytes of the body, then closes the connection.
    Truncate,
}

/// Where the proxy finds its certificates, in a cluster's `pki` folder.
pub struct TlsFiles {
    /// The apiserver's serving certificate and key, served again.
    pub server_crt: PathBuf,
    pub server_key: PathBuf,
    /// The CA the proxy trusts the apiserver by.
    pub ca_crt: PathBuf,
    /// A client certificate the proxy shows the apiserver, where the
    /// clients authenticate with one (a terminated TLS connection cannot
    /// pass theirs on); bearer tokens pass in the request.
    pub client: Option<(PathBuf, PathBuf)>,
}

impl TlsFiles {
    /// The files of `scripts/real-cluster-pki.sh` in `pki`, with its
    /// `client.crt` and `client.key` where they exist.
    pub fn in_folder(pki: &Path) -> TlsFiles {
        let (crt, key) = (pki.join("client.crt"), pki.join("client.key"));
        TlsFiles {
            server_crt: pki.join("server.crt"),
            server_key: pki.join("server.key"),
            ca_crt: pki.join("ca.crt"),
            client: (crt.exists() && key.exists()).then_some((crt, key)),
        }
    }
}

/// A running proxy, stopped on drop.
pub struct TlsProxy {
    pub addr: SocketAddr,
    answer: watch::Sender<Answer>,
    task: JoinHandle<()>,
}

/// The proxy's parts every connection uses.
#[derive(Clone)]
struct Relay {
    upstream: SocketAddr,
    acceptor: TlsAcceptor,
    connector: TlsConnector,
    gate: Option<Arc<Gate>>,
}

impl TlsProxy {
    /// Listens on a free loopback port and relays to the apiserver at
    /// `upstream` over TLS, through `gate` where there is one. Panics if
    /// the certificates do not load.
    pub async fn start(
        upstream: SocketAddr,
        files: &TlsFiles,
        gate: Option<Arc<Gate>>,
    ) -> TlsProxy {
        let relay = Relay {
            upstream,
            acceptor: TlsAcceptor::from(Arc::new(server_config(files))),
            connector: TlsConnector::from(Arc::new(client_config(files))),
            gate,
        };
        let listener = TcpListener::bind(("127.0.0.1", crate::free_port()))
            .await
            .expect("the TLS proxy listens");
        let addr = listener.local_addr().unwrap();
        let (answer, answers) = watch::channel(Answer::Pass);
        let task = tokio::spawn(async move {
            loop {
                let Ok((client, _)) = listener.accept().await else {
                    continue;
                };
                tokio::spawn(serve(client, relay.clone(), answers.clone()));
            }
        });
        TlsProxy { addr, answer, task }
    }

    /// Answers as `answer` for `duration`, then relays again.
    pub async fn misbehave(&self, answer: Answer, duration: Duration) {
        self.answer.send_replace(answer);
        tokio::time::sleep(duration).await;
        self.answer.send_replace(Answer::Pass);
    }

    /// Closes every open connection, so that each client's next request
    /// meets the proxy as it is now (a watch ends, as at its timeout).
    pub fn close_connections(&self) {
        self.answer.send_modify(|_| {});
    }
}

impl Drop for TlsProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn certificates(path: &Path) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect())
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn private_key(path: &Path) -> PrivateKeyDer<'static> {
    PrivateKeyDer::from_pem_file(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// HTTP/1.1 only: the proxy reads requests and responses as HTTP/1.1.
fn server_config(files: &TlsFiles) -> ServerConfig {
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(
            certificates(&files.server_crt),
            private_key(&files.server_key),
        )
        .expect("the serving certificate");
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    config
}

fn client_config(files: &TlsFiles) -> ClientConfig {
    let mut roots = RootCertStore::empty();
    for cert in certificates(&files.ca_crt) {
        roots.add(cert).expect("the CA certificate");
    }
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_root_certificates(roots);
    let mut config = match &files.client {
        Some((crt, key)) => builder
            .with_client_auth_cert(certificates(crt), private_key(key))
            .expect("the client certificate"),
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    config
}

/// One client connection: TLS accepted, then relayed, answered or cut as
/// the proxy says; closed when the answer changes.
async fn serve(client: TcpStream, relay: Relay, mut answers: watch::Receiver<Answer>) {
    let Relay {
        upstream,
        acceptor,
        connector,
        gate,
    } = relay;
    let Ok(mut client) = acceptor.accept(client).await else {
        return;
    };
    let now = *answers.borrow_and_update();
    if let Answer::Status(code) = now {
        answer(&mut client, code).await;
        return;
    }
    let Ok(server) = TcpStream::connect(upstream).await else {
        return;
    };
    let name = ServerName::IpAddress(upstream.ip().into());
    let Ok(server) = connector.connect(name, server).await else {
        return;
    };
    tokio::select! {
        _ = answers.changed() => {}
        _ = copy(client, server, now == Answer::Truncate, gate.as_deref()) => {}
    }
}

/// Copies bytes both ways until either side closes; with `truncate`, the
/// response stops [`TRUNCATE_AFTER`] bytes into its body; with a `gate`,
/// each request passes it or is answered 401, which ends the connection.
async fn copy<C, S>(client: C, server: S, truncate: bool, gate: Option<&Gate>)
where
    C: AsyncRead + AsyncWrite + Unpin,
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (mut client_read, mut client_write) = tokio::io::split(client);
    let (mut server_read, mut server_write) = tokio::io::split(server);
    let up = async {
        match gate {
            Some(gate) => through_gate(&mut client_read, &mut server_write, gate).await,
            None => tokio::io::copy(&mut client_read, &mut server_write)
                .await
                .map(|_| None)
                .unwrap_or(None),
        }
    };
    let down = async {
        if !truncate {
            let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
            return;
        }
        // The head, and a few bytes of the body: then the connection ends
        // with no close_notify, as a connection cut mid-response does.
        let mut passed = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let Ok(n) = server_read.read(&mut buf).await else {
                return;
            };
            if n == 0 {
                return;
            }
            passed.extend_from_slice(&buf[..n]);
            if let Some(head) = passed.windows(4).position(|w| w == b"\r\n\r\n") {
                let keep = (head + 4 + TRUNCATE_AFTER).min(passed.len());
                let _ = client_write.write_all(&passed[..keep]).await;
                let _ = client_write.flush().await;
                return;
            }
        }
    };
    let refused = tokio::select! {
        refused = up => refused,
        _ = down => None,
    };
    if let Some(message) = refused {
        reply(&mut client_write, 401, &message).await;
    }
}

/// Sends each request on as `gate` rewrites its head (bodies as they are),
/// until the client closes, or until a request is refused: then returns
/// what to answer it.
async fn through_gate<R, W>(client: &mut R, server: &mut W, gate: &Gate) -> Option<String>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut pending = Vec::new();
    let mut body_left = 0;
    let mut buf = [0u8; 4096];
    loop {
        if body_left > 0 && !pending.is_empty() {
            let n = body_left.min(pending.len());
            let body: Vec<u8> = pending.drain(..n).collect();
            server.write_all(&body).await.ok()?;
            body_left -= n;
            continue;
        }
        if body_left == 0
            && let Some(end) = gate::head_end(&pending)
        {
            let head: Vec<u8> = pending.drain(..end).collect();
            body_left = gate::content_length(&head);
            match gate.judge(&head) {
                Verdict::Pass(head) => server.write_all(&head).await.ok()?,
                Verdict::Unauthorized(message) => return Some(message),
            }
            continue;
        }
        match client.read(&mut buf).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => pending.extend_from_slice(&buf[..n]),
        }
    }
}
