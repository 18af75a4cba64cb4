//! Resource URLs, parsed as the apiserver routes them.
//!
//! ```text
//! /api/v1/{plural}[/{name}[/{sub}]]                                cluster-scoped, or all namespaces
//! /api/v1/namespaces/{ns}/{plural}[/{name}[/{sub}]]                one namespace
//! /apis/{group}/{version}/...                                      the same under a group
//! /api/v1/watch/...  /apis/{group}/{version}/watch/...             the legacy watch prefix
//! ```

use watchlife_controlplane::ResourceType;
use watchlife_controlplane::resource;

/// A subresource served under an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subresource {
    /// `deployments/scale`, `replicasets/scale` (autoscaling/v1 Scale).
    Scale,
    /// `pods/status`.
    Status,
}

impl Subresource {
    /// The subresources each type serves.
    pub fn of(rt: ResourceType) -> &'static [Subresource] {
        match rt.plural {
            "deployments" | "replicasets" => &[Subresource::Scale],
            "pods" => &[Subresource::Status],
            _ => &[],
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Subresource::Scale => "scale",
            Subresource::Status => "status",
        }
    }
}

/// What a resource URL names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub rt: ResourceType,
    /// The namespace in the URL; `None` for cluster-scoped types and for
    /// all-namespaces collections.
    pub namespace: Option<String>,
    /// The object's name; `None` for a collection.
    pub name: Option<String>,
    pub subresource: Option<Subresource>,
    /// The URL used the legacy `/watch/` prefix.
    pub watch_prefix: bool,
}

/// Parses a request path; `None` when it names nothing served (a 404).
pub fn parse(path: &str) -> Option<Target> {
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').skip(1).collect();
    let (group, version, rest) = match segments.as_slice() {
        ["api", version, rest @ ..] => ("", *version, rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return None,
    };
    let (watch_prefix, rest) = match rest {
        ["watch", rest @ ..] => (true, rest),
        rest => (false, rest),
    };
    let find = |plural: &str| {
        resource::ALL
            .into_iter()
            .find(|r| r.plural == plural && r.group == group && r.version == version)
    };
    let (namespace, rest) = match rest {
        // `namespaces/{name}` is a Namespace; `namespaces/{ns}/{plural}...` is
        // a namespaced collection.
        ["namespaces", ns, plural, rest @ ..] if find(plural).is_some_and(|r| r.namespaced) => {
            (Some(ns.to_string()), (*plural, rest))
        }
        [plural, rest @ ..] => (None, (*plural, rest)),
        [] => return None,
    };
    let (plural, rest) = rest;
    let rt = find(plural)?;
    if rt.namespaced && namespace.is_none() && !rest.is_empty() {
        // A namespaced object must be addressed inside its namespace.
        return None;
    }
    let (name, subresource) = match rest {
        [] => (None, None),
        [name] => (Some(name.to_string()), None),
        [name, sub] => {
            let sub = Subresource::of(rt).iter().find(|s| s.name() == *sub)?;
            (Some(name.to_string()), Some(*sub))
        }
        _ => return None,
    };
    if name.as_deref() == Some("") || (watch_prefix && subresource.is_some()) {
        return None;
    }
    Some(Target {
        rt,
        namespace,
        name,
        subresource,
        watch_prefix,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use watchlife_controlplane::resource::{DEPLOYMENTS, NAMESPACES, NODES, PODS};

    fn t(
        rt: ResourceType,
        ns: Option<&str>,
        name: Option<&str>,
        sub: Option<Subresource>,
        watch: bool,
    ) -> Option<Target> {
        Some(Target {
            rt,
            namespace: ns.map(Into::into),
            name: name.map(Into::into),
            subresource: sub,
            watch_prefix: watch,
        })
    }

    #[test]
    fn parses_the_apiserver_url_forms() {
        assert_eq!(parse("/api/v1/pods"), t(PODS, None, None, None, false));
        assert_eq!(
            parse("/api/v1/namespaces/default/pods/web-1"),
            t(PODS, Some("default"), Some("web-1"), None, false)
        );
        assert_eq!(
            parse("/api/v1/namespaces/default/pods/web-1/status"),
            t(
                PODS,
                Some("default"),
                Some("web-1"),
                Some(Subresource::Status),
                false
            )
        );
        assert_eq!(
            parse("/apis/apps/v1/namespaces/prod/deployments/web/scale"),
            t(
                DEPLOYMENTS,
                Some("prod"),
                Some("web"),
                Some(Subresource::Scale),
                false
            )
        );
        assert_eq!(
            parse("/api/v1/namespaces"),
            t(NAMESPACES, None, None, None, false)
        );
        assert_eq!(
            parse("/api/v1/namespaces/default"),
            t(NAMESPACES, None, Some("default"), None, false)
        );
        assert_eq!(
            parse("/api/v1/nodes/n1"),
            t(NODES, None, Some("n1"), None, false)
        );
        assert_eq!(
            parse("/api/v1/watch/namespaces/default/pods"),
            t(PODS, Some("default"), None, None, true)
        );
        assert_eq!(
            parse("/apis/apps/v1/watch/deployments"),
            t(DEPLOYMENTS, None, None, None, true)
        );
    }

    #[test]
    fn refuses_what_is_not_served() {
        for path in [
            "/",
            "/api",
            "/api/v1/widgets",
            "/api/v1/deployments",
            "/apis/apps/v1/pods",
            "/apis/apps/v2/deployments",
            "/api/v1/pods/web-1",
            "/api/v1/namespaces/default/configmaps/c/scale",
            "/api/v1/namespaces/default/pods/p/status/extra",
            "/api/v1/watch/namespaces/default/pods/p/status",
        ] {
            assert_eq!(parse(path), None, "{path}");
        }
    }
}
