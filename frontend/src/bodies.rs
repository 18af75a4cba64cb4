//! Bodies on demand: a live viewer's snapshot is light (references and
//! resourceVersions), so the page fetches an object's body from the bridge
//! (`GET /objects/<resource>/<key>`) when someone opens its history, and
//! keeps it on that version. Events keep carrying the bodies of the objects
//! they change, so every later diff has both sides.

use crate::history::ObjectKey;
use crate::model::{Link, Model};
use leptos::prelude::*;
use leptos::task::spawn_local;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use watchlife_protocol::ObjectJson;
use watchlife_protocol::connection::encode;

/// Fetches the current body of `key` when its latest version has none and
/// a bridge is there to ask (not when replaying or in-page, whose objects
/// all have their bodies).
pub fn fetch_if_missing(model: Model, key: ObjectKey, token: String) {
    if matches!(model.link.get_untracked(), Link::Replay | Link::InPage) {
        return;
    }
    let missing = model.objects.with_untracked(|o| {
        o.get(&key)
            .is_some_and(|h| !h.versions.is_empty() && !h.has_body(h.versions.len() - 1))
    });
    if !missing {
        return;
    }
    spawn_local(async move {
        match fetch(&key, &token).await {
            Ok(body) => {
                let rv = body.parse()["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                model.fill_body(&key, &rv, body);
            }
            Err(why) => model.last_error.set(Some(why)),
        }
    });
}

/// The path of an object's body on the bridge that served the page.
pub fn body_path((resource, key): &ObjectKey, token: &str) -> String {
    let mut path = format!("/objects/{}/{}", encode(resource), encode(key));
    if !token.is_empty() {
        path.push_str(&format!("?token={}", encode(token)));
    }
    path
}

async fn fetch(key: &ObjectKey, token: &str) -> Result<ObjectJson, String> {
    let window = web_sys::window().ok_or("no window")?;
    let path = body_path(key, token);
    let failed = |why: String| format!("cannot fetch the body of {}: {why}", key.1);
    let response = JsFuture::from(window.fetch_with_str(&path))
        .await
        .map_err(|e| failed(format!("{e:?}")))?;
    let response: web_sys::Response = response.dyn_into().map_err(|e| failed(format!("{e:?}")))?;
    if !response.ok() {
        return Err(failed(format!("HTTP {}", response.status())));
    }
    let text = JsFuture::from(response.text().map_err(|e| failed(format!("{e:?}")))?)
        .await
        .map_err(|e| failed(format!("{e:?}")))?
        .as_string()
        .unwrap_or_default();
    ObjectJson::from_text(text).map_err(|e| failed(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::body_path;

    #[test]
    fn the_path_names_the_resource_and_the_key() {
        let key = ("pods".to_string(), "default/web-1".to_string());
        assert_eq!(body_path(&key, ""), "/objects/pods/default/web-1");
        assert_eq!(
            body_path(&key, "a b"),
            "/objects/pods/default/web-1?token=a%20b"
        );
    }
}
