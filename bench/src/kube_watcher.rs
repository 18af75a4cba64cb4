//! The reference for the informer pipeline: kube-rs's `kube_runtime::watcher`
//! and `reflector` fed the same watch bytes, on one thread.
//!
//! A `kube::Client` over an in-memory service (no socket, no TLS) answers the
//! watcher's LIST with an empty `PodList` and its first watch with the
//! bench's watch stream in [`CHUNK`]-byte pieces, as a socket would deliver
//! it; a later watch never ends. The watcher decodes each line into a typed
//! `Pod`, the reflector writes it into its store, and the bench counts the
//! `Apply` and `Delete` events until every line has come out.

use bytes::Bytes;
use futures_util::StreamExt;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::{reflector, watcher};
use std::convert::Infallible;
use std::time::Instant;

/// Bytes per body chunk: about what a socket read returns under load.
const CHUNK: usize = 16 * 1024;

const EMPTY_LIST: &str =
    r#"{"apiVersion":"v1","kind":"PodList","metadata":{"resourceVersion":"999"},"items":[]}"#;

type Body = BoxBody<Bytes, Infallible>;

/// Events per second through `watcher` + `reflector` for the `lines` events
/// of `stream`, or why they did not all come out.
pub fn events_per_second(stream: &Bytes, lines: usize) -> Result<f64, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let client = kube::Client::new(in_memory_apiserver(stream.clone()), "default");
        let api: kube::Api<Pod> = kube::Api::namespaced(client, "default");
        let (store, writer) = reflector::store::<Pod>();
        let mut events = Box::pin(reflector(writer, watcher(api, watcher::Config::default())));
        let start = Instant::now();
        let mut seen = 0;
        while seen < lines {
            match events.next().await {
                Some(Ok(watcher::Event::Apply(_) | watcher::Event::Delete(_))) => seen += 1,
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(format!("the watcher failed: {e}")),
                None => return Err(format!("the watcher ended after {seen} events")),
            }
        }
        let elapsed = start.elapsed().as_secs_f64();
        std::hint::black_box(store.state().len());
        Ok(lines as f64 / elapsed)
    })
}

/// The service behind the client: LIST → an empty list, the first watch →
/// `stream`, any later watch → a body that never ends.
fn in_memory_apiserver(
    stream: Bytes,
) -> impl tower::Service<
    hyper::Request<kube::client::Body>,
    Response = hyper::Response<Body>,
    Error = Infallible,
    Future = std::future::Ready<Result<hyper::Response<Body>, Infallible>>,
> + Send
+ 'static {
    let mut watched = false;
    tower::service_fn(move |request: hyper::Request<kube::client::Body>| {
        let is_watch = request
            .uri()
            .query()
            .is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"));
        let body: Body = if !is_watch {
            Full::new(Bytes::from_static(EMPTY_LIST.as_bytes())).boxed()
        } else if !watched {
            watched = true;
            let chunks: Vec<Result<Frame<Bytes>, Infallible>> = (0..stream.len())
                .step_by(CHUNK)
                .map(|i| Ok(Frame::data(stream.slice(i..(i + CHUNK).min(stream.len())))))
                .collect();
            BodyExt::boxed(StreamBody::new(futures_util::stream::iter(chunks)))
        } else {
            BodyExt::boxed(StreamBody::new(futures_util::stream::pending::<
                Result<Frame<Bytes>, Infallible>,
            >()))
        };
        std::future::ready(Ok(hyper::Response::new(body)))
    })
}
