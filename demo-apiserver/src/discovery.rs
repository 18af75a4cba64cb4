//! Discovery: `/version`, `/api`, `/api/v1`, `/apis`, `/apis/{group}` and
//! `/apis/{group}/{version}`, enough for kubectl to map kinds and short
//! names to URLs.
//!
//! Only the plain ("legacy") discovery documents are served. A client asking
//! for aggregated discovery (`Accept: application/json;g=apidiscovery.k8s.io;
//! v=v2;as=APIGroupDiscoveryList,...`) gets the plain document with
//! `Content-Type: application/json`, as a server older than aggregated
//! discovery answers, and falls back to fetching each group version.

use crate::path::Subresource;
use serde_json::{Value, json};
use watchlife_controlplane::ResourceType;
use watchlife_controlplane::resource;

/// The version this server reports. Its minor is the kubectl it is tested
/// with, so kubectl prints no version-skew warning.
pub const GIT_VERSION: &str = "v1.32.0-watchlife";

/// `/version`.
pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": "32",
        "gitVersion": GIT_VERSION,
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "",
        "goVersion": "",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH),
    })
}

/// `/api`: the core group's versions.
pub fn core_versions() -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [],
    })
}

/// The non-core groups served, each with its one version.
fn groups() -> Vec<(&'static str, &'static str)> {
    let mut groups: Vec<_> = resource::ALL
        .iter()
        .filter(|r| !r.group.is_empty())
        .map(|r| (r.group, r.version))
        .collect();
    groups.dedup();
    groups.push(("authorization.k8s.io", "v1"));
    groups
}

/// `authorization.k8s.io/v1`: the self-subject reviews, created only
/// (see [`crate::access`]).
fn authorization_resources() -> Value {
    let review = |review: crate::access::Review| {
        json!({
            "name": review.plural(),
            "singularName": "",
            "namespaced": false,
            "kind": review.kind(),
            "verbs": ["create"],
        })
    };
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": crate::access::GROUP_VERSION,
        "resources": [
            review(crate::access::Review::Access),
            review(crate::access::Review::Rules),
        ],
    })
}

fn group(name: &str, version: &str) -> Value {
    let gv = json!({"groupVersion": format!("{name}/{version}"), "version": version});
    json!({
        "name": name,
        "versions": [gv],
        "preferredVersion": gv,
    })
}

/// `/apis`.
pub fn group_list() -> Value {
    json!({
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": groups().into_iter().map(|(g, v)| group(g, v)).collect::<Vec<_>>(),
    })
}

/// `/apis/{group}`, when served.
pub fn api_group(name: &str) -> Option<Value> {
    let (g, v) = groups().into_iter().find(|(g, _)| *g == name)?;
    let mut doc = group(g, v);
    doc["kind"] = "APIGroup".into();
    doc["apiVersion"] = "v1".into();
    Some(doc)
}

/// Short names, as the real API lists them.
fn short_names(rt: ResourceType) -> &'static [&'static str] {
    match rt.plural {
        "pods" => &["po"],
        "configmaps" => &["cm"],
        "services" => &["svc"],
        "namespaces" => &["ns"],
        "nodes" => &["no"],
        "deployments" => &["deploy"],
        "replicasets" => &["rs"],
        "events" => &["ev"],
        _ => &[],
    }
}

/// The verbs served on every type (`deletecollection` is not served).
const VERBS: [&str; 7] = [
    "create", "delete", "get", "list", "patch", "update", "watch",
];

/// The types in the `all` category, as `kubectl get all` expects.
fn categories(rt: ResourceType) -> &'static [&'static str] {
    match rt.plural {
        "pods" | "services" | "deployments" | "replicasets" => &["all"],
        _ => &[],
    }
}

/// `/api/v1` or `/apis/{group}/{version}`, when served.
pub fn resource_list(group: &str, version: &str) -> Option<Value> {
    if (group, version) == ("authorization.k8s.io", "v1") {
        return Some(authorization_resources());
    }
    let types: Vec<ResourceType> = resource::ALL
        .into_iter()
        .filter(|r| r.group == group && r.version == version)
        .collect();
    if types.is_empty() {
        return None;
    }
    let mut resources = Vec::new();
    for rt in types {
        resources.push(json!({
            "name": rt.plural,
            "singularName": rt.kind.to_ascii_lowercase(),
            "namespaced": rt.namespaced,
            "kind": rt.kind,
            "verbs": VERBS,
            "shortNames": short_names(rt),
            "categories": categories(rt),
        }));
        for sub in Subresource::of(rt) {
            let mut entry = json!({
                "name": format!("{}/{}", rt.plural, sub.name()),
                "singularName": "",
                "namespaced": rt.namespaced,
                "kind": rt.kind,
                "verbs": ["get", "patch", "update"],
            });
            if *sub == Subresource::Scale {
                entry["group"] = "autoscaling".into();
                entry["version"] = "v1".into();
                entry["kind"] = "Scale".into();
            }
            resources.push(entry);
        }
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_every_served_type_with_its_subresources() {
        let core = resource_list("", "v1").unwrap();
        let names: Vec<_> = core["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap().to_string())
            .collect();
        for expected in [
            "namespaces",
            "nodes",
            "pods",
            "pods/status",
            "configmaps",
            "secrets",
            "services",
        ] {
            assert!(names.contains(&expected.to_string()), "{expected} missing");
        }
        let apps = resource_list("apps", "v1").unwrap();
        let scale = apps["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "deployments/scale")
            .unwrap();
        assert_eq!(scale["kind"], "Scale");
        assert_eq!(scale["group"], "autoscaling");
        assert!(resource_list("batch", "v1").is_none());
        assert_eq!(group_list()["groups"][0]["name"], "apps");
        assert!(api_group("apps").is_some());
        assert!(api_group("batch").is_none());
    }
}
