//! Protobuf bodies (`application/vnd.kubernetes.protobuf`), as kube-apiserver
//! reads and writes them, converted to and from the demo's JSON objects.
//!
//! A body is the 4 bytes `k8s\0` and then a `runtime.Unknown` message whose
//! `typeMeta` names the kind and whose `raw` is the object's own message. The
//! messages are read with descriptors compiled at build time from
//! Kubernetes' own `generated.proto` files (see `build.rs`), so every kind of
//! the served groups is converted field by field, by name: Kubernetes gives a
//! field the same name in its protobuf and its JSON. The conversions JSON
//! cannot derive from the field's type are Kubernetes' own:
//!
//! | protobuf message | JSON |
//! | --- | --- |
//! | `meta.v1.Time`, `meta.v1.MicroTime` (`seconds`, `nanos`) | an RFC 3339 string; an empty message is the zero time, `null` |
//! | `util.intstr.IntOrString` (`type`, `intVal`, `strVal`) | a number or a string |
//! | `api.resource.Quantity` (`string`) | a string |
//! | `runtime.RawExtension` (`raw`), `meta.v1.FieldsV1` (`Raw`) | the JSON those bytes hold |
//! | `meta.v1.Verbs`, `authorization.v1.ExtraValue` (`items`) | an array |
//! | `bytes` | base64 |
//!
//! Reading a message, an empty string is left out, as Go's `omitempty` leaves
//! it out of JSON; a field the descriptors do not know (one newer than
//! v1.20) is dropped, as a v1.20 apiserver drops it.

use base64::Engine as _;
use prost::Message as _;
use prost_reflect::{
    DescriptorPool, DynamicMessage, FieldDescriptor, Kind, MapKey, MessageDescriptor,
    ReflectMessage, Value as PValue,
};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::LazyLock;
use watchlife_controlplane::status::Status;

/// The media type of protobuf bodies.
pub const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// The envelope's first bytes.
pub const MAGIC: &[u8; 4] = b"k8s\0";

static DESCRIPTORS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kube.fds"));

static POOL: LazyLock<Option<DescriptorPool>> = LazyLock::new(|| {
    if DESCRIPTORS.is_empty() {
        return None;
    }
    Some(DescriptorPool::decode(DESCRIPTORS).expect("the build's descriptor set decodes"))
});

/// The descriptors compiled into this build, when Kubernetes' source tree
/// was there to compile them from.
pub fn pool() -> Option<&'static DescriptorPool> {
    POOL.as_ref()
}

/// The Status of a build without descriptors.
pub fn not_built() -> Status {
    Status::new(
        415,
        "UnsupportedMediaType",
        "this build of the demo has no protobuf schemas: run scripts/ensure-real-cluster.sh (it unpacks Kubernetes' source, whose .proto files the build reads) and rebuild, or send application/json",
    )
}

const META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1";

/// The message of a kind in an API version (`apps/v1`, `Deployment` →
/// `k8s.io.api.apps.v1.Deployment`); kinds of `meta/v1` (Status,
/// DeleteOptions, ...) are found from any version.
pub fn message_for(api_version: &str, kind: &str) -> Option<MessageDescriptor> {
    let pool = pool()?;
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let package = match group {
        "" => "core",
        g => g.split('.').next().unwrap_or(g),
    };
    pool.get_message_by_name(&format!("k8s.io.api.{package}.{version}.{kind}"))
        .or_else(|| pool.get_message_by_name(&format!("{META}.{kind}")))
}

