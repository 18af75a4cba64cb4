//! The WebSocket to the bridge: connect, read frames into the model, and when
//! the link drops or stalls, reconnect with backoff and resume from the cursor.
//! A bridge that speaks a newer protocol is not retried: only a reload helps.
//!
//! Each frame is read in the socket's own message handler as it arrives, with
//! no queue or task in between: under load the page receives thousands a
//! second, and what each one costs is what the animation does not get. A
//! compressed connection (asked for wherever the browser can decompress)
//! is the exception: its binary messages are decompressed in order by one
//! task ([`crate::inflate`]), each read as soon as the platform hands its
//! text back.

use crate::cluster_status::ClusterStatus;
use crate::inflate::Inflater;
use crate::model::{Link, Model, now_ms};
use crate::tape::Tape;
use futures::StreamExt;
use futures::channel::{mpsc, oneshot};
use futures::future::{Either, select};
use gloo_timers::future::TimeoutFuture;
use leptos::prelude::*;
use leptos::task::spawn_local;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;
use watchlife_protocol::StreamQuery;
use watchlife_protocol::connection::{BodiesAsked, Compress};
use watchlife_protocol::{FrameBody, ServerFrame};
use web_sys::{BinaryType, MessageEvent, WebSocket};

/// First wait before reconnecting, doubled after each failure.
const FIRST_RETRY_MS: u32 = 500;
/// Longest wait between attempts: a returning bridge is found within this.
const MAX_RETRY_MS: u32 = 10_000;
/// Heartbeat periods of silence after which the link is called stalled.
const STALL_PERIODS: u64 = 3;
/// Silence allowed before the first `hello` tells the heartbeat period.
const DEFAULT_STALL_MS: u64 = 15_000;

/// Starts the connection loop; it runs for the life of the page. `token`
/// (from the page's URL, possibly empty) is passed on to the bridge; `tape`
/// keeps the frames while the viewer records. Provides the cluster's status
/// (an `RwSignal<ClusterStatus>`), kept as frames arrive.
pub fn connect(model: Model, token: String, tape: Tape) {
    let status = RwSignal::new(ClusterStatus::default());
    provide_context(status);
    spawn_local(async move {
        let mut retry_ms = FIRST_RETRY_MS;
        loop {
            model.link.set(Link::Connecting);
            if connection(model, &token, tape, status).await {
                retry_ms = FIRST_RETRY_MS;
            }
            if matches!(model.link.get_untracked(), Link::Incompatible { .. }) {
                return;
            }
            if model.link.get_untracked() != Link::Stalled {
                model.link.set(Link::Reconnecting { retry_ms });
            }
            TimeoutFuture::new(retry_ms).await;
            retry_ms = (retry_ms * 2).min(MAX_RETRY_MS);
        }
    });
}

/// What the socket's handlers share with the connection's task.
struct Shared {
    /// The bridge said hello on this connection.
    greeted: Cell<bool>,
    /// Page time the last message arrived.
    heard: Cell<f64>,
    /// Taken (and sent) when the connection is over: closed, failed, or
    /// refused because the bridge speaks a newer protocol.
    over: RefCell<Option<oneshot::Sender<()>>>,
}

impl Shared {
    fn end(&self) {
        if let Some(over) = self.over.borrow_mut().take() {
            let _ = over.send(());
        }
    }

    fn is_over(&self) -> bool {
        self.over.borrow().is_none()
    }
}

