//! Server-side apply (`PATCH` with `application/apply-patch+yaml`) and the
//! `metadata.managedFields` every write through the API keeps.
//!
//! What is modelled of kube-apiserver's field management:
//!
//! - **Field sets** in the `FieldsV1` form (`f:spec`, `k:{"name":"web"}` for
//!   an element of a keyed list, `.` for the element itself). A list is
//!   keyed when the OpenAPI schema of the kind gives it
//!   `x-kubernetes-list-map-keys` or `x-kubernetes-patch-merge-key`
//!   (containers by `name`, ports by `containerPort`...), and is otherwise
//!   atomic: owned and replaced whole. Without the schema (a build without
//!   Kubernetes' source tree), a list whose elements all carry a `name` is
//!   keyed by it.
//! - **Apply**: the applied configuration is merged into the object (keyed
//!   lists element by element); a field the manager applied before and no
//!   longer applies is removed, unless another manager owns it too; the
//!   manager's entry (`operation: Apply`) then owns exactly the applied
//!   fields. Applying to an object that does not exist creates it.
//! - **Conflicts**: an applied field that another manager owns with a
//!   different value is a `409 Conflict` naming each field and manager, as
//!   kube-apiserver words it; with `force=true` the applier takes those
//!   fields from their owners. A field applied with the value it already
//!   has is shared, not a conflict.
//! - **Updates** (create, PUT, the other PATCH types, the `scale`
//!   subresource): the manager (`fieldManager`, else the client's
//!   `User-Agent` up to its first `/`) gets an `operation: Update` entry
//!   owning the fields the write changed, taken from the other managers.
//!
//! Not modelled: `status` has no managers (the demo's controllers write it
//! in-process), managers are not split by API version, `dryRun` is not
//! served, and set-typed lists (`x-kubernetes-list-type: set`) are atomic.

use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};
use watchlife_controlplane::ResourceType;
use watchlife_controlplane::status::Status;

/// The content type of an apply patch.
pub const APPLY_YAML: &str = "application/apply-patch+yaml";

/// Longest field manager name, as the apiserver allows.
pub const MAX_MANAGER_LEN: usize = 128;

/// One path to a leaf (or a keyed list element) in `FieldsV1` words.
type Path = Vec<String>;

/// A set of fields.
pub type FieldSet = BTreeSet<Path>;

/// Whether a PATCH is an apply.
pub fn is_apply(content_type: Option<&str>) -> bool {
    content_type
        .and_then(|c| c.split(';').next())
        .is_some_and(|m| m.trim().eq_ignore_ascii_case(APPLY_YAML))
}

/// What the YAML reader may be asked to do for one apply body, in bytes
/// times flow collections (`[`, `{`): libyaml's scanner, which serde_yaml
/// runs, pays for every token once per flow collection open around it, so
/// `a: [[[[...` costs the square of its length: 40 KB took seconds, and a
/// 3 MiB body would have held a thread for hours. Within this budget (a
/// 3 MiB body with 128 of them, as deep as serde_yaml reads anyway) the
/// worst body costs about a second, the order of a flat 3 MiB one.
pub const YAML_FLOW_BUDGET: usize = 3 * 1024 * 1024 * 128;

/// Reads an apply body (YAML, of which JSON is a part) as a JSON object.
/// JSON, what kubectl sends, is read as JSON (in linear time); other YAML
/// must keep within [`YAML_FLOW_BUDGET`], or is a 400 that says to send
/// JSON.
pub fn parse(body: &[u8]) -> Result<Value, Status> {
    let value: Value = match serde_json::from_slice(body) {
        Ok(value) => value,
        Err(_) => {
            // Every flow collection starts with one of these bytes, so
            // their count bounds how many can be open at once, whatever
            // the quoting and the comments around them.
            let openers = body.iter().filter(|b| matches!(b, b'[' | b'{')).count();
            let allowed = (YAML_FLOW_BUDGET / body.len().max(1)).max(128);
            if openers > allowed {
                return Err(Status::bad_request(format!(
                    "error decoding YAML: a YAML apply body of {} bytes may hold at most {allowed} '[' and '{{' (it holds {openers}); send it as JSON, as kubectl does",
                    body.len()
                )));
            }
            serde_yaml::from_slice(body)
                .map_err(|e| Status::bad_request(format!("error decoding YAML: {e}")))?
        }
    };
    if !value.is_object() {
        return Err(Status::bad_request(
            "error decoding YAML: an apply patch must be an object",
        ));
    }
    Ok(value)
}

