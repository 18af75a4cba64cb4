//! The demo API's connections are bounded like the bridge's: one that never
//! sends a request is closed after the header timeout, while the API goes on
//! answering others.

mod support;

use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;
use watchlife_serve::limits::HEADER_READ_TIMEOUT;
use watchlife_testkit::client::Client;

/// Silent connections opened at once: enough to show that each is closed on
/// its own timer, few enough for any machine's open-files limit.
const SILENT: usize = 100;

#[tokio::test]
async fn silent_connections_are_closed_after_the_header_timeout() {
    let server = support::start().await;
    let addr = server.base.trim_start_matches("http://").to_string();
    let started = Instant::now();
    let mut silent = Vec::new();
    for _ in 0..SILENT {
        silent.push(tokio::net::TcpStream::connect(&addr).await.unwrap());
    }
    // Generous: three times the timeout, on a shared and noisy machine.
    let bound = HEADER_READ_TIMEOUT * 3;
    let closed = tokio::spawn(async move {
        for mut tcp in silent {
            let mut byte = [0u8; 1];
            let read = tokio::time::timeout_at((started + bound).into(), tcp.read(&mut byte)).await;
            assert!(
                matches!(read, Ok(Ok(0)) | Ok(Err(_))),
                "a silent connection was still open after {bound:?}"
            );
        }
    });
    let c = Client::new(&server.base, None);
    while !closed.is_finished() {
        assert_eq!(c.get("/version").await.code, 200);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    closed.await.unwrap();
}
