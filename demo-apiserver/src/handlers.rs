//! Requests on resources: get, list, watch, create, update, patch, delete,
//! and the `status` and `scale` subresources.
//!
//! Every failure is answered with a Kubernetes `Status`; no input makes a
//! handler panic.

use crate::apply;
use crate::params::CollectionParams;
use crate::patch::{self, PatchType};
use crate::path::{self, Subresource, Target};
use crate::protobuf::{self, Accept};
use crate::{discovery, lists, objects, params, response, scale, watch, watch_list};
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::Response;
use serde_json::Value;
use std::sync::Arc;
use watchlife_controlplane::control_plane::Deletion;
use watchlife_controlplane::resource::{NAMESPACES, PODS};
use watchlife_controlplane::selector::{FieldOp, FieldRequirement, FieldSelector};
use watchlife_controlplane::status::Status;
use watchlife_controlplane::store::Revision;
use watchlife_controlplane::{ApiError, ControlPlane, ResourceType, WatchFilter, object};

/// Attempts of a read-modify-write whose write lost a race with another
/// writer and that carries no precondition of the client's: the apiserver
/// retries such updates and patches itself rather than answer 409.
pub const MAX_UPDATE_ATTEMPTS: usize = 5;

/// Namespaces that cannot be deleted, as the apiserver protects them.
const PROTECTED_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

/// The server's shared state.
#[derive(Clone)]
pub struct Api {
    pub cp: ControlPlane,
}

type Answer = Result<Response, Status>;

/// The one entry point: discovery documents, then resources; anything else
/// is a 404 `Status`.
pub async fn handle(
    State(api): State<Api>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    if let Some(answer) = crate::openapi::serve(uri.path(), &headers) {
        return answer.unwrap_or_else(|status| response::status(&status));
    }
    let accept_header = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let accept = protobuf::accept(accept_header);
    // kubectl get's server-side printing (see [`crate::table`]).
    let tabulated = (method == Method::GET && crate::table::wanted(accept_header))
        .then(|| path::parse(uri.path()))
        .flatten()
        .filter(|t| t.subresource.is_none())
        .map(|t| t.rt);
    let answer =
        match discovery_document(uri.path()) {
            Some(doc) if method == Method::GET => Ok(response::ok(&doc)),
            Some(_) => Err(Status::method_not_allowed()),
            None => match path::parse(uri.path()) {
                Some(target) => resource(&api.cp, method, &uri, &headers, body, target).await,
                None => match crate::access::Review::of_path(uri.path()) {
                    Some(review) if method == Method::POST => {
                        access_review(review, &headers, body).await
                    }
                    Some(_) => Err(Status::method_not_allowed()),
                    None => Err(crate::refusals::of(&api.cp, uri.path())
                        .unwrap_or_else(Status::not_found_url)),
                },
            },
        };
    let response = answer.unwrap_or_else(|status| response::status(&status));
    if let Some(rt) = tabulated {
        return response::tabulate(response, rt, api.cp.clock().clone()).await;
    }
    match accept {
        Accept::Json => response,
        wanted => response::negotiate(response, wanted).await,
    }
}

/// A self-subject review, answered (see [`crate::access`]).
async fn access_review(review: crate::access::Review, headers: &HeaderMap, body: Body) -> Answer {
    let body = read_object(headers, body).await?;
    let answered = crate::access::answer(review, &body)?;
    Ok(response::json(StatusCode::CREATED, answered.to_string()))
}

fn discovery_document(path: &str) -> Option<Value> {
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').skip(1).collect();
    match segments.as_slice() {
        ["version"] => Some(discovery::version()),
        ["api"] => Some(discovery::core_versions()),
        ["api", version] => discovery::resource_list("", version),
        ["apis"] => Some(discovery::group_list()),
        ["apis", group] => discovery::api_group(group),
        ["apis", group, version] => discovery::resource_list(group, version),
        _ => None,
    }
}