/// Reads a protobuf body into the JSON object it stands for, `apiVersion`
/// and `kind` included.
pub fn decode(body: &[u8]) -> Result<Value, Status> {
    let pool = pool().ok_or_else(not_built)?;
    let inner = body.strip_prefix(MAGIC).ok_or_else(|| {
        Status::bad_request("a protobuf body must start with the k8s\\0 envelope")
    })?;
    let unknown_desc = pool
        .get_message_by_name("k8s.io.apimachinery.pkg.runtime.Unknown")
        .expect("runtime.Unknown is among the descriptors");
    let unknown = DynamicMessage::decode(unknown_desc, inner)
        .map_err(|e| Status::bad_request(format!("malformed protobuf envelope: {e}")))?;
    let type_meta = unknown
        .get_field_by_name("typeMeta")
        .and_then(|v| v.as_message().cloned());
    let text = |name: &str| {
        type_meta
            .as_ref()
            .and_then(|m| m.get_field_by_name(name))
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    };
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    if kind.is_empty() {
        return Err(Status::bad_request(
            "Object 'Kind' is missing in the protobuf envelope",
        ));
    }
    let desc = message_for(&api_version, &kind).ok_or_else(|| {
        Status::bad_request(format!(
            "no kind \"{kind}\" is registered for version \"{api_version}\""
        ))
    })?;
    let raw = unknown
        .get_field_by_name("raw")
        .and_then(|v| v.as_bytes().cloned())
        .unwrap_or_default();
    let message = DynamicMessage::decode(desc, raw.as_ref())
        .map_err(|e| Status::bad_request(format!("malformed {kind} in protobuf: {e}")))?;
    let mut object = Map::new();
    object.insert("kind".into(), kind.into());
    object.insert("apiVersion".into(), api_version.into());
    if let Value::Object(fields) = message_to_json(&message) {
        object.extend(fields);
    }
    Ok(Value::Object(object))
}

/// Writes a JSON object with `apiVersion` and `kind` as a protobuf body;
/// `None` when no message of that kind is known.
pub fn encode(object: &Value) -> Option<Vec<u8>> {
    let pool = pool()?;
    let api_version = object.get("apiVersion")?.as_str()?;
    let kind = object.get("kind")?.as_str()?;
    let desc = message_for(api_version, kind)?;
    let raw = json_to_message(&desc, object).encode_to_vec();
    let unknown_desc = pool.get_message_by_name("k8s.io.apimachinery.pkg.runtime.Unknown")?;
    let type_meta_desc = pool.get_message_by_name("k8s.io.apimachinery.pkg.runtime.TypeMeta")?;
    let mut type_meta = DynamicMessage::new(type_meta_desc);
    type_meta.set_field_by_name("apiVersion", PValue::String(api_version.into()));
    type_meta.set_field_by_name("kind", PValue::String(kind.into()));
    let mut unknown = DynamicMessage::new(unknown_desc);
    unknown.set_field_by_name("typeMeta", PValue::Message(type_meta));
    unknown.set_field_by_name("raw", PValue::Bytes(raw.into()));
    unknown.set_field_by_name("contentEncoding", PValue::String(String::new()));
    unknown.set_field_by_name("contentType", PValue::String(String::new()));
    let mut out = MAGIC.to_vec();
    unknown.encode(&mut out).ok()?;
    Some(out)
}

// ---------------------------------------------------------------------------
// protobuf → JSON
// ---------------------------------------------------------------------------

/// A message as the JSON Kubernetes writes for it.
pub fn message_to_json(message: &DynamicMessage) -> Value {
    let desc = message.descriptor();
    if let Some(special) = special_to_json(desc.full_name(), message) {
        return special;
    }
    let mut out = Map::new();
    let is_meta = desc.full_name() == "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta";
    for (field, value) in message.fields() {
        // Go writes ObjectMeta's generation, a plain int64, even when it is
        // zero (unset); its JSON leaves it out.
        if is_meta && field.name() == "generation" && value.as_i64() == Some(0) {
            continue;
        }
        if let Some(v) = field_to_json(&field, value) {
            out.insert(field.name().to_string(), v);
        }
    }
    Value::Object(out)
}

fn field_to_json(field: &FieldDescriptor, value: &PValue) -> Option<Value> {
    if field.is_map() {
        let PValue::Map(map) = value else { return None };
        let mut out = Map::new();
        for (k, v) in map {
            let key = match k {
                MapKey::String(s) => s.clone(),
                MapKey::Bool(b) => b.to_string(),
                MapKey::I32(n) => n.to_string(),
                MapKey::I64(n) => n.to_string(),
                MapKey::U32(n) => n.to_string(),
                MapKey::U64(n) => n.to_string(),
            };
            out.insert(key, scalar_to_json(v).unwrap_or(Value::Null));
        }
        return Some(Value::Object(out));
    }
    if let PValue::List(items) = value {
        return Some(Value::Array(
            items
                .iter()
                .map(|v| scalar_to_json(v).unwrap_or(Value::Null))
                .collect(),
        ));
    }
    let v = scalar_to_json(value)?;
    match &v {
        // Go leaves an empty string out of JSON (omitempty), and Go's
        // protobuf writes every string field, set or not.
        Value::String(s) if s.is_empty() => None,
        Value::Null => None,
        _ => Some(v),
    }
}

