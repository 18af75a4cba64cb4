//! What a viewer may say: the size of its messages, and the filters they
//! may name. Every refusal carries the code and words of the `error` frame
//! that answers it.

use watchlife_protocol::{ClientMessage, ErrorCode, Filter};

/// Largest message a viewer may send. Viewers send small commands; anything
/// bigger is a mistake or an attack. Bigger ones are answered with an error
/// frame, up to [`MAX_FRAME_BYTES`].
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024;

/// Largest message the WebSocket layer reads at all; beyond it the bridge
/// closes the connection (1009) instead of buffering an attacker's payload.
pub const MAX_FRAME_BYTES: usize = 4 * MAX_MESSAGE_BYTES;

/// Longest accepted resource name (a DNS subdomain) and namespace (a label).
const MAX_NAME: usize = 253;
const MAX_NAMESPACE: usize = 63;
/// Most resources one filter may name.
const MAX_FILTER_RESOURCES: usize = 64;

/// Why a viewer's message was refused: what its `error` frame says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub code: ErrorCode,
    pub message: String,
}

/// Reads one text message from a viewer, as [`crate::downstream::viewer`] does: a message over
/// [`MAX_MESSAGE_BYTES`], one that is not a [`ClientMessage`] (bad JSON, an
/// unknown type, a missing field) and a filter that names no resource or
/// namespace Kubernetes could have are refused, each with the code and
/// words of its `error` frame. Never panics, whatever the text.
pub fn parse_message(text: &str) -> Result<ClientMessage, Refused> {
    let refuse = |code, message: String| Err(Refused { code, message });
    if text.len() > MAX_MESSAGE_BYTES {
        return refuse(
            ErrorCode::TooLarge,
            format!(
                "message of {} bytes is over the limit of {MAX_MESSAGE_BYTES}",
                text.len()
            ),
        );
    }
    match serde_json::from_str::<ClientMessage>(text) {
        Err(e) => refuse(ErrorCode::Malformed, format!("not a valid message: {e}")),
        Ok(ClientMessage::Subscribe { filter }) => match check_filter(&filter) {
            Err(why) => refuse(ErrorCode::Malformed, why),
            Ok(()) => Ok(ClientMessage::Subscribe { filter }),
        },
        Ok(action) => Ok(action),
    }
}

/// A filter names resources and a namespace as Kubernetes spells them.
fn check_filter(filter: &Filter) -> Result<(), String> {
    let dns = |s: &str, max: usize| {
        !s.is_empty()
            && s.len() <= max
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
    };
    if filter.resources.len() > MAX_FILTER_RESOURCES {
        return Err(format!(
            "a filter names at most {MAX_FILTER_RESOURCES} resources"
        ));
    }
    if let Some(bad) = filter.resources.iter().find(|r| !dns(r, MAX_NAME)) {
        return Err(format!(
            "{bad:?} is not a resource name (like pods or deployments.apps)"
        ));
    }
    match &filter.namespace {
        Some(ns) if !dns(ns, MAX_NAMESPACE) || ns.contains('.') => {
            Err(format!("{ns:?} is not a namespace name"))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_are_checked() {
        let ok = Filter {
            resources: vec!["pods".into(), "deployments.apps".into()],
            namespace: Some("kube-system".into()),
        };
        assert!(check_filter(&ok).is_ok());
        assert!(check_filter(&Filter::default()).is_ok());
        let bad_resource = Filter {
            resources: vec!["Pods<script>".into()],
            namespace: None,
        };
        assert!(check_filter(&bad_resource).is_err());
        let bad_ns = Filter {
            resources: vec![],
            namespace: Some("a.b".into()),
        };
        assert!(check_filter(&bad_ns).is_err());
        let many = Filter {
            resources: vec!["pods".into(); MAX_FILTER_RESOURCES + 1],
            namespace: None,
        };
        assert!(check_filter(&many).is_err());
    }
}
