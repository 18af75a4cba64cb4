//! Each object's recent versions, and a readable diff between two of them:
//! the Indexer's state seen as the accumulation of events.

use serde_json::Value;
use std::collections::VecDeque;
use watchlife_protocol::patch::apply_merge_patch;
use watchlife_protocol::{EventType, ObjectJson, ObjectRef};

/// An object's identity in the page: resource and `namespace/name`.
pub type ObjectKey = (String, String);

/// Versions kept per object: enough to tell a story (ADDED, MODIFIED, …),
/// bounded so that a busy object cannot grow the page without limit.
pub const VERSIONS_KEPT: usize = 12;

/// Fields that change on every write and say nothing a reader needs.
const NOISE: [&str; 4] = [
    "metadata.resourceVersion",
    "metadata.managedFields",
    "metadata.generation",
    "metadata.uid",
];

/// One version of an object: the event that produced it.
#[derive(Debug, Clone, PartialEq)]
pub struct Version {
    pub event_type: EventType,
    pub resource_version: String,
    /// Whether it came from a LIST (or a snapshot) rather than a watch event.
    pub initial: bool,
    /// Delivered as a resync: the same resourceVersion handed to the
    /// handlers again.
    pub resync: bool,
    /// A deletion found by a relist (DeletedFinalStateUnknown): the object
    /// is the Indexer's last copy, its final state unknown.
    pub final_state_unknown: bool,
    /// The object's JSON text; `None` when it came in a light snapshot and
    /// has not been fetched (see [`crate::bodies`]), and when it came as a
    /// patch (see [`ObjectHistory::body`]).
    pub object: Option<ObjectJson>,
    /// The change as a merge patch, when it came so (see [`crate::carried`]).
    pub patch: Option<KeptPatch>,
}

/// A version's body as the merge patch it came as.
#[derive(Debug, Clone, PartialEq)]
pub struct KeptPatch {
    pub merge: ObjectJson,
    /// It applies to the body of the version kept before it, which rebuilds
    /// this version's. Otherwise the page never held its base (a light
    /// snapshot's object), and the patch only tells what changed.
    pub on_previous: bool,
}

/// An object's recent history, oldest first.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectHistory {
    pub target: ObjectRef,
    pub versions: VecDeque<Version>,
    /// Versions dropped from the front.
    pub dropped: usize,
    /// Whether the latest event deleted it.
    pub deleted: bool,
    /// Page time (ms) of the deletion, while a deleted object is still shown.
    pub deleted_at: Option<f64>,
}

impl ObjectHistory {
    pub fn new(target: ObjectRef) -> Self {
        ObjectHistory {
            target,
            versions: VecDeque::new(),
            dropped: 0,
            deleted: false,
            deleted_at: None,
        }
    }

    /// Appends a version, dropping the oldest beyond [`VERSIONS_KEPT`]. A
    /// version that came as a patch on the one dropped gets its body first.
    pub fn push(&mut self, version: Version) {
        self.deleted = version.event_type == EventType::Deleted;
        if self.versions.len() == VERSIONS_KEPT {
            if self.versions.get(1).is_some_and(|v| v.object.is_none()) {
                let body = self.body_value(1).map(|b| ObjectJson::from_value(&b));
                self.versions[1].object = body;
            }
            self.versions.pop_front();
            self.dropped += 1;
        }
        self.versions.push_back(version);
    }

    /// The body of version `i` (oldest first): held, or rebuilt from the
    /// versions before it where it came as a patch on its predecessor.
    pub fn body(&self, i: usize) -> Option<ObjectJson> {
        let v = self.versions.get(i)?;
        match &v.object {
            Some(body) => Some(body.clone()),
            None => self.body_value(i).map(|b| ObjectJson::from_value(&b)),
        }
    }

    /// Every version's body as a JSON value, oldest first, rebuilding each
    /// patched one from the one before in a single pass.
    pub fn bodies(&self) -> Vec<Option<Value>> {
        let mut bodies: Vec<Option<Value>> = Vec::with_capacity(self.versions.len());
        for v in &self.versions {
            let body = rebuilt(v, || bodies.last().cloned().flatten());
            bodies.push(body);
        }
        bodies
    }

