//! PATCH bodies: JSON merge patch (RFC 7386), strategic merge patch with merge
//! semantics, and JSON patch (RFC 6902).
//!
//! Strategic merge patch is applied as a merge patch with two of its rules,
//! enough for what kubectl sends for the served types: a list of objects
//! that all carry a `name` (containers, env, volumes, volumeMounts) is merged
//! element by element on `name`, an element `{"name": .., "$patch": "delete"}`
//! removes its match, and the other `$` directives (`$setElementOrder`,
//! `$retainKeys`, ...) are ignored. Every other list is replaced whole. The
//! per-field merge keys of the OpenAPI schema (such as `containerPort` for
//! ports) are not known to this server.
//!
//! Server-side apply (`application/apply-patch+yaml`) is `crate::apply`.

use serde_json::{Map, Value};
use watchlife_controlplane::status::Status;

/// The patch types served, by their content type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    Merge,
    StrategicMerge,
    Json,
}

/// The content types accepted for PATCH, in the apiserver's order.
pub const ACCEPTED: [&str; 3] = [
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
];

impl PatchType {
    /// The patch type of a `Content-Type` header (parameters ignored); a 415
    /// for anything else (server-side apply is told apart before).
    pub fn from_content_type(content_type: Option<&str>) -> Result<Self, Status> {
        let media = content_type
            .unwrap_or("")
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        match media.as_str() {
            "application/merge-patch+json" => Ok(PatchType::Merge),
            "application/strategic-merge-patch+json" => Ok(PatchType::StrategicMerge),
            "application/json-patch+json" => Ok(PatchType::Json),
            _ => Err(Status::unsupported_media_type(&ACCEPTED)),
        }
    }
}

/// Applies a patch to `target`; a malformed patch or a failed JSON patch
/// operation is a 400 (422 for a failed `test`, as the apiserver answers).
pub fn apply(kind: PatchType, target: &Value, body: &[u8]) -> Result<Value, Status> {
    let patch: Value = serde_json::from_slice(body)
        .map_err(|e| Status::bad_request(format!("error decoding patch: {e}")))?;
    match kind {
        PatchType::Merge => {
            if !patch.is_object() {
                return Err(Status::bad_request("a merge patch must be a JSON object"));
            }
            let mut out = target.clone();
            merge(&mut out, &patch, false);
            Ok(out)
        }
        PatchType::StrategicMerge => {
            if !patch.is_object() {
                return Err(Status::bad_request(
                    "a strategic merge patch must be a JSON object",
                ));
            }
            let mut out = target.clone();
            merge(&mut out, &patch, true);
            Ok(out)
        }
        PatchType::Json => json_patch(target, &patch),
    }
}

/// Deepest nesting a JSON patch may give an object: as deep as a request
/// body may be nested (serde_json's limit), or as the object already was.
/// A merge patch cannot nest deeper than its body and the object; a JSON
/// patch could, each operation adding a value at the deepest point of the
/// last one: 150 operations in one body nested an object 15,000 levels
/// deep, beyond what the recursive walks of an object (its managed fields,
/// its serialization, dropping it) can go without exhausting the stack.
pub const MAX_PATCHED_DEPTH: usize = 128;

/// How many arrays and objects deep `v` is nested (0 for a scalar),
/// counted without recursion, whatever the depth.
fn depth(v: &Value) -> usize {
    let mut deepest = 0;
    let mut pending = vec![(v, 1)];
    while let Some((v, level)) = pending.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match v {
            Value::Array(items) => Box::new(items.iter()),
            Value::Object(map) => Box::new(map.values()),
            _ => continue,
        };
        deepest = deepest.max(level);
        pending.extend(children.map(|c| (c, level + 1)));
    }
    deepest
}

