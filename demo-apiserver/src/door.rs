//! Who may use the demo API: the same rules as the bridge's own door.
//!
//! - **Loopback by default.** The API takes writes, so serving it beyond
//!   loopback needs a token ([`Door::new`] refuses otherwise, in one line).
//! - **Token.** With one, every request must carry it, compared in constant
//!   time; without it, 401 `Unauthorized`, as the apiserver answers. Either
//!   as `Authorization: Bearer <token>`, or as the first segments of the path,
//!   `/token/<token>/api/...`: client-go (so kubectl) never sends a
//!   kubeconfig's credentials over plain HTTP, but it keeps a path in the
//!   server's URL, so the written kubeconfig names the server as
//!   [`server_url`] (and its user carries the token too, for clients that
//!   send it).
//! - **Host.** Without a token, a loopback API answers only to loopback names
//!   and IP addresses ([`watchlife_serve::host`]), so that a page that
//!   re-points its own name at 127.0.0.1 (DNS rebinding) cannot reach it.
//! - **No browsers.** The API sends no CORS headers, and refuses any request
//!   that carries `Origin`: browsers add it to every cross-site request (and
//!   to every request that is not a plain GET), while kubectl and client
//!   libraries never send it. A page cannot write to the demo even with a
//!   "simple" request, nor read from it.
//!
//! Each refusal is a Kubernetes `Status` naming the rule.

use axum::http::{HeaderMap, Uri, header};
use std::fmt;
use std::net::SocketAddr;
use watchlife_controlplane::status::Status;
use watchlife_serve::host::{constant_time_eq, host_name, is_rebinding_proof};

/// The path prefix that carries a token: `/token/<token>`.
pub const TOKEN_PREFIX: &str = "/token/";

/// The server URL that carries `token` in its path, for a kubeconfig:
/// `http://10.0.0.5:8081/token/<token>`.
pub fn server_url(base: &str, token: &str) -> String {
    format!(
        "{}{TOKEN_PREFIX}{}",
        base.trim_end_matches('/'),
        encode(token)
    )
}

/// `token` as one path segment: unreserved characters as they are, any
/// other byte as `%XX`.
fn encode(token: &str) -> String {
    token
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The demo API would be served in a way its rules forbid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DoorError {
    /// Beyond loopback with no token.
    TokenRequired(SocketAddr),
    /// A token of no characters.
    EmptyToken,
}

impl fmt::Display for DoorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DoorError::TokenRequired(addr) => write!(
                f,
                "the demo API at {addr} would be reachable from other machines and takes writes from anyone: keep it on loopback (127.0.0.1), or give it a token"
            ),
            DoorError::EmptyToken => write!(f, "the demo API's token must not be empty"),
        }
    }
}

impl std::error::Error for DoorError {}

/// The access rules of one demo API.
#[derive(Clone)]
pub struct Door {
    token: Option<String>,
    /// Whether `Host` is checked (loopback without a token).
    guard_host: bool,
}

impl fmt::Debug for Door {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Door")
            .field("token", &self.token.as_ref().map(|_| "…"))
            .field("guard_host", &self.guard_host)
            .finish()
    }
}

impl Door {
    /// The rules for an API bound to `addr`: beyond loopback only with a
    /// `token`.
    pub fn new(addr: SocketAddr, token: Option<String>) -> Result<Door, DoorError> {
        if token.as_deref() == Some("") {
            return Err(DoorError::EmptyToken);
        }
        let loopback = addr.ip().is_loopback();
        if !loopback && token.is_none() {
            return Err(DoorError::TokenRequired(addr));
        }
        Ok(Door {
            guard_host: loopback && token.is_none(),
            token,
        })
    }

    /// Whether clients must present a token.
    pub fn needs_token(&self) -> bool {
        self.token.is_some()
    }

