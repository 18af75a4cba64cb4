//! Who may connect: the token, the `Origin` and `Host` checks, and the rule
//! that decides at startup whether the bridge may run without a token.
//!
//! The checks are plain functions of the request's parts, so they are tested
//! without a server; [`crate::downstream::server`] applies them before any upgrade.
//!
//! - **Token.** A bridge listening beyond loopback needs `--token` (or
//!   `--insecure-no-auth`, said explicitly). Viewers present it as
//!   `?token=` on the URL (a browser cannot set headers on a WebSocket) or as
//!   `Authorization: Bearer` (scrapers, scripts). It is compared in constant
//!   time.
//! - **Origin.** A browser sends `Origin` with every WebSocket handshake; a
//!   page from another site must not read the stream through the visitor's
//!   browser (cross-site WebSocket hijacking). Allowed: the bridge's own
//!   origin (the same host and port as `Host`) and each `--allow-origin`.
//!   Clients that are not browsers send no `Origin` and are not concerned.
//! - **Host.** Without a token, a loopback bridge answers only to loopback
//!   names and IP addresses: a page on `evil.example` that re-points its name
//!   at 127.0.0.1 (DNS rebinding) would otherwise be same-origin with it. The
//!   rule is `watchlife-serve`'s, which the demo API applies too.
//! - **The demo API** takes writes, and the bridge serves it without a token:
//!   `--demo-api` beyond loopback needs `--token`, which the demo API then
//!   asks of every client ([`check_demo_api`]).

use crate::cli::Args;
use std::net::SocketAddr;
use watchlife_serve::host::{constant_time_eq, host_name, is_rebinding_proof};

/// The startup rule was broken; the message says how to fix it.
#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    #[error(
        "--listen {0} is reachable from other machines: give viewers a secret with --token (or WATCHLIFE_TOKEN), or pass --insecure-no-auth to serve anyone who can reach it"
    )]
    TokenRequired(SocketAddr),
    #[error("--token must not be empty")]
    EmptyToken,
    #[error(
        "--allow-origin {0:?} is not an origin: expected scheme://host[:port], as in https://slides.example.com"
    )]
    BadOrigin(String),
    #[error(
        "--frame-ancestors {0:?} is not a CSP source: expected 'self', 'none', or scheme://host[:port]"
    )]
    BadFrameAncestor(String),
    #[error(
        "--demo-api {0} would be reachable from other machines, and the demo API takes writes: give a --token (the demo API then asks kubectl for it, and the kubeconfig watchlife writes carries it), or keep it on loopback (127.0.0.1:PORT)"
    )]
    DemoApiBeyondLoopback(SocketAddr),
}

/// Refuses a `--demo-api` beyond loopback without `--token`: beyond
/// loopback the demo API asks every client for the bridge's token.
pub fn check_demo_api(args: &Args) -> Result<(), AccessError> {
    if args.demo_api.ip().is_loopback() || args.token.as_deref().is_some_and(|t| !t.is_empty()) {
        Ok(())
    } else {
        Err(AccessError::DemoApiBeyondLoopback(args.demo_api))
    }
}

/// The token the demo API asks for: the bridge's own, when the demo API is
/// beyond loopback; none on loopback (where `Host` is checked instead).
pub fn demo_api_token(args: &Args) -> Option<String> {
    (!args.demo_api.ip().is_loopback())
        .then(|| args.token.clone())
        .flatten()
}

/// The access rules of one run of the bridge.
#[derive(Debug, Clone)]
pub struct Access {
    token: Option<String>,
    allowed_origins: Vec<String>,
    /// Whether `Host` is checked (loopback without a token).
    guard_host: bool,
}

/// A refused request: the status and the message to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denied {
    pub status: u16,
    pub message: String,
}

impl Access {
    /// Applies the startup rule to the flags.
    pub fn from_args(args: &Args) -> Result<Access, AccessError> {
        Access::new(
            args.listen,
            args.token.clone(),
            args.insecure_no_auth,
            &args.allow_origin,
        )
    }

    /// See [`Access::from_args`].
    pub fn new(
        listen: SocketAddr,
        token: Option<String>,
        insecure_no_auth: bool,
        allow_origin: &[String],
    ) -> Result<Access, AccessError> {
        if token.as_deref() == Some("") {
            return Err(AccessError::EmptyToken);
        }
        let loopback = listen.ip().is_loopback();
        if !loopback && token.is_none() && !insecure_no_auth {
            return Err(AccessError::TokenRequired(listen));
        }
        let allowed_origins = allow_origin
            .iter()
            .map(|o| normalize_origin(o).ok_or_else(|| AccessError::BadOrigin(o.clone())))
            .collect::<Result<_, _>>()?;
        Ok(Access {
            guard_host: loopback && token.is_none(),
            token,
            allowed_origins,
        })
    }