fn scalar_to_json(value: &PValue) -> Option<Value> {
    Some(match value {
        PValue::Bool(b) => Value::Bool(*b),
        PValue::I32(n) => json!(n),
        PValue::I64(n) => json!(n),
        PValue::U32(n) => json!(n),
        PValue::U64(n) => json!(n),
        PValue::F32(n) => json!(n),
        PValue::F64(n) => json!(n),
        PValue::String(s) => Value::String(s.clone()),
        PValue::Bytes(b) => Value::String(base64::engine::general_purpose::STANDARD.encode(b)),
        PValue::EnumNumber(n) => json!(n),
        PValue::Message(m) => message_to_json(m),
        PValue::List(_) | PValue::Map(_) => return None,
    })
}

fn get<'a>(message: &'a DynamicMessage, name: &str) -> Option<std::borrow::Cow<'a, PValue>> {
    message
        .has_field_by_name(name)
        .then(|| message.get_field_by_name(name))
        .flatten()
}

/// Kubernetes' own JSON forms of a few messages (the table above).
fn special_to_json(full_name: &str, m: &DynamicMessage) -> Option<Value> {
    let short = full_name.rsplit('.').next().unwrap_or("");
    Some(match full_name {
        "k8s.io.apimachinery.pkg.apis.meta.v1.Time"
        | "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime" => {
            let seconds = get(m, "seconds").and_then(|v| v.as_i64());
            let nanos = get(m, "nanos").and_then(|v| v.as_i32()).unwrap_or(0);
            match seconds {
                None if nanos == 0 => Value::Null,
                s => Value::String(format_time(s.unwrap_or(0), nanos, short == "MicroTime")),
            }
        }
        "k8s.io.apimachinery.pkg.util.intstr.IntOrString" => {
            let is_string = get(m, "type").and_then(|v| v.as_i64()) == Some(1);
            if is_string {
                Value::String(
                    get(m, "strVal")
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default(),
                )
            } else {
                json!(get(m, "intVal").and_then(|v| v.as_i32()).unwrap_or(0))
            }
        }
        "k8s.io.apimachinery.pkg.api.resource.Quantity" => Value::String(
            get(m, "string")
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
        ),
        "k8s.io.apimachinery.pkg.runtime.RawExtension"
        | "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1" => {
            let field = if short == "FieldsV1" { "Raw" } else { "raw" };
            let raw = get(m, field).and_then(|v| v.as_bytes().cloned())?;
            serde_json::from_slice(&raw).unwrap_or(Value::Null)
        }
        "k8s.io.apimachinery.pkg.apis.meta.v1.Verbs" | "k8s.io.api.authorization.v1.ExtraValue" => {
            match get(m, "items").as_deref() {
                Some(PValue::List(items)) => Value::Array(
                    items
                        .iter()
                        .filter_map(|v| v.as_str().map(|s| Value::String(s.into())))
                        .collect(),
                ),
                _ => json!([]),
            }
        }
        _ => return None,
    })
}

// ---------------------------------------------------------------------------
// JSON → protobuf
// ---------------------------------------------------------------------------

/// The message of `desc` that `value` stands for; JSON fields the message
/// has no field for are left out.
pub fn json_to_message(desc: &MessageDescriptor, value: &Value) -> DynamicMessage {
    let mut message = DynamicMessage::new(desc.clone());
    if special_from_json(desc.full_name(), &mut message, value) {
        return message;
    }
    let Value::Object(object) = value else {
        return message;
    };
    for (name, v) in object {
        if v.is_null() {
            continue;
        }
        let Some(field) = desc.get_field_by_name(name) else {
            continue;
        };
        if let Some(pv) = field_from_json(&field, v) {
            message.set_field(&field, pv);
        }
    }
    message
}

