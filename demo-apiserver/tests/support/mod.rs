//! Test support: an in-process demo API on a free loopback port. The HTTP
//! client is the shared one in `watchlife_testkit::client`.

use watchlife_controlplane::{Clock, ControlPlane};

/// A running demo API, stopped on drop.
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
