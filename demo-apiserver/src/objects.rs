//! Request bodies: decoding them into objects of the URL's type, validating
//! them, and the parts of the apiserver's per-type strategies the demo keeps
//! (pods start Pending; the main resource and its status subresource each
//! write only their own half; `generation` counts spec changes).

use crate::path::Subresource;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicU64, Ordering};
use watchlife_controlplane::ResourceType;
use watchlife_controlplane::object;
use watchlife_controlplane::status::Status;

/// Largest request body accepted: the apiserver's `MaxRequestBodyBytes`
/// (3 MiB), which in turn follows etcd's default request size limit.
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// Longest object name: a DNS-1123 subdomain's length.
pub const MAX_NAME: usize = 253;

/// Longest name of a namespace or service: a DNS label's length.
pub const MAX_LABEL_NAME: usize = 63;

/// Characters of a `generateName` suffix: the apiserver's alphabet, without
/// vowels and look-alike digits so no word or ambiguous name is generated.
const SUFFIX_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// Length of a `generateName` suffix, as the apiserver makes it.
const SUFFIX_LEN: usize = 5;

/// Decodes a body as an object of `rt`, with the apiserver's 400 answers:
/// malformed JSON, another kind or API version than the URL's, or metadata
/// of the wrong shape.
pub fn decode(rt: ResourceType, body: &[u8]) -> Result<Value, Status> {
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        Status::bad_request(format!(
            "the object provided is unrecognized (must be of type {}): couldn't get version/kind; json parse error: {e}",
            rt.kind
        ))
    })?;
    let Value::Object(map) = &value else {
        return Err(Status::bad_request(format!(
            "the object provided is unrecognized (must be of type {}): not a JSON object",
            rt.kind
        )));
    };
    let text = |field: &str| map.get(field).and_then(Value::as_str).unwrap_or("");
    let (kind, api_version) = (text("kind"), text("apiVersion"));
    if !api_version.is_empty() && api_version != rt.api_version() {
        return Err(Status::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({})",
            rt.api_version()
        )));
    }
    if !kind.is_empty() && kind != rt.kind {
        let version = if api_version.is_empty() {
            rt.version
        } else {
            api_version
        };
        return Err(Status::bad_request(format!(
            "{kind} in version \"{version}\" cannot be handled as a {}: the kind in the data does not match the URL",
            rt.kind
        )));
    }
    let shape = |what: &str| {
        Status::bad_request(format!(
            "{} in version \"{}\" cannot be handled as a {}: {what}",
            rt.kind, rt.version, rt.kind
        ))
    };
    if let Some(meta) = map.get("metadata") {
        let Value::Object(meta) = meta else {
            return Err(shape("metadata must be an object"));
        };
        for field in [
            "name",
            "namespace",
            "generateName",
            "resourceVersion",
            "uid",
        ] {
            if meta
                .get(field)
                .is_some_and(|v| !v.is_string() && !v.is_null())
            {
                return Err(shape(&format!("metadata.{field} must be a string")));
            }
        }
        for field in ["labels", "annotations"] {
            match meta.get(field) {
                None | Some(Value::Null) => {}
                Some(Value::Object(m)) if m.values().all(Value::is_string) => {}
                Some(_) => {
                    return Err(shape(&format!(
                        "metadata.{field} must be a map of strings to strings"
                    )));
                }
            }
        }
    }
    Ok(value)
}

/// A 422 `Invalid` naming the field at fault, as the apiserver words it.
pub fn invalid(rt: ResourceType, name: &str, field: &str, reason: &str, detail: &str) -> Status {
    let kind_group = if rt.group.is_empty() {
        rt.kind.to_string()
    } else {
        format!("{}.{}", rt.kind, rt.group)
    };
    Status::new(
        422,
        "Invalid",
        format!("{kind_group} \"{name}\" is invalid: {field}: {detail}"),
    )
    .with_details(json!({
        "name": name,
        "group": rt.group,
        "kind": rt.kind,
        "causes": [{"reason": reason, "message": detail, "field": field}],
    }))
}

