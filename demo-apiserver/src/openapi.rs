//! OpenAPI documents: `/openapi/v2`, `/openapi/v3` and one v3 document per
//! served group version, all derived from kube-apiserver v1.20.2's own
//! `api/openapi-spec/swagger.json` (data from its source tree, read and cut
//! down to the served paths by `build.rs`), never written by hand.
//!
//! - `/openapi/v2` is that document, in JSON, or in gnostic's protobuf form
//!   (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`), the
//!   only form kubectl reads (client-side validation of `create -f` and
//!   `apply -f`).
//! - `/openapi/v3` is the index kube-apiserver ≥ 1.23 serves, and
//!   `/openapi/v3/api/v1`, `/openapi/v3/apis/apps/v1`, ... the OpenAPI 3.0
//!   documents kubectl reads for `explain` and to learn whether a server
//!   validates fields itself. They are converted from v2 as kube-openapi
//!   converts them (definitions become `components.schemas`, body
//!   parameters become request bodies). The v1.20 spec offers no
//!   `fieldValidation` parameter, so kubectl validates manifests on its own
//!   side, with the v2 schemas, exactly as against a v1.20 apiserver: an
//!   unknown field is reported as `unknown field "x" in io.k8s.api....`.

use crate::protobuf;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use prost::Message as _;
use prost_reflect::{DynamicMessage, MessageDescriptor, Value as PValue};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};
use std::sync::LazyLock;
use watchlife_controlplane::status::Status;

/// The media type of gnostic's protobuf OpenAPI v2 document, as answered.
/// Clients ask for `...spec.v2@v1.0+protobuf`, but `@` cannot stand in a
/// Content-Type that Go's `mime` package parses: kube-apiserver answers
/// with this spelling.
pub const V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

static SWAGGER: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/swagger.json"));

/// The served part of v1.20.2's swagger.json.
static V2: LazyLock<Option<Value>> = LazyLock::new(|| {
    (!SWAGGER.is_empty())
        .then(|| serde_json::from_slice(SWAGGER).expect("the build's swagger.json is JSON"))
});

static V2_JSON: LazyLock<Option<String>> = LazyLock::new(|| V2.as_ref().map(Value::to_string));

static V2_PB: LazyLock<Option<Vec<u8>>> = LazyLock::new(|| V2.as_ref().and_then(gnostic));

/// Each group version's v3 document (`api/v1` → the document), as text.
static V3: LazyLock<BTreeMap<String, String>> = LazyLock::new(|| {
    let Some(v2) = V2.as_ref() else {
        return BTreeMap::new();
    };
    group_versions(v2)
        .into_iter()
        .map(|gv| {
            let doc = v3_document(v2, &gv).to_string();
            (gv, doc)
        })
        .collect()
});

/// Definition names by (group, version, kind).
static BY_KIND: LazyLock<std::collections::HashMap<(String, String, String), String>> =
    LazyLock::new(|| {
        let mut out = std::collections::HashMap::new();
        for (name, def) in V2
            .as_ref()
            .and_then(|v| v["definitions"].as_object())
            .into_iter()
            .flatten()
        {
            for gvk in def["x-kubernetes-group-version-kind"]
                .as_array()
                .into_iter()
                .flatten()
            {
                let text = |k: &str| gvk[k].as_str().unwrap_or("").to_string();
                out.insert((text("group"), text("version"), text("kind")), name.clone());
            }
        }
        out
    });

/// Whether this build has the OpenAPI documents.
pub fn available() -> bool {
    V2.is_some()
}

/// The schema of a kind (`apps/v1`, `Deployment`), when known.
pub fn definition_of(api_version: &str, kind: &str) -> Option<&'static Value> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let name = BY_KIND.get(&(group.to_string(), version.to_string(), kind.to_string()))?;
    V2.as_ref()?["definitions"].get(name)
}

/// The definition a `$ref` (`#/definitions/NAME`) points at.
pub fn definition(reference: &str) -> Option<&'static Value> {
    let name = reference.strip_prefix("#/definitions/")?;
    V2.as_ref()?["definitions"].get(name)
}