/// The manager of a write: `fieldManager`, else the User-Agent's first word
/// (`kubectl/v1.32.0 (...)` → `kubectl`), as the apiserver defaults it.
pub fn manager(field_manager: Option<&str>, user_agent: Option<&str>) -> Result<String, Status> {
    if let Some(m) = field_manager {
        if m.len() > MAX_MANAGER_LEN || m.chars().any(|c| c.is_control()) {
            return Err(Status::new(
                422,
                "Invalid",
                format!(
                    "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Invalid value: {m:?}: must be at most {MAX_MANAGER_LEN} printable characters"
                ),
            ));
        }
        return Ok(m.to_string());
    }
    Ok(user_agent
        .and_then(|ua| ua.split('/').next())
        .filter(|s| !s.is_empty())
        .unwrap_or("unknown")
        .chars()
        .take(MAX_MANAGER_LEN)
        .collect())
}

// ---------------------------------------------------------------------------
// Lists and their keys
// ---------------------------------------------------------------------------

/// Where in the kind's schema a value sits, to know which lists are keyed.
#[derive(Clone, Copy)]
struct Schema<'a>(Option<&'a Value>);

impl<'a> Schema<'a> {
    fn of_kind(api_version: &str, kind: &str) -> Self {
        Schema(crate::openapi::definition_of(api_version, kind))
    }

    fn resolve(self) -> Option<&'a Value> {
        let s = self.0?;
        match s.get("$ref").and_then(Value::as_str) {
            Some(r) => crate::openapi::definition(r),
            None => Some(s),
        }
    }

    fn property(self, name: &str) -> Schema<'a> {
        Schema(self.resolve().and_then(|s| {
            s.get("properties")
                .and_then(|p| p.get(name))
                .or_else(|| s.get("additionalProperties"))
        }))
    }

    fn items(self) -> Schema<'a> {
        Schema(self.0.and_then(|s| s.get("items")))
    }

    /// The keys of a list at this place, if it is keyed.
    fn list_keys(self, items: &[Value]) -> Option<Vec<String>> {
        if let Some(s) = self.0 {
            if let Some(keys) = s
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
            {
                return Some(
                    keys.iter()
                        .filter_map(|k| Some(k.as_str()?.to_string()))
                        .collect(),
                );
            }
            if let Some(key) = s
                .get("x-kubernetes-patch-merge-key")
                .and_then(Value::as_str)
            {
                return Some(vec![key.to_string()]);
            }
            if crate::openapi::available() {
                return None;
            }
        }
        // No schema: lists of named objects are keyed by name.
        (!items.is_empty()
            && items
                .iter()
                .all(|i| i.get("name").is_some_and(Value::is_string)))
        .then(|| vec!["name".to_string()])
    }
}

/// The `k:{...}` word of a keyed element (keys in the schema's order).
fn key_word(item: &Value, keys: &[String]) -> Option<String> {
    let mut map = Map::new();
    for k in keys {
        if let Some(v) = item.get(k) {
            map.insert(k.clone(), v.clone());
        }
    }
    (!map.is_empty()).then(|| format!("k:{}", Value::Object(map)))
}

fn element_matches(item: &Value, word: &str) -> bool {
    let Some(json) = word.strip_prefix("k:") else {
        return false;
    };
    let Ok(Value::Object(keys)) = serde_json::from_str::<Value>(json) else {
        return false;
    };
    keys.iter().all(|(k, v)| item.get(k) == Some(v))
}

// ---------------------------------------------------------------------------
// Field sets
// ---------------------------------------------------------------------------

