//! The two requests a Reflector makes, built with kube's request builder,
//! with exactly the parameters the Reflector machine chose.

use crate::upstream::source::stages::client_name;
use crate::upstream::target::Target;
use kube::core::{DynamicObject, Resource};

/// The header that names a client's requests to the demo's apiserver
/// (`watchlife_demo_apiserver::watch::CLIENT_HEADER`); any other server
/// ignores it.
pub const CLIENT_HEADER: &str = "x-watchlife-client";

/// Names `request` as the Reflector of `target`'s.
fn named(mut request: http::Request<Vec<u8>>, target: &Target) -> http::Request<Vec<u8>> {
    if let Ok(value) = http::HeaderValue::from_str(&client_name(&target.name)) {
        request.headers_mut().insert(CLIENT_HEADER, value);
    }
    request
}

/// One LIST page: from resourceVersion `from` (none sent when empty), `limit`
/// items (none sent when 0), or the page after `continue_token`.
///
/// Written out rather than built with kube's `ListParams`: kube leaves out
/// `resourceVersion=0` when a limit is set, which turns client-go's first
/// LIST (`resourceVersion=0&limit=500`, served by the watch cache) into a
/// consistent read from etcd. Parameters are in client-go's order (Go's
/// `url.Values.Encode` sorts them by name).
pub fn list(
    target: &Target,
    from: &str,
    limit: u64,
    continue_token: Option<&str>,
) -> Result<http::Request<Vec<u8>>, kube::core::request::Error> {
    let limit = (limit > 0).then(|| limit.to_string());
    let from = (continue_token.is_none() && !from.is_empty()).then_some(from);
    get(
        target,
        &[
            ("continue", continue_token),
            ("labelSelector", target.selector.as_deref()),
            ("limit", limit.as_deref()),
            ("resourceVersion", from),
        ],
    )
}

/// A WATCH from resourceVersion `from` (none sent when empty), with
/// bookmarks, that the server ends after `timeout_seconds`; with
/// `send_initial_events`, a streaming list (its initial events first, then
/// the initial-events-end bookmark), as client-go v0.36's `watchList` asks.
pub fn watch(
    target: &Target,
    from: &str,
    timeout_seconds: u64,
    send_initial_events: bool,
) -> Result<http::Request<Vec<u8>>, kube::core::request::Error> {
    let timeout = timeout_seconds.to_string();
    let from = (!from.is_empty()).then_some(from);
    let streaming = |value| send_initial_events.then_some(value);
    get(
        target,
        &[
            ("allowWatchBookmarks", Some("true")),
            ("labelSelector", target.selector.as_deref()),
            ("resourceVersion", from),
            ("resourceVersionMatch", streaming("NotOlderThan")),
            ("sendInitialEvents", streaming("true")),
            ("timeoutSeconds", Some(&timeout)),
            ("watch", Some("true")),
        ],
    )
}

/// A GET of `target`'s collection with the parameters that have a value, in
/// the order given.
fn get(
    target: &Target,
    params: &[(&str, Option<&str>)],
) -> Result<http::Request<Vec<u8>>, kube::core::request::Error> {
    let path = DynamicObject::url_path(&target.resource, target.namespace.as_deref());
    let mut query = form_urlencoded::Serializer::new(String::new());
    for (name, value) in params {
        if let Some(value) = value {
            query.append_pair(name, value);
        }
    }
    let query = query.finish();
    let uri = if query.is_empty() {
        path
    } else {
        format!("{path}?{query}")
    };
    http::Request::get(uri)
        .body(Vec::new())
        .map(|r| named(r, target))
        .map_err(kube::core::request::Error::BuildRequest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configmaps() -> Target {
        Target {
            name: "configmaps".into(),
            resource: kube::core::ApiResource {
                group: String::new(),
                version: "v1".into(),
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                plural: "configmaps".into(),
            },
            namespace: Some("default".into()),
            selector: None,
        }
    }

    #[test]
    fn the_first_list_sends_both_resource_version_zero_and_the_limit() {
        let r = list(&configmaps(), "0", 500, None).unwrap();
        assert_eq!(
            r.uri(),
            "/api/v1/namespaces/default/configmaps?limit=500&resourceVersion=0"
        );
        let r = list(&configmaps(), "42", 0, None).unwrap();
        assert_eq!(
            r.uri(),
            "/api/v1/namespaces/default/configmaps?resourceVersion=42"
        );
        let r = list(&configmaps(), "", 500, Some("abc")).unwrap();
        assert_eq!(
            r.uri(),
            "/api/v1/namespaces/default/configmaps?continue=abc&limit=500"
        );
    }

    #[test]
    fn watches_ask_as_client_go_does() {
        let r = watch(&configmaps(), "42", 417, false).unwrap();
        assert_eq!(
            r.uri(),
            "/api/v1/namespaces/default/configmaps?allowWatchBookmarks=true&resourceVersion=42&timeoutSeconds=417&watch=true"
        );
        let r = watch(&configmaps(), "", 301, true).unwrap();
        assert_eq!(
            r.uri(),
            "/api/v1/namespaces/default/configmaps?allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&timeoutSeconds=301&watch=true"
        );
    }
}
