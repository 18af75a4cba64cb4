//! The top bar: name, source, the state of the link to the bridge, and the
//! cluster's own status beside it.

use crate::model::{Link, Model};
use leptos::prelude::*;
use watchlife_protocol::Source;

/// Title, source and connection status.
#[component]
pub fn Header() -> impl IntoView {
    let model = expect_context::<Model>();
    let source = move || {
        model.hello.with(|h| match h.as_ref().map(|h| &h.source) {
            Some(Source::Demo { .. }) => "embedded demo control plane".to_string(),
            Some(Source::Cluster { context, .. }) => format!("cluster {context}"),
            Some(Source::InPage) => {
                "demo control plane running in this page · every time measured by this browser"
                    .to_string()
            }
            None => "—".to_string(),
        })
    };
    let resources = move || {
        model.hello.with(|h| {
            h.as_ref()
                .map(|h| h.resources.join(", "))
                .unwrap_or_default()
        })
    };
    let kubernetes = move || {
        model
            .hello
            .with(|h| h.as_ref().map(kubernetes_label).unwrap_or_default())
    };
    let link = move || model.link.get();
    let detail = move || match model.link.get() {
        Link::Reconnecting { retry_ms } => format!(
            "the bridge is gone; retrying in {:.1} s",
            retry_ms as f64 / 1000.0
        ),
        Link::Stalled => "no word from the bridge for several heartbeats".into(),
        Link::Incompatible { bridge } => format!(
            "the bridge speaks protocol {bridge}, this page {}: reload the page",
            watchlife_protocol::PROTOCOL_VERSION
        ),
        _ => String::new(),
    };
    view! {
        <header class="topbar">
            <h1>"watchlife"</h1>
            <span class="tagline">"the life of a Kubernetes watch event"</span>
            <span class="source" id="source">{source}</span>
            <span class="resources" id="resources">{resources}</span>
            <span class="kubernetes" id="kubernetes" title="whose list-watch rules the Reflectors and the demo's apiserver follow, and the apiserver's own version">{kubernetes}</span>
            <span id="link" class="link" data-link=move || link().label() role="status" aria-live="polite" title="this page's link to the bridge (the cluster's own status is beside it)">
                {move || link().label()}
            </span>
            <span class="link-detail">{detail}</span>
            <super::cluster_status::ClusterStatusLine/>
        </header>
    }
}

/// `Kubernetes 1.36 rules · apiserver v1.36.4`: the profile, and the
/// server's own version where it told.
pub fn kubernetes_label(hello: &watchlife_protocol::Hello) -> String {
    let rules = match hello.kubernetes.as_str() {
        "" => String::new(),
        k => format!("Kubernetes {k} rules"),
    };
    match (&hello.cluster_version, rules.is_empty()) {
        (Some(v), true) => format!("apiserver {v}"),
        (Some(v), false) => format!("{rules} · apiserver {v}"),
        (None, _) => rules,
    }
}