/// The fields `obj` sets that managers can own: `metadata.labels` and
/// `metadata.annotations` entries, and everything but `status` and the
/// identity fields.
pub fn fields_of(obj: &Value, api_version: &str, kind: &str) -> FieldSet {
    let schema = Schema::of_kind(api_version, kind);
    let mut out = FieldSet::new();
    let Some(map) = obj.as_object() else {
        return out;
    };
    for (k, v) in map {
        match k.as_str() {
            "apiVersion" | "kind" | "status" => {}
            "metadata" => {
                for part in ["labels", "annotations"] {
                    if let Some(entries) = v.get(part).and_then(Value::as_object) {
                        for key in entries.keys() {
                            out.insert(vec![
                                "f:metadata".into(),
                                format!("f:{part}"),
                                format!("f:{key}"),
                            ]);
                        }
                    }
                }
            }
            _ => walk(v, schema.property(k), vec![format!("f:{k}")], &mut out),
        }
    }
    out
}

fn walk(value: &Value, schema: Schema, path: Path, out: &mut FieldSet) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                let mut p = path.clone();
                p.push(format!("f:{k}"));
                walk(v, schema.property(k), p, out);
            }
        }
        Value::Array(items) => match schema.list_keys(items) {
            Some(keys) if items.iter().all(|i| key_word(i, &keys).is_some()) => {
                for item in items {
                    let mut p = path.clone();
                    p.push(key_word(item, &keys).expect("checked above"));
                    let mut dot = p.clone();
                    dot.push(".".into());
                    out.insert(dot);
                    walk(item, schema.items(), p, out);
                }
            }
            _ => {
                out.insert(path);
            }
        },
        _ => {
            out.insert(path);
        }
    }
}

/// The value at a path (the element itself for a `.` path).
fn value_at<'a>(obj: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut v = obj;
    for word in path {
        if word == "." {
            return Some(v);
        }
        v = if let Some(field) = word.strip_prefix("f:") {
            v.get(field)?
        } else {
            v.as_array()?.iter().find(|i| element_matches(i, word))?
        };
    }
    Some(v)
}

/// Removes the value at a path (a keyed element for a `.` path).
fn remove_at(obj: &mut Value, path: &[String]) {
    let Some((last, parent_path)) = path.split_last() else {
        return;
    };
    if last == "." {
        if let Some((word, grand)) = parent_path.split_last()
            && let Some(Value::Array(items)) = value_at_mut(obj, grand)
        {
            items.retain(|i| !element_matches(i, word));
        }
        return;
    }
    if let Some(parent) = value_at_mut(obj, parent_path)
        && let (Some(field), Some(map)) = (last.strip_prefix("f:"), parent.as_object_mut())
    {
        map.remove(field);
    }
}

fn value_at_mut<'a>(obj: &'a mut Value, path: &[String]) -> Option<&'a mut Value> {
    let mut v = obj;
    for word in path {
        v = if let Some(field) = word.strip_prefix("f:") {
            v.get_mut(field)?
        } else {
            v.as_array_mut()?
                .iter_mut()
                .find(|i| element_matches(i, word))?
        };
    }
    Some(v)
}

/// A field set as `fieldsV1` JSON.
pub fn to_fields_v1(set: &FieldSet) -> Value {
    let mut root = Map::new();
    for path in set {
        let mut node = &mut root;
        for word in path {
            node = node
                .entry(word.clone())
                .or_insert_with(|| json!({}))
                .as_object_mut()
                .expect("fieldsV1 nodes are objects");
        }
    }
    Value::Object(root)
}

/// `fieldsV1` JSON as a field set (the leaves and the `.` markers).
pub fn from_fields_v1(v: &Value) -> FieldSet {
    fn go(v: &Value, path: &mut Path, out: &mut FieldSet) {
        match v.as_object() {
            Some(map) if !map.is_empty() => {
                for (k, child) in map {
                    path.push(k.clone());
                    go(child, path, out);
                    path.pop();
                }
            }
            _ => {
                if !path.is_empty() {
                    out.insert(path.clone());
                }
            }
        }
    }
    let mut out = FieldSet::new();
    go(v, &mut Vec::new(), &mut out);
    out
}

