//! A controller's tap in words: why a reconcile ran, what it returned, what
//! its watcher asked the apiserver (see [`crate::taps`]).

use crate::micros::format_micros;
use crate::taps::Reconcile;
use watchlife_protocol::tap::{Reason, ReconcileResult, RequestFrame, Requeue, TapObjectRef};

/// Why kube-runtime called the reconciler, in words; `None` (the tap did
/// not see kube-runtime's span) says so.
pub fn reason(reason: Option<&Reason>) -> String {
    match reason {
        None => "reason not observed".into(),
        Some(Reason::ObjectUpdated) => "the object changed".into(),
        Some(Reason::RelatedObjectUpdated { related }) => {
            format!("a related object changed ({})", related_object(related))
        }
        Some(Reason::ReconcilerRequestedRetry) => "requeue asked by the reconciler".into(),
        Some(Reason::ErrorPolicyRequestedRetry) => "requeue asked by the error policy".into(),
        Some(Reason::BulkReconcile) => "every object asked at once (bulk reconcile)".into(),
        Some(Reason::Unknown) => "a reason kube-runtime does not know".into(),
        Some(Reason::Custom { text }) => text.clone(),
    }
}

/// kube-runtime's reference of a related object (`ConfigMap.v1./web.default`:
/// kind, version, group, then name and namespace) without its version and
/// group: `ConfigMap web.default`. The rest is kept as written, as a name
/// may itself hold dots.
fn related_object(text: &str) -> String {
    match text.split_once('/') {
        Some((kind, rest)) => {
            let kind = kind.split('.').next().unwrap_or(kind);
            format!("{kind} {rest}")
        }
        None => text.to_string(),
    }
}

/// A wait, in the unit that reads best for minutes and hours too:
/// `5 min`, `1 min 30 s`, `2 h`, or [`format_micros`] below a minute.
pub fn wait(us: u64) -> String {
    let s = us / 1_000_000;
    if s < 60 {
        return format_micros(us as i64);
    }
    let (h, m, s) = (s / 3600, s / 60 % 60, s % 60);
    match (h, m, s) {
        (0, m, 0) => format!("{m} min"),
        (0, m, s) => format!("{m} min {s} s"),
        (h, 0, _) => format!("{h} h"),
        (h, m, _) => format!("{h} h {m} min"),
    }
}

/// kube-runtime's `Action` in words.
pub fn requeue(action: &Requeue) -> String {
    match action {
        Requeue::After { after_us } => format!("requeue after {}", wait(*after_us)),
        Requeue::AwaitChange => "await change".into(),
    }
}

/// What the reconciler returned, and the error policy's answer to an error;
/// `running` while it has not returned.
pub fn result(r: &Reconcile) -> String {
    let Some(end) = &r.end else {
        return "running".into();
    };
    match &end.result {
        ReconcileResult::Action { action } => requeue(action),
        ReconcileResult::Error { message } => match &r.policy {
            Some(p) => format!("error: {message} → {}", requeue(&p.action)),
            None => format!("error: {message}"),
        },
    }
}

/// A short name of the result, for the stylesheet and tests.
pub fn result_kind(r: &Reconcile) -> &'static str {
    match r.end.as_ref().map(|e| &e.result) {
        None => "running",
        Some(ReconcileResult::Action {
            action: Requeue::After { .. },
        }) => "requeue",
        Some(ReconcileResult::Action {
            action: Requeue::AwaitChange,
        }) => "await",
        Some(ReconcileResult::Error { .. }) => "error",
    }
}

/// `Deployment default/web`.
pub fn object(o: &TapObjectRef) -> String {
    match &o.namespace {
        Some(ns) => format!("{} {ns}/{}", o.kind, o.name),
        None => format!("{} {}", o.kind, o.name),
    }
}

/// A request as a line: `LIST /apis/apps/v1/deployments?limit=500 → 200 · 12 ms`.
pub fn request(r: &RequestFrame) -> String {
    let verb = match r.verb {
        watchlife_protocol::tap::RequestVerb::List => "LIST",
        watchlife_protocol::tap::RequestVerb::Watch => "WATCH",
        watchlife_protocol::tap::RequestVerb::Other => r.method.as_str(),
    };
    let status = r
        .status
        .map_or_else(|| "no response".to_string(), |s| s.to_string());
    match r.duration_us {
        Some(us) => format!("{verb} {} → {status} · {}", r.url, format_micros(us as i64)),
        None => format!("{verb} {} → {status}", r.url),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::taps::{Taps, tests as t};

    #[test]
    fn reasons_read_as_words() {
        assert_eq!(reason(Some(&Reason::ObjectUpdated)), "the object changed");
        assert_eq!(
            reason(Some(&Reason::RelatedObjectUpdated {
                related: "ConfigMap.v1./web.default".into()
            })),
            "a related object changed (ConfigMap web.default)"
        );
        assert_eq!(
            reason(Some(&Reason::ErrorPolicyRequestedRetry)),
            "requeue asked by the error policy"
        );
        assert_eq!(reason(None), "reason not observed");
    }

    #[test]
    fn waits_read_in_minutes_and_hours() {
        assert_eq!(wait(300_000_000), "5 min");
        assert_eq!(wait(90_000_000), "1 min 30 s");
        assert_eq!(wait(7_200_000_000), "2 h");
        assert_eq!(wait(5_000_000), "5.0 s");
    }

    #[test]
    fn a_result_reads_with_the_error_policys_answer() {
        let mut taps = Taps::default();
        taps.record(t::relay(1, "c", t::start(1, 0, 1, "5")));
        assert_eq!(result(&taps.lanes[0].reconciles[0]), "running");
        let failed = ReconcileResult::Error {
            message: "conflict".into(),
        };
        taps.record(t::relay(1, "c", t::end(2, 9, 1, failed)));
        let r = &taps.lanes[0].reconciles[0];
        assert_eq!(
            (result(r).as_str(), result_kind(r)),
            ("error: conflict", "error")
        );
        let mut r = r.clone();
        r.policy = Some(watchlife_protocol::tap::ErrorPolicyFrame {
            seq: 3,
            at_us: 10,
            reconcile: Some(1),
            object: t::web(),
            message: "conflict".into(),
            action: Requeue::After {
                after_us: 5_000_000,
            },
        });
        assert_eq!(result(&r), "error: conflict → requeue after 5.0 s");
        assert_eq!(object(&r.object), "Deployment default/web");
    }
}
