//! `GET /metrics`: the watch caches' fan-out in the Prometheus text format,
//! under the names the kube-apiserver uses, so that a test (or a dashboard)
//! counts the watches a client holds here exactly as it would on a cluster.
//!
//! - `apiserver_registered_watchers{group,kind}`: watchers of each type's
//!   watch cache now, as the kube-apiserver reports them.
//! - `watchlife_demo_watchers{group,kind,watcher}`: the same, by watcher
//!   name (`http` for clients of this server, `scheduler`, `kubelet-…` for
//!   the demo's own controllers), which the kube-apiserver cannot tell.
//! - `apiserver_terminated_watchers_total{group,kind}`: watchers closed for
//!   not keeping up.

use crate::handlers::Api;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use std::collections::BTreeMap;
use std::fmt::Write;

/// Renders the metrics of the control plane behind `api`.
pub async fn serve(State(api): State<Api>) -> Response {
    let mut registered = String::new();
    let mut named = String::new();
    let mut terminated = String::new();
    for cache in api.cp.watchers() {
        let (group, kind) = (cache.resource.group, cache.resource.kind);
        let labels = format!("group=\"{group}\",kind=\"{kind}\"");
        let _ = writeln!(
            registered,
            "apiserver_registered_watchers{{{labels}}} {}",
            cache.watchers.len()
        );
        let mut by_name: BTreeMap<&str, usize> = BTreeMap::new();
        for w in &cache.watchers {
            *by_name.entry(w.name.as_str()).or_default() += 1;
        }
        for (name, count) in by_name {
            let name = name.replace(['\\', '"', '\n'], "_");
            let _ = writeln!(
                named,
                "watchlife_demo_watchers{{{labels},watcher=\"{name}\"}} {count}"
            );
        }
        let _ = writeln!(
            terminated,
            "apiserver_terminated_watchers_total{{{labels}}} {}",
            cache.closed_slow
        );
    }
    let body = format!(
        "# HELP apiserver_registered_watchers Number of currently registered watchers for a given resources\n\
         # TYPE apiserver_registered_watchers gauge\n{registered}\
         # HELP watchlife_demo_watchers Registered watchers of each watch cache, by watcher name.\n\
         # TYPE watchlife_demo_watchers gauge\n{named}\
         # HELP apiserver_terminated_watchers_total Counter of watchers closed due to unresponsiveness.\n\
         # TYPE apiserver_terminated_watchers_total counter\n{terminated}"
    );
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        body,
    )
        .into_response()
}
