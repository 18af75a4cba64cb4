//! What to list-watch: `--resources` names resolved through discovery.

use kube::core::ApiResource;
use kube::discovery::{Discovery, Scope};

/// One list-watch: a resource the server serves, and its scope.
#[derive(Debug, Clone)]
pub struct Target {
    /// The name in frames and on the command line: the plural, with the
    /// group for anything outside the core group (`pods`, `deployments.apps`).
    pub name: String,
    pub resource: ApiResource,
    /// The namespace watched; `None` for all namespaces, and always for
    /// cluster-scoped resources.
    pub namespace: Option<String>,
    /// Label selector of every LIST and WATCH.
    pub selector: Option<String>,
}

/// Why the resources asked for could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error("discovery failed: {0}")]
    Discovery(#[source] kube::Error),
    /// Discovery went unanswered for as long as a silent watch may last:
    /// its connection is taken for dead (a load balancer or NAT forgot it).
    #[error(
        "discovery: nothing arrived for {} s: the connection is taken for dead",
        after.as_secs()
    )]
    Unanswered { after: std::time::Duration },
    #[error("the server has no resource {name:?}{hint}")]
    Unknown { name: String, hint: String },
}

/// Splits `deployments.apps` into its plural and its group (`""` for core).
pub fn parse(name: &str) -> (&str, &str) {
    name.split_once('.').unwrap_or((name, ""))
}

/// `widgets.v1.example.com` (as kubectl takes it): the plural, a version
/// (`v` and a digit first) and a group; `None` for other names.
pub fn parse_pinned(name: &str) -> Option<(&str, &str, &str)> {
    let (plural, rest) = name.split_once('.')?;
    let (version, group) = rest.split_once('.')?;
    let digit_after_v = version
        .strip_prefix('v')
        .and_then(|v| v.chars().next())
        .is_some_and(|c| c.is_ascii_digit());
    digit_after_v.then_some((plural, version, group))
}

/// Resolves every name in `names` against the server's discovery, keeping
/// the given order. Unknown names fail with the closest names the server has.
/// Names pinned to a version (`widgets.v1.example.com`) are looked up in
/// that group-version's own document, so they resolve on a server that
/// serves no `/apis` root (an apiserver behind an aggregator, for one).
pub async fn resolve(
    client: &kube::Client,
    names: &[String],
    namespace: Option<&str>,
    selector: Option<&str>,
) -> Result<Vec<Target>, ResolveError> {
    let mut known = Vec::new();
    let mut pinned = Vec::new();
    for name in names {
        let name = name.trim().to_ascii_lowercase();
        let Some((_, version, group)) = parse_pinned(&name) else {
            continue;
        };
        let gv = kube::core::GroupVersion::gv(group, version);
        if pinned.contains(&gv) {
            continue;
        }
        let found = kube::discovery::pinned_group(client, &gv)
            .await
            .map_err(ResolveError::Discovery)?;
        for (resource, caps) in found.recommended_resources() {
            let name = format!(
                "{}.{}.{}",
                resource.plural, resource.version, resource.group
            );
            known.push((name, resource, caps.scope));
        }
        pinned.push(gv);
    }
    if names.iter().any(|n| parse_pinned(n.trim()).is_none()) {
        let discovery = Discovery::new(client.clone())
            .run()
            .await
            .map_err(ResolveError::Discovery)?;
        for group in discovery.groups() {
            for (resource, caps) in group.recommended_resources() {
                known.push((qualified(&resource), resource, caps.scope));
            }
        }
    }
    names
        .iter()
        .map(|wanted| {
            let wanted = wanted.trim().to_ascii_lowercase();
            let found = known.iter().find(|(name, r, _)| {
                *name == wanted || (r.group.is_empty() && r.kind.to_ascii_lowercase() == wanted)
            });
            match found {
                Some((name, resource, scope)) => Ok(Target {
                    name: name.clone(),
                    resource: resource.clone(),
                    namespace: match scope {
                        Scope::Namespaced => namespace.map(String::from),
                        Scope::Cluster => None,
                    },
                    selector: selector.map(String::from),
                }),
                None => Err(ResolveError::Unknown {
                    hint: closest(&wanted, known.iter().map(|(n, _, _)| n.as_str())),
                    name: wanted,
                }),
            }
        })
        .collect()
}

/// `pods`, `deployments.apps`: how a resource is named on the command line.
pub fn qualified(resource: &ApiResource) -> String {
    if resource.group.is_empty() {
        resource.plural.clone()
    } else {
        format!("{}.{}", resource.plural, resource.group)
    }
}

/// Names a user most likely meant: up to [`SUGGESTIONS`] known names within
/// a small edit distance, closest first.
fn closest<'a>(wanted: &str, known: impl Iterator<Item = &'a str>) -> String {
    /// How many suggestions an error lists: enough for a typo, few enough to read.
    const SUGGESTIONS: usize = 3;
    let mut scored: Vec<(usize, &str)> = known
        .map(|name| {
            let plural = parse(name).0;
            let distance =
                strsim::levenshtein(wanted, name).min(strsim::levenshtein(wanted, plural));
            (distance, name)
        })
        .filter(|(d, _)| *d <= wanted.len().max(3) / 2)
        .collect();
    scored.sort();
    scored.dedup_by(|a, b| a.1 == b.1);
    let names: Vec<_> = scored.iter().take(SUGGESTIONS).map(|(_, n)| *n).collect();
    if names.is_empty() {
        " (`kubectl api-resources` lists what it serves)".into()
    } else {
        format!("; did you mean {}?", names.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_into_plural_and_group() {
        assert_eq!(parse("pods"), ("pods", ""));
        assert_eq!(parse("deployments.apps"), ("deployments", "apps"));
        assert_eq!(parse("widgets.example.com"), ("widgets", "example.com"));
        assert_eq!(
            parse_pinned("widgets.v1.example.com"),
            Some(("widgets", "v1", "example.com"))
        );
        assert_eq!(
            parse_pinned("widgets.v2beta1.example.com"),
            Some(("widgets", "v2beta1", "example.com"))
        );
        assert_eq!(parse_pinned("widgets.example.com"), None);
        assert_eq!(parse_pinned("deployments.apps"), None);
        assert_eq!(parse_pinned("widgets.vendor.example.com"), None);
    }

    #[test]
    fn typos_get_the_closest_names() {
        let known = ["pods", "podtemplates", "deployments.apps", "configmaps"];
        assert_eq!(closest("pod", known.into_iter()), "; did you mean pods?");
        assert_eq!(
            closest("deploymnets", known.into_iter()),
            "; did you mean deployments.apps?"
        );
        assert!(closest("zzzzzzzz", known.into_iter()).contains("api-resources"));
    }
}
