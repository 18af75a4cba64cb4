//! The sending side without a cluster: the wrapped reconciler is called as
//! `Controller::run` calls it, and the tap's frames go to a WebSocket server
//! started here, to nobody, or to a peer that never reads.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::runtime::controller::Action;
use tokio::net::TcpListener;
use watchlife_protocol::tap::{ReconcileResult, Requeue, TapFrame};
use watchlife_tap::{Tap, TapConfig};

/// Reconciles each test runs: many times the small buffer below.
const RECONCILES: usize = 200;
/// A buffer small enough that `RECONCILES` overflow it.
const BUFFER: usize = 8;

fn configmap(name: &str) -> Arc<ConfigMap> {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.metadata.namespace = Some("default".into());
    cm.metadata.resource_version = Some("7".into());
    Arc::new(cm)
}

/// Runs `RECONCILES` tapped reconciles; each returns its own action unchanged.
async fn reconcile_many(tap: &Tap) {
    let mut reconcile = tap.reconciler(|_: Arc<ConfigMap>, n: Arc<u64>| async move {
        Ok::<_, std::fmt::Error>(Action::requeue(Duration::from_secs(*n)))
    });
    for n in 0..RECONCILES as u64 {
        let action = reconcile(configmap("c"), Arc::new(n)).await.unwrap();
        assert_eq!(action, Action::requeue(Duration::from_secs(n)));
    }
}

/// A TCP port nobody listens on.
async fn closed_port() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}")
}

#[tokio::test]
async fn with_nobody_listening_reconciles_go_on_and_drops_are_counted() {
    let tap = Tap::connect(TapConfig::new(closed_port().await, "t").buffer(BUFFER)).unwrap();
    reconcile_many(&tap).await;
    assert_eq!(tap.recorded(), 2 * RECONCILES as u64);
    // Nothing was ever taken from the buffer: all but its size were dropped.
    assert!(
        tap.dropped() >= (2 * RECONCILES - BUFFER) as u64,
        "dropped {}",
        tap.dropped()
    );
}

#[tokio::test]
async fn with_a_peer_that_never_reads_reconciles_go_on_and_drops_are_counted() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    // Accepts connections and holds them, reading nothing.
    let held = tokio::spawn(async move {
        let mut sockets = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            sockets.push(socket);
        }
    });
    let tap = Tap::connect(TapConfig::new(url, "t").buffer(BUFFER)).unwrap();
    reconcile_many(&tap).await;
    assert_eq!(tap.recorded(), 2 * RECONCILES as u64);
    assert!(
        tap.dropped() >= (2 * RECONCILES - BUFFER - 1) as u64,
        "dropped {}",
        tap.dropped()
    );
    held.abort();
}

// The handshake callback's error type is tungstenite's, not ours.
#[allow(clippy::result_large_err)]
#[tokio::test]
async fn a_reading_peer_gets_hello_then_every_reconcile_in_order() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let tap = Tap::connect(TapConfig::new(url, "mine").token("secret")).unwrap();
    let (socket, _) = listener.accept().await.unwrap();
    let mut ws = tokio_tungstenite::accept_hdr_async(
        socket,
        |req: &tokio_tungstenite::tungstenite::handshake::server::Request, res| {
            assert_eq!(req.uri().path(), "/tap");
            assert_eq!(req.headers()["authorization"], "Bearer secret");
            Ok(res)
        },
    )
    .await
    .unwrap();
    reconcile_many(&tap).await;
    let mut frames = Vec::new();
    while frames.len() < 1 + 2 * RECONCILES {
        let message = ws.next().await.unwrap().unwrap();
        let frame: TapFrame = serde_json::from_str(message.to_text().unwrap()).unwrap();
        if !matches!(frame, TapFrame::Stats(_)) {
            frames.push(frame);
        }
    }
    assert!(matches!(&frames[0], TapFrame::Hello(h) if h.controller == "mine" && h.version == 1));
    let mut last_seq = 0;
    for (n, pair) in frames[1..].chunks(2).enumerate() {
        let (TapFrame::ReconcileStart(start), TapFrame::ReconcileEnd(end)) = (&pair[0], &pair[1])
        else {
            panic!("a start then its end: {pair:?}");
        };
        assert!(start.seq > last_seq && end.seq > start.seq);
        last_seq = end.seq;
        assert_eq!(start.reconcile, n as u64 + 1);
        assert_eq!(end.reconcile, start.reconcile);
        assert_eq!(start.object.name, "c");
        assert_eq!(start.resource_version.as_deref(), Some("7"));
        // No layer is installed here: the reason was not observed.
        assert_eq!(start.reason, None);
        assert_eq!(
            end.result,
            ReconcileResult::Action {
                action: Requeue::After {
                    after_us: n as u64 * 1_000_000
                }
            }
        );
    }
    assert_eq!(tap.dropped(), 0);
}