/// A path as kube-apiserver prints it in a conflict:
/// `.spec.template.spec.containers[name="web"].image`.
pub fn display(path: &[String]) -> String {
    let mut out = String::new();
    for word in path {
        if let Some(field) = word.strip_prefix("f:") {
            out.push('.');
            out.push_str(field);
        } else if let Some(json) = word.strip_prefix("k:") {
            let keys: Map<String, Value> = serde_json::from_str(json).unwrap_or_default();
            let inner: Vec<String> = keys.iter().map(|(k, v)| format!("{k}={v}")).collect();
            out.push_str(&format!("[{}]", inner.join(",")));
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Managers
// ---------------------------------------------------------------------------

/// One `managedFields` entry.
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    manager: String,
    operation: String,
    api_version: String,
    time: String,
    fields: FieldSet,
}

impl Entry {
    /// Whether this is what `manager` applied (not what it updated).
    fn is_apply_of(&self, manager: &str) -> bool {
        self.manager == manager && self.operation == "Apply"
    }
}

fn entries(obj: &Value) -> Vec<Entry> {
    obj.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|e| Entry {
            manager: e["manager"].as_str().unwrap_or("").to_string(),
            operation: e["operation"].as_str().unwrap_or("Update").to_string(),
            api_version: e["apiVersion"].as_str().unwrap_or("").to_string(),
            time: e["time"].as_str().unwrap_or("").to_string(),
            fields: from_fields_v1(&e["fieldsV1"]),
        })
        .collect()
}

fn set_entries(obj: &mut Value, list: &[Entry]) {
    let json: Vec<Value> = list
        .iter()
        .filter(|e| !e.fields.is_empty())
        .map(|e| {
            json!({
                "manager": e.manager,
                "operation": e.operation,
                "apiVersion": e.api_version,
                "time": e.time,
                "fieldsType": "FieldsV1",
                "fieldsV1": to_fields_v1(&e.fields),
            })
        })
        .collect();
    let meta = watchlife_controlplane::object::metadata_mut(obj);
    if json.is_empty() {
        meta.remove("managedFields");
    } else {
        meta.insert("managedFields".into(), Value::Array(json));
    }
}

/// Gives `manager` (`operation`) the fields in `owned`, taking them from
/// every other entry, and stores the entries in `obj`.
fn take(
    list: &mut Vec<Entry>,
    manager: &str,
    operation: &str,
    rt: ResourceType,
    now: &str,
    owned: FieldSet,
    replace: bool,
) {
    for e in list.iter_mut() {
        if e.manager != manager || e.operation != operation {
            e.fields.retain(|p| !owned.contains(p));
        }
    }
    match list
        .iter_mut()
        .find(|e| e.manager == manager && e.operation == operation)
    {
        Some(e) => {
            if replace {
                e.fields = owned;
            } else {
                e.fields.extend(owned);
            }
            e.time = now.to_string();
            e.api_version = rt.api_version();
        }
        None => list.push(Entry {
            manager: manager.to_string(),
            operation: operation.to_string(),
            api_version: rt.api_version(),
            time: now.to_string(),
            fields: owned,
        }),
    }
    list.retain(|e| !e.fields.is_empty());
}

/// Records a write that is not an apply: `manager` takes the fields that
/// differ between `old` (`None` for a create) and `new`, and `new` keeps the
/// managers `old` had. Status writes (`status_only`) change no managers.
pub fn track_update(
    rt: ResourceType,
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    now: &str,
) {
    let api_version = rt.api_version();
    let new_fields = fields_of(new, &api_version, rt.kind);
    let changed: FieldSet = match old {
        None => new_fields,
        Some(old) => {
            let old_fields = fields_of(old, &api_version, rt.kind);
            new_fields
                .iter()
                .filter(|p| value_at(old, p) != value_at(new, p))
                .cloned()
                .collect::<FieldSet>()
                .into_iter()
                .chain(old_fields.difference(&new_fields).cloned())
                .collect()
        }
    };
    let mut list = old.map(entries).unwrap_or_default();
    // Fields gone from the object are owned by nobody.
    let present = fields_of(new, &api_version, rt.kind);
    for e in &mut list {
        e.fields.retain(|p| present.contains(p));
    }
    let changed: FieldSet = changed
        .into_iter()
        .filter(|p| present.contains(p))
        .collect();
    if !changed.is_empty() {
        take(&mut list, manager, "Update", rt, now, changed, false);
    }
    set_entries(new, &list);
}

/// Applies `applied` for `manager` onto `current` (`None`: the object does
/// not exist yet). Returns the object to write, its `managedFields` set, or
/// a 409 listing the conflicts.
pub fn apply(
    rt: ResourceType,
    current: Option<&Value>,
    applied: &Value,
    manager: &str,
    force: bool,
    now: &str,
) -> Result<Value, Status> {
    let api_version = rt.api_version();
    let applied_fields = fields_of(applied, &api_version, rt.kind);
    let Some(current) = current else {
        let mut created = applied.clone();
        let mut list = Vec::new();
        take(&mut list, manager, "Apply", rt, now, applied_fields, true);
        set_entries(&mut created, &list);
        return Ok(created);
    };
    let mut list = entries(current);
    let conflicts = conflicts(&list, manager, current, applied, &applied_fields);
    if !conflicts.is_empty() && !force {
        return Err(conflict(&conflicts, &api_version));
    }
    let previous: FieldSet = list
        .iter()
        .filter(|e| e.is_apply_of(manager))
        .flat_map(|e| e.fields.iter().cloned())
        .collect();
    // Conflicting fields change hands (force); equal ones are shared.
    let forced: FieldSet = conflicts.values().flatten().cloned().collect();
    for e in &mut list {
        if !e.is_apply_of(manager) {
            e.fields.retain(|p| !forced.contains(p));
        }
    }
    let mut merged = current.clone();
    merge(&mut merged, applied, Schema::of_kind(&api_version, rt.kind));
    remove_unapplied(&mut merged, &list, manager, &previous, &applied_fields);
    // Shared fields stay with their other owners too.
    for e in &mut list {
        if e.is_apply_of(manager) {
            e.fields.clear();
        }
    }
    list.retain(|e| !e.fields.is_empty());
    list.push(Entry {
        manager: manager.to_string(),
        operation: "Apply".into(),
        api_version: api_version.clone(),
        time: now.to_string(),
        fields: applied_fields,
    });
    set_entries(&mut merged, &list);
    Ok(merged)
}

/// The fields `applied` sets that another manager owns with another value
/// in `current`, by manager.
fn conflicts(
    list: &[Entry],
    manager: &str,
    current: &Value,
    applied: &Value,
    applied_fields: &FieldSet,
) -> BTreeMap<String, Vec<Path>> {
    let mut conflicts: BTreeMap<String, Vec<Path>> = BTreeMap::new();
    for e in list.iter().filter(|e| !e.is_apply_of(manager)) {
        for p in e.fields.intersection(applied_fields) {
            if p.last().is_some_and(|w| w == ".") {
                continue;
            }
            if value_at(current, p) != value_at(applied, p) {
                conflicts
                    .entry(e.manager.clone())
                    .or_default()
                    .push(p.clone());
            }
        }
    }
    conflicts
}

/// Removes from `merged` what `manager` applied before (`previous`) and no
/// longer applies, unless another entry of `list` owns it.
fn remove_unapplied(
    merged: &mut Value,
    list: &[Entry],
    manager: &str,
    previous: &FieldSet,
    applied_fields: &FieldSet,
) {
    let others: FieldSet = list
        .iter()
        .filter(|e| !e.is_apply_of(manager))
        .flat_map(|e| e.fields.iter().cloned())
        .collect();
    let mut dropped: Vec<&Path> = previous
        .iter()
        .filter(|p| !applied_fields.contains(*p) && !others.contains(*p))
        .collect();
    // Deepest first, so that an element goes after its fields.
    dropped.sort_by_key(|p| std::cmp::Reverse(p.len()));
    for p in dropped {
        remove_at(merged, p);
    }
}

/// Merges `applied` into `target`: objects field by field, keyed lists
/// element by element, everything else replaced.
fn merge(target: &mut Value, applied: &Value, schema: Schema) {
    match (target, applied) {
        (Value::Object(t), Value::Object(a)) => {
            for (k, v) in a {
                match t.get_mut(k) {
                    Some(existing) if !v.is_null() => merge(existing, v, schema.property(k)),
                    _ => {
                        t.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (Value::Array(t), Value::Array(a)) => match schema.list_keys(a) {
            Some(keys)
                if a.iter()
                    .chain(t.iter())
                    .all(|i| key_word(i, &keys).is_some()) =>
            {
                for item in a {
                    let word = key_word(item, &keys).expect("checked above");
                    match t.iter_mut().find(|i| element_matches(i, &word)) {
                        Some(existing) => merge(existing, item, schema.items()),
                        None => t.push(item.clone()),
                    }
                }
            }
            _ => *t = a.clone(),
        },
        (t, a) => *t = a.clone(),
    }
}

/// The 409 of an apply that conflicts, in kube-apiserver's words.
fn conflict(conflicts: &BTreeMap<String, Vec<Path>>, api_version: &str) -> Status {
    let count: usize = conflicts.values().map(Vec::len).sum();
    let mut lines = Vec::new();
    let mut causes = Vec::new();
    for (manager, paths) in conflicts {
        let fields: Vec<String> = paths.iter().map(|p| display(p)).collect();
        lines.push(format!(
            "conflict with \"{manager}\" using {api_version}: {}",
            fields.join(", ")
        ));
        for f in fields {
            causes.push(json!({
                "reason": "FieldManagerConflict",
                "message": format!("conflict with \"{manager}\" using {api_version}"),
                "field": f,
            }));
        }
    }
    let plural = if count == 1 { "" } else { "s" };
    let message = if lines.len() == 1 {
        format!("Apply failed with {count} conflict{plural}: {}", lines[0])
    } else {
        format!(
            "Apply failed with {count} conflict{plural}: {}",
            lines.join("\n")
        )
    };
    Status::new(409, "Conflict", message).with_details(json!({"causes": causes}))
}

#[cfg(test)]
mod tests {
    use super::*;
    use watchlife_controlplane::resource::DEPLOYMENTS;

    fn deployment(replicas: u64, image: &str) -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"app": "web"}},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                             "spec": {"containers": [{"name": "web", "image": image}]}}
            }
        })
    }

    /// `manager` applies [`deployment`] with `replicas` replicas of nginx
    /// over `current`, at `now`.
    fn apply_nginx(
        current: Option<&Value>,
        replicas: u64,
        manager: &str,
        force: bool,
        now: &str,
    ) -> Result<Value, Status> {
        let applied = deployment(replicas, "nginx");
        apply(DEPLOYMENTS, current, &applied, manager, force, now)
    }

    #[test]
    fn field_sets_key_containers_by_name() {
        let set = fields_of(&deployment(1, "nginx"), "apps/v1", "Deployment");
        let containers = [
            "f:spec",
            "f:template",
            "f:spec",
            "f:containers",
            "k:{\"name\":\"web\"}",
        ];
        let mut image: Path = containers.iter().map(|s| s.to_string()).collect();
        image.push("f:image".into());
        assert!(set.contains(&image), "{set:?}");
        assert_eq!(
            display(&image),
            ".spec.template.spec.containers[name=\"web\"].image"
        );
        assert_eq!(from_fields_v1(&to_fields_v1(&set)), set);
    }

    #[test]
    fn apply_creates_merges_conflicts_and_forces() {
        let created = apply_nginx(None, 2, "alice", false, "t0").unwrap();
        assert_eq!(created["metadata"]["managedFields"][0]["manager"], "alice");
        assert_eq!(
            created["metadata"]["managedFields"][0]["operation"],
            "Apply"
        );

        // Same values from another manager: shared, no conflict.
        let shared = apply_nginx(Some(&created), 2, "bob", false, "t1").unwrap();
        assert_eq!(
            shared["metadata"]["managedFields"]
                .as_array()
                .unwrap()
                .len(),
            2
        );

        // Another value: a conflict naming the field and the owners.
        let err = apply_nginx(Some(&shared), 3, "carol", false, "t2").unwrap_err();
        assert_eq!(err.code, 409);
        assert!(err.message.starts_with("Apply failed with 2 conflicts: conflict with \"alice\" using apps/v1: .spec.replicas"), "{}", err.message);

        // Forced: carol owns replicas alone.
        let forced = apply_nginx(Some(&shared), 3, "carol", true, "t2").unwrap();
        assert_eq!(forced["spec"]["replicas"], 3);
        let replicas = vec!["f:spec".to_string(), "f:replicas".to_string()];
        for e in entries(&forced) {
            assert_eq!(
                e.fields.contains(&replicas),
                e.manager == "carol",
                "{}",
                e.manager
            );
        }
    }

    #[test]
    fn a_field_no_longer_applied_is_removed_unless_someone_else_owns_it() {
        let mut with_label = deployment(1, "nginx");
        with_label["metadata"]["labels"]["tier"] = json!("front");
        let first = apply(DEPLOYMENTS, None, &with_label, "alice", false, "t0").unwrap();
        let second = apply_nginx(Some(&first), 1, "alice", false, "t1").unwrap();
        assert!(second["metadata"]["labels"].get("tier").is_none());

        // An update by someone else keeps the field alive.
        let mut updated = first.clone();
        updated["metadata"]["labels"]["tier"] = json!("back");
        track_update(
            DEPLOYMENTS,
            Some(&first),
            &mut updated,
            "kubectl-label",
            "t1",
        );
        let third = apply_nginx(Some(&updated), 1, "alice", false, "t2").unwrap();
        assert_eq!(third["metadata"]["labels"]["tier"], "back");
    }

    #[test]
    fn updates_take_the_fields_they_change() {
        let created = apply_nginx(None, 2, "alice", false, "t0").unwrap();
        let mut scaled = created.clone();
        scaled["spec"]["replicas"] = json!(5);
        track_update(
            DEPLOYMENTS,
            Some(&created),
            &mut scaled,
            "kubectl-scale",
            "t1",
        );
        let list = entries(&scaled);
        let scale = list.iter().find(|e| e.manager == "kubectl-scale").unwrap();
        assert_eq!(scale.operation, "Update");
        assert_eq!(scale.fields.len(), 1);
        // alice re-applying 2 replicas now conflicts with the scale.
        let err = apply_nginx(Some(&scaled), 2, "alice", false, "t2").unwrap_err();
        assert!(
            err.message.contains("conflict with \"kubectl-scale\""),
            "{}",
            err.message
        );
        assert_eq!(
            manager(None, Some("kubectl/v1.32.0 (linux/amd64)")).unwrap(),
            "kubectl"
        );
    }

    #[test]
    fn bodies_parse_as_json_or_yaml_within_the_flow_budget() {
        let json = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"a":"{[{["}}"#;
        let yaml = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  a: '{[{['\n";
        assert_eq!(parse(json).unwrap(), parse(yaml).unwrap());
        // Nested flow collections cost the square of their length in
        // libyaml: refused at once rather than scanned for seconds.
        let nested = format!("a: {}", "[".repeat(40_000));
        let started = std::time::Instant::now();
        let refused = parse(nested.as_bytes()).unwrap_err();
        assert_eq!(refused.code, 400);
        assert!(
            refused.message.contains("send it as JSON"),
            "{}",
            refused.message
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        // As many in a JSON body are JSON's business (its depth limit).
        assert_eq!(parse("[".repeat(40_000).as_bytes()).unwrap_err().code, 400);
    }
}
