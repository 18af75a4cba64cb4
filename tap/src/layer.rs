//! The tap's `tracing` layer: kube-runtime's `reconciling object` span (the
//! reconcile's reason) and kube-client's `HTTP` spans (the watcher's LIST
//! and WATCH requests, and every other request the controller makes).

use std::fmt;
use std::time::Instant;

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Metadata, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;
use watchlife_protocol::tap::{RequestFrame, RequestVerb, TapFrame};

use crate::Tap;
use crate::names::{micros, now_us, reason};

/// kube-runtime's span around each reconcile (`controller/mod.rs`).
const RECONCILE_SPAN: &str = "reconciling object";
/// kube-client's span around each HTTP request (`client/builder.rs`).
const HTTP_SPAN: &str = "HTTP";

/// A `tracing` layer feeding a [`Tap`], made by [`Tap::layer`].
pub struct TapLayer {
    tap: Tap,
}

impl Tap {
    /// The tap's `tracing` layer: add it to the process's subscriber
    /// (`registry().with(tap.layer())`). Its own filter lets it see only the
    /// two spans above, whatever the other layers' filters say, and it
    /// changes nothing of what they see (put their filters on them, not on
    /// the whole subscriber, or a global filter may hide these spans).
    pub fn layer<S>(&self) -> impl Layer<S> + use<S>
    where
        S: Subscriber + for<'a> LookupSpan<'a>,
    {
        TapLayer { tap: self.clone() }.with_filter(filter_fn(wanted))
    }
}

/// An HTTP request in flight, kept in its span's extensions.
struct InFlight {
    method: String,
    url: String,
    at_us: u64,
    start: Instant,
    /// Set once the response's status is recorded (then the frame is sent).
    answered: bool,
}

fn wanted(meta: &Metadata<'_>) -> bool {
    meta.is_span()
        && ((meta.name() == RECONCILE_SPAN && meta.target().starts_with("kube_runtime"))
            || (meta.name() == HTTP_SPAN && meta.target().starts_with("kube_client")))
}

impl<S> Layer<S> for TapLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let meta = attrs.metadata();
        if !wanted(meta) {
            return;
        }
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        if meta.name() == RECONCILE_SPAN {
            if let (Some(text), Ok(mut reasons)) = (fields.reason, self.tap.inner.reasons.lock()) {
                reasons.insert(id.clone(), reason(&text));
            }
        } else if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(InFlight {
                method: fields.method.unwrap_or_default(),
                url: fields.url.unwrap_or_default(),
                at_us: now_us(),
                start: Instant::now(),
                answered: false,
            });
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        values.record(&mut fields);
        let (Some(status), Some(span)) = (fields.status, ctx.span(id)) else {
            return;
        };
        if let Some(request) = span.extensions_mut().get_mut::<InFlight>()
            && !request.answered
        {
            request.answered = true;
            self.tap.request(request, Some(status));
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        if let Ok(mut reasons) = self.tap.inner.reasons.lock() {
            reasons.remove(&id);
        }
        if let Some(span) = ctx.span(&id)
            && let Some(request) = span.extensions().get::<InFlight>()
            && !request.answered
        {
            // No status was recorded: the request got no response.
            self.tap.request(request, None);
        }
    }
}

impl Tap {
    /// Records a request once answered (or failed): its duration is until
    /// the response's head (for a WATCH: until the watch was established).
    fn request(&self, request: &InFlight, status: Option<u16>) {
        let frame = RequestFrame {
            seq: 0,
            at_us: request.at_us,
            method: request.method.clone(),
            verb: verb(&request.method, &request.url),
            url: request.url.clone(),
            status,
            duration_us: Some(micros(request.start.elapsed())),
        };
        self.record(|seq, _| TapFrame::Request(RequestFrame { seq, ..frame }));
    }
}

/// Query parameters only a LIST asks (kube-client's `ListParams` and the
/// watcher's pages): a GET with one of them is read as a LIST.
const LIST_PARAMS: [&str; 4] = ["limit=", "continue=", "labelSelector=", "fieldSelector="];

/// WATCH, LIST or another request, read from the URL kube-client wrote
/// (`watch=true`; else a list's parameters): a heuristic, as the span says
/// no more.
fn verb(method: &str, url: &str) -> RequestVerb {
    let query = url.split_once('?').map(|(_, q)| q).unwrap_or("");
    let params = || query.split('&');
    if method != "GET" {
        RequestVerb::Other
    } else if params().any(|p| p == "watch=true" || p == "watch=1") {
        RequestVerb::Watch
    } else if params().any(|p| LIST_PARAMS.iter().any(|l| p.starts_with(l))) {
        RequestVerb::List
    } else {
        RequestVerb::Other
    }
}

/// The fields the tap reads from the two spans.
#[derive(Default)]
struct Fields {
    reason: Option<String>,
    method: Option<String>,
    url: Option<String>,
    status: Option<u16>,
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let text = || format!("{value:?}");
        match field.name() {
            "object.reason" => self.reason = Some(text()),
            "http.method" => self.method = Some(text()),
            "http.url" => self.url = Some(text()),
            _ => {}
        }
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        if field.name() == "http.status_code" {
            self.status = u16::try_from(value).ok();
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        if field.name() == "http.status_code" {
            self.status = u16::try_from(value).ok();
        }
    }
}
