//! Messages from a viewer to the bridge.

use serde::{Deserialize, Serialize};

/// A message from a viewer: one JSON object per WebSocket text message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ClientMessage {
    /// Choose which stream frames to receive; replaces the previous filter.
    /// (Where to resume is chosen when connecting: `/ws?stream=ID&since=SEQ`.)
    Subscribe {
        #[serde(default)]
        filter: Filter,
    },
    /// Ask the demo control plane to do something (refused for a real cluster).
    Action { action: DemoAction },
}

/// Which events a viewer wants. Empty fields match everything.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Filter {
    /// Resources to receive (`pods`); empty for all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<String>,
    /// Namespace to receive; absent for all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// A change the demo control plane makes on request, each the start of a story.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DemoAction {
    /// Set a deployment's replicas.
    Scale {
        namespace: String,
        name: String,
        replicas: u32,
    },
    /// Add (or change) a label on an object.
    Label {
        resource: String,
        namespace: String,
        name: String,
        key: String,
        value: String,
    },
    /// Change the image of a deployment's first container.
    SetImage {
        namespace: String,
        name: String,
        image: String,
    },
    /// Delete a pod (it goes through deletionTimestamp, then DELETED).
    DeletePod { namespace: String, name: String },
    /// Compact the store's history now: older watches get 410 Gone.
    Compact,
    /// Close every watch: watchers re-watch, or relist when too far behind.
    DropWatches,
    /// Make one watcher of the watch cache slow, so that it is closed.
    SlowWatcher,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subscribe_parses_with_defaults() {
        let msg: ClientMessage = serde_json::from_str(r#"{"type":"subscribe"}"#).unwrap();
        assert_eq!(
            msg,
            ClientMessage::Subscribe {
                filter: Filter::default()
            }
        );
    }

    #[test]
    fn action_round_trips() {
        let msg = ClientMessage::Action {
            action: DemoAction::Scale {
                namespace: "default".into(),
                name: "web".into(),
                replicas: 3,
            },
        };
        let text = serde_json::to_string(&msg).unwrap();
        assert_eq!(
            text,
            r#"{"type":"action","action":{"kind":"scale","namespace":"default","name":"web","replicas":3}}"#
        );
        assert_eq!(serde_json::from_str::<ClientMessage>(&text).unwrap(), msg);
    }
}
