//! The two requests a Reflector makes, built with kube's request builder,
//! with exactly the parameters the Reflector machine chose.

use crate::target::Target;
use kube::core::params::WatchParams;
use kube::core::{DynamicObject, Request, Resource};

/// The header that names a client's requests to the demo's apiserver
/// (`watchlife_demo_apiserver::watch::CLIENT_HEADER`); any other server
/// ignores it.
pub const CLIENT_HEADER: &str = "x-watchlife-client";

/// The name under which the Reflector of `target` makes its requests.
pub fn client_name(target: &str) -> String {
    format!("watchlife/{target}")
}

/// Names `request` as the Reflector of `target`'s.
fn named(mut request: http::Request<Vec<u8>>, target: &Target) -> http::Request<Vec<u8>> {
    if let Ok(value) = http::HeaderValue::from_str(&client_name(&target.name)) {
        request.headers_mut().insert(CLIENT_HEADER, value);
    }
    request
}

/// The collection URL of `target` (`/api/v1/namespaces/ns/pods`, `/apis/apps/v1/deployments`).
fn collection(target: &Target) -> Request {
    Request::new(DynamicObject::url_path(
        &target.resource,
        target.namespace.as_deref(),
    ))
}

/// One LIST page: from resourceVersion `from` (none sent when empty), `limit`
/// items (none sent when 0), or the page after `continue_token`.
///
/// Written out rather than built with kube's `ListParams`: kube leaves out
/// `resourceVersion=0` when a limit is set, which turns client-go's first
/// LIST (`resourceVersion=0&limit=500`, served by the watch cache) into a
/// consistent read from etcd.
pub fn list(
    target: &Target,
    from: &str,
    limit: u64,
    continue_token: Option<&str>,
) -> Result<http::Request<Vec<u8>>, kube::core::request::Error> {
    let path = DynamicObject::url_path(&target.resource, target.namespace.as_deref());
    let mut query = form_urlencoded::Serializer::new(String::new());
    if let Some(selector) = &target.selector {
        query.append_pair("labelSelector", selector);
    }
    if limit > 0 {
        query.append_pair("limit", &limit.to_string());
    }
    match continue_token {
        Some(token) => {
            query.append_pair("continue", token);
        }
        None if !from.is_empty() => {
            query.append_pair("resourceVersion", from);
        }
        None => {}
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

/// A WATCH from resourceVersion `from`, with bookmarks, that the server
/// ends after `timeout_seconds`.
pub fn watch(
    target: &Target,
    from: &str,
    timeout_seconds: u64,
) -> Result<http::Request<Vec<u8>>, kube::core::request::Error> {
    let params = WatchParams {
        label_selector: target.selector.clone(),
        timeout: Some(timeout_seconds.min(u32::MAX as u64) as u32),
        bookmarks: true,
        ..WatchParams::default()
    };
    collection(target)
        .watch(&params, from)
        .map(|r| named(r, target))
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
            "/api/v1/namespaces/default/configmaps?limit=500&continue=abc"
        );
    }
}
