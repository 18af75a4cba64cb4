//! What can go wrong in a list-watch, named by phase and keeping its source,
//! and how each is sorted into the Reflector machine's [`Failure`]s.

use crate::upstream::error_chain::with_causes;
use watchlife_informer::reflector::{Failure, WatchEnd};

/// `details.causes[].reason` of a LIST the watch cache could not serve yet.
const RESOURCE_VERSION_TOO_LARGE: &str = "ResourceVersionTooLarge";

/// A failed step of the list-watch.
#[derive(Debug, thiserror::Error)]
pub enum ReflectorError {
    #[error("building the request: {source}")]
    Build { source: kube::core::request::Error },
    #[error("LIST: {source}")]
    List { source: kube::Error },
    #[error("reading the LIST: {source}")]
    ReadList { source: std::io::Error },
    #[error("decoding the LIST: {source}")]
    DecodeList { source: serde_json::Error },
    #[error("WATCH: {source}")]
    Watch { source: kube::Error },
    #[error("reading the watch stream: {source}")]
    WatchStream { source: kube::Error },
    /// `request` ("LIST" or "WATCH") went unanswered, or its body stopped,
    /// for as long as a silent watch may last: its connection is taken for
    /// dead (a load balancer or NAT forgot it).
    #[error(
        "{request}: nothing arrived for {} s: the connection is taken for dead",
        after.as_secs()
    )]
    Unanswered {
        request: &'static str,
        after: std::time::Duration,
    },
}

impl ReflectorError {
    /// The failure as the Reflector machine sorts it.
    pub fn failure(&self) -> Failure {
        let message = with_causes(self);
        let source = match self {
            ReflectorError::List { source }
            | ReflectorError::Watch { source }
            | ReflectorError::WatchStream { source } => source,
            _ => return Failure::Other(message),
        };
        if let kube::Error::Api(status) = source {
            return status_failure(status);
        }
        if connection_refused(source) {
            Failure::ConnectionRefused(message)
        } else {
            Failure::Other(message)
        }
    }

    /// The request went out on a pooled connection that the server closed
    /// before any answer (hyper's "connection closed before message
    /// completed"): Go's `http.Transport` sends such an idempotent request
    /// again on a new connection by itself, so client-go never sees it.
    pub fn closed_before_answer(&self) -> bool {
        match self {
            ReflectorError::List { source } | ReflectorError::Watch { source } => {
                chain_mentions(source, "connection closed before message completed")
            }
            _ => false,
        }
    }

    /// How a watch stream that failed mid-way ended: a connection that went
    /// away (EOF, reset, timeout) is a normal close, as client-go's stream
    /// watcher treats it; an undecodable event is an error.
    pub fn watch_end(&self) -> WatchEnd {
        match self {
            ReflectorError::WatchStream {
                source: kube::Error::SerdeError(_) | kube::Error::Api(_),
            } => WatchEnd::Failed(self.failure()),
            _ => WatchEnd::Closed,
        }
    }
}

/// A Status from the server (an answer, or an ERROR event), sorted.
pub fn status_failure(status: &kube::core::Status) -> Failure {
    let message = if status.message.is_empty() {
        format!("the server answered {}", status.code)
    } else {
        format!("{} ({})", status.message, status.code)
    };
    let too_large = status.details.as_ref().is_some_and(|d| {
        d.causes
            .iter()
            .any(|c| c.reason == RESOURCE_VERSION_TOO_LARGE)
    });
    if status.code == 410 || status.reason == "Expired" || status.reason == "Gone" {
        Failure::Expired(message)
    } else if too_large {
        Failure::TooLargeResourceVersion(message)
    } else if status.code == 429 {
        Failure::TooManyRequests(message)
    } else {
        Failure::Other(message)
    }
}

/// Whether any error in `error`'s chain says `words`.
fn chain_mentions(error: &kube::Error, words: &str) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if e.to_string().contains(words) {
            return true;
        }
        source = e.source();
    }
    false
}

/// Whether the error was a TCP connection refused, anywhere in its chain
/// (client-go's `utilnet.IsConnectionRefused`).
fn connection_refused(error: &kube::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        let refused = e
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused);
        // Some layers keep only the io::Error's message.
        if refused || e.to_string().contains("Connection refused") {
            return true;
        }
        source = e.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;

    fn status(json: serde_json::Value) -> Status {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn sorts_statuses_as_client_go() {
        let gone = status(
            serde_json::json!({"code": 410, "reason": "Expired", "message": "too old resource version: 5 (90)"}),
        );
        assert!(matches!(status_failure(&gone), Failure::Expired(_)));
        let too_large = status(serde_json::json!({
            "code": 504, "reason": "Timeout", "message": "Too large resource version",
            "details": {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}]}
        }));
        assert!(matches!(
            status_failure(&too_large),
            Failure::TooLargeResourceVersion(_)
        ));
        let forbidden =
            status(serde_json::json!({"code": 403, "reason": "Forbidden", "message": "no"}));
        assert_eq!(
            status_failure(&forbidden),
            Failure::Other("no (403)".into())
        );
        let busy = status(
            serde_json::json!({"code": 429, "reason": "TooManyRequests", "message": "storage is (re)initializing"}),
        );
        assert!(matches!(status_failure(&busy), Failure::TooManyRequests(_)));
    }

    #[tokio::test]
    async fn a_refused_tcp_connection_through_the_kube_client_is_connection_refused() {
        // A port nothing listens on: bind one, then let it go.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let config = kube::Config::new(format!("http://127.0.0.1:{port}").parse().unwrap());
        let client = kube::Client::try_from(config).unwrap();
        let request = http::Request::get("/api/v1/pods").body(Vec::new()).unwrap();
        let source = client.request_text(request).await.unwrap_err();
        let e = ReflectorError::Watch { source };
        assert!(
            matches!(e.failure(), Failure::ConnectionRefused(_)),
            "{e:?}"
        );
    }

    #[test]
    fn a_pooled_connection_closed_before_the_answer_is_told_apart() {
        let closed =
            |what: &str| kube::Error::Service(Box::new(std::io::Error::other(what.to_string())));
        let e = ReflectorError::Watch {
            source: closed("connection closed before message completed"),
        };
        assert!(e.closed_before_answer());
        let e = ReflectorError::List {
            source: closed("connection closed before message completed"),
        };
        assert!(e.closed_before_answer());
        // A stream that broke after its answer is no such thing.
        let e = ReflectorError::WatchStream {
            source: closed("connection closed before message completed"),
        };
        assert!(!e.closed_before_answer());
        let e = ReflectorError::Watch {
            source: closed("connection reset by peer"),
        };
        assert!(!e.closed_before_answer());
    }

    #[test]
    fn a_refused_connection_is_found_in_the_chain() {
        let io = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        let e = kube::Error::Service(Box::new(io));
        assert!(connection_refused(&e));
        let other = kube::Error::Service(Box::new(std::io::Error::other("tls")));
        assert!(!connection_refused(&other));
    }
}