async fn resource(
    cp: &ControlPlane,
    method: Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: Body,
    target: Target,
) -> Answer {
    let pairs = params::pairs(uri.query());
    let named = target.name.is_some();
    if target.watch_prefix && method != Method::GET {
        return Err(Status::method_not_allowed());
    }
    match (method, named) {
        (Method::GET, false) => collection(cp, &target, &pairs, watch::client(headers)).await,
        (Method::GET, true) => get(cp, &target, &pairs, watch::client(headers)).await,
        (Method::POST, false) if target.namespace.is_some() || !target.rt.namespaced => {
            let manager = field_manager(&pairs, headers)?;
            let body = read_object(headers, body).await?;
            create(cp, &target, &body, &manager)
        }
        (Method::PUT, true) => {
            let manager = field_manager(&pairs, headers)?;
            let body = read_object(headers, body).await?;
            update(cp, &target, &body, &manager)
        }
        (Method::PATCH, true) => {
            let manager = field_manager(&pairs, headers)?;
            let content_type = headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok());
            if apply::is_apply(content_type) {
                if params::value(&pairs, "fieldManager").is_none() {
                    return Err(Status::new(
                        422,
                        "Invalid",
                        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
                    ));
                }
                let body = read_body(body).await?;
                let force = params::value(&pairs, "force").is_some_and(|f| f == "true" || f == "1");
                return server_side_apply(cp, &target, &body, &manager, force);
            }
            let kind = PatchType::from_content_type(content_type)?;
            let body = read_body(body).await?;
            patch(cp, &target, kind, &body, &manager)
        }
        (Method::DELETE, true) if target.subresource.is_none() => {
            let body = read_object(headers, body).await?;
            delete(cp, &target, &pairs, &body)
        }
        _ => Err(Status::method_not_allowed()),
    }
}

/// The body of a create, an update or a delete, as JSON: a protobuf body
/// (what client-go's typed clients send) is converted; YAML and other types
/// are refused with 415.
async fn read_object(headers: &HeaderMap, body: Body) -> Result<bytes::Bytes, Status> {
    let media = media_type(headers);
    match media.as_deref() {
        None | Some("application/json") | Some("") => read_body(body).await,
        Some(protobuf::PROTOBUF) => {
            let body = read_body(body).await?;
            if body.is_empty() {
                return Ok(body);
            }
            let object = protobuf::decode(&body)?;
            Ok(serde_json::to_vec(&object)
                .expect("a JSON value serializes")
                .into())
        }
        Some(_) => Err(Status::unsupported_media_type(&[
            response::JSON,
            protobuf::PROTOBUF,
        ])),
    }
}

/// The request's media type, lower-case, without parameters.
fn media_type(headers: &HeaderMap) -> Option<String> {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
}

/// Reads a request body of at most [`objects::MAX_BODY_BYTES`]; a larger one
/// is a 413, one that did not arrive whole within
/// [`crate::REQUEST_BODY_DEADLINE`] a 408.
async fn read_body(body: Body) -> Result<bytes::Bytes, Status> {
    axum::body::to_bytes(body, objects::MAX_BODY_BYTES)
        .await
        .map_err(|e| {
            let caused_by = |is: fn(&(dyn std::error::Error + 'static)) -> bool| {
                let mut cause = std::error::Error::source(&e);
                while let Some(c) = cause {
                    if is(c) {
                        return true;
                    }
                    cause = c.source();
                }
                false
            };
            if caused_by(|c| c.is::<http_body_util::LengthLimitError>())
                || e.to_string().contains("length limit")
            {
                Status::too_large(objects::MAX_BODY_BYTES)
            } else if caused_by(|c| c.is::<tower_http::timeout::TimeoutError>()) {
                Status::new(
                    408,
                    "Timeout",
                    format!(
                        "the request body did not arrive within {} s",
                        crate::REQUEST_BODY_DEADLINE.as_secs()
                    ),
                )
            } else {
                Status::bad_request(format!("cannot read the request body: {e}"))
            }
        })
}

fn namespace(target: &Target) -> Option<&str> {
    target.namespace.as_deref().filter(|_| target.rt.namespaced)
}

/// A request's collection parameters, and what it asked of a watch's
/// initial events (see [`watch_list::check`]).
fn collection_params(
    cp: &ControlPlane,
    target: &Target,
    pairs: &[(String, String)],
) -> Result<(CollectionParams, Option<bool>), Status> {
    let params = params::collection(pairs, target.rt, target.watch_prefix)?;
    let send_initial_events = watch_list::check(pairs, &params, &cp.profile())?;
    Ok((params, send_initial_events))
}

/// A watch of `target`'s collection (in its namespace), narrowed to the
/// objects the request's label selector and `fields` select.
async fn watch_collection(
    cp: &ControlPlane,
    target: &Target,
    params: &CollectionParams,
    fields: FieldSelector,
    send_initial_events: Option<bool>,
    client: Option<&str>,
) -> Answer {
    let filter = WatchFilter {
        namespace: namespace(target).map(str::to_owned),
        labels: params.list.labels.clone(),
        fields,
    };
    Ok(watch::respond(cp, target.rt, filter, params, send_initial_events, client).await)
}

async fn collection(
    cp: &ControlPlane,
    target: &Target,
    pairs: &[(String, String)],
    client: Option<&str>,
) -> Answer {
    let (params, send_initial_events) = collection_params(cp, target, pairs)?;
    if params.watch {
        let fields = params.list.fields.clone();
        return watch_collection(cp, target, &params, fields, send_initial_events, client).await;
    }
    let list = lists::answer(cp, target.rt, namespace(target), &params.list, client).await?;
    Ok(response::list(target.rt, &list))
}

async fn get(
    cp: &ControlPlane,
    target: &Target,
    pairs: &[(String, String)],
    client: Option<&str>,
) -> Answer {
    let name = target.name.as_deref().unwrap_or_default();
    let (params, send_initial_events) = collection_params(cp, target, pairs)?;
    if params.watch && target.subresource.is_none() {
        // A watch of one object is a watch of its collection narrowed to
        // its name, as the apiserver serves it.
        let mut fields = params.list.fields.clone();
        fields.requirements.push(FieldRequirement {
            field: "metadata.name".into(),
            op: FieldOp::Equals,
            value: name.into(),
        });
        return watch_collection(cp, target, &params, fields, send_initial_events, client).await;
    }
    let obj = cp.get(target.rt, namespace(target), name)?;
    Ok(match target.subresource {
        Some(Subresource::Scale) => response::ok(&scale::of(&obj)),
        _ => response::object(StatusCode::OK, &obj),
    })
}

/// The field manager of a write (see [`apply::manager`]); a `fieldManager`
/// the apiserver would refuse is a 422.
fn field_manager(pairs: &[(String, String)], headers: &HeaderMap) -> Result<String, Status> {
    apply::manager(
        params::value(pairs, "fieldManager"),
        headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok()),
    )
}

