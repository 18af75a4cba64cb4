//! Starting the list-watch of every resource asked for: discovery first,
//! then one Reflector and one informer pipeline per resource.
//!
//! An unknown resource is a start-up error (with the closest names). A
//! cluster that cannot be reached is not: the app is served at once, each
//! resource's Reflector node shows the backoff, and discovery is tried again
//! on client-go's schedule until the cluster answers.

use crate::downstream::hub::Hub;
use crate::upstream::connections::{Connections, within};
use crate::upstream::pipeline::Pipeline;
use crate::upstream::reflector::{Config, Reflector};
use crate::upstream::source::stages::ServerStages;
use crate::upstream::target::{self, ResolveError, Target};
use std::sync::Arc;
use watchlife_controlplane::Clock;
use watchlife_informer::informer::Options;
use watchlife_informer::reflector::backoff::Backoff;
use watchlife_informer::shared_informer::QueueModel;
use watchlife_protocol::{FrameBody, ReflectorState, ReflectorUpdate};

/// What to watch, where, and who to tell.
#[derive(Clone)]
pub struct Watches {
    pub connections: Connections,
    /// Resource names as given (`pods`, `deployments.apps`).
    pub names: Vec<String>,
    pub namespace: Option<String>,
    pub selector: Option<String>,
    pub hub: Hub,
    pub clock: Clock,
    pub server: Option<Arc<dyn ServerStages>>,
    /// How each Reflector behaves.
    pub reflector: Config,
    /// Workers per informer.
    pub workers: u32,
}

impl Watches {
    /// Resolves the names and starts their Reflectors, or, when discovery
    /// cannot reach the cluster, starts retrying in the background. Returns
    /// the names of the resources watched (as resolved, or as given).
    pub async fn start(self) -> Result<Vec<String>, ResolveError> {
        match self.resolve().await {
            Ok(targets) => {
                let names = targets.iter().map(|t| t.name.clone()).collect();
                self.spawn_reflectors(targets);
                Ok(names)
            }
            Err(e @ (ResolveError::Discovery(_) | ResolveError::Unanswered { .. })) => {
                println!(
                    "cannot reach the cluster yet ({e}); watchlife keeps trying and serves the app meanwhile"
                );
                let names = self.names.clone();
                tokio::spawn(self.retry());
                Ok(names)
            }
            Err(unknown) => Err(unknown),
        }
    }

    /// Discovery, bounded as a LIST is: sent on a pooled connection that a
    /// load balancer forgot, it would wait for the kernel's TCP timeout.
    /// Past the bound the pool is forgotten, and the next try goes out on
    /// new connections.
    async fn resolve(&self) -> Result<Vec<Target>, ResolveError> {
        let config = &self.reflector;
        let bound = config.silence_bound(config.min_watch_timeout.as_secs());
        let pool = self.connections.pool();
        let discovery = target::resolve(
            &pool.client,
            &self.names,
            self.namespace.as_deref(),
            self.selector.as_deref(),
        );
        within(bound, discovery).await.unwrap_or_else(|after| {
            self.connections.forget(&pool);
            Err(ResolveError::Unanswered { after })
        })
    }

    /// Tries discovery again after each backoff delay, shown on every
    /// resource's Reflector node, until it succeeds.
    async fn retry(self) {
        let mut backoff = Backoff::default();
        let mut error = String::from("the cluster cannot be reached");
        loop {
            let delay = backoff.next_delay(self.clock.now(), rand::random());
            for name in &self.names {
                self.hub.publish(FrameBody::Reflector(ReflectorUpdate {
                    resource: name.clone(),
                    state: ReflectorState::Backoff {
                        delay_ms: delay.as_millis() as u64,
                        error: error.clone(),
                    },
                }));
            }
            tokio::time::sleep(delay).await;
            match self.resolve().await {
                Ok(targets) => {
                    tracing::info!("the cluster answered: starting the list-watches");
                    self.spawn_reflectors(targets);
                    return;
                }
                Err(e) => {
                    tracing::warn!("discovery failed, trying again: {e}");
                    error = e.to_string();
                }
            }
        }
    }

    fn spawn_reflectors(&self, targets: Vec<Target>) {
        for target in targets {
            let options = Options {
                resource: target.name.clone(),
                kind: target.resource.kind.clone(),
                resyncs: !self.reflector.resync_period.is_zero(),
                queue: QueueModel::of(&self.reflector.profile),
            };
            let reflector = Reflector {
                connections: self.connections.clone(),
                hub: self.hub.clone(),
                pipeline: Pipeline::start(
                    self.hub.clone(),
                    self.clock.clone(),
                    self.server.clone(),
                    options,
                    self.workers,
                ),
                clock: self.clock.clone(),
                config: self.reflector.clone(),
                target,
            };
            tokio::spawn(reflector.run());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use watchlife_informer::reflector::SilentWatch;

    /// A server that takes connections and never answers on them: a load
    /// balancer that forgot them.
    async fn mute_server() -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((stream, _)) = listener.accept().await {
                held.push(stream);
            }
        });
        url
    }

    #[tokio::test]
    async fn discovery_unanswered_past_the_bound_renews_the_pool() {
        let url = mute_server().await;
        let connections = Connections::new(move || {
            kube::Client::try_from(kube::Config::new(url.parse().unwrap()))
                .map_err(|e| e.to_string())
        })
        .unwrap();
        let bound = Duration::from_millis(300);
        let watches = Watches {
            connections: connections.clone(),
            names: vec!["pods".into()],
            namespace: None,
            selector: None,
            hub: Hub::new("test"),
            clock: Clock::system(),
            server: None,
            reflector: Config {
                silent_watch: SilentWatch::After(bound),
                ..Config::default()
            },
            workers: 1,
        };
        let answer = tokio::time::timeout(Duration::from_secs(30), watches.resolve())
            .await
            .expect("discovery waited past its bound");
        assert!(
            matches!(answer, Err(ResolveError::Unanswered { after }) if after == bound),
            "{answer:?}"
        );
        assert_eq!(connections.renewals(), 1, "the pool is forgotten");
    }
}
