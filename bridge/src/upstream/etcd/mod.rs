//! The etcd stage of a real cluster, measured by watching etcd directly.
//!
//! With `--etcd-endpoints`, the bridge opens one gRPC watch (the
//! `etcd-client` crate) on etcd's key prefix `/registry/` and notes when
//! each revision arrived. An object's resourceVersion is the etcd revision
//! that last modified it, so an event from the apiserver is matched to its
//! etcd write by revision alone. Only keys and revisions are read: etcd's
//! watch cannot leave values out, and they (`k8s\0` + protobuf, a Secret's
//! included) are dropped undecoded.
//!
//! The mark is the time etcd's notification reached the bridge, not the
//! commit: on the same network as the apiserver, a close upper bound of it.
//! A revision etcd did not report (no access, or not yet arrived) stays
//! unobserved rather than estimated.

mod tls;

use crate::upstream::error_chain::with_causes;
use crate::upstream::source::stages::ServerStages;
use etcd_client::{Client, WatchOptions, WatchResponse};
use futures_util::future::BoxFuture;
use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use watchlife_controlplane::Clock;
use watchlife_protocol::{Micros, Stage, StageMark, StageTimes};

/// Key prefix under which the apiserver stores every object.
pub const REGISTRY_PREFIX: &str = "/registry/";

/// Revisions remembered. An apiserver event is matched within moments of
/// its etcd write; 16,384 revisions cover a busy cluster's last minutes at
/// about forty bytes each.
pub const REMEMBERED: usize = 16_384;

/// Wait before watching etcd again after the watch failed.
pub const RETRY: Duration = Duration::from_secs(2);

/// Longest wait from asking for the watch to etcd's answer that it is
/// watching. Beyond it the endpoint counts as failed: a client whose
/// endpoints are all unreachable would otherwise wait for one forever.
pub const CREATE_TIMEOUT: Duration = Duration::from_secs(10);

/// Largest watch message accepted (gRPC's default is 4 MiB). A watch in
/// step with etcd gets one revision per message, an object of at most
/// etcd's 1.5 MiB request limit; one that fell behind gets up to 1,000
/// revisions at once. A larger message ends the watch, which starts again
/// from the present: only those revisions' marks are lost.
pub const MAX_MESSAGE: usize = 64 << 20;

/// How to reach etcd: endpoints and, for TLS, the CA and a client pair.
#[derive(Debug, Clone, Default)]
pub struct EtcdAccess {
    pub endpoints: Vec<String>,
    pub ca_cert: Option<PathBuf>,
    pub client_cert: Option<PathBuf>,
    pub client_key: Option<PathBuf>,
}

/// Why etcd could not be watched.
#[derive(Debug, thiserror::Error)]
pub enum EtcdError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("TLS set-up for etcd: {0}")]
    Tls(String),
    #[error("etcd watch: {0}")]
    Watch(String),
}

/// When each recent etcd revision reached the bridge.
#[derive(Debug, Default)]
struct Arrivals {
    by_revision: BTreeMap<u64, Micros>,
    order: VecDeque<u64>,
}

impl Arrivals {
    fn note(&mut self, revision: u64, at: Micros) {
        if self.by_revision.insert(revision, at).is_none() {
            self.order.push_back(revision);
            if self.order.len() > REMEMBERED
                && let Some(old) = self.order.pop_front()
            {
                self.by_revision.remove(&old);
            }
        }
    }
}

/// Longest wait for etcd's report of a revision the apiserver already
/// delivered. Both come from the same etcd write, but the apiserver's path
/// can be the faster one; a report later than this is treated as missing,
/// and the stage stays unobserved for that event.
pub const MATCH_WAIT: Duration = Duration::from_millis(250);

/// The etcd stage of every event whose revision etcd reported.
#[derive(Clone)]
pub struct EtcdStages {
    arrivals: Arc<Mutex<Arrivals>>,
    /// The newest revision etcd reported; 0 while no watch is connected, so
    /// that nobody waits for a report that cannot come.
    latest: Arc<tokio::sync::watch::Sender<u64>>,
}

impl Default for EtcdStages {
    fn default() -> Self {
        EtcdStages {
            arrivals: Arc::default(),
            latest: Arc::new(tokio::sync::watch::Sender::new(0)),
        }
    }
}

impl ServerStages for EtcdStages {
    fn stages_of<'a>(&'a self, resource_version: &'a str) -> BoxFuture<'a, StageTimes> {
        Box::pin(async move {
            let Ok(revision) = resource_version.parse::<u64>() else {
                return StageTimes::new();
            };
            let connected = *self.latest.borrow() > 0;
            if connected && self.arrival(revision).is_none() {
                let mut latest = self.latest.subscribe();
                let _ = tokio::time::timeout(MATCH_WAIT, latest.wait_for(|l| *l >= revision)).await;
            }
            self.arrival(revision)
                .map(|at| StageTimes::from([(Stage::Etcd, StageMark::at(at))]))
                .unwrap_or_default()
        })
    }
}

impl EtcdStages {
    /// Starts watching etcd at `access` (the first endpoint; the others are
    /// tried in turn when it fails) and returns the stages it fills. Fails
    /// at once only on TLS files that cannot be read or parsed.
    pub fn start(access: EtcdAccess, clock: Clock) -> Result<EtcdStages, EtcdError> {
        let tls = tls::tls_options(&access)?;
        let stages = EtcdStages::default();
        tokio::spawn(stages.clone().watch_forever(tls, access.endpoints, clock));
        Ok(stages)
    }

