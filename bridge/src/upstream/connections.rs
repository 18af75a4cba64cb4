//! The kube client every Reflector and discovery share, and a fresh one
//! once a connection has been taken for dead.
//!
//! A NAT or load balancer that forgets its connections forgets them all:
//! the watches streaming through it and the idle ones the client keeps for
//! its next requests. client-go talks HTTP/2 to the apiserver, one
//! connection for every request, and closes it when its health-check ping
//! goes unanswered (`ReadIdleTimeout` 30 s, `PingTimeout` 15 s), so the
//! requests after that open a new one. The kube client talks HTTP/1.1
//! from a pool of connections, where each forgotten idle connection would
//! hold the next request sent on it for a whole answer bound. So, when one
//! request or watch is taken for dead, the whole pool is: the requests
//! after it go out on a new client's connections, and the old client's idle
//! connections are closed as the last request using it ends.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// Builds a client with a new, empty connection pool; why not, if it cannot.
type Build = dyn Fn() -> Result<kube::Client, String> + Send + Sync;

/// The shared client, renewed by [`Connections::forget`]. Clones share it.
#[derive(Clone)]
pub struct Connections(Arc<Shared>);

struct Shared {
    build: Box<Build>,
    current: Mutex<Pool>,
}

/// One client and its connection pool, as handed out by
/// [`Connections::pool`].
#[derive(Clone)]
pub struct Pool {
    pub client: kube::Client,
    /// Which client this is: 0 for the first, one more for each renewal.
    generation: u64,
}

impl Connections {
    /// Builds the first client with `build`, which is called again, with
    /// the same inputs, each time the pool is forgotten.
    pub fn new(
        build: impl Fn() -> Result<kube::Client, String> + Send + Sync + 'static,
    ) -> Result<Self, String> {
        let client = build()?;
        Ok(Connections(Arc::new(Shared {
            build: Box::new(build),
            current: Mutex::new(Pool {
                client,
                generation: 0,
            }),
        })))
    }

    /// The client to send the next request with.
    pub fn pool(&self) -> Pool {
        self.lock().clone()
    }

    /// The client to send the next request with, when no verdict on its
    /// connections can follow.
    pub fn client(&self) -> kube::Client {
        self.pool().client
    }

    /// Takes `pool`'s connections for dead: later requests get a new
    /// client, unless one has replaced `pool` already (several watches on
    /// the same dead pool renew it once). A client that cannot be built
    /// again leaves the old one in place, with a warning.
    pub fn forget(&self, pool: &Pool) {
        let mut current = self.lock();
        if current.generation != pool.generation {
            return;
        }
        match (self.0.build)() {
            Ok(client) => {
                current.generation += 1;
                current.client = client;
                tracing::info!(
                    "a connection to the cluster was taken for dead: later requests open new connections (pool {})",
                    current.generation
                );
            }
            Err(e) => tracing::warn!("cannot build a client with new connections: {e}"),
        }
    }

