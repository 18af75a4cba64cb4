//! A Reflector's errors in plain words: what an on-call engineer reads at a
//! glance, sorted by kind, with the raw text kept for a click.
//!
//! The words are read from the error's text as the bridge reports it (the
//! kube client's error with its causes, or the server's Status message), so
//! they also work on recordings made before the bridge sorted anything.

/// What kind of trouble an error is, most serious first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// The apiserver cannot be reached: refused, unresolvable, reset, silent.
    Unreachable,
    /// The apiserver does not accept watchlife's credentials (401).
    Unauthorized,
    /// RBAC refuses the request (403).
    Forbidden,
    /// The apiserver answered with an error of its own (5xx, 429).
    ServerError,
    /// Anything else.
    Other,
}

/// An error sorted, in a few plain words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plain {
    pub kind: Kind,
    pub words: String,
}

/// Most characters of an unrecognised error said as it is.
const OTHER_WORDS: usize = 120;

/// Phrases of the kube client's and hyper's errors, the kind they mean, and
/// what they say in plain words; the first that matches wins.
const PHRASES: &[(&[&str], Kind, &str)] = &[
    (
        &["connection refused", "os error 111"],
        Kind::Unreachable,
        "the apiserver refused the connection (nothing listens at its address: down or restarting)",
    ),
    (
        &[
            "dns error",
            "failed to lookup address",
            "name or service not known",
        ],
        Kind::Unreachable,
        "the apiserver's host name does not resolve",
    ),
    (
        &["certificate", "unknownissuer", "invalid peer"],
        Kind::Unreachable,
        "the apiserver's TLS certificate is not trusted by watchlife's kubeconfig",
    ),
    (
        &["timed out", "deadline has elapsed"],
        Kind::Unreachable,
        "the apiserver did not answer in time",
    ),
    (
        &["no route to host", "network is unreachable", "host is down"],
        Kind::Unreachable,
        "the network has no route to the apiserver",
    ),
    (
        &[
            "connection reset",
            "broken pipe",
            "connection closed",
            "unexpected eof",
            "tcp connect error",
            "error trying to connect",
            "cannot be reached",
        ],
        Kind::Unreachable,
        "the connection to the apiserver broke",
    ),
    (
        &["unauthorized", "(401)", "answered 401"],
        Kind::Unauthorized,
        "the apiserver does not accept watchlife's credentials: renew its token or certificate (a token file is read again after each 401; one written into the kubeconfig needs a restart)",
    ),
    (
        &["(429)", "answered 429", "too many requests"],
        Kind::ServerError,
        "the apiserver asks to come back later (429: overloaded, or its watch cache is starting)",
    ),
    (
        &[
            "(500)",
            "(502)",
            "(503)",
            "(504)",
            "answered 5",
            "internal error",
            "service unavailable",
        ],
        Kind::ServerError,
        "the apiserver answered with an error of its own (5xx)",
    ),
];

/// `raw`, an error a Reflector met on `resource`, in plain words.
pub fn plain_error(raw: &str, resource: &str) -> Plain {
    let lower = raw.to_lowercase();
    if ["forbidden", "(403)", "answered 403"]
        .iter()
        .any(|p| lower.contains(p))
    {
        return Plain {
            kind: Kind::Forbidden,
            words: forbidden(raw, &lower, resource),
        };
    }
    for (phrases, kind, words) in PHRASES {
        if phrases.iter().any(|p| lower.contains(p)) {
            return Plain {
                kind: *kind,
                words: (*words).to_string(),
            };
        }
    }
    let mut words: String = raw.chars().take(OTHER_WORDS).collect();
    if raw.chars().count() > OTHER_WORDS {
        words.push('…');
    }
    Plain {
        kind: Kind::Other,
        words,
    }
}

/// "forbidden: watchlife may not list pods (RBAC)", with the verb and the
/// resource the server named (`User "x" cannot list resource "pods"`), or
/// the request's own where it did not.
fn forbidden(raw: &str, lower: &str, resource: &str) -> String {
    let verb = after(raw, "cannot ")
        .and_then(|rest| rest.split_whitespace().next())
        .map(str::to_string)
        .unwrap_or_else(|| {
            if lower.contains("watch") {
                "watch"
            } else {
                "list"
            }
            .to_string()
        });
    let named = after(raw, "resource \"")
        .and_then(|rest| rest.split('"').next())
        .filter(|r| !r.is_empty())
        .unwrap_or(resource);
    format!("forbidden: watchlife may not {verb} {named} (RBAC)")
}