    /// Whether viewers must present a token.
    pub fn needs_token(&self) -> bool {
        self.token.is_some()
    }

    /// Checks the token, from `?token=` (`query_token`) or the
    /// `Authorization` header.
    pub fn check_token(
        &self,
        query_token: Option<&str>,
        authorization: Option<&str>,
    ) -> Result<(), Denied> {
        let Some(expected) = &self.token else {
            return Ok(());
        };
        let bearer = authorization.and_then(|h| {
            h.strip_prefix("Bearer ")
                .or_else(|| h.strip_prefix("bearer "))
        });
        let presented = query_token.or(bearer);
        match presented {
            Some(t) if constant_time_eq(t.as_bytes(), expected.as_bytes()) => Ok(()),
            Some(_) => Err(Denied {
                status: 401,
                message: "wrong token: use the one this watchlife was started with (--token)"
                    .into(),
            }),
            None => Err(Denied {
                status: 401,
                message: "this watchlife needs a token: open the page with ?token=<token>, or send Authorization: Bearer <token>".into(),
            }),
        }
    }

    /// Checks a WebSocket handshake's `Origin` against `Host` and the
    /// allowed origins. No `Origin` (not a browser) passes.
    pub fn check_origin(&self, origin: Option<&str>, host: Option<&str>) -> Result<(), Denied> {
        let Some(origin) = origin else {
            return Ok(());
        };
        let normalized = normalize_origin(origin);
        let same_origin = match (&normalized, host) {
            (Some(o), Some(host)) => authority_of(o) == Some(with_default_port(o, host).as_str()),
            _ => false,
        };
        let allowed = normalized
            .as_ref()
            .is_some_and(|o| self.allowed_origins.contains(o));
        if same_origin || allowed {
            Ok(())
        } else {
            Err(Denied {
                status: 403,
                message: format!(
                    "a page from {origin} may not connect to this watchlife; to allow it, start watchlife with --allow-origin {origin}"
                ),
            })
        }
    }

    /// Checks `Host` (only for a loopback bridge without a token; see the
    /// module doc). Loopback names, IP literals and the hosts of allowed
    /// origins pass.
    pub fn check_host(&self, host: Option<&str>) -> Result<(), Denied> {
        if !self.guard_host {
            return Ok(());
        }
        let name = host.map(host_name).unwrap_or_default();
        let ok = is_rebinding_proof(&name)
            || self
                .allowed_origins
                .iter()
                .filter_map(|o| authority_of(o))
                .any(|a| host_name(a) == name);
        if ok {
            Ok(())
        } else {
            Err(Denied {
                status: 403,
                message: format!(
                    "this watchlife listens on loopback and does not answer to the name {name:?}: open it as http://127.0.0.1 or http://localhost, or start it with --token"
                ),
            })
        }
    }
}

/// `scheme://host[:port]`, lower-cased, with no path and no default port;
/// `None` when it is not one.
pub fn normalize_origin(origin: &str) -> Option<String> {
    let origin = origin.trim().trim_end_matches('/').to_ascii_lowercase();
    let (scheme, authority) = origin.split_once("://")?;
    if !matches!(scheme, "http" | "https")
        || authority.is_empty()
        || authority.contains(['/', '?', '#', '@', ' ', ';', ','])
    {
        return None;
    }
    let authority = match (scheme, authority.rsplit_once(':')) {
        ("http", Some((host, "80"))) | ("https", Some((host, "443"))) if !host.ends_with('[') => {
            host.to_string()
        }
        _ => authority.to_string(),
    };
    Some(format!("{scheme}://{authority}"))
}

/// The `host[:port]` of a normalized origin.
fn authority_of(origin: &str) -> Option<&str> {
    origin.split_once("://").map(|(_, a)| a)
}

