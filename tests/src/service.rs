//! A Service in front of bridge replicas, as a cluster routes to pods: each
//! new connection goes to a ready endpoint (the newest, or each in turn, as
//! the Service is started), where ready is
//! what the endpoint's `/readyz` last answered (its readinessProbe, polled
//! every [`PROBE_EVERY`]). A connection stays with its endpoint until
//! either side closes it.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// How often each endpoint's `/readyz` is asked (a kubelet's is 10 s by
/// default; shorter keeps the test short).
pub const PROBE_EVERY: Duration = Duration::from_millis(200);

/// Endpoints in the order they were added, with their readiness.
type Endpoints = Arc<Mutex<Vec<(SocketAddr, bool)>>>;

/// Which ready endpoint a new connection goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Routing {
    /// The one added last: a rolling update's new replica once ready.
    Newest,
    /// Each in turn, as IPVS's round robin does.
    RoundRobin,
}

/// A running Service, stopped on drop.
pub struct Service {
    pub addr: SocketAddr,
    endpoints: Endpoints,
    tasks: Vec<JoinHandle<()>>,
}

impl Service {
    /// Listens on a free loopback port, with no endpoint yet; each new
    /// connection goes to the newest ready endpoint.
    pub async fn start() -> Service {
        Service::routing(Routing::Newest).await
    }

    /// As [`Service::start`], each new connection going to the next ready
    /// endpoint in turn.
    pub async fn start_round_robin() -> Service {
        Service::routing(Routing::RoundRobin).await
    }

    async fn routing(routing: Routing) -> Service {
        let listener = TcpListener::bind(("127.0.0.1", crate::free_port()))
            .await
            .expect("the Service listens");
        let addr = listener.local_addr().unwrap();
        let endpoints: Endpoints = Arc::default();
        let routed = endpoints.clone();
        let accept = tokio::spawn(async move {
            let mut turn = 0;
            while let Ok((client, _)) = listener.accept().await {
                let ready: Vec<SocketAddr> = routed
                    .lock()
                    .unwrap()
                    .iter()
                    .filter(|(_, ready)| *ready)
                    .map(|(addr, _)| *addr)
                    .collect();
                let ready = match routing {
                    Routing::Newest => ready.last().copied(),
                    Routing::RoundRobin => {
                        turn += 1;
                        (!ready.is_empty()).then(|| ready[turn % ready.len()])
                    }
                };
                // No ready endpoint: the connection is refused, as by a
                // Service without endpoints.
                if let Some(endpoint) = ready {
                    tokio::spawn(forward(client, endpoint));
                }
            }
        });
        let probed = endpoints.clone();
        let probe = tokio::spawn(async move {
            loop {
                let now: Vec<SocketAddr> = probed.lock().unwrap().iter().map(|e| e.0).collect();
                for endpoint in now {
                    let ready = matches!(
                        crate::http::get(endpoint, "/readyz").await,
                        Ok(r) if r.status == 200
                    );
                    if let Some(e) = probed.lock().unwrap().iter_mut().find(|e| e.0 == endpoint) {
                        e.1 = ready;
                    }
                }
                tokio::time::sleep(PROBE_EVERY).await;
            }
        });
        Service {
            addr,
            endpoints,
            tasks: vec![accept, probe],
        }
    }

    /// Adds an endpoint, not ready until its first probe says so.
    pub fn add(&self, endpoint: SocketAddr) {
        self.endpoints.lock().unwrap().push((endpoint, false));
    }

    /// Whether `endpoint`'s last probe said ready.
    pub fn ready(&self, endpoint: SocketAddr) -> bool {
        self.endpoints
            .lock()
            .unwrap()
            .iter()
            .any(|e| e.0 == endpoint && e.1)
    }

    /// The WebSocket URL of the viewers' stream through the Service.
    pub fn ws_url(&self) -> String {
        format!("ws://{}/ws", self.addr)
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Copies bytes both ways until either side closes.
async fn forward(mut client: TcpStream, endpoint: SocketAddr) {
    if let Ok(mut server) = TcpStream::connect(endpoint).await {
        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
    }
}