/// Checks a name as the apiserver does for the type: a DNS label for
/// namespaces and services (a DNS-1035 label, starting with a letter, for
/// services), a DNS subdomain for the rest.
pub fn validate_name(rt: ResourceType, name: &str) -> Result<(), Status> {
    let label_only = matches!(rt.plural, "namespaces" | "services");
    let max = if label_only { MAX_LABEL_NAME } else { MAX_NAME };
    let part_ok = |p: &str| {
        !p.is_empty()
            && p.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !p.starts_with('-')
            && !p.ends_with('-')
    };
    let ok = name.len() <= max
        && if label_only {
            part_ok(name)
                && (rt.plural != "services" || name.starts_with(|c: char| c.is_ascii_lowercase()))
        } else {
            name.split('.').all(part_ok)
        };
    if ok {
        return Ok(());
    }
    let rule = if label_only {
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character"
    } else {
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
    };
    Err(invalid(
        rt,
        name,
        "metadata.name",
        "FieldValueInvalid",
        &format!("Invalid value: {name:?}: {rule}"),
    ))
}

/// Makes a name from `generateName`: the prefix and a random-looking suffix.
pub fn generate_name(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    // A counter scrambled by a multiplicative hash: unique within the
    // process for a long time, and not sequential to the eye.
    let mut n = COUNTER
        .fetch_add(1, Ordering::Relaxed)
        .wrapping_add(1)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut name = prefix.to_string();
    for _ in 0..SUFFIX_LEN {
        name.push(SUFFIX_ALPHABET[(n % SUFFIX_ALPHABET.len() as u64) as usize] as char);
        n /= SUFFIX_ALPHABET.len() as u64;
    }
    name
}

/// Readies a decoded object for create at `url_namespace`: checks its
/// namespace against the URL's, fills the name from `generateName`, checks
/// the name, and applies the type's create strategy (pods start `Pending`;
/// `generation` starts at 1 for types with a spec the controllers act on).
pub fn prepare_create(
    rt: ResourceType,
    obj: &mut Value,
    url_namespace: Option<&str>,
) -> Result<(), Status> {
    check_namespace(rt, obj, url_namespace)?;
    if let Some(ns) = url_namespace {
        object::set_meta(obj, "namespace", ns);
    }
    if object::name(obj).is_empty() {
        let prefix = obj
            .pointer("/metadata/generateName")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if prefix.is_empty() {
            return Err(invalid(
                rt,
                "",
                "metadata.name",
                "FieldValueRequired",
                "Required value: name or generateName is required",
            ));
        }
        object::set_meta(obj, "name", generate_name(&prefix));
    }
    validate_name(rt, object::name(obj))?;
    let meta = object::metadata_mut(obj);
    for server_owned in [
        "resourceVersion",
        "uid",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ] {
        meta.remove(server_owned);
    }
    if has_generation(rt) {
        meta.insert("generation".into(), 1.into());
    }
    if rt.plural == "pods" && obj.get("status").is_none_or(|s| s.get("phase").is_none()) {
        obj["status"] = json!({"phase": "Pending"});
    }
    Ok(())
}

/// Refuses a body whose namespace is not the URL's (400, the apiserver's words).
pub fn check_namespace(
    rt: ResourceType,
    obj: &Value,
    url_namespace: Option<&str>,
) -> Result<(), Status> {
    match (
        object::namespace(obj).filter(|ns| !ns.is_empty()),
        url_namespace,
    ) {
        (Some(body), Some(url)) if rt.namespaced && body != url => Err(Status::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        )),
        _ => Ok(()),
    }
}

/// Refuses a body whose name is not the URL's (400, the apiserver's words).
pub fn check_name(obj: &Value, url_name: &str) -> Result<(), Status> {
    let name = object::name(obj);
    if name.is_empty() || name == url_name {
        Ok(())
    } else {
        Err(Status::bad_request(format!(
            "the name of the object ({name}) does not match the name on the URL ({url_name})"
        )))
    }
}

fn has_generation(rt: ResourceType) -> bool {
    matches!(rt.plural, "deployments" | "replicasets")
}

/// Whether the type has a status that only its `status` subresource (or the
/// control plane's own components) may write.
fn status_is_separate(rt: ResourceType) -> bool {
    matches!(
        rt.plural,
        "pods" | "deployments" | "replicasets" | "nodes" | "namespaces" | "services"
    )
}