/// The time a manager's entry records.
fn now(cp: &ControlPlane) -> String {
    watchlife_controlplane::time::rfc3339(cp.clock().now())
}

/// `PATCH` with `application/apply-patch+yaml` (see [`apply`]): creates the
/// object when it does not exist, else merges the applied configuration
/// with field ownership and conflicts.
fn server_side_apply(
    cp: &ControlPlane,
    target: &Target,
    body: &[u8],
    manager: &str,
    force: bool,
) -> Answer {
    let rt = target.rt;
    if target.subresource.is_some() {
        return Err(Status::unsupported_media_type(&patch::ACCEPTED));
    }
    let name = target.name.as_deref().unwrap_or_default();
    let applied = apply::parse(body)?;
    let applied = objects::decode(rt, applied.to_string().as_bytes())?;
    objects::check_name(&applied, name)?;
    objects::check_namespace(rt, &applied, namespace(target))?;
    let at = now(cp);
    match cp.get(rt, namespace(target), name) {
        Err(ApiError::NotFound { .. }) => {
            let mut obj = apply::apply(rt, None, &applied, manager, force, &at)?;
            object::set_meta(&mut obj, "name", name);
            objects::prepare_create(rt, &mut obj, namespace(target))?;
            if let Some(ns) = namespace(target) {
                cp.get(NAMESPACES, None, ns)?;
            }
            let created = cp.create(rt, obj)?;
            return Ok(response::object(StatusCode::CREATED, &created));
        }
        Err(e) => return Err(e.into()),
        Ok(_) => {}
    }
    let updated = guaranteed_update(cp, target, None, |current| {
        let merged = apply::apply(rt, Some(current), &applied, manager, force, &at)?;
        Ok((objects::prepare_update(rt, None, current, merged), None))
    })?;
    Ok(response::object(StatusCode::OK, &updated))
}

fn create(cp: &ControlPlane, target: &Target, body: &[u8], manager: &str) -> Answer {
    let rt = target.rt;
    let mut obj = objects::decode(rt, body)?;
    objects::prepare_create(rt, &mut obj, namespace(target))?;
    apply::track_update(rt, None, &mut obj, manager, &now(cp));
    if let Some(ns) = namespace(target) {
        // The apiserver's NamespaceLifecycle admission: no object in a
        // namespace that does not exist.
        cp.get(NAMESPACES, None, ns)?;
    }
    let created = cp.create(rt, obj)?;
    Ok(response::object(StatusCode::CREATED, &created))
}

