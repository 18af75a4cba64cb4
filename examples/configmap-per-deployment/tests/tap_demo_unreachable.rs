//! With watchlife away (nobody listening), stuck (a peer that never
//! reads) or refusing the tap's token, the example controller keeps
//! reconciling on the demo and its tap counts what it dropped.

mod support;

use support::tapped::Tapped;
use tokio::net::TcpListener;
use watchlife_tap::TapConfig;

/// A buffer the watcher's first events alone overflow.
const BUFFER: usize = 4;

#[tokio::test(flavor = "current_thread")]
async fn the_controller_reconciles_on_while_its_tap_drops() {
    let (_bridge, client) = support::demo().await;
    // Nobody listens on a port just freed; a held listener never reads.
    let freed = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let nobody = format!("http://{}", freed.local_addr().unwrap());
    drop(freed);
    let stuck = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let never_reads = format!("http://{}", stuck.local_addr().unwrap());
    let held = tokio::spawn(async move {
        let mut sockets = Vec::new();
        while let Ok((socket, _)) = stuck.accept().await {
            sockets.push(socket);
        }
    });
    // A watchlife that accepts taps, but only with a token this tap lacks.
    let refusing = watchlife_tests::bridge::Bridge::start(&[
        "--demo",
        "--demo-idle",
        "--accept-taps",
        "--token",
        "not-the-taps",
    ])
    .await;
    for (n, url) in [nobody, never_reads, refusing.url()]
        .into_iter()
        .enumerate()
    {
        let mut tapped = Tapped::start(&client, TapConfig::new(url, "c").buffer(BUFFER));
        for (i, name) in [format!("a{n}"), format!("b{n}")].iter().enumerate() {
            support::create(&client, name, 1).await;
            support::await_configmap(&client, name, 1).await;
            support::scale(&client, name, 2 + i as i32).await;
            support::await_configmap(&client, name, 2 + i as i32).await;
        }
        let reconciled = tapped.stop().await.len() as u64;
        let tap = &tapped.tap;
        assert!(reconciled >= 4, "case {n}: reconciled {reconciled}");
        assert!(tap.dropped() > 0, "case {n}: drops counted");
        assert!(
            tap.recorded() >= 2 * reconciled,
            "case {n}: every reconcile recorded"
        );
        assert!(tap.dropped() <= tap.recorded());
    }
    held.abort();
}