/// The Status of a build without Kubernetes' source tree.
fn not_built() -> Status {
    Status::new(
        404,
        "NotFound",
        "this build of the demo has no OpenAPI documents: run scripts/ensure-real-cluster.sh (it unpacks Kubernetes' source, whose api/openapi-spec/swagger.json the build reads) and rebuild",
    )
}

/// Answers `/openapi/...`; `None` for a path that is not one.
pub fn serve(path: &str, headers: &HeaderMap) -> Option<Result<Response, Status>> {
    let rest = path.strip_prefix("/openapi/")?;
    let rest = rest.trim_end_matches('/');
    Some(match rest {
        "v2" => v2(headers),
        "v3" => index(),
        _ => match rest.strip_prefix("v3/") {
            Some(gv) => match V3.get(gv) {
                Some(doc) => Ok(json_response(doc.clone())),
                None if V2.is_none() => Err(not_built()),
                None => Err(Status::not_found_url()),
            },
            None => Err(Status::not_found_url()),
        },
    })
}

fn json_response(body: String) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, crate::response::JSON)],
        body,
    )
        .into_response()
}

fn v2(headers: &HeaderMap) -> Result<Response, Status> {
    let wants_pb = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("protobuf"));
    if wants_pb {
        let pb = V2_PB.as_ref().ok_or_else(not_built)?;
        return Ok((
            StatusCode::OK,
            [(header::CONTENT_TYPE, V2_PROTOBUF)],
            pb.clone(),
        )
            .into_response());
    }
    let text = V2_JSON.as_ref().ok_or_else(not_built)?;
    Ok(json_response(text.clone()))
}

fn index() -> Result<Response, Status> {
    if V2.is_none() {
        return Err(not_built());
    }
    let paths: Map<String, Value> = V3
        .iter()
        .map(|(gv, doc)| {
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            doc.hash(&mut hasher);
            let url = format!("/openapi/v3/{gv}?hash={:016X}", hasher.finish());
            (gv.clone(), json!({"serverRelativeURL": url}))
        })
        .collect();
    Ok(json_response(json!({"paths": paths}).to_string()))
}

/// `api/v1`, `apis/apps/v1`, ...: the group versions the paths belong to.
fn group_versions(v2: &Value) -> BTreeSet<String> {
    v2["paths"]
        .as_object()
        .map(|paths| paths.keys().filter_map(|p| group_version_of(p)).collect())
        .unwrap_or_default()
}

fn group_version_of(path: &str) -> Option<String> {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match segments.as_slice() {
        ["api", version, ..] => Some(format!("api/{version}")),
        ["apis", group, version, ..] => Some(format!("apis/{group}/{version}")),
        _ => None,
    }
}

// ---------------------------------------------------------------------------
// v2 → v3
// ---------------------------------------------------------------------------

/// The OpenAPI 3.0 document of one group version.
fn v3_document(v2: &Value, gv: &str) -> Value {
    let shared_parameters = &v2["parameters"];
    let mut paths = Map::new();
    for (path, item) in v2["paths"].as_object().into_iter().flatten() {
        if group_version_of(path).as_deref() != Some(gv) {
            continue;
        }
        let mut out = Map::new();
        for (key, value) in item.as_object().into_iter().flatten() {
            let converted = match key.as_str() {
                "parameters" => parameters(value, shared_parameters).0,
                _ => operation(value, shared_parameters),
            };
            out.insert(key.clone(), converted);
        }
        paths.insert(path.clone(), Value::Object(out));
    }
    let mut todo = Vec::new();
    refs(&Value::Object(paths.clone()), &mut todo);
    let definitions = v2["definitions"].as_object().cloned().unwrap_or_default();
    let mut schemas = BTreeMap::new();
    while let Some(name) = todo.pop() {
        if schemas.contains_key(&name) {
            continue;
        }
        if let Some(def) = definitions.get(&name) {
            let mut def = def.clone();
            rewrite_refs(&mut def);
            refs(&def, &mut todo);
            schemas.insert(name, def);
        }
    }
    let mut paths = Value::Object(paths);
    rewrite_refs(&mut paths);
    json!({
        "openapi": "3.0.0",
        "info": v2["info"],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"BearerToken": {"type": "apiKey", "name": "authorization", "in": "header"}},
        },
    })
}

