//! JSON responses: objects, lists and `Status` objects.

use axum::body::{Body, Bytes};
use axum::http::response::Parts;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::convert::Infallible;
use std::sync::Arc;
use watchlife_controlplane::ResourceType;
use watchlife_controlplane::list::ObjectList;
use watchlife_controlplane::status::Status;

/// The content type of every response: the server speaks JSON only.
pub const JSON: &str = "application/json";

/// A JSON body with a status code.
pub fn json(code: StatusCode, body: String) -> Response {
    (code, [(header::CONTENT_TYPE, JSON)], body).into_response()
}

/// 200 with a JSON value.
pub fn ok(value: &Value) -> Response {
    json(StatusCode::OK, value.to_string())
}

/// An object with the given code (200 for reads and updates, 201 for creates).
pub fn object(code: StatusCode, obj: &Arc<Value>) -> Response {
    json(code, obj.to_string())
}

/// A failure as a `Status` object, with its code as the HTTP status.
///
/// A Status whose details carry `retryAfterSeconds` also says it in a
/// `Retry-After` header, as the apiserver's `ErrorNegotiated`
/// (`endpoints/handlers/responsewriters/writers.go`) does.
pub fn status(s: &Status) -> Response {
    let code = StatusCode::from_u16(s.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = json(code, s.to_json().to_string());
    let retry_after = s
        .details
        .as_ref()
        .and_then(|d| d["retryAfterSeconds"].as_u64())
        .filter(|&seconds| seconds > 0);
    if let Some(seconds) = retry_after {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, header::HeaderValue::from(seconds));
    }
    response
}

/// A `Status` of success, as a DELETE of most types answers.
pub fn success(rt: ResourceType, obj: &Value) -> Response {
    let mut details = json!({
        "name": watchlife_controlplane::object::name(obj),
        // The apiserver puts the resource (plural) here, not the kind.
        "kind": rt.plural,
    });
    if !rt.group.is_empty() {
        details["group"] = rt.group.into();
    }
    if let Some(uid) = obj.pointer("/metadata/uid") {
        details["uid"] = uid.clone();
    }
    ok(&json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    }))
}

/// Bytes of a list's items serialized before they are handed to the
/// connection: a list is sent as it is written, so a request in flight holds
/// one chunk of it, not the whole list as text.
pub const LIST_CHUNK_BYTES: usize = 64 * 1024;

/// A `{Kind}List`, written item by item and sent in chunks of about
/// [`LIST_CHUNK_BYTES`] as it is written (the items themselves are shared
/// with the store, not copied).
pub fn list(rt: ResourceType, list: &ObjectList) -> Response {
    let mut metadata = json!({"resourceVersion": list.resource_version.to_string()});
    if let Some(token) = &list.continue_token {
        metadata["continue"] = token.clone().into();
    }
    if let Some(remaining) = list.remaining_item_count {
        metadata["remainingItemCount"] = remaining.into();
    }
    let head = format!(
        "{{\"kind\":\"{}List\",\"apiVersion\":\"{}\",\"metadata\":{metadata},\"items\":[",
        rt.kind,
        rt.api_version()
    );
    let items = list.items.clone().into_iter().enumerate();
    let chunks = futures_util::stream::unfold(Some((head, items)), |state| async move {
        let (mut chunk, mut items) = state?;
        for (i, item) in items.by_ref() {
            if i > 0 {
                chunk.push(',');
            }
            chunk.push_str(&item.to_string());
            if chunk.len() >= LIST_CHUNK_BYTES {
                return Some((
                    Ok::<_, Infallible>(Bytes::from(chunk)),
                    Some((String::new(), items)),
                ));
            }
        }
        chunk.push_str("]}");
        Some((Ok(Bytes::from(chunk)), None))
    });
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, JSON)],
        Body::from_stream(chunks),
    )
        .into_response()
}

/// A streaming JSON body (a watch).
pub fn stream(body: Body) -> Response {
    let mut response = (StatusCode::OK, [(header::CONTENT_TYPE, JSON)], body).into_response();
    response.extensions_mut().insert(Streamed);
    response
}

/// Marks a response that streams (a watch): it stays JSON whatever the
/// client prefers, one event per line (client-go reads the stream in the
/// type the response names).
#[derive(Debug, Clone, Copy)]
pub struct Streamed;

/// The most a JSON answer may weigh to be turned into protobuf: the demo's
/// whole store (32 MiB of objects in memory) fits in far less as JSON.
const NEGOTIATED_BYTES: usize = 64 * 1024 * 1024;

