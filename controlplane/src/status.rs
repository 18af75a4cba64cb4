//! Kubernetes `Status` objects: how every failure is reported to clients.
//!
//! The codes and reasons are the apiserver's (`metav1.StatusReason`), so a
//! client's error handling (`IsNotFound`, `IsConflict`, `IsResourceExpired`)
//! works against the demo control plane as against a real one.

use crate::api_error::ApiError;
use serde_json::{Value, json};

/// A failure as a Kubernetes `Status`.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    /// The HTTP status code, repeated in the body's `code`.
    pub code: u16,
    /// The machine-readable reason (`NotFound`, `Conflict`, `Expired`, ...).
    pub reason: &'static str,
    pub message: String,
    /// `details`, when the failure concerns one object.
    pub details: Option<Value>,
}

impl Status {
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Status {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    /// 400 `BadRequest`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Status::new(400, "BadRequest", message)
    }

    /// 404 `NotFound` for a URL that names nothing served.
    pub fn not_found_url() -> Self {
        Status::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    }

    /// 405 `MethodNotAllowed`.
    pub fn method_not_allowed() -> Self {
        Status::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
    }

    /// 410 `Expired`: a resourceVersion or continue token that is too old.
    pub fn expired(message: impl Into<String>) -> Self {
        Status::new(410, "Expired", message)
    }

    /// 413 `RequestEntityTooLarge`.
    pub fn too_large(limit: usize) -> Self {
        Status::new(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: limit is {limit}"),
        )
    }

    /// 415 `UnsupportedMediaType`, listing what is accepted.
    pub fn unsupported_media_type(accepted: &[&str]) -> Self {
        Status::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                accepted.join(", ")
            ),
        )
    }

    /// Adds `details` naming the object concerned.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// The `Status` object as JSON.
    pub fn to_json(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(details) = &self.details {
            status["details"] = details.clone();
        }
        status
    }
}

/// `details` for an object error: `kind` is the resource (plural) and `group`
/// its API group, split from a qualified name like `deployments.apps`.
fn details(qualified: &str, name: &str) -> Value {
    let (kind, group) = qualified.split_once('.').unwrap_or((qualified, ""));
    let mut d = json!({"name": name, "kind": kind});
    if !group.is_empty() {
        d["group"] = group.into();
    }
    d
}

impl From<&ApiError> for Status {
    fn from(e: &ApiError) -> Self {
        let message = e.to_string();
        match e {
            ApiError::Invalid(_) => Status::new(422, "Invalid", message),
            ApiError::BadRequest(_) => Status::bad_request(message),
            ApiError::Forbidden(_) => Status::new(403, "Forbidden", message),
            ApiError::NotFound { kind, name } => {
                Status::new(404, "NotFound", message).with_details(details(kind, name))
            }
            ApiError::AlreadyExists { kind, name } => {
                Status::new(409, "AlreadyExists", message).with_details(details(kind, name))
            }
            ApiError::Conflict { kind, name } => {
                Status::new(409, "Conflict", message).with_details(details(kind, name))
            }
            ApiError::Gone(_) => Status::expired(message),
            // `errors.NewTooManyRequests`: the delay travels in the details
            // (and, from the HTTP layer, as a `Retry-After` header).
            ApiError::NotReady {
                retry_after_seconds,
            } => Status::new(429, "TooManyRequests", message)
                .with_details(json!({"retryAfterSeconds": retry_after_seconds})),
            ApiError::TooLargeResourceVersion { .. } => Status::new(504, "Timeout", message)
                .with_details(json!({
                    "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                    "retryAfterSeconds": 1
                })),
        }
    }
}

impl From<ApiError> for Status {
    fn from(e: ApiError) -> Self {
        Status::from(&e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_errors_map_to_the_apiservers_codes_and_reasons() {
        let cases = [
            (ApiError::Invalid("x".into()), 422, "Invalid"),
            (ApiError::BadRequest("x".into()), 400, "BadRequest"),
            (
                ApiError::NotFound {
                    kind: "deployments.apps".into(),
                    name: "web".into(),
                },
                404,
                "NotFound",
            ),
            (
                ApiError::Conflict {
                    kind: "pods".into(),
                    name: "p".into(),
                },
                409,
                "Conflict",
            ),
            (ApiError::Gone("too old".into()), 410, "Expired"),
            (
                ApiError::TooLargeResourceVersion {
                    requested: 9,
                    current: 3,
                },
                504,
                "Timeout",
            ),
        ];
        for (err, code, reason) in cases {
            let s = Status::from(&err);
            assert_eq!((s.code, s.reason), (code, reason), "{err:?}");
            let j = s.to_json();
            assert_eq!(j["kind"], "Status");
            assert_eq!(j["status"], "Failure");
            assert_eq!(j["code"], code);
        }
        let nf = Status::from(ApiError::NotFound {
            kind: "deployments.apps".into(),
            name: "web".into(),
        });
        assert_eq!(nf.message, "deployments.apps \"web\" not found");
        assert_eq!(
            nf.details,
            Some(json!({"name": "web", "kind": "deployments", "group": "apps"}))
        );
    }
}
