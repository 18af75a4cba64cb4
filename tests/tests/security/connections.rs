//! Every connection of the bridge is bounded, against the real binary: a
//! thousand that never send a request, and a hundred that trickle their
//! request head, are closed within the stated header timeout while
//! `/healthz` goes on answering; a ping flood is closed with a close frame;
//! the static routes answer 405 to methods they do not serve.

use super::fanout_support::WAIT;
use futures_util::{SinkExt, StreamExt};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use watchlife_serve::limits::HEADER_READ_TIMEOUT;
use watchlife_tests::bridge::Bridge;
use watchlife_tests::http;

/// Connections that never send a byte. The test holds them too: its soft
/// limit of open files is raised to the hard one first (the bridge raises
/// its own).
const SILENT: usize = 1_000;

/// Connections that send a header line every third of the timeout.
const TRICKLING: usize = 100;

/// Generous: three times the stated timeout, on a shared and noisy machine.
fn bound() -> Duration {
    HEADER_READ_TIMEOUT * 3
}

/// Waits until the server closes `tcp` (end of stream or reset), at the
/// latest at `deadline`; panics otherwise.
async fn closed_by(mut tcp: TcpStream, deadline: Instant, trickle: bool) {
    let mut line = 0;
    loop {
        let mut byte = [0u8; 64];
        let wait = if trickle {
            HEADER_READ_TIMEOUT / 3
        } else {
            deadline.saturating_duration_since(Instant::now())
        };
        match tokio::time::timeout(wait, tcp.read(&mut byte)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return,
            // The 408 hyper may send before closing.
            Ok(Ok(_)) => continue,
            Err(_) => {}
        }
        assert!(
            Instant::now() < deadline,
            "a connection was still open after {:?}",
            bound()
        );
        if trickle {
            line += 1;
            if tcp
                .write_all(format!("X-Line-{line}: y\r\n").as_bytes())
                .await
                .is_err()
            {
                return;
            }
        }
    }
}

/// Asks `/healthz` until `done` finishes; every answer must be `ok`.
async fn healthz_throughout(bridge: &Bridge, done: tokio::task::JoinHandle<()>) {
    let mut asked = 0;
    while !done.is_finished() {
        let answer = tokio::time::timeout(WAIT, http::get(bridge.addr, "/healthz"))
            .await
            .expect("/healthz answers")
            .expect("/healthz answers");
        assert_eq!((answer.status, answer.text().as_str()), (200, "ok"));
        asked += 1;
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    done.await.expect("every connection was closed in time");
    assert!(asked > 0);
}

#[tokio::test]
async fn a_thousand_silent_connections_are_closed_within_the_header_timeout() {
    watchlife_serve::fds::raise_open_files_limit();
    let bridge = Bridge::start(&["--demo", "--demo-idle"]).await;
    let started = Instant::now();
    let mut silent = Vec::with_capacity(SILENT);
    for _ in 0..SILENT {
        silent.push(TcpStream::connect(bridge.addr).await.expect("connect"));
    }
    let deadline = started + bound();
    let done = tokio::spawn(async move {
        let all = silent
            .into_iter()
            .map(|tcp| closed_by(tcp, deadline, false));
        futures_util::future::join_all(all).await;
    });
    healthz_throughout(&bridge, done).await;
}

#[tokio::test]
async fn trickled_request_heads_are_closed_within_the_header_timeout() {
    let bridge = Bridge::start(&["--demo", "--demo-idle"]).await;
    let started = Instant::now();
    let mut trickling = Vec::with_capacity(TRICKLING);
    for _ in 0..TRICKLING {
        let mut tcp = TcpStream::connect(bridge.addr).await.expect("connect");
        tcp.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            .await
            .unwrap();
        trickling.push(tcp);
    }
    let deadline = started + bound();
    let done = tokio::spawn(async move {
        let all = trickling
            .into_iter()
            .map(|tcp| closed_by(tcp, deadline, true));
        futures_util::future::join_all(all).await;
    });
    healthz_throughout(&bridge, done).await;
}

#[tokio::test]
async fn a_ping_flood_is_closed_with_a_close_frame() {
    let bridge = Bridge::start(&["--demo", "--demo-idle"]).await;
    let (ws, _) = tokio_tungstenite::connect_async(bridge.ws_url())
        .await
        .unwrap();
    let (mut tx, mut rx) = ws.split();
    let flood = tokio::spawn(async move {
        for _ in 0..100_000 {
            if tx.send(Message::Ping(Default::default())).await.is_err() {
                return;
            }
        }
    });
    let close = loop {
        match tokio::time::timeout(WAIT, rx.next())
            .await
            .expect("an answer")
        {
            Some(Ok(Message::Close(frame))) => break frame,
            Some(Ok(_)) => continue,
            other => panic!("the connection ended without a close frame: {other:?}"),
        }
    };
    let close = close.expect("a close frame with a code and a reason");
    assert_eq!(close.code, CloseCode::Policy, "{close:?}");
    assert!(close.reason.contains("too many messages"), "{close:?}");
    flood.abort();
}

#[tokio::test]
async fn static_routes_answer_405_to_methods_they_do_not_serve() {
    let bridge = Bridge::start(&["--demo", "--demo-idle"]).await;
    for method in [
        "POST", "PUT", "DELETE", "PATCH", "TRACE", "PROPFIND", "OPTIONS",
    ] {
        for path in ["/", "/index.html", "/some/route", "/missing.js"] {
            let raw = format!(
                "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                bridge.addr
            );
            let answer = http::request(bridge.addr, &raw).await.unwrap();
            assert_eq!(answer.status, 405, "{method} {path}");
            assert_eq!(answer.header("allow"), Some("GET, HEAD"), "{method} {path}");
            assert!(!answer.text().contains("<html"), "{method} {path}");
        }
    }
    let head = "HEAD / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    let status = http::request(bridge.addr, head).await.unwrap().status;
    assert!([200, 503].contains(&status), "{status}");
}
