//! How kube's types are written on the tap's wire.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use kube::Resource;
use kube::runtime::controller::Action;
use watchlife_protocol::tap::{Reason, Requeue, TapObjectRef};

/// Microseconds since the Unix epoch (0 if the clock is before it).
pub(crate) fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(micros)
        .unwrap_or(0)
}

/// A duration in whole microseconds, saturating.
pub(crate) fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// The object's reference.
pub(crate) fn object_ref<K>(object: &K) -> TapObjectRef
where
    K: Resource,
    K::DynamicType: Default,
{
    let dt = K::DynamicType::default();
    let meta = object.meta();
    TapObjectRef {
        api_version: K::api_version(&dt).into_owned(),
        kind: K::kind(&dt).into_owned(),
        namespace: meta.namespace.clone(),
        name: meta.name.clone().unwrap_or_default(),
    }
}

/// The resource's name as kubectl writes it: `deployments.apps`, `pods`.
pub(crate) fn resource_name<K>() -> String
where
    K: Resource,
    K::DynamicType: Default,
{
    let dt = K::DynamicType::default();
    let (plural, group) = (K::plural(&dt), K::group(&dt));
    if group.is_empty() {
        plural.into_owned()
    } else {
        format!("{plural}.{group}")
    }
}

/// kube-runtime's `Action` on the wire.
pub(crate) fn requeue(action: &Action) -> Requeue {
    // `Action` shows its delay only through `Debug` in kube-runtime 5:
    // `Action { requeue_after: Some(300s) }` or `{ requeue_after: None }`.
    let text = format!("{action:?}");
    match text
        .split("Some(")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
    {
        Some(delay) => Requeue::After {
            after_us: parse_debug_duration(delay).map(micros).unwrap_or(0),
        },
        None => Requeue::AwaitChange,
    }
}

/// Parses `Duration`'s `Debug` text (`300s`, `1.5s`, `250ms`, `10µs`, `5ns`).
fn parse_debug_duration(text: &str) -> Option<Duration> {
    let unit_at = text.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (number, unit) = text.split_at(unit_at);
    let n: f64 = number.parse().ok()?;
    let seconds = match unit {
        "s" => n,
        "ms" => n / 1e3,
        "µs" => n / 1e6,
        "ns" => n / 1e9,
        _ => return None,
    };
    Duration::try_from_secs_f64(seconds).ok()
}

/// `ReconcileReason`'s `Display` text (kube-runtime 5.x) on the wire.
pub(crate) fn reason(text: &str) -> Reason {
    match text {
        "object updated" => Reason::ObjectUpdated,
        "reconciler requested retry" => Reason::ReconcilerRequestedRetry,
        "error policy requested retry" => Reason::ErrorPolicyRequestedRetry,
        "bulk reconcile requested" => Reason::BulkReconcile,
        "unknown" => Reason::Unknown,
        other => match other.strip_prefix("related object updated: ") {
            Some(related) => Reason::RelatedObjectUpdated {
                related: related.to_owned(),
            },
            None => Reason::Custom {
                text: other.to_owned(),
            },
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_read_as_their_delay() {
        assert_eq!(
            requeue(&Action::requeue(Duration::from_secs(300))),
            Requeue::After {
                after_us: 300_000_000
            }
        );
        assert_eq!(
            requeue(&Action::requeue(Duration::from_millis(1500))),
            Requeue::After {
                after_us: 1_500_000
            }
        );
        assert_eq!(
            requeue(&Action::requeue(Duration::from_micros(250))),
            Requeue::After { after_us: 250 }
        );
        assert_eq!(requeue(&Action::await_change()), Requeue::AwaitChange);
    }

    #[test]
    fn reasons_read_as_kube_runtime_writes_them() {
        assert_eq!(reason("object updated"), Reason::ObjectUpdated);
        assert_eq!(
            reason("related object updated: ConfigMap.v1./web.default"),
            Reason::RelatedObjectUpdated {
                related: "ConfigMap.v1./web.default".into()
            }
        );
        assert_eq!(
            reason("mine"),
            Reason::Custom {
                text: "mine".into()
            }
        );
    }
}
