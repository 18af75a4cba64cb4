//! One controller's lane: its name and connection, kube-rs's stages in
//! order (watcher → store → trigger → scheduler → runner → reconcile →
//! requeue), its latest reconciles, and its watcher's requests and errors.
//!
//! The trigger, the scheduler and the runner are one box: kube-runtime
//! gives no hook between the store and the reconciler's call, so their time
//! is measured only together, and drawn so, never split.

use crate::micros::format_micros;
use crate::tap_words;
use crate::taps::{Lane, Reconcile};
use leptos::prelude::*;

/// One stage box: its name, a line of words, and a title with the rest.
fn stage(id: &'static str, name: &'static str, words: String, title: String) -> impl IntoView {
    let joined = id == "trigger-scheduler-runner";
    view! {
        <li class="tap-stage" class:joined=joined data-stage=id title=title>
            <span class="tap-stage-name">{name}</span>
            <span class="tap-stage-words">{words}</span>
        </li>
    }
}

/// The stage boxes of `l`.
fn stages(l: &Lane) -> impl IntoView + use<> {
    let counts: Vec<String> = l
        .watcher_counts()
        .filter(|(_, n)| *n > 0)
        .map(|(kind, n)| format!("{kind} {n}"))
        .collect();
    let mut watcher = if counts.is_empty() {
        "no event yet".to_string()
    } else {
        counts.join(" · ")
    };
    if l.errors_total > 0 {
        watcher.push_str(&format!(" · {} errors", l.errors_total));
    }
    let store = match l.store_applied {
        Some(true) => "applied, then seen",
        Some(false) => "seen before it",
        None => "not observed",
    };
    let latest = l.reconciles.back();
    let waited = latest.and_then(|r| r.since_watcher_event_us);
    let joined = match waited {
        Some(us) => format!(
            "not observed separately · {} together",
            format_micros(us as i64)
        ),
        None => "not observed separately".to_string(),
    };
    let unobserved = l.unobserved().join(", ");
    let joined_title = format!(
        "kube-runtime gives no hook between the store and the reconciler's call: the time from \
         the watcher event to the call is measured whole, never split{}",
        if unobserved.is_empty() {
            String::new()
        } else {
            format!(" (this tap cannot observe: {unobserved})")
        }
    );
    let runs = match l.reconciles_total {
        1 => "1 run".to_string(),
        n => format!("{n} runs"),
    };
    let reconcile = match latest {
        None => "no reconcile yet".to_string(),
        Some(r) => match &r.end {
            Some(end) => format!("{runs} · latest {}", format_micros(end.duration_us as i64)),
            None => format!("{runs} · latest running"),
        },
    };
    let requeue = l
        .reconciles
        .iter()
        .rev()
        .find(|r| r.end.is_some())
        .map_or_else(|| "nothing returned yet".to_string(), tap_words::result);
    view! {
        <ol class="tap-stages" aria-label=format!("{}'s stages, in kube-rs's order", l.controller)>
            {stage("watcher", "watcher", watcher, "watcher events the tap saw, by kind".into())}
            {stage("store", "store", store.into(), "whether the tap saw the events after the reflector applied them to the store".into())}
            {stage("trigger-scheduler-runner", "trigger → scheduler → runner", joined, joined_title)}
            {stage("reconcile", "reconcile", reconcile, "the reconciler's calls, and how long the latest ran".into())}
            {stage("requeue", "requeue", requeue, "what the latest reconcile returned".into())}
        </ol>
    }
}

