//! The resource types the control plane serves.

/// A served resource type: where it lives in the API and how it is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ResourceType {
    /// Lower-case plural, as in URLs (`pods`).
    pub plural: &'static str,
    pub kind: &'static str,
    /// API group; empty for the core group.
    pub group: &'static str,
    pub version: &'static str,
    pub namespaced: bool,
}

impl ResourceType {
    /// `v1` or `apps/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Name as watchlife shows it: the plural, with the group when not core
    /// (`pods`, `deployments.apps`).
    pub fn qualified_name(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_string()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// Prefix of this type's keys in the store, as the apiserver lays out etcd.
    pub fn key_prefix(&self) -> String {
        format!("/registry/{}/", self.plural)
    }

    /// Store key of one object.
    pub fn key(&self, namespace: Option<&str>, name: &str) -> String {
        match namespace.filter(|_| self.namespaced) {
            Some(ns) => format!("/registry/{}/{ns}/{name}", self.plural),
            None => format!("/registry/{}/{name}", self.plural),
        }
    }
}

macro_rules! resource {
    ($name:ident, $plural:literal, $kind:literal, $group:literal, $version:literal, $namespaced:literal) => {
        pub const $name: ResourceType = ResourceType {
            plural: $plural,
            kind: $kind,
            group: $group,
            version: $version,
            namespaced: $namespaced,
        };
    };
}

resource!(NAMESPACES, "namespaces", "Namespace", "", "v1", false);
resource!(NODES, "nodes", "Node", "", "v1", false);
resource!(PODS, "pods", "Pod", "", "v1", true);
resource!(CONFIGMAPS, "configmaps", "ConfigMap", "", "v1", true);
resource!(SECRETS, "secrets", "Secret", "", "v1", true);
resource!(SERVICES, "services", "Service", "", "v1", true);
resource!(EVENTS, "events", "Event", "", "v1", true);
resource!(DEPLOYMENTS, "deployments", "Deployment", "apps", "v1", true);
resource!(REPLICASETS, "replicasets", "ReplicaSet", "apps", "v1", true);

/// Every resource type served, core group first.
pub const ALL: [ResourceType; 9] = [
    NAMESPACES,
    NODES,
    PODS,
    CONFIGMAPS,
    SECRETS,
    SERVICES,
    EVENTS,
    DEPLOYMENTS,
    REPLICASETS,
];

/// Looks a type up by plural, qualified name (`deployments.apps`) or kind.
pub fn find(name: &str) -> Option<ResourceType> {
    ALL.into_iter().find(|r| {
        r.plural == name || r.qualified_name() == name || r.kind.eq_ignore_ascii_case(name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_the_apiserver_layout() {
        assert_eq!(
            PODS.key(Some("default"), "web-1"),
            "/registry/pods/default/web-1"
        );
        assert_eq!(
            NODES.key(Some("ignored"), "node-a"),
            "/registry/nodes/node-a"
        );
        assert_eq!(DEPLOYMENTS.api_version(), "apps/v1");
        assert_eq!(find("deployments.apps"), Some(DEPLOYMENTS));
        assert_eq!(find("Pod"), Some(PODS));
        assert_eq!(find("widgets"), None);
    }
}