    /// Checks one request; the refusal to answer with otherwise. When the
    /// token came in the path, the request's URI without it.
    pub fn check(&self, headers: &HeaderMap, uri: &Uri) -> Result<Option<Uri>, Status> {
        let text = |name| headers.get(name).and_then(|v| v.to_str().ok());
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = String::from_utf8_lossy(origin.as_bytes());
            return Err(Status::new(
                403,
                "Forbidden",
                format!(
                    "the demo API serves no web page: a request from one (Origin: {origin}) is refused"
                ),
            ));
        }
        if self.guard_host {
            let name = host_name(text(header::HOST).unwrap_or_default());
            if !is_rebinding_proof(&name) {
                return Err(Status::new(
                    403,
                    "Forbidden",
                    format!(
                        "the demo API listens on loopback and does not answer to the name {name:?}: use http://127.0.0.1 or http://localhost"
                    ),
                ));
            }
        }
        let Some(expected) = &self.token else {
            return Ok(None);
        };
        if let Some((presented, rest)) = uri
            .path()
            .strip_prefix(TOKEN_PREFIX)
            .map(|p| p.split_at(p.find('/').unwrap_or(p.len())))
            && constant_time_eq(presented.as_bytes(), encode(expected).as_bytes())
        {
            let rest = if rest.is_empty() { "/" } else { rest };
            let rewritten = match uri.query() {
                Some(query) => format!("{rest}?{query}"),
                None => rest.to_string(),
            };
            return rewritten
                .parse()
                .map(Some)
                .map_err(|_| Status::bad_request("malformed request path"));
        }
        let bearer = text(header::AUTHORIZATION).and_then(|h| {
            h.strip_prefix("Bearer ")
                .or_else(|| h.strip_prefix("bearer "))
        });
        match bearer {
            Some(t) if constant_time_eq(t.trim().as_bytes(), expected.as_bytes()) => Ok(None),
            _ => Err(Status::new(401, "Unauthorized", "Unauthorized")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(n, v)| (n.clone(), HeaderValue::from_str(v).unwrap()))
            .collect()
    }

    fn pods() -> Uri {
        Uri::from_static("/api/v1/pods")
    }

    #[test]
    fn beyond_loopback_a_token_is_required() {
        let any: SocketAddr = "0.0.0.0:0".parse().unwrap();
        let err = Door::new(any, None).unwrap_err().to_string();
        assert!(err.contains("0.0.0.0:0") && err.contains("token"), "{err}");
        assert!(!err.contains('\n'));
        assert!(Door::new(any, Some("t".into())).is_ok());
        assert_eq!(
            Door::new(any, Some(String::new())).unwrap_err(),
            DoorError::EmptyToken
        );
        assert!(Door::new("[::1]:8081".parse().unwrap(), None).is_ok());
    }

    #[test]
    fn without_a_token_only_loopback_names_get_in() {
        let door = Door::new("127.0.0.1:8081".parse().unwrap(), None).unwrap();
        let check = |h: &HeaderMap| door.check(h, &pods());
        assert_eq!(
            check(&headers(&[(header::HOST, "127.0.0.1:8081")])),
            Ok(None)
        );
        assert!(check(&headers(&[(header::HOST, "localhost:8081")])).is_ok());
        let rebound = check(&headers(&[(header::HOST, "evil.example:8081")])).unwrap_err();
        assert_eq!((rebound.code, rebound.reason), (403, "Forbidden"));
        assert!(
            rebound.message.contains("evil.example"),
            "{}",
            rebound.message
        );
        assert_eq!(check(&HeaderMap::new()).unwrap_err().code, 403);
    }

    #[test]
    fn a_browser_page_is_refused_whatever_it_names() {
        let door = Door::new("127.0.0.1:8081".parse().unwrap(), None).unwrap();
        let page = headers(&[
            (header::HOST, "127.0.0.1:8081"),
            (header::ORIGIN, "http://127.0.0.1:8080"),
        ]);
        assert_eq!(door.check(&page, &pods()).unwrap_err().code, 403);
    }

    #[test]
    fn with_a_token_every_request_carries_it_in_a_header_or_its_path() {
        let door = Door::new("0.0.0.0:8081".parse().unwrap(), Some("s3 cret".into())).unwrap();
        let host = (header::HOST, "demo.example:8081");
        let bearer = headers(&[host.clone(), (header::AUTHORIZATION, "Bearer s3 cret")]);
        assert_eq!(door.check(&bearer, &pods()), Ok(None));
        for bad in ["Bearer guess", "Basic czNjcmV0", "s3 cret"] {
            let refused = door
                .check(
                    &headers(&[host.clone(), (header::AUTHORIZATION, bad)]),
                    &pods(),
                )
                .unwrap_err();
            assert_eq!((refused.code, refused.reason), (401, "Unauthorized"));
        }
        let plain = headers(&[host]);
        assert_eq!(door.check(&plain, &pods()).unwrap_err().code, 401);

        let url = server_url("http://10.0.0.5:8081/", "s3 cret");
        assert_eq!(url, "http://10.0.0.5:8081/token/s3%20cret");
        let in_path = Uri::from_static("/token/s3%20cret/api/v1/pods?watch=1");
        assert_eq!(
            door.check(&plain, &in_path),
            Ok(Some(Uri::from_static("/api/v1/pods?watch=1")))
        );
        let bare = Uri::from_static("/token/s3%20cret");
        assert_eq!(door.check(&plain, &bare), Ok(Some(Uri::from_static("/"))));
        for wrong in ["/token/guess/api", "/token/s3%20cre/api", "/token/"] {
            let uri: Uri = wrong.parse().unwrap();
            assert_eq!(door.check(&plain, &uri).unwrap_err().code, 401, "{wrong}");
        }
    }
}