    /// When revision `revision` reached the bridge, if etcd reported it.
    fn arrival(&self, revision: u64) -> Option<Micros> {
        let arrivals = self.arrivals.lock().unwrap_or_else(|p| p.into_inner());
        arrivals.by_revision.get(&revision).copied()
    }

    async fn watch_forever(
        self,
        tls: Option<etcd_client::TlsOptions>,
        endpoints: Vec<String>,
        clock: Clock,
    ) {
        for endpoint in endpoints.iter().cycle() {
            let result = self.watch(endpoint, tls.as_ref(), &clock).await;
            self.latest.send_replace(0);
            if let Err(e) = result {
                tracing::warn!("watching etcd at {endpoint} failed, again in {RETRY:?}: {e}");
            }
            tokio::time::sleep(RETRY).await;
        }
    }

    /// One watch of the registry prefix on a new connection, until it ends.
    async fn watch(
        &self,
        endpoint: &str,
        tls: Option<&etcd_client::TlsOptions>,
        clock: &Clock,
    ) -> Result<(), EtcdError> {
        let failed = |e: etcd_client::Error| EtcdError::Watch(with_causes(&e));
        let options = tls::connect_options(endpoint, tls);
        let created = async {
            let client = Client::connect([endpoint], Some(options)).await?;
            let mut stream = client
                .watch_client()
                .max_decoding_message_size(MAX_MESSAGE)
                .watch(REGISTRY_PREFIX, Some(WatchOptions::new().with_prefix()))
                .await?;
            let first = stream.message().await?;
            Ok::<_, etcd_client::Error>((client, stream, first))
        };
        // The client lives as long as its watch: it holds the connection.
        let (_client, mut stream, mut message) = tokio::time::timeout(CREATE_TIMEOUT, created)
            .await
            .map_err(|_| EtcdError::Watch(format!("no answer within {CREATE_TIMEOUT:?}")))?
            .map_err(failed)?;
        while let Some(response) = message {
            if response.canceled() {
                return Err(EtcdError::Watch(format!(
                    "etcd cancelled the watch: {}",
                    response.cancel_reason()
                )));
            }
            self.note_response(&response, clock.now());
            message = stream.message().await.map_err(failed)?;
        }
        Ok(())
    }

    /// Notes the revisions of one watch response.
    fn note_response(&self, response: &WatchResponse, at: Micros) {
        // A DELETE's kv carries the deleting revision as mod_revision.
        let revisions = response
            .events()
            .iter()
            .filter_map(|event| event.kv())
            .map(|kv| kv.mod_revision());
        self.note(response.header().map(|h| h.revision()), revisions, at);
    }

    /// Notes that the revisions of one watch message arrived at `at`, and
    /// `current`, etcd's revision when it sent the message (every message,
    /// events or not, carries it).
    fn note(&self, current: Option<i64>, revisions: impl IntoIterator<Item = i64>, at: Micros) {
        let mut arrivals = self.arrivals.lock().unwrap_or_else(|p| p.into_inner());
        for revision in revisions.into_iter().filter_map(|r| u64::try_from(r).ok()) {
            arrivals.note(revision, at);
        }
        drop(arrivals);
        if let Some(current) = current.and_then(|c| u64::try_from(c).ok()) {
            self.latest.send_if_modified(|l| {
                let newer = current > *l;
                *l = (*l).max(current);
                newer
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn watch_messages_are_matched_by_revision() {
        let stages = EtcdStages::default();
        stages.note(None, [604], 10);
        // A message with a PUT and a DELETE of one transaction.
        stages.note(Some(605), [605, 605], 11);
        stages.note(Some(605), [], 12);
        assert_eq!(stages.stages_of("604").await[&Stage::Etcd].at, 10);
        assert_eq!(stages.stages_of("605").await[&Stage::Etcd].at, 11);
        assert!(stages.stages_of("606").await.is_empty());
        assert!(stages.stages_of("x").await.is_empty());
    }

    #[tokio::test]
    async fn a_revision_on_its_way_is_waited_for() {
        let stages = EtcdStages::default();
        stages.note(Some(700), [], 1);
        let later = stages.clone();
        tokio::spawn(async move {
            tokio::task::yield_now().await;
            later.note(Some(701), [701], 42);
        });
        assert_eq!(stages.stages_of("701").await[&Stage::Etcd].at, 42);
    }

    #[tokio::test]
    async fn nothing_is_waited_for_while_etcd_is_not_watched() {
        let stages = EtcdStages::default();
        stages.note(None, [5], 1);
        let started = std::time::Instant::now();
        assert!(stages.stages_of("6").await.is_empty());
        assert!(started.elapsed() < MATCH_WAIT);
    }

    #[tokio::test]
    async fn an_unreachable_etcd_is_retried_not_fatal() {
        let access = EtcdAccess {
            // Port 1 on loopback: nothing listens there.
            endpoints: vec!["http://127.0.0.1:1".into()],
            ..EtcdAccess::default()
        };
        let stages = EtcdStages::start(access, Clock::system()).unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(*stages.latest.borrow(), 0);
        assert!(stages.stages_of("1").await.is_empty());
    }

    #[test]
    fn old_revisions_are_forgotten() {
        let mut arrivals = Arrivals::default();
        for rv in 0..(REMEMBERED as u64 + 5) {
            arrivals.note(rv, rv);
        }
        assert_eq!(arrivals.by_revision.len(), REMEMBERED);
        assert!(!arrivals.by_revision.contains_key(&4));
        assert!(arrivals.by_revision.contains_key(&5));
    }
}
