//! `GET /metrics`: the watch caches' fan-out in the OpenMetrics text format,
//! through the `prometheus-client` crate, under the names the kube-apiserver
//! uses, so that a test (or a dashboard) counts the watches a client holds
//! here exactly as it would on a cluster.
//!
//! - `apiserver_registered_watchers{group,kind}`: watchers of each type's
//!   watch cache now, as the kube-apiserver reports them.
//! - `watchlife_demo_watchers{group,kind,watcher}`: the same, by watcher
//!   name (`http` for clients of this server, `scheduler`, `kubelet-…` for
//!   the demo's own controllers), which the kube-apiserver cannot tell.
//! - `apiserver_terminated_watchers_total{group,kind}`: watchers closed for
//!   not keeping up.
//! - `apiserver_watch_events_total{group,kind}`: watch events sent to
//!   watchers. The kube-apiserver counts each event its HTTP handler writes;
//!   the demo counts each event its dispatcher puts in a watcher's buffer
//!   (the writer takes every one of them, unless its client goes away).
//!
//! The numbers live in the control plane; each scrape reads them into a
//! fresh registry and encodes that, so nothing here can drift from them.

use crate::handlers::Api;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::collections::BTreeMap;

/// The `Content-Type` of the exposition.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// One watch cache: a resource type, as the kube-apiserver labels it.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Cache {
    group: &'static str,
    kind: &'static str,
}

/// One watcher name of one watch cache.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Named {
    group: &'static str,
    kind: &'static str,
    watcher: String,
}

/// Renders the metrics of the control plane behind `api`.
pub async fn serve(State(api): State<Api>) -> Response {
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], render(&api)).into_response()
}

/// The exposition of the watch caches of the control plane behind `api`.
fn render(api: &Api) -> String {
    let registered = Family::<Cache, Gauge>::default();
    let named = Family::<Named, Gauge>::default();
    let terminated = Family::<Cache, Counter>::default();
    let sent = Family::<Cache, Counter>::default();
    for cache in api.cp.watchers() {
        let labels = Cache {
            group: cache.resource.group,
            kind: cache.resource.kind,
        };
        registered
            .get_or_create(&labels)
            .set(i64::try_from(cache.watchers.len()).unwrap_or(i64::MAX));
        let mut by_name: BTreeMap<&str, i64> = BTreeMap::new();
        for w in &cache.watchers {
            *by_name.entry(w.name.as_str()).or_default() += 1;
        }
        for (name, count) in by_name {
            named
                .get_or_create(&Named {
                    group: labels.group,
                    kind: labels.kind,
                    watcher: name.to_string(),
                })
                .set(count);
        }
        terminated.get_or_create(&labels).inc_by(cache.closed_slow);
        sent.get_or_create(&labels).inc_by(cache.delivered);
    }
    let mut registry = Registry::default();
    registry.register(
        "apiserver_registered_watchers",
        "Number of currently registered watchers for a given resources",
        registered,
    );
    registry.register(
        "watchlife_demo_watchers",
        "Registered watchers of each watch cache, by watcher name",
        named,
    );
    // Registered without `_total`: the encoder adds it to counter samples.
    registry.register(
        "apiserver_terminated_watchers",
        "Counter of watchers closed due to unresponsiveness",
        terminated,
    );
    registry.register(
        "apiserver_watch_events",
        "Number of events sent in watch clients",
        sent,
    );
    let mut out = String::new();
    encode(&mut out, &registry).expect("writing to a String cannot fail");
    out
}