fn update(cp: &ControlPlane, target: &Target, body: &[u8], manager: &str) -> Answer {
    let rt = target.rt;
    let name = target.name.as_deref().unwrap_or_default();
    let updated = match target.subresource {
        Some(Subresource::Scale) => {
            let sent: Value = serde_json::from_slice(body)
                .map_err(|e| Status::bad_request(format!("error decoding Scale: {e}")))?;
            objects::check_name(&sent, name)?;
            let replicas = scale::replicas(rt, &sent)?;
            let precondition = revision_in(&sent)?;
            let obj = guaranteed_update(cp, target, Some(manager), |current| {
                let scaled = scale::apply(current, replicas);
                Ok((
                    objects::prepare_update(rt, None, current, scaled),
                    precondition,
                ))
            })?;
            return Ok(response::ok(&scale::of(&obj)));
        }
        sub => {
            let sent = objects::decode(rt, body)?;
            objects::check_name(&sent, name)?;
            objects::check_namespace(rt, &sent, namespace(target))?;
            let precondition = revision_in(&sent)?;
            let manager = (sub.is_none()).then_some(manager);
            guaranteed_update(cp, target, manager, |current| {
                Ok((
                    objects::prepare_update(rt, sub, current, sent.clone()),
                    precondition,
                ))
            })?
        }
    };
    Ok(response::object(StatusCode::OK, &updated))
}

fn patch(
    cp: &ControlPlane,
    target: &Target,
    kind: PatchType,
    body: &[u8],
    manager: &str,
) -> Answer {
    let rt = target.rt;
    let name = target.name.as_deref().unwrap_or_default();
    let sub = target.subresource;
    let tracked = (sub != Some(Subresource::Status)).then_some(manager);
    let updated = guaranteed_update(cp, target, tracked, |current| {
        let current_rv = revision_in(current)?;
        let view = match sub {
            Some(Subresource::Scale) => scale::of(current),
            _ => current.clone(),
        };
        let patched = patch::apply(kind, &view, body)?;
        if object::name(&patched) != name {
            return Err(objects::invalid(
                rt,
                name,
                "metadata.name",
                "FieldValueInvalid",
                "Invalid value: field is immutable",
            ));
        }
        // A resourceVersion the patch changed is the client's precondition;
        // an unchanged one is none, and a lost race is retried.
        let sent_rv = revision_in(&patched)?;
        let precondition = sent_rv.filter(|rv| Some(*rv) != current_rv);
        let new = match sub {
            Some(Subresource::Scale) => {
                let scaled = scale::apply(current, scale::replicas(rt, &patched)?);
                objects::prepare_update(rt, None, current, scaled)
            }
            sub => objects::prepare_update(rt, sub, current, patched),
        };
        Ok((new, precondition))
    })?;
    Ok(match sub {
        Some(Subresource::Scale) => response::ok(&scale::of(&updated)),
        _ => response::object(StatusCode::OK, &updated),
    })
}

/// `metadata.resourceVersion` as a revision, when set.
fn revision_in(obj: &Value) -> Result<Option<Revision>, Status> {
    match object::resource_version(obj) {
        None | Some("") => Ok(None),
        Some(rv) => rv
            .parse()
            .map(Some)
            .map_err(|_| Status::bad_request(format!("invalid resource version {rv:?}"))),
    }
}

