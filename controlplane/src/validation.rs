//! What the apiserver's validation refuses before anything is stored, for
//! the fields a client could use against the demo: label and annotation
//! syntax and sizes, and replicas (see [`crate::limits`]). A refusal is a 422
//! `Invalid` worded as the apiserver words it, naming the field and the
//! limit.

use crate::api_error::ApiError;
use crate::limits::{Limits, NODE_MAX_PODS, show_bytes};
use crate::object;
use crate::resource::{DEPLOYMENTS, REPLICASETS, ResourceType};
use serde_json::Value;

/// Longest name part of a label key (and of an annotation key), and longest
/// label value: Kubernetes' 63.
pub const MAX_LABEL_NAME: usize = 63;

/// Longest prefix of a label key (`example.com/` in `example.com/tier`): a
/// DNS subdomain's 253.
pub const MAX_LABEL_PREFIX: usize = 253;

/// Longest label value.
pub const MAX_LABEL_VALUE: usize = 63;

const NAME_RULE: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const VALUE_RULE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const PREFIX_RULE: &str = "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

/// Checks a label or annotation key, `[prefix/]name`, as Kubernetes'
/// `IsQualifiedName` does; the error says what is wrong.
pub fn check_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.split_once('/') {
        None => (None, key),
        Some((prefix, name)) => (Some(prefix), name),
    };
    if let Some(prefix) = prefix {
        check_key_part(
            "prefix",
            prefix,
            MAX_LABEL_PREFIX,
            is_dns_subdomain,
            PREFIX_RULE,
        )?;
    }
    check_key_part("name", name, MAX_LABEL_NAME, is_label_text, NAME_RULE)
}

/// Checks the `part` ("prefix" or "name") of a key: not empty, at most `max`
/// characters, and of the form `valid` accepts (else the error is `rule`).
fn check_key_part(
    part: &str,
    text: &str,
    max: usize,
    valid: fn(&str) -> bool,
    rule: &str,
) -> Result<(), String> {
    if text.is_empty() {
        return Err(format!("{part} part must be non-empty"));
    }
    if text.len() > max {
        return Err(format!("{part} part must be no more than {max} characters"));
    }
    if !valid(text) {
        return Err(rule.into());
    }
    Ok(())
}

/// Checks a label value as Kubernetes' `IsValidLabelValue` does.
pub fn check_label_value(value: &str) -> Result<(), String> {
    if value.len() > MAX_LABEL_VALUE {
        return Err(format!("must be no more than {MAX_LABEL_VALUE} characters"));
    }
    if !value.is_empty() && !is_label_text(value) {
        return Err(VALUE_RULE.into());
    }
    Ok(())
}

/// `[A-Za-z0-9]`, then `[-A-Za-z0-9_.]*`, ending in `[A-Za-z0-9]`.
fn is_label_text(s: &str) -> bool {
    let bytes = s.as_bytes();
    let inner = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.');
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric() && last.is_ascii_alphanumeric() && bytes.iter().all(inner)
        }
        _ => false,
    }
}

/// Lowercase RFC 1123 labels joined by dots.
fn is_dns_subdomain(s: &str) -> bool {
    s.split('.').all(|part| {
        let bytes = part.as_bytes();
        !bytes.is_empty()
            && bytes
                .iter()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
            && bytes[0] != b'-'
            && bytes[bytes.len() - 1] != b'-'
    })
}

/// Validates what a client may get wrong in `obj` of type `rt`: its labels,
/// its annotations, and for Deployments and ReplicaSets `spec.replicas`.
pub fn validate(rt: ResourceType, obj: &Value, limits: &Limits) -> Result<(), ApiError> {
    let invalid = |field: &str, detail: String| {
        ApiError::Invalid(format!(
            "{} \"{}\" is invalid: {field}: {detail}",
            kind_group(rt),
            object::name(obj)
        ))
    };
    if let Some(labels) = object::field(obj, &["metadata", "labels"]).and_then(Value::as_object) {
        for (key, value) in labels {
            check_key(key)
                .map_err(|e| invalid("metadata.labels", format!("Invalid value: {key:?}: {e}")))?;
            let value = value.as_str().unwrap_or_default();
            check_label_value(value).map_err(|e| {
                invalid(
                    &format!("metadata.labels.{key}"),
                    format!("Invalid value: {value:?}: {e}"),
                )
            })?;
        }
    }
    if let Some(annotations) =
        object::field(obj, &["metadata", "annotations"]).and_then(Value::as_object)
    {
        let mut total = 0usize;
        for (key, value) in annotations {
            check_key(key).map_err(|e| {
                invalid(
                    "metadata.annotations",
                    format!("Invalid value: {key:?}: {e}"),
                )
            })?;
            total = total
                .saturating_add(key.len())
                .saturating_add(value.as_str().map_or(0, str::len));
        }
        if total > limits.max_annotations_bytes {
            return Err(invalid(
                "metadata.annotations",
                format!(
                    "Too long: must have at most {} bytes ({})",
                    limits.max_annotations_bytes,
                    show_bytes(limits.max_annotations_bytes)
                ),
            ));
        }
    }
    if rt == DEPLOYMENTS || rt == REPLICASETS {
        check_replicas(obj, limits).map_err(|detail| invalid("spec.replicas", detail))?;
    }
    Ok(())
}