/// An object's latest reconcile as a row: object and version, reason,
/// wait, run, result, and how many of its reconciles the lane kept.
fn reconcile(r: &Reconcile, runs: usize) -> impl IntoView + use<> {
    let rv = r
        .resource_version
        .as_deref()
        .map_or(String::new(), |rv| format!(" · RV {rv}"));
    let wait = r.since_watcher_event_us.map(|us| {
        view! {
            <span class="tap-wait" title="from the object's watcher event to the reconciler's call: trigger, scheduler and runner together">
                {format!("waited {}", format_micros(us as i64))}
            </span>
        }
    });
    let ran = r
        .end
        .as_ref()
        .map(|e| format!("ran {}", format_micros(e.duration_us as i64)));
    let runs =
        (runs > 1).then(|| view! { <span class="tap-runs">{format!("{runs} runs lately")}</span> });
    view! {
        <li class="tap-reconcile" data-reconcile=r.id data-rv=r.resource_version.clone()
            data-result=tap_words::result_kind(r)>
            <span class="tap-object">{format!("{}{rv}", tap_words::object(&r.object))}</span>
            <span class="tap-reason">{tap_words::reason(r.reason.as_ref())}</span>
            {wait}
            <span class="tap-ran">{ran}</span>
            <span class="tap-result">{tap_words::result(r)}</span>
            {runs}
        </li>
    }
}

/// The watcher's latest requests and errors, latest first.
fn watcher(l: &Lane) -> impl IntoView + use<> {
    let requests = l.requests.iter().rev().map(|r| {
        view! { <li class="tap-request" data-status=r.status>{tap_words::request(r)}</li> }
    });
    let errors = l.errors.iter().rev().map(|e| {
        view! { <li class="tap-error">{format!("error on {}: {} (it retries after its backoff)", e.resource, e.message)}</li> }
    });
    let none = (l.requests.is_empty() && l.errors.is_empty())
        .then(|| view! { <li class="hint">"none seen yet"</li> });
    view! {
        <ul class="tap-requests" aria-label=format!("{}'s watcher requests and errors", l.controller)>
            {errors.collect_view()}
            {requests.collect_view()}
            {none}
        </ul>
    }
}

/// Whether connected, or why it left; and the tap's own count of frames it dropped.
fn status(l: &Lane) -> impl IntoView + use<> {
    let link = match &l.left {
        Some(why) => view! { <span class="tap-status left" role="status">{format!("disconnected: {why}")}</span> }.into_any(),
        None => view! { <span class="tap-status">"connected"</span> }.into_any(),
    };
    let drops = l.stats.as_ref().map(|s| {
        let words = match s.dropped {
            0 => format!("no frame dropped of {}", s.recorded),
            n => format!("{n} frames dropped of {} recorded", s.recorded),
        };
        view! { <span class="tap-drops" data-dropped=s.dropped>{words}</span> }
    });
    (link, drops)
}

/// The lane of `l`.
pub fn lane(l: &Lane) -> impl IntoView + use<> {
    let title_id = format!("tap-lane-{}", l.tap);
    let labelled_by = title_id.clone();
    let meta = match &l.hello {
        Some(h) => format!(
            "tap {} · kube-runtime {} · watchlife-tap {}",
            l.tap, h.kube_runtime, h.tap_version
        ),
        None => format!("tap {}", l.tap),
    };
    let reconciles = l
        .latest_reconciles()
        .into_iter()
        .map(|r| reconcile(r, l.runs_of(&r.object)))
        .collect_view();
    let no_reconcile = l
        .reconciles
        .is_empty()
        .then(|| view! { <li class="hint">"none yet"</li> });
    view! {
        <article class="tap-lane" data-tap=l.tap data-controller=l.controller.clone()
            data-left=l.left.is_some().to_string() aria-labelledby=labelled_by>
            <header class="tap-head">
                <h3 id=title_id>{l.controller.clone()}</h3>
                <span class="tap-meta">{meta}</span>
                {status(l)}
            </header>
            {stages(l)}
            <h4>"Latest reconcile per object"</h4>
            <ol class="tap-reconciles" aria-label=format!("{}'s latest reconcile of each object, latest first", l.controller)>
                {reconciles}
                {no_reconcile}
            </ol>
            <h4>"Watcher requests and errors"</h4>
            {watcher(l)}
        </article>
    }
}
