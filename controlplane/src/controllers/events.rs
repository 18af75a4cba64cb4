//! Events (`core/v1`), recorded as client-go's `EventRecorder` records them:
//! one Event object per (object, reason, message), named
//! `<object>.<hex timestamp>` in the object's namespace, with the component
//! that reported it; a repeat of the same event bumps its `count` and
//! `lastTimestamp` instead of writing a new one (the recorder's
//! aggregation).
//!
//! Each recorder keeps at most [`MAX_EVENTS_PER_RECORDER`] events and
//! deletes its oldest beyond that, as the apiserver's one-hour event TTL
//! keeps a cluster's events bounded: the demo's store and quotas stay within
//! their budgets however long the story runs.

use crate::api_error::ApiError;
use crate::control_plane::ControlPlane;
use crate::object;
use crate::resource::{EVENTS, ResourceType};
use crate::update::update_if_changed;
use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
use watchlife_protocol::Micros;

/// Events one recorder keeps. Six components record (two kubelets), so the
/// demo holds at most a few hundred Events, far under its quotas.
pub const MAX_EVENTS_PER_RECORDER: usize = 60;

/// `Normal` or `Warning`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Normal,
    Warning,
}

impl EventType {
    fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// What events with the same cause share: (involved uid, reason, message).
type Cause = (String, String, String);

/// One component's recorder (`default-scheduler`, `kubelet` on a host, ...).
#[derive(Debug)]
pub struct Recorder {
    component: &'static str,
    host: Option<String>,
    /// The events written, oldest first: (namespace, name).
    written: VecDeque<(String, String)>,
    /// Each cause's event, (namespace, name), for aggregation.
    by_cause: HashMap<Cause, (String, String)>,
    /// Names drawn, so that two events of one instant still differ.
    drawn: u64,
}

impl Recorder {
    pub fn new(component: &'static str, host: Option<&str>) -> Self {
        Recorder {
            component,
            host: host.map(str::to_string),
            written: VecDeque::new(),
            by_cause: HashMap::new(),
            drawn: 0,
        }
    }

    /// Records an event about `involved`, an object of type `rt`. Failing to
    /// record never fails the caller's work, as with client-go's recorder,
    /// whose writes are asynchronous and best-effort: the error is returned
    /// only for tests to see.
    pub fn record(
        &mut self,
        cp: &ControlPlane,
        now: Micros,
        (rt, involved): (ResourceType, &Value),
        kind: EventType,
        reason: &str,
        message: impl Into<String>,
    ) -> Result<(), ApiError> {
        let message = message.into();
        let at = crate::time::rfc3339(now);
        let uid = involved["metadata"]["uid"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let cause = (uid.clone(), reason.to_string(), message.clone());
        if self.bump(cp, &cause, &at)? {
            return Ok(());
        }
        let namespace = object::namespace(involved)
            .filter(|ns| !ns.is_empty())
            .unwrap_or("default")
            .to_string();
        self.drawn += 1;
        let name = format!(
            "{}.{:x}",
            object::name(involved),
            now.wrapping_mul(1000).wrapping_add(self.drawn % 1000)
        );
        let event = json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": reference((rt, involved), &uid, &namespace),
            "reason": reason,
            "message": message,
            "source": self.source(),
            "firstTimestamp": at,
            "lastTimestamp": at,
            "count": 1,
            "type": kind.as_str(),
            "eventTime": null,
            "reportingComponent": "",
            "reportingInstance": "",
        });
        cp.create(EVENTS, event)?;
        self.written.push_back((namespace.clone(), name.clone()));
        self.by_cause.insert(cause, (namespace, name));
        self.prune(cp)
    }

    /// Counts one more occurrence of `cause` on the event written for it,
    /// at `at`; false when there is no such event (any more).
    fn bump(&mut self, cp: &ControlPlane, cause: &Cause, at: &str) -> Result<bool, ApiError> {
        let Some((ns, name)) = self.by_cause.get(cause).cloned() else {
            return Ok(false);
        };
        let bumped = update_if_changed(cp, EVENTS, Some(&ns), &name, |e| {
            let count = e["count"].as_u64().unwrap_or(1);
            e["count"] = json!(count + 1);
            e["lastTimestamp"] = json!(at);
        });
        match bumped {
            Ok(_) => Ok(true),
            // Deleted by someone else: write a new one.
            Err(ApiError::NotFound { .. }) => {
                self.by_cause.remove(cause);
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// The event's `source`: this recorder's component, and its host.
    fn source(&self) -> Value {
        let mut source = json!({"component": self.component});
        if let Some(host) = &self.host {
            source["host"] = json!(host);
        }
        source
    }

    /// Deletes the oldest events written beyond [`MAX_EVENTS_PER_RECORDER`].
    fn prune(&mut self, cp: &ControlPlane) -> Result<(), ApiError> {
        while self.written.len() > MAX_EVENTS_PER_RECORDER {
            let Some((ns, old)) = self.written.pop_front() else {
                break;
            };
            self.by_cause.retain(|_, v| v.1 != old || v.0 != ns);
            match cp.delete_gracefully(EVENTS, Some(&ns), &old, Some(0)) {
                Ok(_) | Err(ApiError::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// The event's `involvedObject`: a reference to `involved`, of type `rt`.
fn reference((rt, involved): (ResourceType, &Value), uid: &str, namespace: &str) -> Value {
    let mut reference = json!({
        "kind": rt.kind,
        "name": object::name(involved),
        "apiVersion": rt.api_version(),
        "uid": uid,
        "resourceVersion": object::resource_version(involved).unwrap_or(""),
    });
    if rt.namespaced {
        reference["namespace"] = json!(namespace);
    }
    reference
}
