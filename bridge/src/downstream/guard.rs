//! The door of every route, as layers: [`check_host`] over all of them,
//! [`require_token`] and [`same_origin`] over the routes that need them
//! (see [`crate::downstream::server::router`]). Each check is written once,
//! here; the rules are [`crate::downstream::access`]'s.
//!
//! A refusal comes before the route reads anything of the request: a
//! request without the token is 401 (then a foreign `Origin` 403) whatever
//! else is wrong with it, so a stranger learns nothing of the routes' rules.
//!
//! A refusal of `/ws` is counted in the viewers' refusals
//! ([`crate::downstream::metrics::Refusal`]); other routes' refusals are not.

use crate::downstream::access::{Access, Denied};
use crate::downstream::metrics::{Metrics, Refusal};
use axum::extract::{Query, Request, State};
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
    /// The rest of the route when `checked` passed; else the refusal, as `why`.
    async fn pass(
        &self,
        checked: Result<(), Denied>,
        why: Refusal,
        request: Request,
        next: Next,
    ) -> Response {
        match checked {
            Ok(()) => next.run(request).await,
            Err(denied) => self.refuse(request.uri().path(), why, denied),
        }
    }

    /// `denied` as an answer, counted when it refuses a viewer.
    fn refuse(&self, path: &str, why: Refusal, denied: Denied) -> Response {
        if path == VIEWERS_PATH {
            self.metrics.viewer_refused(why);
        }
        refuse(denied)
    }
}

/// A layer over the routes that need the token of a bridge that has one
/// (`?token=` or `Authorization: Bearer`): otherwise 401, before the route
/// reads anything else of the request.
pub async fn require_token<S: AsRef<Guard>>(
    State(state): State<Arc<S>>,
    request: Request,
    next: Next,
) -> Response {
    let guard = (*state).as_ref();
    // A query that does not parse carries no token: refused as one without.
    let query = Query::<TokenQuery>::try_from_uri(request.uri())
        .map(|Query(query)| query)
        .unwrap_or(TokenQuery { token: None });
    let authorization = header_str(request.headers(), header::AUTHORIZATION);
    let checked = guard
        .access
        .check_token(query.token.as_deref(), authorization);
    guard
        .pass(checked, Refusal::Unauthorized, request, next)
        .await
}

/// A layer over the routes a browser reaches from the page: the request
/// comes from the bridge's own page or an allowed origin (no `Origin`: not a
/// browser, and not concerned); otherwise 403.
pub async fn same_origin<S: AsRef<Guard>>(
    State(state): State<Arc<S>>,
    request: Request,
    next: Next,
) -> Response {
    let guard = (*state).as_ref();
    let origin = header_str(request.headers(), header::ORIGIN);
    let host = header_str(request.headers(), header::HOST);
    let checked = guard.access.check_origin(origin, host);
    guard.pass(checked, Refusal::Origin, request, next).await
}

/// A layer over every route: refuses requests to a name a loopback bridge
/// does not answer to (see [`Access::check_host`]).
pub async fn check_host<S: AsRef<Guard>>(
    State(state): State<Arc<S>>,
    request: Request,
    next: Next,
) -> Response {
    let guard = (*state).as_ref();
    let checked = guard
        .access
        .check_host(header_str(request.headers(), header::HOST));
    guard.pass(checked, Refusal::Host, request, next).await
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