/// Whether `response` is a JSON answer.
fn is_json(response: &Response) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes() == JSON.as_bytes())
}

/// The parts and the whole body of `response`, read to `purpose` it; a
/// `500 InternalError` when the body weighs more than [`NEGOTIATED_BYTES`].
async fn whole(response: Response, purpose: &str) -> Result<(Parts, Bytes), Response> {
    let (parts, body) = response.into_parts();
    axum::body::to_bytes(body, NEGOTIATED_BYTES)
        .await
        .map(|bytes| (parts, bytes))
        .map_err(|_| {
            let message = format!("the answer was too large to {purpose}");
            status(&Status::new(500, "InternalError", message))
        })
}

/// Turns a JSON answer into the protobuf the client asked for
/// (`Accept: application/vnd.kubernetes.protobuf`), keeping its status code.
/// A kind with no protobuf message stays JSON when the client takes JSON
/// too, and is `406 NotAcceptable` when it takes protobuf only. Watches stay
/// JSON. A protobuf list is written whole, not in chunks.
pub async fn negotiate(response: Response, wanted: crate::protobuf::Accept) -> Response {
    use crate::protobuf::{self, Accept};
    if wanted == Accept::Json
        || !is_json(&response)
        || response.extensions().get::<Streamed>().is_some()
    {
        return response;
    }
    let (parts, bytes) = match whole(response, "be written as protobuf").await {
        Ok(whole) => whole,
        Err(refused) => return refused,
    };
    let encoded = serde_json::from_slice::<Value>(&bytes)
        .ok()
        .and_then(|v| protobuf::encode(&v));
    match (encoded, wanted) {
        (Some(pb), _) => {
            let mut response = Response::from_parts(parts, Body::from(pb));
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                header::HeaderValue::from_static(protobuf::PROTOBUF),
            );
            response.headers_mut().remove(header::CONTENT_LENGTH);
            response
        }
        (None, Accept::ProtobufOnly) => status(&Status::new(
            406,
            "NotAcceptable",
            format!(
                "only the following media types are accepted: {JSON}{}",
                if protobuf::pool().is_none() {
                    " (this build has no protobuf schemas: run scripts/ensure-real-cluster.sh and rebuild)"
                } else {
                    ""
                }
            ),
        )),
        (None, _) => Response::from_parts(parts, Body::from(bytes)),
    }
}

/// Turns a JSON answer to `GET` into the `Table` kubectl asked for (see
/// [`crate::table`]): a list or an object becomes a table, each event of a
/// watch a one-row table. Failures stay `Status` objects.
pub async fn tabulate(
    response: Response,
    rt: ResourceType,
    clock: watchlife_controlplane::Clock,
) -> Response {
    let now = move || (clock.now() / 1_000_000) as i64;
    if response.status() != StatusCode::OK || !is_json(&response) {
        return response;
    }
    if response.extensions().get::<Streamed>().is_some() {
        let (parts, body) = response.into_parts();
        let lines = futures_util::stream::unfold(
            (body.into_data_stream(), Vec::<u8>::new(), now),
            move |(mut data, mut pending, now)| async move {
                use futures_util::StreamExt as _;
                loop {
                    if let Some(end) = pending.iter().position(|b| *b == b'\n') {
                        let line: Vec<u8> = pending.drain(..=end).collect();
                        let out = crate::table::event_line(rt, &line[..line.len() - 1], now())
                            .unwrap_or(line);
                        return Some((Ok::<_, Infallible>(Bytes::from(out)), (data, pending, now)));
                    }
                    match data.next().await {
                        Some(Ok(chunk)) => pending.extend_from_slice(&chunk),
                        // The stream ended (or broke): what is left goes as it is.
                        _ if !pending.is_empty() => {
                            let rest = std::mem::take(&mut pending);
                            return Some((Ok(Bytes::from(rest)), (data, pending, now)));
                        }
                        _ => return None,
                    }
                }
            },
        );
        return Response::from_parts(parts, Body::from_stream(lines));
    }
    let (parts, bytes) = match whole(response, "tabulate").await {
        Ok(whole) => whole,
        Err(refused) => return refused,
    };
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(value) if value.get("kind").and_then(Value::as_str) != Some("Status") => {
            let table = crate::table::of(rt, &value, now());
            let mut response = Response::from_parts(parts, Body::from(table.to_string()));
            response.headers_mut().remove(header::CONTENT_LENGTH);
            response
        }
        _ => Response::from_parts(parts, Body::from(bytes)),
    }
}