fn field_from_json(field: &FieldDescriptor, value: &Value) -> Option<PValue> {
    if field.is_map() {
        let Kind::Message(entry) = field.kind() else {
            return None;
        };
        let value_kind = entry.map_entry_value_field().kind();
        let mut map = HashMap::new();
        for (k, v) in value.as_object()? {
            if let Some(pv) = scalar_from_json(&value_kind, v) {
                map.insert(MapKey::String(k.clone()), pv);
            }
        }
        return Some(PValue::Map(map));
    }
    if field.is_list() {
        let kind = field.kind();
        return Some(PValue::List(
            value
                .as_array()?
                .iter()
                .filter_map(|v| scalar_from_json(&kind, v))
                .collect(),
        ));
    }
    scalar_from_json(&field.kind(), value)
}

fn scalar_from_json(kind: &Kind, value: &Value) -> Option<PValue> {
    let int = || {
        value
            .as_i64()
            .or_else(|| value.as_f64().map(|f| f as i64))
            .or_else(|| value.as_str()?.parse().ok())
    };
    Some(match kind {
        Kind::Bool => PValue::Bool(value.as_bool()?),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => PValue::I32(int()? as i32),
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => PValue::I64(int()?),
        Kind::Uint32 | Kind::Fixed32 => PValue::U32(int()? as u32),
        Kind::Uint64 | Kind::Fixed64 => PValue::U64(int()? as u64),
        Kind::Float => PValue::F32(value.as_f64()? as f32),
        Kind::Double => PValue::F64(value.as_f64()?),
        Kind::String => PValue::String(match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }),
        Kind::Bytes => PValue::Bytes(
            base64::engine::general_purpose::STANDARD
                .decode(value.as_str()?)
                .ok()?
                .into(),
        ),
        Kind::Enum(_) => PValue::EnumNumber(int()? as i32),
        Kind::Message(desc) => PValue::Message(json_to_message(desc, value)),
    })
}

fn special_from_json(full_name: &str, m: &mut DynamicMessage, value: &Value) -> bool {
    match full_name {
        "k8s.io.apimachinery.pkg.apis.meta.v1.Time"
        | "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime" => {
            if let Some((seconds, nanos)) = value.as_str().and_then(parse_time) {
                m.set_field_by_name("seconds", PValue::I64(seconds));
                m.set_field_by_name("nanos", PValue::I32(nanos));
            }
        }
        "k8s.io.apimachinery.pkg.util.intstr.IntOrString" => match value {
            Value::String(s) => {
                m.set_field_by_name("type", PValue::I64(1));
                m.set_field_by_name("strVal", PValue::String(s.clone()));
            }
            v => {
                m.set_field_by_name("type", PValue::I64(0));
                m.set_field_by_name("intVal", PValue::I32(v.as_i64().unwrap_or(0) as i32));
            }
        },
        "k8s.io.apimachinery.pkg.api.resource.Quantity" => {
            let text = match value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            m.set_field_by_name("string", PValue::String(text));
        }
        "k8s.io.apimachinery.pkg.runtime.RawExtension" => {
            m.set_field_by_name("raw", PValue::Bytes(value.to_string().into_bytes().into()));
        }
        "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1" => {
            m.set_field_by_name("Raw", PValue::Bytes(value.to_string().into_bytes().into()));
        }
        "k8s.io.apimachinery.pkg.apis.meta.v1.Verbs" | "k8s.io.api.authorization.v1.ExtraValue" => {
            let items = value
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|v| Some(PValue::String(v.as_str()?.into())))
                        .collect()
                })
                .unwrap_or_default();
            m.set_field_by_name("items", PValue::List(items));
        }
        _ => return false,
    }
    true
}

// ---------------------------------------------------------------------------
// Times
// ---------------------------------------------------------------------------

