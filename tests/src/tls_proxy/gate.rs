//! The TLS proxy's door, where it stands for an authenticating proxy in
//! front of an apiserver (as kube-oidc-proxy or an API gateway does): it
//! takes the client's bearer token, answers 401 as the apiserver would
//! when the token is not one it currently accepts, and otherwise sends the
//! request on with its own credential, acting as the user it names
//! (`Impersonate-User`), so that the apiserver's RBAC judges that user.
//!
//! Tokens are accepted and refused while the proxy runs: a token expiring,
//! rotated with or without an overlap, revoked.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Who may pass, and as whom the apiserver is asked.
#[derive(Debug)]
pub struct Gate {
    door: Mutex<Door>,
    refused: AtomicU64,
}

#[derive(Debug)]
struct Door {
    accepted: BTreeSet<String>,
    /// The `Authorization` header the proxy sends on; none where the
    /// proxy's client certificate speaks for it.
    credential: Option<String>,
    /// The user the requests act as (`Impersonate-User`); none: the
    /// proxy's own credential's user.
    acting_as: Option<String>,
}

/// What the gate makes of a request's head.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Send on this head instead.
    Pass(Vec<u8>),
    /// Answer 401 with this message.
    Unauthorized(String),
}

impl Gate {
    /// A gate that accepts `token`, sends `credential` on (a whole
    /// `Authorization` value) and acts as `acting_as`.
    pub fn new(token: &str, credential: Option<String>, acting_as: Option<&str>) -> Gate {
        Gate {
            door: Mutex::new(Door {
                accepted: BTreeSet::from([token.to_string()]),
                credential,
                acting_as: acting_as.map(str::to_string),
            }),
            refused: AtomicU64::new(0),
        }
    }

    /// `token` passes from now on.
    pub fn accept(&self, token: &str) {
        self.door().accepted.insert(token.to_string());
    }

    /// `token` is refused from now on (expired, revoked).
    pub fn refuse(&self, token: &str) {
        self.door().accepted.remove(token);
    }

    /// Requests answered 401 so far.
    pub fn refusals(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    fn door(&self) -> std::sync::MutexGuard<'_, Door> {
        self.door.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The verdict on one request's `head` (its request line and headers,
    /// up to and with the blank line).
    pub fn judge(&self, head: &[u8]) -> Verdict {
        let text = String::from_utf8_lossy(head);
        let mut lines = text.split("\r\n");
        let request_line = lines.next().unwrap_or_default();
        let mut kept = vec![request_line.to_string()];
        let mut token = None;
        for line in lines.filter(|l| !l.is_empty()) {
            let (name, value) = line.split_once(':').unwrap_or((line, ""));
            let name = name.trim().to_ascii_lowercase();
            if name == "authorization" {
                token = value.trim().strip_prefix("Bearer ").map(str::to_string);
            } else if !name.starts_with("impersonate-") {
                kept.push(line.to_string());
            }
        }
        let door = self.door();
        let refusal = match token {
            Some(token) if door.accepted.contains(&token) => None,
            Some(_) => Some("Unauthorized"),
            None => Some("Unauthorized: no bearer token"),
        };
        if let Some(message) = refusal {
            self.refused.fetch_add(1, Ordering::Relaxed);
            return Verdict::Unauthorized(message.into());
        }
        if let Some(credential) = &door.credential {
            kept.push(format!("Authorization: {credential}"));
        }
        if let Some(user) = &door.acting_as {
            kept.push(format!("Impersonate-User: {user}"));
        }
        let mut head = kept.join("\r\n");
        head.push_str("\r\n\r\n");
        Verdict::Pass(head.into_bytes())
    }
}

/// Where a request's head ends (just past its blank line) in `bytes`.
pub fn head_end(bytes: &[u8]) -> Option<usize> {
    bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|at| at + 4)
}

/// The `Content-Length` of a request's head, 0 when it has none.
pub fn content_length(head: &[u8]) -> usize {
    String::from_utf8_lossy(head)
        .split("\r\n")
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.trim().parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &[u8] = b"GET /api/v1/pods?watch=1 HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer old\r\nimpersonate-user: root\r\n\r\n";

    #[test]
    fn an_accepted_token_passes_as_the_proxys_credential_acting_as_the_user() {
        let gate = Gate::new("old", Some("Bearer admin".into()), Some("watchlife-bridge"));
        let Verdict::Pass(head) = gate.judge(HEAD) else {
            panic!("refused")
        };
        assert_eq!(
            String::from_utf8(head).unwrap(),
            "GET /api/v1/pods?watch=1 HTTP/1.1\r\nhost: 127.0.0.1\r\nAuthorization: Bearer admin\r\nImpersonate-User: watchlife-bridge\r\n\r\n"
        );
    }

    #[test]
    fn a_refused_token_is_unauthorized_and_a_new_one_passes() {
        let gate = Gate::new("old", None, None);
        gate.accept("new");
        gate.refuse("old");
        assert!(matches!(gate.judge(HEAD), Verdict::Unauthorized(_)));
        assert_eq!(gate.refusals(), 1);
        let renewed = String::from_utf8_lossy(HEAD).replace("Bearer old", "Bearer new");
        let Verdict::Pass(head) = gate.judge(renewed.as_bytes()) else {
            panic!("refused")
        };
        let head = String::from_utf8(head).unwrap();
        assert!(!head.to_lowercase().contains("authorization"), "{head}");
        assert!(!head.to_lowercase().contains("impersonate"), "{head}");
    }

    #[test]
    fn heads_and_bodies_are_found() {
        let mut bytes = b"POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\nabcGET".to_vec();
        let end = head_end(&bytes).unwrap();
        assert_eq!(content_length(&bytes[..end]), 3);
        bytes.drain(..end);
        assert_eq!(&bytes, b"abcGET");
        assert_eq!(head_end(&bytes), None);
    }
}
