//! A TCP proxy told to misbehave for a while, between the bridge and the
//! apiserver or between the apiserver and etcd: stall (bytes stop flowing
//! both ways, connections stay open), drop (connections closed cleanly, new
//! ones closed at once) or reset (connections reset, new ones too), or
//! silence (the connections open now say nothing ever again, as one a NAT
//! or load balancer forgot, while new ones pass). TLS passes through
//! untouched. In front of a plain-HTTP API (the demo's), it can also answer
//! every request with an HTTP status of its own (429, 500, 503), its
//! connections closed.

use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// What the proxy does to connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Pass,
    Stall,
    Drop,
    Reset,
    /// Open connections are closed; each new request is answered with this
    /// status (plain HTTP only).
    Status(u16),
    /// The connections open when it starts pass nothing, ever again, and
    /// are not closed; new ones pass.
    Silence,
}

/// A running proxy, stopped on drop.
pub struct Proxy {
    pub addr: SocketAddr,
    mode: watch::Sender<Mode>,
    task: JoinHandle<()>,
}

impl Proxy {
    /// Listens on a free loopback port and forwards to `upstream`.
    pub async fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind(("127.0.0.1", crate::free_port()))
            .await
            .expect("the proxy listens");
        let addr = listener.local_addr().unwrap();
        let (mode, modes) = watch::channel(Mode::Pass);
        let task = tokio::spawn(async move {
            loop {
                let Ok((client, _)) = listener.accept().await else {
                    continue;
                };
                let now = *modes.borrow();
                match now {
                    Mode::Drop => drop(client),
                    Mode::Reset => reset(client),
                    Mode::Status(code) => {
                        tokio::spawn(async move {
                            let mut client = client;
                            answer(&mut client, code).await;
                        });
                    }
                    Mode::Silence => {
                        // Born after the silence began: a new connection passes.
                        let (keep, pass) = watch::channel(Mode::Pass);
                        tokio::spawn(async move {
                            relay(client, upstream, pass).await;
                            drop(keep);
                        });
                    }
                    Mode::Pass | Mode::Stall => {
                        tokio::spawn(relay(client, upstream, modes.clone()));
                    }
                }
            }
        });
        Proxy { addr, mode, task }
    }

    /// `http://ADDRESS`: where a plain-HTTP client (the apiserver's etcd
    /// client) goes to reach the upstream through the proxy.
    pub fn http_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// From now on, the connections open now say nothing ever again; new
    /// ones pass.
    pub fn silence(&self) {
        self.mode.send_replace(Mode::Silence);
    }

    /// Misbehaves as `mode` for `duration`, then passes bytes again.
    pub async fn misbehave(&self, mode: Mode, duration: Duration) {
        self.mode.send_replace(mode);
        tokio::time::sleep(duration).await;
        self.mode.send_replace(Mode::Pass);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Closes `stream` with a TCP reset rather than a FIN.
fn reset(stream: TcpStream) {
    let _ = stream.set_zero_linger();
    drop(stream);
}

/// Copies bytes both ways until either side closes or the mode says to
/// drop or reset; while it says stall, copies nothing.
async fn relay(client: TcpStream, upstream: SocketAddr, mut modes: watch::Receiver<Mode>) {
    let Ok(server) = TcpStream::connect(upstream).await else {
        reset(client);
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let mut up = vec![0u8; 16 * 1024];
    let mut down = vec![0u8; 16 * 1024];
    loop {
        let mode = *modes.borrow_and_update();
        match mode {
            Mode::Drop | Mode::Status(_) => return,
            Mode::Reset => {
                if let (Ok(c), Ok(s)) = (
                    client_read.reunite(client_write),
                    server_read.reunite(server_write),
                ) {
                    reset(c);
                    reset(s);
                }
                return;
            }
            Mode::Stall => {
                if modes.changed().await.is_err() {
                    return;
                }
                continue;
            }
            Mode::Silence => {
                // Forgotten: nothing passes, until the client gives up.
                let mut sink = vec![0u8; 16 * 1024];
                while let Ok(n) = client_read.read(&mut sink).await {
                    if n == 0 {
                        break;
                    }
                }
                return;
            }
            Mode::Pass => {}
        }
        tokio::select! {
            changed = modes.changed() => if changed.is_err() { return },
            n = client_read.read(&mut up) => match n {
                Ok(0) | Err(_) => return,
                Ok(n) => if server_write.write_all(&up[..n]).await.is_err() { return },
            },
            n = server_read.read(&mut down) => match n {
                Ok(0) | Err(_) => return,
                Ok(n) => if client_write.write_all(&down[..n]).await.is_err() { return },
            },
        }
    }
}

/// Reads one request's head and answers it with `code`, as an overloaded
/// or failing apiserver does (a `Status` body, `Retry-After: 1` on 429).
pub(crate) async fn answer<S: AsyncRead + AsyncWrite + Unpin>(client: &mut S, code: u16) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 64 * 1024 {
        match client.read(&mut byte).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&byte[..n]),
        }
    }
    reply(client, code, &format!("injected {code}")).await;
}

/// Answers the request already read with `code` and a `Status` whose
/// message is `message`, as the apiserver words one, then closes.
pub(crate) async fn reply<S: AsyncWrite + Unpin>(client: &mut S, code: u16, message: &str) {
    let reason = match code {
        401 => "Unauthorized",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Error",
    };
    let body = serde_json::json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": message,
        "reason": reason.replace(' ', ""), "code": code,
    })
    .to_string();
    let retry = if code == 429 {
        "Retry-After: 1\r\n"
    } else {
        ""
    };
    let reply = format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{retry}Connection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = client.write_all(reply.as_bytes()).await;
    let _ = client.shutdown().await;
}

/// A copy of the kubeconfig at `from`, written to `to`, whose server is
/// `proxy` instead of `base` (`https://127.0.0.1:PORT`, or `http://` for
/// the demo's API): the certificate names 127.0.0.1, whatever the port.
pub fn kubeconfig_through(
    from: &std::path::Path,
    to: &std::path::Path,
    base: &str,
    proxy: SocketAddr,
) {
    let text = std::fs::read_to_string(from).expect("the kubeconfig");
    assert!(text.contains(base), "the kubeconfig names {base}");
    let scheme = base.split("://").next().unwrap_or("https");
    std::fs::write(to, text.replace(base, &format!("{scheme}://{proxy}")))
        .expect("write the kubeconfig");
}