/// One connection, until the socket closes or goes silent. True when the
/// bridge said hello (so the next failure starts the backoff afresh).
async fn connection(
    model: Model,
    token: &str,
    tape: Tape,
    status: RwSignal<ClusterStatus>,
) -> bool {
    let Ok(socket) = WebSocket::new(&url(&model, token)) else {
        return false;
    };
    socket.set_binary_type(BinaryType::Arraybuffer);
    let (over_tx, over) = oneshot::channel();
    let shared = Rc::new(Shared {
        greeted: Cell::new(false),
        heard: Cell::new(now_ms()),
        over: RefCell::new(Some(over_tx)),
    });
    let compressed = inflating(model, tape, shared.clone(), status);
    let on_message = {
        let shared = shared.clone();
        Closure::<dyn FnMut(MessageEvent)>::new(move |message: MessageEvent| {
            if shared.is_over() {
                return;
            }
            shared.heard.set(now_ms());
            let data = message.data();
            if let Some(buffer) = data.dyn_ref::<js_sys::ArrayBuffer>() {
                let _ = compressed.unbounded_send(js_sys::Uint8Array::new(buffer).to_vec());
                return;
            }
            let Some(text) = data.as_string() else {
                return;
            };
            // The page asks for batches: several frames to a message.
            for line in watchlife_protocol::connection::split_batch(&text) {
                if !read_frame(line, model, tape, &shared.greeted, status) {
                    shared.end();
                    return;
                }
            }
        })
    };
    let on_end = {
        let shared = shared.clone();
        Closure::<dyn FnMut()>::new(move || shared.end())
    };
    let on_open = writer(model, socket.clone());
    socket.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    socket.set_onclose(Some(on_end.as_ref().unchecked_ref()));
    socket.set_onerror(Some(on_end.as_ref().unchecked_ref()));
    socket.set_onopen(Some(on_open.as_ref().unchecked_ref()));
    until_over_or_silent(model, &shared, over).await;
    shared.end();
    // The handlers go with this function: the socket must not call them.
    socket.set_onmessage(None);
    socket.set_onclose(None);
    socket.set_onerror(None);
    socket.set_onopen(None);
    let _ = socket.close();
    model.outbox.set_value(None);
    shared.greeted.get()
}

/// The task that reads a compressed connection's binary messages, in the
/// order sent to it, until the sender is dropped or the connection is over.
/// A message that cannot be read ends the connection: the next one resumes
/// from the cursor.
fn inflating(
    model: Model,
    tape: Tape,
    shared: Rc<Shared>,
    status: RwSignal<ClusterStatus>,
) -> mpsc::UnboundedSender<Vec<u8>> {
    let (tx, mut rx) = mpsc::unbounded::<Vec<u8>>();
    spawn_local(async move {
        let mut inflater = Inflater::default();
        while let Some(bytes) = rx.next().await {
            let read = inflater.read(&bytes).await;
            if shared.is_over() {
                return;
            }
            let text = match read {
                Ok(text) => text,
                Err(e) => {
                    model.last_error.set(Some(format!(
                        "a compressed message from the bridge could not be read: {e}"
                    )));
                    shared.end();
                    return;
                }
            };
            for line in watchlife_protocol::connection::split_batch(&text) {
                if !read_frame(line, model, tape, &shared.greeted, status) {
                    shared.end();
                    return;
                }
            }
        }
    });
    tx
}

/// The socket's open handler: from then on, the messages the page sends go
/// out in order until the socket fails or the sender (replaced on the next
/// connection) goes away.
fn writer(model: Model, socket: WebSocket) -> Closure<dyn FnMut()> {
    Closure::<dyn FnMut()>::new(move || {
        let (tx, mut rx) = mpsc::unbounded::<String>();
        model.outbox.set_value(Some(tx));
        let socket = socket.clone();
        spawn_local(async move {
            while let Some(text) = rx.next().await {
                if socket.send_with_str(&text).is_err() {
                    break;
                }
            }
        });
    })
}

/// Waits until the connection is `over`, or has been silent longer than
/// the heartbeat allows (then the link is stalled). One timer for the
/// silence, set again only when it goes off: a frame costs a clock reading,
/// not a timer of its own.
async fn until_over_or_silent(model: Model, shared: &Shared, mut over: oneshot::Receiver<()>) {
    let mut timer = TimeoutFuture::new(stall_ms(&model));
    loop {
        match select(&mut over, &mut timer).await {
            Either::Left(_) => return,
            Either::Right(_) => {
                let silence = now_ms() - shared.heard.get();
                let allowed = f64::from(stall_ms(&model));
                if silence >= allowed {
                    model.link.set(Link::Stalled);
                    return;
                }
                timer = TimeoutFuture::new((allowed - silence).ceil() as u32);
            }
        }
    }
}