    /// How many times the pool has been forgotten.
    pub fn renewals(&self) -> u64 {
        self.lock().generation
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pool> {
        // A panic while the lock was held cannot leave a half-made pool:
        // it is replaced whole.
        self.0
            .current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// `future`'s output, or after `bound` (when there is one) the bound.
pub async fn within<T>(
    bound: Option<Duration>,
    future: impl Future<Output = T>,
) -> Result<T, Duration> {
    match bound {
        Some(after) => tokio::time::timeout(after, future).await.map_err(|_| after),
        None => Ok(future.await),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Duration;

    fn counted() -> (Connections, Arc<AtomicU32>) {
        let built = Arc::new(AtomicU32::new(0));
        let count = built.clone();
        let connections = Connections::new(move || {
            count.fetch_add(1, Ordering::SeqCst);
            kube::Client::try_from(kube::Config::new("http://127.0.0.1:9".parse().unwrap()))
                .map_err(|e| e.to_string())
        })
        .unwrap();
        (connections, built)
    }

    #[tokio::test]
    async fn a_dead_pool_is_renewed_once_however_many_found_it_dead() {
        let (connections, built) = counted();
        let first = connections.pool();
        let also_first = connections.pool();
        connections.forget(&first);
        connections.forget(&also_first);
        assert_eq!(built.load(Ordering::SeqCst), 2, "one build, one renewal");
        assert_eq!(connections.renewals(), 1);

        let second = connections.pool();
        connections.forget(&second);
        assert_eq!(built.load(Ordering::SeqCst), 3);
        assert_eq!(connections.renewals(), 2);
    }

    /// A server of `{}` over HTTP/1.1 keep-alive, each answer 200 ms late
    /// (so that requests sent together take a connection each), that stops
    /// answering, without closing them, the connections it has when
    /// `silence` is sent: a NAT that forgot them.
    async fn forgetful_server() -> (String, tokio::sync::watch::Sender<bool>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (silence, silenced) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let silenced = silenced.clone();
                let born_silent = *silenced.borrow();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 4096];
                    let mut request = Vec::new();
                    while let Ok(n) = stream.read(&mut buf).await {
                        if n == 0 {
                            return;
                        }
                        request.extend_from_slice(&buf[..n]);
                        while let Some(end) = request.windows(4).position(|w| w == b"\r\n\r\n") {
                            request.drain(..end + 4);
                            tokio::time::sleep(Duration::from_millis(200)).await;
                            if *silenced.borrow() && !born_silent {
                                continue;
                            }
                            let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";
                            if stream.write_all(answer.as_bytes()).await.is_err() {
                                return;
                            }
                        }
                    }
                });
            }
        });
        (url, silence)
    }

    async fn get(client: kube::Client) -> Result<String, kube::Error> {
        let request = http::Request::get("/version").body(Vec::new()).unwrap();
        client.request_text(request).await
    }

    #[tokio::test]
    async fn after_a_verdict_requests_go_out_on_new_connections() {
        let (url, silence) = forgetful_server().await;
        let connections = Connections::new(move || {
            kube::Client::try_from(kube::Config::new(url.parse().unwrap()))
                .map_err(|e| e.to_string())
        })
        .unwrap();
        // Three requests at once leave three idle connections in the pool.
        let client = connections.client();
        let (a, b, c) = tokio::join!(get(client.clone()), get(client.clone()), get(client));
        for answer in [a, b, c] {
            assert_eq!(answer.unwrap(), "{}");
        }
        silence.send_replace(true);

        // The pool's connections are forgotten: a request sent on one is
        // never answered.
        let pool = connections.pool();
        let stuck = tokio::time::timeout(Duration::from_secs(2), get(pool.client.clone())).await;
        assert!(stuck.is_err(), "a forgotten connection answered: {stuck:?}");

        connections.forget(&pool);
        for _ in 0..3 {
            let answer = tokio::time::timeout(LIVELY, get(connections.client())).await;
            assert_eq!(
                answer
                    .expect("a request after the verdict waited on a forgotten connection")
                    .unwrap(),
                "{}"
            );
        }
    }

    /// Far longer than a loopback answer takes, however busy the machine.
    const LIVELY: Duration = Duration::from_secs(30);

    #[tokio::test]
    async fn a_client_that_cannot_be_built_again_stays() {
        let tries = Arc::new(AtomicU32::new(0));
        let count = tries.clone();
        let connections = Connections::new(move || {
            if count.fetch_add(1, Ordering::SeqCst) > 0 {
                return Err("the certificate is gone".into());
            }
            kube::Client::try_from(kube::Config::new("http://127.0.0.1:9".parse().unwrap()))
                .map_err(|e| e.to_string())
        })
        .unwrap();
        connections.forget(&connections.pool());
        assert_eq!(tries.load(Ordering::SeqCst), 2);
        assert_eq!(connections.renewals(), 0);
    }
}
