//! What the demo has no machinery for, refused with a `Status` that says so
//! rather than a bare 404: a pod's `log`, `exec`, `attach` and
//! `portforward` (its kubelets run no containers), the `proxy`
//! subresources, and the metrics API (`kubectl top`).
//!
//! A missing pod is still `404 NotFound`, as on a cluster; an existing one
//! gets `400 BadRequest` with the reason.

use watchlife_controlplane::ControlPlane;
use watchlife_controlplane::resource::PODS;
use watchlife_controlplane::status::Status;

/// What kubectl's users are told the demo lacks.
pub const NO_RUNTIME: &str = "the demo control plane has no container runtime: its kubelets only report pods as running, so there are no logs, no processes to exec or attach to, and no ports to forward";

/// The refusal for `path`, when it names something the demo lacks.
pub fn of(cp: &ControlPlane, path: &str) -> Option<Status> {
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').skip(1).collect();
    match segments.as_slice() {
        ["api", "v1", "namespaces", ns, "pods", name, sub, ..]
            if matches!(*sub, "log" | "exec" | "attach" | "portforward" | "proxy") =>
        {
            if let Err(e) = cp.get(PODS, Some(ns), name) {
                return Some(e.into());
            }
            let what = match *sub {
                "log" => "kubectl logs",
                "exec" => "kubectl exec",
                "attach" => "kubectl attach",
                "portforward" => "kubectl port-forward",
                _ => "the pod proxy",
            };
            Some(Status::new(
                400,
                "BadRequest",
                format!("{what} cannot be served for pod \"{name}\": {NO_RUNTIME}"),
            ))
        }
        ["api", "v1", "nodes", _, "proxy", ..]
        | ["api", "v1", "namespaces", _, "services", _, "proxy", ..] => Some(Status::new(
            400,
            "BadRequest",
            format!("proxying cannot be served: {NO_RUNTIME}"),
        )),
        ["apis", "metrics.k8s.io", ..] => Some(Status::new(
            503,
            "ServiceUnavailable",
            "the demo control plane has no metrics server (no container runtime to measure): kubectl top cannot be served",
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use watchlife_controlplane::Clock;

    #[test]
    fn refusals_name_what_is_missing() {
        let cp = ControlPlane::new(Clock::system());
        let missing = of(&cp, "/api/v1/namespaces/default/pods/nope/log").unwrap();
        assert_eq!(missing.code, 404);
        assert!(of(&cp, "/api/v1/namespaces/default/pods").is_none());
        let top = of(&cp, "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods").unwrap();
        assert!(top.message.contains("no metrics server"));
        let proxy = of(&cp, "/api/v1/nodes/node-a/proxy/stats").unwrap();
        assert!(proxy.message.contains("no container runtime"));
    }
}
