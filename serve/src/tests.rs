//! The accept loop against real sockets. Timeouts are short so the tests are
//! quick; every bound asserted is a generous multiple of the one configured.

use super::*;
use axum::routing::get;
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const REFUSAL: &str =
    "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 5\r\nConnection: close\r\n\r\nfull\n";

/// Limits short enough for a test.
fn quick() -> Limits {
    Limits {
        header_read: Duration::from_millis(300),
        handshake: Some(Duration::from_millis(600)),
        max_pending: 4,
        ..Limits::default()
    }
}

/// Serves a router with `/ok` on a free port until the sender is dropped.
async fn start(limits: Limits) -> (std::net::SocketAddr, tokio::sync::oneshot::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = Router::new().route("/ok", get(|| async { "ok" }));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(Server::new(limits, REFUSAL).serve(listener, router, async {
        let _ = stopped.await;
    }));
    (addr, stop)
}

/// Reads until the server closes; what it sent.
async fn read_to_close(tcp: &mut TcpStream, within: Duration) -> String {
    let mut bytes = Vec::new();
    tokio::time::timeout(within, tcp.read_to_end(&mut bytes))
        .await
        .expect("the server closes the connection in time")
        .ok();
    String::from_utf8_lossy(&bytes).into_owned()
}

async fn get_ok(addr: std::net::SocketAddr) -> String {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(b"GET /ok HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    read_to_close(&mut tcp, Duration::from_secs(10)).await
}

#[tokio::test]
async fn a_silent_connection_is_closed_after_the_header_timeout() {
    let limits = quick();
    let bound = limits.header_read * 10;
    let (addr, _stop) = start(limits).await;
    let mut silent = TcpStream::connect(addr).await.unwrap();
    let started = Instant::now();
    read_to_close(&mut silent, bound).await;
    assert!(started.elapsed() < bound);
}

#[tokio::test]
async fn a_trickled_request_head_is_closed_after_the_header_timeout() {
    let limits = quick();
    let header_read = limits.header_read;
    let (addr, _stop) = start(limits).await;
    let mut slow = TcpStream::connect(addr).await.unwrap();
    slow.write_all(b"GET /ok HTTP/1.1\r\n").await.unwrap();
    // One header line every third of the timeout: never a whole head in time.
    let trickle = async {
        for i in 0..100 {
            tokio::time::sleep(header_read / 3).await;
            if slow
                .write_all(format!("X-{i}: y\r\n").as_bytes())
                .await
                .is_err()
            {
                return;
            }
        }
        panic!("the trickle was never cut off");
    };
    tokio::time::timeout(header_read * 20, trickle)
        .await
        .expect("cut off within the bound");
}

#[tokio::test]
async fn beyond_the_cap_a_connection_gets_the_refusal_and_the_cap_frees_up() {
    let limits = quick();
    let header_read = limits.header_read;
    let (addr, _stop) = start(limits).await;
    let mut silent = Vec::new();
    for _ in 0..4 {
        silent.push(TcpStream::connect(addr).await.unwrap());
    }
    // Let the server accept them all before the fifth arrives.
    tokio::time::sleep(header_read / 6).await;
    let mut fifth = TcpStream::connect(addr).await.unwrap();
    let refused = read_to_close(&mut fifth, Duration::from_secs(10)).await;
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused:?}");
    for mut s in silent {
        read_to_close(&mut s, header_read * 10).await;
    }
    assert!(get_ok(addr).await.ends_with("ok"));
}

#[tokio::test]
async fn a_kept_alive_connection_is_closed_after_the_handshake_limit() {
    let limits = quick();
    let handshake = limits.handshake.unwrap();
    let header_read = limits.header_read;
    let (addr, _stop) = start(limits).await;
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    let started = Instant::now();
    // Requests keep coming, each well within the header timeout.
    let mut answered = 0;
    while started.elapsed() < handshake * 6 {
        let sent = tcp.write_all(b"GET /ok HTTP/1.1\r\nHost: t\r\n\r\n").await;
        let mut buf = [0u8; 512];
        match (sent, tcp.read(&mut buf).await) {
            (Ok(()), Ok(n)) if n > 0 => answered += 1,
            _ => break,
        }
        tokio::time::sleep(header_read / 4).await;
    }
    assert!(answered > 0);
    assert!(
        started.elapsed() < handshake * 6,
        "still open after {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn at_shutdown_open_connections_are_closed_within_the_grace() {
    let limits = Limits {
        header_read: Duration::from_secs(60),
        ..quick()
    };
    let grace = limits.shutdown_grace;
    let (addr, stop) = start(limits).await;
    let mut idle = TcpStream::connect(addr).await.unwrap();
    assert!(get_ok(addr).await.ends_with("ok"));
    drop(stop);
    read_to_close(&mut idle, grace * 10).await;
}