/// RFC 7386 merge of `patch` into `target`; with `strategic`, the rules of
/// the module doc for lists and `$` directives.
pub fn merge(target: &mut Value, patch: &Value, strategic: bool) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let target = target.as_object_mut().expect("made an object above");
    for (key, value) in patch {
        if strategic && key.starts_with('$') {
            continue;
        }
        match value {
            Value::Null => {
                target.remove(key);
            }
            Value::Object(_) => merge(
                target.entry(key.clone()).or_insert(Value::Null),
                value,
                strategic,
            ),
            Value::Array(items) if strategic => {
                let merged = match target.get(key) {
                    Some(Value::Array(current)) => merge_named_lists(current, items),
                    _ => None,
                };
                let list = merged.unwrap_or_else(|| {
                    items
                        .iter()
                        .filter(|i| !is_delete_directive(i))
                        .map(strip_directives)
                        .collect()
                });
                target.insert(key.clone(), Value::Array(list));
            }
            _ => {
                target.insert(key.clone(), value.clone());
            }
        }
    }
}

fn name_of(v: &Value) -> Option<&str> {
    v.get("name").and_then(Value::as_str)
}

fn is_delete_directive(v: &Value) -> bool {
    v.get("$patch").and_then(Value::as_str) == Some("delete")
}

/// A copy without the `$` directives, at any depth.
fn strip_directives(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !k.starts_with('$'))
                .map(|(k, v)| (k.clone(), strip_directives(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(strip_directives).collect()),
        other => other.clone(),
    }
}

/// Merges two lists of objects keyed by `name`; `None` when either list has
/// an element without a name (it is then replaced whole).
fn merge_named_lists(current: &[Value], patch: &[Value]) -> Option<Vec<Value>> {
    if current.iter().chain(patch).any(|v| name_of(v).is_none()) {
        return None;
    }
    let mut out: Vec<Value> = current.to_vec();
    for item in patch {
        let name = name_of(item)?;
        let found = out.iter().position(|v| name_of(v) == Some(name));
        match (found, is_delete_directive(item)) {
            (Some(i), true) => {
                out.remove(i);
            }
            (None, true) => {}
            (Some(i), false) => merge(&mut out[i], item, true),
            (None, false) => out.push(strip_directives(item)),
        }
    }
    Some(out)
}

/// Most operations one JSON patch may hold: the apiserver's
/// `maxJSONPatchOperations`. More is a 413.
pub const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// Most bytes (as JSON) the `copy` operations of one JSON patch may copy,
/// in all: the apiserver's `--json-patch-max-copy-bytes` default. Without
/// it a patch that copies the document into itself doubles it with every
/// operation, and a few dozen operations exhaust the server's memory; past
/// it the patch is a 422 and the document is left as it was.
pub const MAX_JSON_PATCH_COPY_BYTES: usize = 3 * 1024 * 1024;

/// RFC 6902 JSON patch, within [`MAX_JSON_PATCH_OPERATIONS`],
/// [`MAX_JSON_PATCH_COPY_BYTES`] and [`MAX_PATCHED_DEPTH`].
fn json_patch(target: &Value, patch: &Value) -> Result<Value, Status> {
    let ops = patch
        .as_array()
        .ok_or_else(|| Status::bad_request("a JSON patch must be an array of operations"))?;
    if ops.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(Status::new(
            413,
            "RequestEntityTooLarge",
            format!(
                "The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
                ops.len()
            ),
        ));
    }
    let deepest = depth(target);
    let mut patching = Patching {
        doc: target.clone(),
        deepest,
        limit: MAX_PATCHED_DEPTH.max(deepest),
        copied: 0,
    };
    for op in ops {
        patching.apply(op)?;
    }
    Ok(patching.doc)
}

/// A JSON patch under way: the document, and what the limits count.
struct Patching {
    doc: Value,
    /// An upper bound of the document's depth, kept within `limit` by
    /// checking each value where it lands, so that no operation ever makes
    /// a document too deep to walk.
    deepest: usize,
    limit: usize,
    /// Bytes the `copy` operations copied so far.
    copied: usize,
}

