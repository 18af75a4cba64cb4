//! What can go wrong in a list-watch, named by phase and keeping its source,
//! and how each is sorted into the Reflector machine's [`Failure`]s.

use std::error::Error as _;
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
}

impl ReflectorError {
    /// The failure as the Reflector machine sorts it.
    pub fn failure(&self) -> Failure {
        let message = self.to_string();
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
    } else {
        Failure::Other(message)
    }
}

/// Whether the error was a TCP connection refused, anywhere in its chain.
fn connection_refused(error: &kube::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = error.source();
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return true;
        }
        source = e.source();
    }
    // Some layers keep only the message of the io::Error.
    error.to_string().contains("Connection refused")
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