/// `host` as it would appear in `origin`'s authority: without the scheme's
/// default port.
fn with_default_port(origin: &str, host: &str) -> String {
    let host = host.trim().to_ascii_lowercase();
    let default = if origin.starts_with("https://") {
        "443"
    } else {
        "80"
    };
    match host.rsplit_once(':') {
        Some((name, port)) if port == default && !name.ends_with('[') => name.to_string(),
        _ => host,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access(listen: &str, token: Option<&str>, insecure: bool, allow: &[&str]) -> Access {
        Access::new(
            listen.parse().unwrap(),
            token.map(Into::into),
            insecure,
            &allow.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        )
        .unwrap()
    }

    #[test]
    fn beyond_loopback_a_token_or_an_explicit_opt_out_is_required() {
        let err = Access::new("0.0.0.0:8080".parse().unwrap(), None, false, &[]).unwrap_err();
        assert!(err.to_string().contains("--token"), "{err}");
        assert!(!err.to_string().contains('\n'));
        assert!(
            Access::new(
                "0.0.0.0:8080".parse().unwrap(),
                Some("s".into()),
                false,
                &[]
            )
            .is_ok()
        );
        assert!(Access::new("[::]:8080".parse().unwrap(), None, true, &[]).is_ok());
        assert!(Access::new("127.0.0.1:8080".parse().unwrap(), None, false, &[]).is_ok());
        assert!(Access::new("[::1]:8080".parse().unwrap(), None, false, &[]).is_ok());
        assert!(matches!(
            Access::new(
                "127.0.0.1:1".parse().unwrap(),
                Some(String::new()),
                false,
                &[]
            ),
            Err(AccessError::EmptyToken)
        ));
    }

    #[test]
    fn the_token_comes_from_the_query_or_a_bearer_header() {
        let a = access("0.0.0.0:1", Some("s3cret"), false, &[]);
        assert!(a.check_token(Some("s3cret"), None).is_ok());
        assert!(a.check_token(None, Some("Bearer s3cret")).is_ok());
        assert_eq!(a.check_token(None, None).unwrap_err().status, 401);
        assert_eq!(a.check_token(Some("s3cre"), None).unwrap_err().status, 401);
        assert_eq!(
            a.check_token(None, Some("Basic s3cret"))
                .unwrap_err()
                .status,
            401
        );
        let open = access("127.0.0.1:1", None, false, &[]);
        assert!(open.check_token(None, None).is_ok());
    }

    #[test]
    fn same_origin_and_allowed_origins_pass_others_are_refused() {
        let a = access(
            "127.0.0.1:8080",
            None,
            false,
            &["https://Slides.example.com/"],
        );
        assert!(a.check_origin(None, Some("127.0.0.1:8080")).is_ok());
        assert!(
            a.check_origin(Some("http://127.0.0.1:8080"), Some("127.0.0.1:8080"))
                .is_ok()
        );
        assert!(
            a.check_origin(Some("http://localhost"), Some("localhost:80"))
                .is_ok()
        );
        assert!(
            a.check_origin(Some("https://slides.example.com"), Some("127.0.0.1:8080"))
                .is_ok()
        );
        let denied = a
            .check_origin(Some("http://evil.example"), Some("127.0.0.1:8080"))
            .unwrap_err();
        assert_eq!(denied.status, 403);
        assert!(
            denied
                .message
                .contains("--allow-origin http://evil.example")
        );
        assert!(
            a.check_origin(Some("http://127.0.0.1:9999"), Some("127.0.0.1:8080"))
                .is_err()
        );
        assert!(
            a.check_origin(Some("null"), Some("127.0.0.1:8080"))
                .is_err()
        );
    }

    #[test]
    fn a_loopback_bridge_without_token_answers_only_to_loopback_names() {
        let a = access(
            "127.0.0.1:8080",
            None,
            false,
            &["http://watchlife.test:8080"],
        );
        for ok in [
            "127.0.0.1:8080",
            "localhost:8080",
            "[::1]:8080",
            "app.localhost",
            "watchlife.test:8080",
        ] {
            assert!(a.check_host(Some(ok)).is_ok(), "{ok}");
        }
        assert_eq!(
            a.check_host(Some("evil.example:8080")).unwrap_err().status,
            403
        );
        let with_token = access("127.0.0.1:8080", Some("t"), false, &[]);
        assert!(with_token.check_host(Some("evil.example:8080")).is_ok());
    }

    #[test]
    fn the_demo_api_leaves_loopback_only_with_a_token() {
        use clap::Parser;
        let args = |extra: &[&str]| Args::parse_from([&["watchlife"], extra].concat());
        assert!(check_demo_api(&args(&[])).is_ok());
        assert!(check_demo_api(&args(&["--demo-api", "[::1]:0"])).is_ok());
        assert_eq!(demo_api_token(&args(&["--token", "t"])), None, "loopback");
        let beyond = args(&["--demo-api", "0.0.0.0:0", "--token", "t"]);
        assert!(check_demo_api(&beyond).is_ok());
        assert_eq!(demo_api_token(&beyond).as_deref(), Some("t"));
        let err = check_demo_api(&args(&["--demo-api", "0.0.0.0:0"]))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("--demo-api 0.0.0.0:0"), "{err}");
        assert!(err.contains("--token") && !err.contains('\n'), "{err}");
    }

    #[test]
    fn origins_are_normalized() {
        assert_eq!(
            normalize_origin("HTTP://A.example:80/").as_deref(),
            Some("http://a.example")
        );
        assert_eq!(
            normalize_origin("https://a.example:8443").as_deref(),
            Some("https://a.example:8443")
        );
        assert_eq!(
            normalize_origin("http://[::1]:8080").as_deref(),
            Some("http://[::1]:8080")
        );
        assert_eq!(normalize_origin("a.example"), None);
        assert_eq!(normalize_origin("http://a.example/path"), None);
        assert_eq!(normalize_origin("ftp://a.example"), None);
    }
}