impl Patching {
    /// Applies one operation.
    fn apply(&mut self, op: &Value) -> Result<(), Status> {
        let field = |name: &str| {
            op.get(name).and_then(Value::as_str).ok_or_else(|| {
                Status::bad_request(format!("JSON patch operation lacks {name:?}: {op}"))
            })
        };
        let path = field("path")?;
        match field("op")? {
            "add" => {
                let v = value_of(op)?;
                self.lands(path, depth(&v))?;
                add(&mut self.doc, path, v)?;
            }
            "remove" => {
                remove(&mut self.doc, path)?;
            }
            "replace" => {
                let v = value_of(op)?;
                self.lands(path, depth(&v))?;
                remove(&mut self.doc, path)?;
                add(&mut self.doc, path, v)?;
            }
            "move" => {
                let from = field("from")?;
                // The value's depth is bounded by where it sits, without
                // walking it: moves may repeat, the walk would too.
                let bound = self.deepest.saturating_sub(from.matches('/').count());
                self.lands(path, bound)?;
                let v = remove(&mut self.doc, from)?;
                add(&mut self.doc, path, v)?;
            }
            "copy" => self.copy(field("from")?, path)?,
            "test" => {
                if self.doc.pointer(path) != Some(&value_of(op)?) {
                    return Err(Status::new(
                        422,
                        "Invalid",
                        format!(
                            "the server rejected our request due to an error in our request: testing value {path} failed"
                        ),
                    ));
                }
            }
            other => {
                return Err(Status::bad_request(format!(
                    "unknown JSON patch operation {other:?}"
                )));
            }
        }
        Ok(())
    }

    /// The `copy` operation, within [`MAX_JSON_PATCH_COPY_BYTES`] in all.
    fn copy(&mut self, from: &str, path: &str) -> Result<(), Status> {
        let original = self.doc.pointer(from).ok_or_else(|| missing(from))?;
        self.copied = self
            .copied
            .saturating_add(json_size(original, MAX_JSON_PATCH_COPY_BYTES));
        if self.copied > MAX_JSON_PATCH_COPY_BYTES {
            return Err(Status::new(
                422,
                "Invalid",
                format!(
                    "Unable to complete the copy, the accumulated size increase of copy exceeds the limit {MAX_JSON_PATCH_COPY_BYTES}"
                ),
            ));
        }
        let (value_depth, v) = (depth(original), original.clone());
        self.lands(path, value_depth)?;
        add(&mut self.doc, path, v)
    }

    /// Checks that a value `value_depth` deep may land at `path`.
    fn lands(&mut self, path: &str, value_depth: usize) -> Result<(), Status> {
        let reached = path.matches('/').count() + value_depth;
        if reached > self.limit {
            let limit = self.limit;
            return Err(Status::new(
                422,
                "Invalid",
                format!(
                    "the patched object would be nested {reached} levels deep; at most {limit} are allowed"
                ),
            ));
        }
        self.deepest = self.deepest.max(reached);
        Ok(())
    }
}