/// Reads the target, computes the new object with `change`, and writes it.
///
/// `change` returns the object to write and the client's precondition (a
/// resourceVersion the write must find). With a precondition, a write that
/// finds another revision is a 409 Conflict. Without one, the write is made
/// against the revision just read and, when another writer got in between,
/// is recomputed from the newer object, up to [`MAX_UPDATE_ATTEMPTS`] times.
/// With a `manager`, the fields the write changes become that manager's
/// (see [`apply::track_update`]).
fn guaranteed_update(
    cp: &ControlPlane,
    target: &Target,
    manager: Option<&str>,
    change: impl Fn(&Value) -> Result<(Value, Option<Revision>), Status>,
) -> Result<Arc<Value>, Status> {
    let rt = target.rt;
    let name = target.name.as_deref().unwrap_or_default();
    let mut last = None;
    for _ in 0..MAX_UPDATE_ATTEMPTS {
        let current = cp.get(rt, namespace(target), name)?;
        let (mut new, precondition) = change(&current)?;
        match manager {
            Some(m) => apply::track_update(rt, Some(&current), &mut new, m, &now(cp)),
            // A status write or an apply: the managers `change` left.
            None if new.pointer("/metadata/managedFields").is_none() => {
                if let Some(fields) = current.pointer("/metadata/managedFields") {
                    object::metadata_mut(&mut new).insert("managedFields".into(), fields.clone());
                }
            }
            None => {}
        }
        let expected = match precondition {
            Some(rv) => rv.to_string(),
            None => object::resource_version(&current).unwrap_or("").to_string(),
        };
        object::set_meta(&mut new, "resourceVersion", expected);
        object::set_meta(&mut new, "name", name);
        if let Some(ns) = namespace(target) {
            object::set_meta(&mut new, "namespace", ns);
        }
        match cp.update(rt, new) {
            Ok(updated) => return Ok(updated),
            Err(e @ ApiError::Conflict { .. }) if precondition.is_none() => last = Some(e),
            Err(e) => return Err(e.into()),
        }
    }
    Err(last
        .map(Status::from)
        .unwrap_or_else(|| Status::new(409, "Conflict", "too many concurrent writers")))
}

fn delete(cp: &ControlPlane, target: &Target, pairs: &[(String, String)], body: &[u8]) -> Answer {
    let rt = target.rt;
    let name = target.name.as_deref().unwrap_or_default();
    let options: Value = if body.iter().all(u8::is_ascii_whitespace) {
        Value::Null
    } else {
        serde_json::from_slice(body)
            .map_err(|e| Status::bad_request(format!("error decoding DeleteOptions: {e}")))?
    };
    let grace = match options.get("gracePeriodSeconds") {
        Some(Value::Number(n)) => Some(n.as_u64().unwrap_or(0)),
        _ => params::grace_period(pairs)?,
    };
    if rt == NAMESPACES && PROTECTED_NAMESPACES.contains(&name) {
        return Err(ApiError::Forbidden(format!(
            "namespaces \"{name}\" is forbidden: this namespace may not be deleted"
        ))
        .into());
    }
    // Preconditions are checked against the current object just before the
    // delete; a write in between is not detected (the store's delete takes
    // no precondition through this path).
    let current = cp.get(rt, namespace(target), name)?;
    if let Some(want) = options
        .pointer("/preconditions/resourceVersion")
        .and_then(Value::as_str)
        && object::resource_version(&current) != Some(want)
    {
        return Err(Status::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": the ResourceVersion in the precondition ({want}) does not match the ResourceVersion in record ({}). The object might have been modified",
                rt.qualified_name(),
                object::resource_version(&current).unwrap_or("")
            ),
        ));
    }
    if let Some(want) = options
        .pointer("/preconditions/uid")
        .and_then(Value::as_str)
        && current.pointer("/metadata/uid").and_then(Value::as_str) != Some(want)
    {
        return Err(Status::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": Precondition failed: UID in precondition: {want}, UID in object meta: {}",
                rt.qualified_name(),
                current
                    .pointer("/metadata/uid")
                    .and_then(Value::as_str)
                    .unwrap_or("")
            ),
        ));
    }
    let deletion = cp.delete_gracefully(rt, namespace(target), name, grace)?;
    Ok(deleted(rt, &deletion))
}

/// The answer to a DELETE: pods and namespaces are answered with the object
/// (marked, or in its last state), other types with a `Status` of success,
/// as their apiserver registries do.
fn deleted(rt: ResourceType, deletion: &Deletion) -> Response {
    let obj = deletion.object();
    if rt == PODS || rt == NAMESPACES {
        response::object(StatusCode::OK, obj)
    } else {
        response::success(rt, obj)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tower_http::timeout::DeadlineBody;

    #[tokio::test]
    async fn a_body_that_stops_arriving_is_a_408() {
        let stalled = Body::from_stream(futures_util::stream::pending::<
            Result<bytes::Bytes, std::io::Error>,
        >());
        let body = Body::new(DeadlineBody::new(Duration::from_millis(50), stalled));
        let status = tokio::time::timeout(Duration::from_secs(10), read_body(body))
            .await
            .expect("the deadline ends the read")
            .unwrap_err();
        assert_eq!((status.code, status.reason), (408, "Timeout"));
    }
}
