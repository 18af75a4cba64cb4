//! The door of every route: the `Host` check as a layer over all of them,
//! and the token and `Origin` checks as extractors, [`RequireToken`] and
//! [`SameOrigin`], that a handler names among its arguments when it needs
//! them. Each check is written once, here; the rules are [`crate::downstream::access`]'s.
//!
//! Extractors rather than layers, for the order of a refusal: a handler's
//! arguments are taken in order, so `/ws` still refuses a malformed query
//! (400) or a request that is no WebSocket handshake before it asks for the
//! token (401), then `Origin` (403), as it always has.
//!
//! A refusal of `/ws` is counted in the viewers' refusals
//! ([`crate::downstream::metrics::Refusal`]); other routes' refusals are not.

use crate::downstream::access::{Access, Denied};
use crate::downstream::metrics::{Metrics, Refusal};
use axum::extract::{FromRequestParts, Query, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use std::sync::Arc;

/// The path whose refusals count as refused viewers.
const VIEWERS_PATH: &str = "/ws";

/// The query a guarded route is asked the token in: `?token=`.
#[derive(Debug, Deserialize)]
pub struct TokenQuery {
    pub token: Option<String>,
}

/// What the checks need: the rules, and where refused viewers are counted.
pub struct Guard {
    pub access: Access,
    pub metrics: Metrics,
}

impl Guard {
    /// `denied` as an answer, counted when it refuses a viewer.
    fn refuse(&self, path: &str, why: Refusal, denied: Denied) -> Response {
        if path == VIEWERS_PATH {
            self.metrics.viewer_refused(why);
        }
        refuse(denied)
    }
}

/// The request carries the token of a bridge that has one (`?token=` or
/// `Authorization: Bearer`); otherwise 401. A query that does not parse is
/// refused as axum's `Query` refuses it (400).
pub struct RequireToken;

impl<S: AsRef<Guard> + Send + Sync> FromRequestParts<Arc<S>> for RequireToken {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &Arc<S>) -> Result<Self, Response> {
        let guard = (**state).as_ref();
        let Query(query) =
            Query::<TokenQuery>::try_from_uri(&parts.uri).map_err(IntoResponse::into_response)?;
        let authorization = header_str(&parts.headers, header::AUTHORIZATION);
        match guard
            .access
            .check_token(query.token.as_deref(), authorization)
        {
            Ok(()) => Ok(RequireToken),
            Err(denied) => Err(guard.refuse(parts.uri.path(), Refusal::Unauthorized, denied)),
        }
    }
}

/// A browser's request comes from the bridge's own page or an allowed
/// origin (no `Origin`: not a browser, and not concerned); otherwise 403.
pub struct SameOrigin;

impl<S: AsRef<Guard> + Send + Sync> FromRequestParts<Arc<S>> for SameOrigin {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &Arc<S>) -> Result<Self, Response> {
        let guard = (**state).as_ref();
        let origin = header_str(&parts.headers, header::ORIGIN);
        let host = header_str(&parts.headers, header::HOST);
        match guard.access.check_origin(origin, host) {
            Ok(()) => Ok(SameOrigin),
            Err(denied) => Err(guard.refuse(parts.uri.path(), Refusal::Origin, denied)),
        }
    }
}

/// A layer over every route: refuses requests to a name a loopback bridge
/// does not answer to (see [`Access::check_host`]).
pub async fn check_host<S: AsRef<Guard>>(
    State(state): State<Arc<S>>,
    request: Request,
    next: Next,
) -> Response {
    let guard = (*state).as_ref();
    let host = header_str(request.headers(), header::HOST);
    match guard.access.check_host(host) {
        Ok(()) => next.run(request).await,
        Err(denied) => guard.refuse(request.uri().path(), Refusal::Host, denied),
    }
}

/// A header's value, when it is text.
pub fn header_str(headers: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// A refusal as plain text, one line.
pub fn refuse(denied: Denied) -> Response {
    let status = StatusCode::from_u16(denied.status).unwrap_or(StatusCode::FORBIDDEN);
    (status, format!("{}\n", denied.message)).into_response()
}