/// `2026-11-22T09:15:04Z`, or with six fractional digits for a MicroTime.
fn format_time(seconds: i64, nanos: i32, micro: bool) -> String {
    let days = seconds.div_euclid(86_400);
    let secs = seconds.rem_euclid(86_400);
    let (y, mo, d) = watchlife_controlplane::time::civil_from_days(days);
    let base = format!(
        "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    );
    if micro {
        format!("{base}.{:06}Z", nanos / 1000)
    } else {
        format!("{base}Z")
    }
}

/// Reads an RFC 3339 time (`Z` or a numeric offset, any fraction) as
/// seconds and nanoseconds since the epoch.
pub(crate) fn parse_time(text: &str) -> Option<(i64, i32)> {
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| text.get(r)?.parse::<i64>().ok();
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let mut rest = &text[19..];
    let mut nanos = 0i32;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits: String = frac.chars().take_while(char::is_ascii_digit).collect();
        let padded = format!("{digits:0<9}");
        nanos = padded.get(..9)?.parse().ok()?;
        rest = &frac[digits.len()..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        o if o.len() == 6 && (o.starts_with('+') || o.starts_with('-')) => {
            let sign = if o.starts_with('-') { -1 } else { 1 };
            // `get`, not indexing: six bytes may still hold a character
            // that straddles the hours' end (`+1é12`), and a client's
            // time must be refused, not panic the server.
            let part = |r: std::ops::Range<usize>| o.get(r)?.parse::<i64>().ok();
            sign * (part(1..3)? * 3600 + part(4..6)? * 60)
        }
        _ => return None,
    };
    let days = watchlife_controlplane::time::days_from_civil(y, mo as u32, d as u32);
    Some((days * 86_400 + h * 3600 + mi * 60 + s - offset, nanos))
}

/// What a request's `Accept` header asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accept {
    /// JSON (also `*/*`, no header, or nothing we know).
    Json,
    /// Protobuf first, JSON acceptable after it.
    ProtobufOrJson,
    /// Protobuf only.
    ProtobufOnly,
}

/// Reads an `Accept` header: the first media type we serve wins, as
/// kube-apiserver's negotiation picks (client-go sends
/// `application/vnd.kubernetes.protobuf, */*`).
pub fn accept(header: Option<&str>) -> Accept {
    let Some(header) = header else {
        return Accept::Json;
    };
    let types: Vec<String> = header
        .split(',')
        .map(|t| {
            t.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .collect();
    let json_ok = types
        .iter()
        .any(|t| t == "application/json" || t == "*/*" || t == "application/*");
    match types.iter().position(|t| t == PROTOBUF) {
        Some(p) if types[..p].iter().all(|t| t != "application/json") => {
            if json_ok {
                Accept::ProtobufOrJson
            } else {
                Accept::ProtobufOnly
            }
        }
        _ => Accept::Json,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_round_trip() {
        for t in [
            "1970-01-01T00:00:00Z",
            "2000-02-29T23:59:59Z",
            "2026-11-22T09:15:04Z",
        ] {
            let (s, n) = parse_time(t).unwrap();
            assert_eq!(format_time(s, n, false), t);
        }
        assert_eq!(
            parse_time("2026-11-22T10:15:04.5+01:00"),
            Some((1_795_338_904, 500_000_000))
        );
        assert_eq!(
            format_time(1_795_338_904, 500_000_000, true),
            "2026-11-22T09:15:04.500000Z"
        );
        assert_eq!(parse_time("yesterday"), None);
        assert_eq!(parse_time("2026-11-22T10:15:04+1é12"), None);
        assert_eq!(parse_time("2026-11-22T10:15:04+0é:0"), None);
    }

    #[test]
    fn accept_follows_the_order_of_the_header() {
        assert_eq!(accept(None), Accept::Json);
        assert_eq!(
            accept(Some("application/vnd.kubernetes.protobuf, */*")),
            Accept::ProtobufOrJson
        );
        assert_eq!(
            accept(Some("application/vnd.kubernetes.protobuf")),
            Accept::ProtobufOnly
        );
        assert_eq!(
            accept(Some(
                "application/json, application/vnd.kubernetes.protobuf"
            )),
            Accept::Json
        );
        assert_eq!(
            accept(Some(
                "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
            )),
            Accept::Json
        );
    }

    #[test]
    fn a_deployment_survives_both_ways() {
        if pool().is_none() {
            return;
        }
        let deployment = json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"},
                         "creationTimestamp": "2026-11-22T09:15:04Z", "generation": 2},
            "spec": {
                "replicas": 0,
                "selector": {"matchLabels": {"app": "web"}},
                "strategy": {"type": "RollingUpdate",
                             "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{
                        "name": "nginx", "image": "nginx:1.27",
                        "ports": [{"containerPort": 80}],
                        "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}}
                    }]}
                }
            }
        });
        let bytes = encode(&deployment).unwrap();
        assert!(bytes.starts_with(MAGIC));
        assert_eq!(decode(&bytes).unwrap(), deployment);
    }
}
