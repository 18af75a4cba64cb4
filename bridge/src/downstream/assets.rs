//! The browser app, embedded in the binary at build time.

use crate::downstream::csp::{self, Externalized};
use axum::http::{HeaderValue, StatusCode, Uri, header};
use axum::response::{Html, IntoResponse, Response};
use std::sync::LazyLock;

/// Files Trunk built into `dist/` (see `build.rs`).
#[derive(rust_embed::RustEmbed)]
#[folder = "$WATCHLIFE_ASSETS"]
struct Assets;

/// Shown instead of the app when the binary was built before the frontend.
const NOT_BUILT: &str = "<!doctype html><meta charset=utf-8><title>watchlife: app not built</title>\
<h1>The browser app was not built into this binary</h1>\
<p>This <code>watchlife</code> was compiled before the frontend existed. \
Run <code>make run</code> (it builds the frontend with Trunk, then the bridge), \
or <code>make frontend</code> and rebuild the bridge.</p>\
<p>The WebSocket stream at <code>/ws</code> works regardless.</p>";

/// Whether the app was embedded.
pub fn is_built() -> bool {
    Assets::get("index.html").is_some()
}

/// `index.html` with Trunk's inline loader moved to a file of its own, so the
/// Content-Security-Policy needs no inline script (see [`csp`]).
static INDEX: LazyLock<Option<Externalized>> = LazyLock::new(|| {
    let index = Assets::get("index.html")?;
    Some(csp::externalize_scripts(&String::from_utf8_lossy(
        &index.data,
    )))
});

/// Serves an embedded file, `index.html` for `/` and for unknown paths without
/// an extension (the app's own routes).
pub async fn serve(uri: Uri) -> Response {
    let path = uri.path().trim_start_matches('/');
    let path = if path.is_empty() { "index.html" } else { path };
    if let Some(index) = INDEX.as_ref() {
        if path == "index.html" || (!path.contains('.') && Assets::get(path).is_none()) {
            return page_response(index.html.clone(), "text/html; charset=utf-8", "no-cache");
        }
        if let Some((boot, js)) = &index.script
            && path == boot
        {
            return page_response(js.clone(), "text/javascript; charset=utf-8", IMMUTABLE);
        }
    }
    match Assets::get(path) {
        Some(file) => file_response(path, file),
        None if !path.contains('.') => match Assets::get("index.html") {
            Some(index) => file_response("index.html", index),
            None => (StatusCode::SERVICE_UNAVAILABLE, Html(NOT_BUILT)).into_response(),
        },
        None => (StatusCode::NOT_FOUND, "not found\n").into_response(),
    }
}

fn file_response(path: &str, file: rust_embed::EmbeddedFile) -> Response {
    let mime = file.metadata.mimetype().to_string();
    // Trunk names assets by content hash, so they never change under a name;
    // index.html must be re-read to pick up a new build.
    let cache = if path == "index.html" {
        "no-cache"
    } else {
        IMMUTABLE
    };
    let mut response = file.data.into_owned().into_response();
    let headers = response.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&mime) {
        headers.insert(header::CONTENT_TYPE, v);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    response
}

/// Caching of files whose name changes with their content.
const IMMUTABLE: &str = "public, max-age=31536000, immutable";

fn page_response(body: String, mime: &'static str, cache: &'static str) -> Response {
    (
        [(header::CONTENT_TYPE, mime), (header::CACHE_CONTROL, cache)],
        body,
    )
        .into_response()
}
