//! The etcd stage of a real cluster, measured by watching etcd directly.
//!
//! With `--etcd-endpoints`, the bridge opens one watch on etcd's key prefix
//! `/registry/` through etcd's JSON gateway (`POST /v3/watch`) and notes
//! when each revision arrived. An object's resourceVersion is the etcd
//! revision that last modified it, so an event from the apiserver is matched
//! to its etcd write by revision alone. Values (`k8s\0` + protobuf) are never
//! decoded: only keys and revisions are read.
//!
//! The mark is the time etcd's own notification reached the bridge: on the
//! same network as the apiserver, a close upper bound of the commit. A
//! revision etcd did not report (no access, or not yet arrived) stays
//! unobserved rather than estimated.

use crate::reflector::ServerStages;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use bytes::Bytes;
use futures_util::future::BoxFuture;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};
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
/// can be the faster one (etcd's JSON gateway re-encodes every message);
/// a report later than this is treated as missing, and the stage stays
/// unobserved for that event.
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
    /// tried in turn when it fails) and returns the stages it fills.
    pub fn start(access: EtcdAccess, clock: Clock) -> Result<EtcdStages, EtcdError> {
        let client = http_client(&access)?;
        let stages = EtcdStages::default();
        tokio::spawn(
            stages
                .clone()
                .watch_forever(client, access.endpoints, clock),
        );
        Ok(stages)
    }

    /// When revision `revision` reached the bridge, if etcd reported it.
    fn arrival(&self, revision: u64) -> Option<Micros> {
        let arrivals = self.arrivals.lock().unwrap_or_else(|p| p.into_inner());
        arrivals.by_revision.get(&revision).copied()
    }

    async fn watch_forever(self, client: HttpClient, endpoints: Vec<String>, clock: Clock) {
        for endpoint in endpoints.iter().cycle() {
            let result = self.watch(&client, endpoint, &clock).await;
            self.latest.send_replace(0);
            if let Err(e) = result {
                tracing::warn!("watching etcd at {endpoint} failed, again in {RETRY:?}: {e}");
            }
            tokio::time::sleep(RETRY).await;
        }
    }

    /// One watch of the registry prefix, until it ends.
    async fn watch(
        &self,
        client: &HttpClient,
        endpoint: &str,
        clock: &Clock,
    ) -> Result<(), EtcdError> {
        let body = json!({"create_request": {
            "key": BASE64.encode(REGISTRY_PREFIX),
            "range_end": BASE64.encode(prefix_end(REGISTRY_PREFIX)),
        }});
        let request = http::Request::post(format!("{}/v3/watch", endpoint.trim_end_matches('/')))
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body.to_string())))
            .map_err(|e| EtcdError::Watch(e.to_string()))?;
        let response = client
            .request(request)
            .await
            .map_err(|e| EtcdError::Watch(e.to_string()))?;
        if !response.status().is_success() {
            return Err(EtcdError::Watch(format!(
                "etcd answered {}",
                response.status()
            )));
        }
        let mut body = response.into_body();
        let mut pending = Vec::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| EtcdError::Watch(e.to_string()))?;
            let Some(data) = frame.data_ref() else {
                continue;
            };
            pending.extend_from_slice(data);
            // The gateway sends one JSON object per message, newline-separated.
            while let Some(end) = pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = pending.drain(..=end).collect();
                self.note(&line, clock.now());
            }
        }
        Ok(())
    }

    /// Notes the revisions of one watch message.
    fn note(&self, line: &[u8], at: Micros) {
        let Ok(message) = serde_json::from_slice::<Value>(line) else {
            return;
        };
        // Every message, events or not, carries etcd's current revision.
        let current = message
            .pointer("/result/header/revision")
            .and_then(Value::as_str)
            .and_then(|r| r.parse::<u64>().ok());
        let mut arrivals = self.arrivals.lock().unwrap_or_else(|p| p.into_inner());
        for event in message
            .pointer("/result/events")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            // A DELETE's kv carries the deleting revision as mod_revision.
            if let Some(revision) = event
                .pointer("/kv/mod_revision")
                .and_then(Value::as_str)
                .and_then(|r| r.parse().ok())
            {
                arrivals.note(revision, at);
            }
        }
        drop(arrivals);
        if let Some(current) = current {
            self.latest.send_if_modified(|l| {
                let newer = current > *l;
                *l = (*l).max(current);
                newer
            });
        }
    }
}