/// `spec.replicas`, when set: a whole number from 0 to the limit.
fn check_replicas(obj: &Value, limits: &Limits) -> Result<(), String> {
    let Some(replicas) = object::field(obj, &["spec", "replicas"]) else {
        return Ok(());
    };
    if replicas.is_null() {
        return Ok(());
    }
    match replicas.as_u64() {
        Some(n) if n <= limits.max_replicas => Ok(()),
        Some(n) => Err(format!(
            "Invalid value: {n}: must be less than or equal to {}, the demo cluster's capacity ({} nodes of {NODE_MAX_PODS} pods, the kubelet's --max-pods)",
            limits.max_replicas,
            limits.max_replicas / NODE_MAX_PODS
        )),
        None => Err(format!(
            "Invalid value: {replicas}: must be greater than or equal to 0"
        )),
    }
}

/// `Deployment.apps`, `Pod`: how the apiserver names a type in a message.
pub fn kind_group(rt: ResourceType) -> String {
    if rt.group.is_empty() {
        rt.kind.to_string()
    } else {
        format!("{}.{}", rt.kind, rt.group)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::{CONFIGMAPS, PODS};
    use serde_json::json;

    /// A key with the longest name part Kubernetes allows, and one with the
    /// longest prefix, each made `extra` characters longer.
    fn longest_keys_plus(extra: usize) -> [String; 2] {
        [
            "n".repeat(MAX_LABEL_NAME + extra),
            format!("{}/n", "p".repeat(MAX_LABEL_PREFIX + extra)),
        ]
    }

    #[test]
    fn label_keys_follow_kubernetes_qualified_names() {
        assert_eq!((MAX_LABEL_NAME, MAX_LABEL_PREFIX), (63, 253));
        let [longest_name, longest_prefix] = longest_keys_plus(0);
        let [too_long_name, too_long_prefix] = longest_keys_plus(1);
        let valid = [
            "app",
            "a",
            "app.kubernetes.io/name",
            "example.com/Tier_1",
            "x-y.z",
            &longest_name,
            &longest_prefix,
        ];
        let invalid = [
            "",
            "-app",
            "app-",
            "a b",
            "/name",
            "Example.com/name",
            "example.com/",
            "a/b/c",
            "naïve",
            &too_long_name,
            &too_long_prefix,
            "ex..ample.com/n",
        ];
        for ok in valid {
            assert_eq!(check_key(ok), Ok(()), "{ok}");
        }
        for bad in invalid {
            assert!(check_key(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn label_values_may_be_empty_and_are_63_characters_at_most() {
        for ok in ["", "web", "v1.2_3-x", "A", &"v".repeat(63)] {
            assert_eq!(check_label_value(ok), Ok(()), "{ok}");
        }
        for bad in ["-web", "web.", "a b", "a/b", &"v".repeat(64), "<script>"] {
            assert!(check_label_value(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn replicas_beyond_the_demos_capacity_are_invalid_and_name_the_limit() {
        let limits = Limits::DEMO;
        let deployment =
            |replicas: Value| json!({"metadata": {"name": "web"}, "spec": {"replicas": replicas}});
        assert!(validate(DEPLOYMENTS, &deployment(json!(220)), &limits).is_ok());
        assert!(validate(DEPLOYMENTS, &deployment(Value::Null), &limits).is_ok());
        let err = validate(DEPLOYMENTS, &deployment(json!(1_000_000_000)), &limits)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("Deployment.apps \"web\" is invalid: spec.replicas"),
            "{err}"
        );
        assert!(err.contains("less than or equal to 220"), "{err}");
        assert!(err.contains("--max-pods"), "{err}");
        for bad in [json!(-1), json!(1.5), json!("3")] {
            assert!(
                validate(REPLICASETS, &deployment(bad.clone()), &limits).is_err(),
                "{bad}"
            );
        }
        // Other types may carry a spec.replicas of their own making.
        assert!(validate(CONFIGMAPS, &deployment(json!(1_000_000_000)), &limits).is_ok());
    }

    #[test]
    fn labels_and_annotations_are_checked_on_every_type() {
        let limits = Limits::DEMO;
        let with = |meta: Value| json!({"metadata": meta});
        let bad_key = with(json!({"name": "p", "labels": {"bad key": "v"}}));
        let err = validate(PODS, &bad_key, &limits).unwrap_err().to_string();
        assert!(
            err.contains("metadata.labels") && err.contains("bad key"),
            "{err}"
        );
        let long_value = with(json!({"name": "p", "labels": {"k": "v".repeat(64)}}));
        assert!(validate(PODS, &long_value, &limits).is_err());
        let big = with(json!({"name": "p", "annotations": {"note": "x".repeat(256 * 1024)}}));
        let err = validate(PODS, &big, &limits).unwrap_err().to_string();
        assert!(err.contains("262144 bytes (256 KiB)"), "{err}");
        let fine = with(
            json!({"name": "p", "labels": {"app": "web", "pod-template-hash": "5d9c8bf7b4"},
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}}),
        );
        assert!(validate(PODS, &fine, &limits).is_ok());
    }
}
