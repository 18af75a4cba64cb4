//! The two requests a Reflector makes, built with kube's request builder.

use crate::target::Target;
use kube::core::params::{ListParams, WatchParams};
use kube::core::{DynamicObject, Request, Resource};
use std::time::Duration;

/// The collection URL of `target` (`/api/v1/namespaces/ns/pods`, `/apis/apps/v1/deployments`).
fn collection(target: &Target) -> Request {
    Request::new(DynamicObject::url_path(
        &target.resource,
        target.namespace.as_deref(),
    ))
}

/// One LIST page: from resourceVersion `from` ("0": any recent state, whole;
/// "": a consistent read, in pages of `limit`), or the page after
/// `continue_token` (which carries its own resourceVersion, so none is sent
/// with it).
pub fn list(
    target: &Target,
    from: &str,
    limit: u32,
    continue_token: Option<&str>,
) -> Result<http::Request<Vec<u8>>, kube::core::request::Error> {
    // A LIST from "0" is served whole from the watch cache, which cannot
    // page: client-go sends it without a limit, and so does this.
    let paged = from != "0" || continue_token.is_some();
    let params = ListParams {
        label_selector: target.selector.clone(),
        limit: paged.then_some(limit),
        continue_token: continue_token.map(String::from),
        resource_version: (continue_token.is_none() && !from.is_empty()).then(|| from.into()),
        ..ListParams::default()
    };
    collection(target).list(&params)
}

/// A WATCH from resourceVersion `from`, with bookmarks, that the server
/// ends after `timeout`.
pub fn watch(
    target: &Target,
    from: &str,
    timeout: Duration,
) -> Result<http::Request<Vec<u8>>, kube::core::request::Error> {
    let params = WatchParams {
        label_selector: target.selector.clone(),
        timeout: Some(timeout.as_secs().min(u32::MAX as u64) as u32),
        bookmarks: true,
        ..WatchParams::default()
    };
    collection(target).watch(&params, from)
}