    /// Whether version `i`'s body is held or can be rebuilt.
    pub fn has_body(&self, i: usize) -> bool {
        match self.versions.get(i) {
            Some(v) if v.object.is_some() => true,
            Some(Version { patch: Some(p), .. }) if p.on_previous => i > 0 && self.has_body(i - 1),
            _ => false,
        }
    }

    fn body_value(&self, i: usize) -> Option<Value> {
        let v = self.versions.get(i)?;
        rebuilt(v, || i.checked_sub(1).and_then(|p| self.body_value(p)))
    }

    /// The latest resourceVersion.
    pub fn resource_version(&self) -> &str {
        self.versions
            .back()
            .map(|v| v.resource_version.as_str())
            .unwrap_or("")
    }
}

/// The body of `v`, given a way to the body of the version before it.
fn rebuilt(v: &Version, previous: impl FnOnce() -> Option<Value>) -> Option<Value> {
    match (&v.object, &v.patch) {
        (Some(body), _) => Some(body.parse()),
        (None, Some(patch)) if patch.on_previous => {
            let mut body = previous()?;
            apply_merge_patch(&mut body, &patch.merge.parse());
            Some(body)
        }
        _ => None,
    }
}

/// One difference between two versions of an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Added {
        path: String,
        value: String,
    },
    Removed {
        path: String,
        value: String,
    },
    Changed {
        path: String,
        from: String,
        to: String,
    },
    /// Set by a merge patch, what it was before not known.
    Set {
        path: String,
        value: String,
    },
    /// Removed by a merge patch, what it was not known.
    Unset {
        path: String,
    },
}

impl Change {
    /// The change in words: `label tier=frontend added`, `image nginx:0.5.0 → nginx:1.5.3`.
    pub fn describe(&self) -> String {
        match self {
            Change::Added { path, value } => match path.strip_prefix("metadata.labels.") {
                Some(key) => format!("label {key}={value} added"),
                None => format!("{} added: {value}", friendly(path)),
            },
            Change::Removed { path, value } => match path.strip_prefix("metadata.labels.") {
                Some(key) => format!("label {key}={value} removed"),
                None => format!("{} removed (was {value})", friendly(path)),
            },
            Change::Changed { path, from, to } => format!("{} {from} → {to}", friendly(path)),
            Change::Set { path, value } => match path.strip_prefix("metadata.labels.") {
                Some(key) => format!("label {key}={value} set"),
                None => format!("{} → {value}", friendly(path)),
            },
            Change::Unset { path } => match path.strip_prefix("metadata.labels.") {
                Some(key) => format!("label {key} removed"),
                None => format!("{} removed", friendly(path)),
            },
        }
    }
}

/// A shorter name for the paths people look for.
fn friendly(path: &str) -> String {
    if path.ends_with(".image") && path.contains("containers") {
        return "image".into();
    }
    match path {
        "spec.replicas" => "replicas".into(),
        "status.phase" => "phase".into(),
        "metadata.deletionTimestamp" => "deletionTimestamp".into(),
        _ => path.to_string(),
    }
}

/// The differences from `old` to `new`, in path order, without [`NOISE`].
pub fn diff(old: &Value, new: &Value) -> Vec<Change> {
    let mut a = Vec::new();
    let mut b = Vec::new();
    flatten("", old, &mut a);
    flatten("", new, &mut b);
    let a: std::collections::BTreeMap<_, _> = a.into_iter().collect();
    let b: std::collections::BTreeMap<_, _> = b.into_iter().collect();
    let mut changes = Vec::new();
    for (path, from) in &a {
        if NOISE.iter().any(|n| path.starts_with(n)) {
            continue;
        }
        match b.get(path) {
            None => changes.push(Change::Removed {
                path: path.clone(),
                value: from.clone(),
            }),
            Some(to) if to != from => changes.push(Change::Changed {
                path: path.clone(),
                from: from.clone(),
                to: to.clone(),
            }),
            Some(_) => {}
        }
    }
    for (path, value) in &b {
        if !a.contains_key(path) && !NOISE.iter().any(|n| path.starts_with(n)) {
            changes.push(Change::Added {
                path: path.clone(),
                value: value.clone(),
            });
        }
    }
    changes.sort_by(|x, y| path_of(x).cmp(path_of(y)));
    changes
}