/// The length of `v` as JSON, counted up to just past `limit` (a larger
/// value is not written out whole to learn by how much).
fn json_size(v: &Value, limit: usize) -> usize {
    struct Count(usize, usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            if self.0 > self.1 {
                return Err(std::io::Error::other("over the limit"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0, limit);
    let _ = serde_json::to_writer(&mut count, v);
    count.0
}

fn value_of(op: &Value) -> Result<Value, Status> {
    op.get("value")
        .cloned()
        .ok_or_else(|| Status::bad_request(format!("JSON patch operation lacks \"value\": {op}")))
}

fn missing(path: &str) -> Status {
    Status::bad_request(format!("JSON patch: no value at {path:?}"))
}

/// Splits a JSON pointer into its parent pointer and last token (unescaped).
fn split(path: &str) -> Result<(&str, String), Status> {
    let i = path.rfind('/').ok_or_else(|| missing(path))?;
    let token = path[i + 1..].replace("~1", "/").replace("~0", "~");
    Ok((&path[..i], token))
}

fn add(doc: &mut Value, path: &str, value: Value) -> Result<(), Status> {
    if path.is_empty() {
        *doc = value;
        return Ok(());
    }
    let (parent, token) = split(path)?;
    match doc.pointer_mut(parent).ok_or_else(|| missing(parent))? {
        Value::Object(map) => {
            map.insert(token, value);
            Ok(())
        }
        Value::Array(list) => {
            let index = if token == "-" {
                list.len()
            } else {
                token.parse::<usize>().map_err(|_| missing(path))?
            };
            if index > list.len() {
                return Err(missing(path));
            }
            list.insert(index, value);
            Ok(())
        }
        _ => Err(missing(path)),
    }
}

fn remove(doc: &mut Value, path: &str) -> Result<Value, Status> {
    let (parent, token) = split(path)?;
    match doc.pointer_mut(parent).ok_or_else(|| missing(parent))? {
        Value::Object(map) => map.remove(&token).ok_or_else(|| missing(path)),
        Value::Array(list) => {
            let index = token.parse::<usize>().map_err(|_| missing(path))?;
            if index >= list.len() {
                return Err(missing(path));
            }
            Ok(list.remove(index))
        }
        _ => Err(missing(path)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(kind: PatchType, target: Value, patch: Value) -> Result<Value, Status> {
        apply(kind, &target, patch.to_string().as_bytes())
    }

    #[test]
    fn merge_patch_follows_rfc_7386() {
        let out = run(
            PatchType::Merge,
            json!({"a": "b", "c": {"d": "e", "f": "g"}, "l": [1, 2]}),
            json!({"a": "z", "c": {"f": null}, "l": [3]}),
        )
        .unwrap();
        assert_eq!(out, json!({"a": "z", "c": {"d": "e"}, "l": [3]}));
        assert_eq!(
            run(PatchType::Merge, json!({}), json!([1]))
                .unwrap_err()
                .code,
            400
        );
    }

    #[test]
    fn strategic_merge_merges_named_lists_and_drops_directives() {
        let pod = json!({"spec": {"containers": [
            {"name": "web", "image": "app:0.5.0", "ports": [{"containerPort": 80}]},
            {"name": "sidecar", "image": "proxy:1"}
        ]}});
        let out = run(
            PatchType::StrategicMerge,
            pod,
            json!({"spec": {
                "$setElementOrder/containers": [{"name": "web"}, {"name": "sidecar"}],
                "containers": [
                    {"name": "web", "image": "app:1.5.3"},
                    {"name": "sidecar", "$patch": "delete"}
                ]
            }}),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"spec": {"containers": [
                {"name": "web", "image": "app:1.5.3", "ports": [{"containerPort": 80}]}
            ]}})
        );
    }

    #[test]
    fn json_patch_operations() {
        let out = run(
            PatchType::Json,
            json!({"metadata": {"labels": {"a": "1"}}, "l": [1, 2]}),
            json!([
                {"op": "add", "path": "/metadata/labels/b~1c", "value": "2"},
                {"op": "remove", "path": "/metadata/labels/a"},
                {"op": "replace", "path": "/l/0", "value": 9},
                {"op": "add", "path": "/l/-", "value": 3},
                {"op": "test", "path": "/l/1", "value": 2},
                {"op": "copy", "from": "/l", "path": "/m"},
                {"op": "move", "from": "/m", "path": "/n"}
            ]),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"metadata": {"labels": {"b/c": "2"}}, "l": [9, 2, 3], "n": [9, 2, 3]})
        );
        let failed = run(
            PatchType::Json,
            json!({"a": 1}),
            json!([{"op": "test", "path": "/a", "value": 2}]),
        );
        assert_eq!(failed.unwrap_err().code, 422);
        assert_eq!(
            run(
                PatchType::Json,
                json!({}),
                json!([{"op": "remove", "path": "/x"}])
            )
            .unwrap_err()
            .code,
            400
        );
    }

    #[test]
    fn content_types() {
        assert_eq!(
            PatchType::from_content_type(Some("application/merge-patch+json; charset=utf-8")),
            Ok(PatchType::Merge)
        );
        let ssa = PatchType::from_content_type(Some("application/apply-patch+yaml")).unwrap_err();
        assert_eq!(ssa.code, 415);
        assert_eq!(ssa.reason, "UnsupportedMediaType");
    }
}