/// Reads one frame's text into the model. False when the page must stop
/// reading: the bridge speaks a newer protocol. The cluster's `status`
/// takes the frame first, at the wall time it arrived.
fn read_frame(
    text: &str,
    model: Model,
    tape: Tape,
    greeted: &Cell<bool>,
    status: RwSignal<ClusterStatus>,
) -> bool {
    match serde_json::from_str::<ServerFrame>(text) {
        Ok(frame) => {
            if matches!(frame.body, FrameBody::Hello(_)) {
                greeted.set(true);
            }
            if frame.body.is_stream() {
                tape.capture(text);
            }
            if ClusterStatus::concerns(&frame.body) {
                status.update(|s| s.observe(&frame.body, js_sys::Date::now()));
            }
            model.receive(frame);
            !matches!(model.link.get_untracked(), Link::Incompatible { .. })
        }
        Err(e) => {
            // A newer bridge's hello may not parse as ours: say what
            // matters, the protocol, when it can be read.
            let newer = serde_json::from_str::<serde_json::Value>(text)
                .ok()
                .filter(|v| v["type"] == "hello")
                // Under `data` since protocol 2; beside `type` before.
                .and_then(|v| v["data"]["protocol"].as_u64().or(v["protocol"].as_u64()))
                .filter(|p| *p > u64::from(watchlife_protocol::PROTOCOL_VERSION));
            if let Some(p) = newer {
                let bridge = u32::try_from(p).unwrap_or(u32::MAX);
                model.link.set(Link::Incompatible { bridge });
                model.tell(crate::notice::incompatible_message(bridge), true);
                return false;
            }
            model
                .last_error
                .set(Some(format!("a frame from the bridge did not parse: {e}")));
            true
        }
    }
}

/// Silence (ms) after which the link is called stalled: a few heartbeat
/// periods once the bridge said how long one is.
fn stall_ms(model: &Model) -> u32 {
    model
        .hello
        .with_untracked(|h| h.as_ref().map(|h| h.heartbeat_ms * STALL_PERIODS))
        .unwrap_or(DEFAULT_STALL_MS)
        .min(u64::from(u32::MAX)) as u32
}

/// `ws://` or `wss://` URL of the bridge that served the page, asking for
/// frames in batches, with the cursor to resume from and the access token,
/// if any.
fn url(model: &Model, token: &str) -> String {
    let location = web_sys::window().expect("a page has a window").location();
    let scheme = match location.protocol().as_deref() {
        Ok("https:") => "wss",
        _ => "ws",
    };
    let host = location.host().unwrap_or_else(|_| "127.0.0.1:8080".into());
    ws_url(
        scheme,
        &host,
        model
            .cursor
            .get_untracked()
            .as_ref()
            .map(|(s, n)| (s.as_str(), *n)),
        token,
        crate::inflate::supported(),
    )
}

/// The stream URL from its parts (see [`url`]).
fn ws_url(
    scheme: &str,
    host: &str,
    cursor: Option<(&str, u64)>,
    token: &str,
    compress: bool,
) -> String {
    let query = StreamQuery {
        stream: cursor.map(|(stream, _)| stream.to_string()),
        since: cursor.map(|(_, since)| since),
        token: Some(token.to_string()),
        // Under load a batch of frames in one message costs the page one
        // message event instead of dozens.
        batch: true,
        compress: compress.then_some(Compress::Deflate),
        // Updates as merge patches: the page rebuilds each body from the
        // one before (see `bodies::Carried`).
        bodies: Some(BodiesAsked::Patch),
    };
    format!("{scheme}://{host}/ws?{}", query.to_query())
}

#[cfg(test)]
mod tests {
    use super::ws_url;

    #[test]
    fn the_token_and_the_cursor_go_on_the_stream_url() {
        assert_eq!(
            ws_url("ws", "h:1", None, "", false),
            "ws://h:1/ws?batch=true&bodies=patch"
        );
        assert_eq!(
            ws_url("wss", "h:1", Some(("18a6", 41)), "a b+/=", true),
            "wss://h:1/ws?batch=true&compress=deflate&bodies=patch&stream=18a6&since=41&token=a%20b%2B/%3D"
        );
        assert_eq!(
            ws_url("ws", "h", None, "t", false),
            "ws://h/ws?batch=true&bodies=patch&token=t"
        );
    }
}