/// What a merge patch changes, in path order, without [`NOISE`]: the
/// history's words for a version whose earlier body the page never had.
pub fn patch_changes(patch: &Value) -> Vec<Change> {
    let mut changes = Vec::new();
    patch_leaves("", patch, &mut changes);
    changes.retain(|c| !NOISE.iter().any(|n| path_of(c).starts_with(n)));
    changes.sort_by(|x, y| path_of(x).cmp(path_of(y)));
    changes
}

/// A merge patch's leaves: objects are merged key by key, `null` removes,
/// anything else (arrays among them) is set whole.
fn patch_leaves(prefix: &str, patch: &Value, out: &mut Vec<Change>) {
    match patch {
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                patch_leaves(&child(prefix, k), v, out);
            }
        }
        Value::Null => out.push(Change::Unset {
            path: prefix.to_string(),
        }),
        value => {
            let mut leaves = Vec::new();
            flatten(prefix, value, &mut leaves);
            out.extend(
                leaves
                    .into_iter()
                    .map(|(path, value)| Change::Set { path, value }),
            );
        }
    }
}

fn path_of(c: &Change) -> &str {
    match c {
        Change::Added { path, .. }
        | Change::Removed { path, .. }
        | Change::Changed { path, .. }
        | Change::Set { path, .. }
        | Change::Unset { path } => path,
    }
}

/// The path of field `key` under `prefix`.
fn child(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

/// Leaves of a JSON value as `a.b[0].c` → text.
fn flatten(prefix: &str, value: &Value, out: &mut Vec<(String, String)>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                flatten(&child(prefix, k), v, out);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for (i, v) in items.iter().enumerate() {
                flatten(&format!("{prefix}[{i}]"), v, out);
            }
        }
        Value::String(s) => out.push((prefix.to_string(), s.clone())),
        other => out.push((prefix.to_string(), other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_label_and_an_image_read_as_words() {
        let old = json!({"metadata": {"name": "web-1", "resourceVersion": "603"},
                         "spec": {"containers": [{"name": "web", "image": "nginx:0.5.0"}]}});
        let new = json!({"metadata": {"name": "web-1", "resourceVersion": "604", "labels": {"tier": "frontend"}},
                         "spec": {"containers": [{"name": "web", "image": "nginx:1.5.3"}]}});
        let words: Vec<String> = diff(&old, &new).iter().map(Change::describe).collect();
        assert_eq!(
            words,
            vec![
                "label tier=frontend added",
                "image nginx:0.5.0 → nginx:1.5.3"
            ]
        );
    }

    #[test]
    fn a_patch_reads_as_what_it_sets_and_removes() {
        let patch = json!({"metadata": {"resourceVersion": "9", "labels": {"tier": "web", "old": null}},
                           "data": {"mode": "fast"}, "spec": {"ports": [80, 443]}});
        let words: Vec<String> = patch_changes(&patch).iter().map(Change::describe).collect();
        assert_eq!(
            words,
            vec![
                "data.mode → fast",
                "label old removed",
                "label tier=web set",
                "spec.ports[0] → 80",
                "spec.ports[1] → 443",
            ]
        );
    }

    #[test]
    fn history_is_bounded() {
        let target = ObjectRef {
            resource: "pods".into(),
            kind: "Pod".into(),
            namespace: None,
            name: "a".into(),
        };
        let mut h = ObjectHistory::new(target);
        for i in 0..(VERSIONS_KEPT + 3) {
            h.push(Version {
                event_type: EventType::Modified,
                resource_version: i.to_string(),
                initial: false,
                resync: false,
                final_state_unknown: false,
                object: None,
                patch: None,
            });
        }
        assert_eq!(h.versions.len(), VERSIONS_KEPT);
        assert_eq!(h.dropped, 3);
        assert_eq!(h.resource_version(), (VERSIONS_KEPT + 2).to_string());
    }
}