/// Names the `#/definitions/` (or converted) references point at.
fn refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                if k == "$ref"
                    && let Some(r) = v.as_str()
                {
                    let name = r
                        .strip_prefix("#/definitions/")
                        .or_else(|| r.strip_prefix("#/components/schemas/"));
                    if let Some(name) = name {
                        out.push(name.to_string());
                    }
                }
                refs(v, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

fn rewrite_refs(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if k == "$ref"
                    && let Value::String(r) = v
                    && let Some(name) = r.strip_prefix("#/definitions/")
                {
                    *r = format!("#/components/schemas/{name}");
                }
                rewrite_refs(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(rewrite_refs),
        _ => {}
    }
}

/// v2 parameters as v3 ones, and the body parameter's schema, if any.
fn parameters(list: &Value, shared: &Value) -> (Value, Option<Value>) {
    let mut out = Vec::new();
    let mut body = None;
    for p in list.as_array().into_iter().flatten() {
        let p = match p["$ref"]
            .as_str()
            .and_then(|r| r.strip_prefix("#/parameters/"))
        {
            Some(name) => shared[name].clone(),
            None => p.clone(),
        };
        if p["in"] == "body" {
            body = Some(p["schema"].clone());
            continue;
        }
        let mut schema = Map::new();
        for key in ["type", "format", "uniqueItems", "items"] {
            if let Some(v) = p.get(key) {
                schema.insert(key.into(), v.clone());
            }
        }
        let mut param = json!({"name": p["name"], "in": p["in"], "schema": schema});
        for key in ["description", "required"] {
            if let Some(v) = p.get(key) {
                param[key] = v.clone();
            }
        }
        out.push(param);
    }
    (Value::Array(out), body)
}

fn operation(op: &Value, shared: &Value) -> Value {
    let Some(fields) = op.as_object() else {
        return op.clone();
    };
    let consumes = op["consumes"].as_array().cloned().unwrap_or_default();
    let produces = op["produces"]
        .as_array()
        .cloned()
        .unwrap_or_else(|| vec![json!("application/json")]);
    let mut out = Map::new();
    for (key, value) in fields {
        match key.as_str() {
            "consumes" | "produces" | "schemes" => {}
            "parameters" => {
                let (params, body) = parameters(value, shared);
                out.insert("parameters".into(), params);
                if let Some(schema) = body {
                    let content: Map<String, Value> = (if consumes.is_empty() {
                        vec![json!("*/*")]
                    } else {
                        consumes.clone()
                    })
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|t| (t.to_string(), json!({"schema": schema})))
                    .collect();
                    out.insert(
                        "requestBody".into(),
                        json!({"content": content, "required": true}),
                    );
                }
            }
            "responses" => {
                let mut responses = Map::new();
                for (code, r) in value.as_object().into_iter().flatten() {
                    let mut converted = json!({"description": r["description"]});
                    if let Some(schema) = r.get("schema") {
                        let content: Map<String, Value> = produces
                            .iter()
                            .filter_map(Value::as_str)
                            .map(|t| (t.to_string(), json!({"schema": schema})))
                            .collect();
                        converted["content"] = Value::Object(content);
                    }
                    responses.insert(code.clone(), converted);
                }
                out.insert("responses".into(), Value::Object(responses));
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    Value::Object(out)
}

// ---------------------------------------------------------------------------
// v2 as gnostic's protobuf
// ---------------------------------------------------------------------------

/// The v2 document as gnostic's `openapi.v2.Document`: its swagger version,
/// info and definitions (what kubectl's OpenAPI reader uses; paths, left
/// out, are read from the v3 documents).
fn gnostic(v2: &Value) -> Option<Vec<u8>> {
    let pool = protobuf::pool()?;
    let msg = |name: &str| pool.get_message_by_name(&format!("openapi.v2.{name}"));
    let mut doc = DynamicMessage::new(msg("Document")?);
    doc.set_field_by_name("swagger", PValue::String("2.0".into()));
    let mut info = DynamicMessage::new(msg("Info")?);
    for key in ["title", "version"] {
        if let Some(v) = v2["info"][key].as_str() {
            info.set_field_by_name(key, PValue::String(v.into()));
        }
    }
    doc.set_field_by_name("info", PValue::Message(info));
    let schema_desc = msg("Schema")?;
    let named_desc = msg("NamedSchema")?;
    let mut definitions = DynamicMessage::new(msg("Definitions")?);
    let named: Vec<PValue> = v2["definitions"]
        .as_object()?
        .iter()
        .map(|(name, s)| {
            let mut n = DynamicMessage::new(named_desc.clone());
            n.set_field_by_name("name", PValue::String(name.clone()));
            n.set_field_by_name("value", PValue::Message(schema(&schema_desc, s)));
            PValue::Message(n)
        })
        .collect();
    definitions.set_field_by_name("additional_properties", PValue::List(named));
    doc.set_field_by_name("definitions", PValue::Message(definitions));
    Some(doc.encode_to_vec())
}

/// One JSON schema as a gnostic `Schema`.
fn schema(desc: &MessageDescriptor, s: &Value) -> DynamicMessage {
    let mut out = DynamicMessage::new(desc.clone());
    let Some(fields) = s.as_object() else {
        return out;
    };
    let mut extensions = Vec::new();
    for (key, value) in fields {
        if key.starts_with("x-") {
            extensions.push(extension(desc, key, value));
        } else if let Some((name, v)) = schema_field(desc, key, value) {
            out.set_field_by_name(name, v);
        }
    }
    if !extensions.is_empty() {
        out.set_field_by_name("vendor_extension", PValue::List(extensions));
    }
    out
}

/// An empty gnostic message `openapi.v2.<name>`, from `desc`'s pool.
fn message(desc: &MessageDescriptor, name: &str) -> DynamicMessage {
    DynamicMessage::new(
        desc.parent_pool()
            .get_message_by_name(&format!("openapi.v2.{name}"))
            .expect("gnostic's messages are among the descriptors"),
    )
}

/// A JSON string as a gnostic string ("" for anything else).
fn text(v: &Value) -> PValue {
    PValue::String(v.as_str().unwrap_or_default().to_string())
}

/// The gnostic message `openapi.v2.<name>` whose repeated `field` holds each
/// element of `value` (or `value` alone when it is no array), as `each`
/// writes it.
fn one_or_many(
    desc: &MessageDescriptor,
    name: &str,
    field: &str,
    value: &Value,
    each: impl Fn(&Value) -> PValue,
) -> PValue {
    let mut out = message(desc, name);
    let list = match value {
        Value::Array(a) => a.iter().map(&each).collect(),
        v => vec![each(v)],
    };
    out.set_field_by_name(field, PValue::List(list));
    PValue::Message(out)
}

/// The gnostic field and value of the schema keyword `key`; `None` for a
/// keyword gnostic does not keep.
fn schema_field<'a>(
    desc: &MessageDescriptor,
    key: &'a str,
    value: &Value,
) -> Option<(&'a str, PValue)> {
    let sub = |v: &Value| PValue::Message(schema(desc, v));
    let field = match key {
        "$ref" => ("_ref", text(value)),
        "format" | "title" | "description" | "pattern" | "discriminator" => (key, text(value)),
        "required" => (
            "required",
            PValue::List(value.as_array().into_iter().flatten().map(text).collect()),
        ),
        "type" => ("type", one_or_many(desc, "TypeItem", "value", value, text)),
        "items" => (
            "items",
            one_or_many(desc, "ItemsItem", "schema", value, sub),
        ),
        "additionalProperties" => {
            let mut ap = message(desc, "AdditionalPropertiesItem");
            match value {
                Value::Bool(b) => ap.set_field_by_name("boolean", PValue::Bool(*b)),
                v => ap.set_field_by_name("schema", sub(v)),
            }
            ("additional_properties", PValue::Message(ap))
        }
        "allOf" => (
            "all_of",
            PValue::List(value.as_array().into_iter().flatten().map(sub).collect()),
        ),
        "properties" => ("properties", PValue::Message(properties(desc, value))),
        "readOnly" => ("read_only", PValue::Bool(value.as_bool().unwrap_or(false))),
        "uniqueItems" => (
            "unique_items",
            PValue::Bool(value.as_bool().unwrap_or(false)),
        ),
        _ => return None,
    };
    Some(field)
}

/// A schema's `properties`: each named schema.
fn properties(desc: &MessageDescriptor, value: &Value) -> DynamicMessage {
    let mut props = message(desc, "Properties");
    let named: Vec<PValue> = value
        .as_object()
        .into_iter()
        .flatten()
        .map(|(name, v)| {
            let mut n = message(desc, "NamedSchema");
            n.set_field_by_name("name", PValue::String(name.clone()));
            n.set_field_by_name("value", PValue::Message(schema(desc, v)));
            PValue::Message(n)
        })
        .collect();
    props.set_field_by_name("additional_properties", PValue::List(named));
    props
}

/// A vendor extension (`x-...`): gnostic keeps its value as YAML text, and
/// JSON is YAML.
fn extension(desc: &MessageDescriptor, key: &str, value: &Value) -> PValue {
    let mut any = message(desc, "Any");
    any.set_field_by_name("yaml", PValue::String(value.to_string()));
    let mut named = message(desc, "NamedAny");
    named.set_field_by_name("name", PValue::String(key.into()));
    named.set_field_by_name("value", PValue::Message(any));
    PValue::Message(named)
}

#[cfg(test)]
mod tests {
    use super::*;
    use watchlife_controlplane::resource;

    #[test]
    fn every_served_type_has_paths_and_a_schema() {
        let Some(v2) = V2.as_ref() else {
            eprintln!("skipped: this build has no OpenAPI documents");
            return;
        };
        for rt in resource::ALL {
            let prefix = if rt.group.is_empty() {
                format!("/api/{}", rt.version)
            } else {
                format!("/apis/{}/{}", rt.group, rt.version)
            };
            let collection = if rt.namespaced {
                format!("{prefix}/namespaces/{{namespace}}/{}", rt.plural)
            } else {
                format!("{prefix}/{}", rt.plural)
            };
            assert!(v2["paths"].get(&collection).is_some(), "{collection}");
            let gv = group_version_of(&collection).unwrap();
            let doc: Value = serde_json::from_str(&V3[&gv]).unwrap();
            let schemas = doc["components"]["schemas"].as_object().unwrap();
            let found = schemas.values().any(|s| {
                s["x-kubernetes-group-version-kind"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|g| g["kind"] == rt.kind && g["group"] == rt.group)
            });
            assert!(found, "{} has no schema in {gv}", rt.kind);
            let patch = &doc["paths"][format!("{collection}/{{name}}")]["patch"];
            assert!(
                patch["x-kubernetes-group-version-kind"].is_object(),
                "{collection}"
            );
        }
        // No path the demo does not serve.
        assert!(
            v2["paths"]
                .get("/api/v1/namespaces/{namespace}/pods/{name}/log")
                .is_none()
        );
        assert!(v2["paths"].get("/apis/batch/v1/jobs").is_none());
    }

    #[test]
    fn the_v2_protobuf_holds_every_definition() {
        let (Some(v2), Some(pb)) = (V2.as_ref(), V2_PB.as_ref()) else {
            eprintln!("skipped: this build has no OpenAPI documents");
            return;
        };
        let pool = protobuf::pool().unwrap();
        let desc = pool.get_message_by_name("openapi.v2.Document").unwrap();
        let doc = DynamicMessage::decode(desc, pb.as_slice()).unwrap();
        let defs = doc.get_field_by_name("definitions").unwrap();
        let defs = defs.as_message().unwrap();
        let list = defs.get_field_by_name("additional_properties").unwrap();
        assert_eq!(
            list.as_list().unwrap().len(),
            v2["definitions"].as_object().unwrap().len()
        );
    }
}