/// The object an update writes, from the current object and the one the
/// client sent, by the type's update strategy: an update of the main
/// resource keeps the current status, an update of `status` changes only the
/// status, `generation` grows when the spec changes, and the deletion marks
/// are the server's.
pub fn prepare_update(
    rt: ResourceType,
    subresource: Option<Subresource>,
    current: &Value,
    mut new: Value,
) -> Value {
    if subresource == Some(Subresource::Status) {
        let mut out = current.clone();
        out["status"] = new.get("status").cloned().unwrap_or_else(|| json!({}));
        if let Some(rv) = object::resource_version(&new) {
            object::set_meta(&mut out, "resourceVersion", rv);
        } else {
            object::metadata_mut(&mut out).remove("resourceVersion");
        }
        return out;
    }
    if status_is_separate(rt) {
        match current.get("status") {
            Some(status) => new["status"] = status.clone(),
            None => {
                if let Value::Object(map) = &mut new {
                    map.remove("status");
                }
            }
        }
    }
    for server_owned in [
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
    ] {
        let meta = object::metadata_mut(&mut new);
        match current.pointer(&format!("/metadata/{server_owned}")) {
            Some(v) => meta.insert(server_owned.into(), v.clone()),
            None => meta.remove(server_owned),
        };
    }
    if has_generation(rt) && new.get("spec") != current.get("spec") {
        let generation = current
            .pointer("/metadata/generation")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        object::metadata_mut(&mut new).insert("generation".into(), (generation + 1).into());
    }
    new
}

#[cfg(test)]
mod tests {
    use super::*;
    use watchlife_controlplane::resource::{CONFIGMAPS, DEPLOYMENTS, PODS, SERVICES};

    #[test]
    fn decoding_refuses_what_the_apiserver_refuses() {
        let bad = |rt, body: &str| decode(rt, body.as_bytes()).unwrap_err();
        assert_eq!(bad(PODS, "{").code, 400);
        assert_eq!(bad(PODS, "[]").code, 400);
        let wrong_kind = bad(PODS, r#"{"kind":"ConfigMap","apiVersion":"v1"}"#);
        assert_eq!(wrong_kind.code, 400);
        assert!(
            wrong_kind
                .message
                .starts_with("ConfigMap in version \"v1\" cannot be handled as a Pod")
        );
        let wrong_version = bad(DEPLOYMENTS, r#"{"kind":"Deployment","apiVersion":"v1"}"#);
        assert_eq!(
            wrong_version.message,
            "the API version in the data (v1) does not match the expected API version (apps/v1)"
        );
        assert_eq!(bad(PODS, r#"{"metadata":{"labels":{"a":1}}}"#).code, 400);
        assert_eq!(bad(PODS, r#"{"metadata":"x"}"#).code, 400);
        assert!(decode(CONFIGMAPS, br#"{"metadata":{"name":"c"},"data":{"k":"v"}}"#).is_ok());
    }

    #[test]
    fn names_are_validated_per_type() {
        assert!(validate_name(PODS, "web-1.example").is_ok());
        assert_eq!(validate_name(PODS, "Web_1").unwrap_err().code, 422);
        assert!(validate_name(SERVICES, "1web").is_err());
        assert!(validate_name(SERVICES, "web.a").is_err());
        assert!(validate_name(PODS, &"a".repeat(254)).is_err());
    }

    #[test]
    fn create_strategy() {
        let mut pod = json!({"metadata": {"generateName": "web-"}});
        prepare_create(PODS, &mut pod, Some("default")).unwrap();
        let name = object::name(&pod);
        assert!(
            name.starts_with("web-") && name.len() == 4 + SUFFIX_LEN,
            "{name}"
        );
        assert_eq!(pod["status"]["phase"], "Pending");
        assert_eq!(pod["metadata"]["namespace"], "default");
        let mut nameless = json!({"metadata": {}});
        let err = prepare_create(PODS, &mut nameless, Some("default")).unwrap_err();
        assert_eq!((err.code, err.reason), (422, "Invalid"));
        assert_eq!(
            err.message,
            "Pod \"\" is invalid: metadata.name: Required value: name or generateName is required"
        );
        let mut elsewhere = json!({"metadata": {"name": "p", "namespace": "prod"}});
        assert_eq!(
            prepare_create(PODS, &mut elsewhere, Some("default"))
                .unwrap_err()
                .code,
            400
        );
        assert_ne!(generate_name("x-"), generate_name("x-"));
    }

    #[test]
    fn update_strategy_splits_spec_and_status() {
        let current = json!({"metadata": {"name": "d", "generation": 1}, "spec": {"replicas": 1}, "status": {"replicas": 1}});
        let sent =
            json!({"metadata": {"name": "d"}, "spec": {"replicas": 3}, "status": {"replicas": 9}});
        let main = prepare_update(DEPLOYMENTS, None, &current, sent.clone());
        assert_eq!(main["spec"]["replicas"], 3);
        assert_eq!(main["status"]["replicas"], 1);
        assert_eq!(main["metadata"]["generation"], 2);
        let status = prepare_update(PODS, Some(Subresource::Status), &current, sent);
        assert_eq!(status["spec"]["replicas"], 1);
        assert_eq!(status["status"]["replicas"], 9);
    }
}
