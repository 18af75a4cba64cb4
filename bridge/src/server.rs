//! The HTTP side: routes, the WebSocket upgrade, and serving until shutdown.

use crate::app::App;
use crate::{assets, viewer};
use axum::Router;
use axum::extract::{Query, State, WebSocketUpgrade};
use axum::response::{IntoResponse, Json, Response};
use axum::routing::get;
use serde::Deserialize;
use std::sync::Arc;

/// Query of `/ws`: where a returning viewer left off.
#[derive(Debug, Deserialize)]
pub struct WsQuery {
    /// Stream the viewer's cursor belongs to (from `hello`).
    pub stream: Option<String>,
    /// Last stream `seq` the viewer saw.
    pub since: Option<u64>,
}

/// All routes of the bridge.
pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/ws", get(websocket))
        .route("/healthz", get(|| async { "ok" }))
        .route("/version", get(version))
        .fallback(assets::serve)
        .with_state(app)
}

async fn websocket(
    State(app): State<Arc<App>>,
    Query(query): Query<WsQuery>,
    upgrade: WebSocketUpgrade,
) -> Response {
    // A cursor from another run of the bridge means nothing here.
    let since = query
        .since
        .filter(|_| query.stream.as_deref() == Some(app.hub.stream_id()));
    upgrade
        .max_message_size(viewer::MAX_MESSAGE_BYTES * 4)
        .on_upgrade(move |socket| viewer::serve(socket, app, since))
        .into_response()
}

async fn version(State(app): State<Arc<App>>) -> Json<serde_json::Value> {
    Json(serde_json::json!({
        "version": env!("CARGO_PKG_VERSION"),
        "protocol": watchlife_protocol::PROTOCOL_VERSION,
        "source": app.source,
        "app_embedded": assets::is_built(),
    }))
}