/// What to do about denials of `resources`, whose raw texts are `raws`:
/// grant the user the server named (`User "x" cannot …`), or watchlife's
/// identity where it named none, what watchlife needs on them.
pub fn grant_advice(raws: &[&str], resources: &[&str]) -> String {
    let user = raws
        .iter()
        .find_map(|raw| after(raw, "User \"").and_then(|rest| rest.split('"').next()))
        .map_or("watchlife's identity".to_string(), |user| {
            format!("{user:?}")
        });
    format!(
        "grant {user} get, list and watch on {} (deploy/rbac.yaml does for watchlife's service account); watchlife tries again on its own",
        resources.join(", ")
    )
}

/// What follows the first `marker` in `text`.
fn after<'a>(text: &'a str, marker: &str) -> Option<&'a str> {
    text.find(marker).map(|at| &text[at + marker.len()..])
}

/// How a watch that ended normally ended, in plain words: "server timeout"
/// when it lasted (nearly) the `timeout_seconds` it asked for, else the
/// server (or the way to it) closed it early.
pub fn watch_end(lasted_ms: f64, timeout_seconds: u64) -> &'static str {
    /// A watch that lasted this share of its timeout ended by it (the
    /// apiserver ends it at the timeout asked for; the share leaves room
    /// for the time the request and the end took to travel).
    const TIMEOUT_SHARE: f64 = 0.9;
    if timeout_seconds > 0 && lasted_ms >= TIMEOUT_SHARE * 1000.0 * timeout_seconds as f64 {
        "the watch ended (server timeout); re-watching"
    } else {
        "the watch ended (the server closed it early); re-watching"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_connection_is_said_plainly() {
        let raw = "WATCH refused: WATCH: ServiceError: client error (Connect): tcp connect error: Connection refused (os error 111)";
        let plain = plain_error(raw, "pods");
        assert_eq!(plain.kind, Kind::Unreachable);
        assert_eq!(
            plain.words,
            "the apiserver refused the connection (nothing listens at its address: down or restarting)"
        );
    }

    #[test]
    fn an_rbac_denial_names_the_verb_and_the_resource() {
        let raw = r#"LIST: ApiError: pods is forbidden: User "nobody" cannot list resource "pods" in API group "" at the cluster scope (403)"#;
        let plain = plain_error(raw, "pods");
        assert_eq!(plain.kind, Kind::Forbidden);
        assert_eq!(plain.words, "forbidden: watchlife may not list pods (RBAC)");
        let bare = plain_error("the server answered 403", "secrets");
        assert_eq!(
            bare.words,
            "forbidden: watchlife may not list secrets (RBAC)"
        );
    }

    #[test]
    fn server_errors_and_credentials_are_told_apart() {
        let raw = r#"pods is forbidden: User "nobody" cannot list resource "pods" in API group "" at the cluster scope (403)"#;
        assert_eq!(
            grant_advice(&[raw], &["pods", "configmaps"]),
            "grant \"nobody\" get, list and watch on pods, configmaps (deploy/rbac.yaml does for watchlife's service account); watchlife tries again on its own"
        );
        assert!(
            grant_advice(&["the server answered 403"], &["pods"])
                .starts_with("grant watchlife's identity")
        );
        let unauthorized = plain_error("WATCH failed: Unauthorized (401)", "pods");
        assert_eq!(unauthorized.kind, Kind::Unauthorized);
        assert!(
            unauthorized.words.contains("renew its token"),
            "{}",
            unauthorized.words
        );
        assert_eq!(
            plain_error("etcdserver: leader changed (500)", "pods").kind,
            Kind::ServerError
        );
        assert_eq!(
            plain_error("too many requests (429)", "pods").kind,
            Kind::ServerError
        );
        let other = plain_error("a selector the server did not like", "pods");
        assert_eq!(
            (other.kind, other.words.as_str()),
            (Kind::Other, "a selector the server did not like")
        );
    }

    #[test]
    fn a_watch_that_lasted_its_timeout_ended_by_it() {
        assert_eq!(
            watch_end(290_000.0, 300),
            "the watch ended (server timeout); re-watching"
        );
        assert!(watch_end(2_000.0, 300).contains("closed it early"));
    }
}