/// The end of the key range that holds every key starting with `prefix`.
fn prefix_end(prefix: &str) -> Vec<u8> {
    let mut end = prefix.as_bytes().to_vec();
    if let Some(last) = end.last_mut() {
        *last += 1;
    }
    end
}

type HttpClient = Client<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    Full<Bytes>,
>;

/// An HTTP client for etcd: plain for `http://` endpoints; for `https://`,
/// trusting `ca_cert` and presenting the client pair when given.
fn http_client(access: &EtcdAccess) -> Result<HttpClient, EtcdError> {
    let read = |path: &PathBuf| {
        std::fs::read(path).map_err(|source| EtcdError::Read {
            path: path.clone(),
            source,
        })
    };
    let mut roots = rustls::RootCertStore::empty();
    if let Some(ca) = &access.ca_cert {
        for cert in pem_certs(&read(ca)?)? {
            roots.add(cert).map_err(|e| EtcdError::Tls(e.to_string()))?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| EtcdError::Tls(e.to_string()))?
        .with_root_certificates(roots);
    let tls = match (&access.client_cert, &access.client_key) {
        (Some(cert), Some(key)) => {
            use rustls::pki_types::PrivateKeyDer;
            use rustls::pki_types::pem::PemObject;
            let key = PrivateKeyDer::from_pem_slice(&read(key)?)
                .map_err(|e| EtcdError::Tls(format!("client key: {e}")))?;
            builder
                .with_client_auth_cert(pem_certs(&read(cert)?)?, key)
                .map_err(|e| EtcdError::Tls(e.to_string()))?
        }
        (None, None) => builder.with_no_client_auth(),
        _ => {
            return Err(EtcdError::Tls(
                "--etcd-cert and --etcd-key go together".into(),
            ));
        }
    };
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .build();
    Ok(Client::builder(TokioExecutor::new()).build(connector))
}

fn pem_certs(pem: &[u8]) -> Result<Vec<rustls::pki_types::CertificateDer<'static>>, EtcdError> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| EtcdError::Tls(format!("certificate: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_range_ends_just_past_its_prefix() {
        assert_eq!(prefix_end("/registry/"), b"/registry0".to_vec());
    }

    #[tokio::test]
    async fn watch_messages_are_matched_by_revision() {
        let stages = EtcdStages::default();
        let put = json!({"result": {"events": [{"kv": {"key": "L3JlZ2lzdHJ5L3BvZHMvYS9i", "mod_revision": "604"}}]}});
        let delete = json!({"result": {"events": [{"type": "DELETE", "kv": {"key": "eA==", "mod_revision": "605"}}]}});
        stages.note(put.to_string().as_bytes(), 10);
        stages.note(delete.to_string().as_bytes(), 11);
        stages.note(b"not json", 12);
        assert_eq!(stages.stages_of("604").await[&Stage::Etcd].at, 10);
        assert_eq!(stages.stages_of("605").await[&Stage::Etcd].at, 11);
        assert!(stages.stages_of("606").await.is_empty());
        assert!(stages.stages_of("x").await.is_empty());
    }

    #[tokio::test]
    async fn a_revision_on_its_way_is_waited_for() {
        let stages = EtcdStages::default();
        let header = |rev: u64| json!({"result": {"header": {"revision": rev.to_string()}}});
        stages.note(header(700).to_string().as_bytes(), 1);
        let later = stages.clone();
        tokio::spawn(async move {
            tokio::task::yield_now().await;
            let put = json!({"result": {"header": {"revision": "701"}, "events": [{"kv": {"mod_revision": "701"}}]}});
            later.note(put.to_string().as_bytes(), 42);
        });
        assert_eq!(stages.stages_of("701").await[&Stage::Etcd].at, 42);
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
