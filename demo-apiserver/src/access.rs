//! `SelfSubjectAccessReview` and `SelfSubjectRulesReview`
//! (`authorization.k8s.io/v1`): what `kubectl auth can-i` asks.
//!
//! The demo has no RBAC: whoever reaches the API (loopback, or the token's
//! holder, see [`crate::door`]) may do everything, and the reviews say so. A
//! review is answered `201 Created` with the request's spec and a status,
//! as kube-apiserver answers it; nothing is stored.

use serde_json::{Value, json};
use watchlife_controlplane::status::Status;

/// The group version of the reviews.
pub const GROUP_VERSION: &str = "authorization.k8s.io/v1";

/// Why every review is allowed.
pub const REASON: &str =
    "the demo control plane has no RBAC: every client that reaches it may do everything";

/// Which review a path names, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Review {
    Access,
    Rules,
}

impl Review {
    pub fn plural(self) -> &'static str {
        match self {
            Review::Access => "selfsubjectaccessreviews",
            Review::Rules => "selfsubjectrulesreviews",
        }
    }

    pub fn kind(self) -> &'static str {
        match self {
            Review::Access => "SelfSubjectAccessReview",
            Review::Rules => "SelfSubjectRulesReview",
        }
    }

    /// `/apis/authorization.k8s.io/v1/selfsubject...reviews`.
    pub fn of_path(path: &str) -> Option<Review> {
        let rest = path
            .trim_end_matches('/')
            .strip_prefix("/apis/authorization.k8s.io/v1/")?;
        [Review::Access, Review::Rules]
            .into_iter()
            .find(|r| r.plural() == rest)
    }
}

/// The answered review, from the JSON the client sent.
pub fn answer(review: Review, body: &[u8]) -> Result<Value, Status> {
    let sent: Value = serde_json::from_slice(body)
        .map_err(|e| Status::bad_request(format!("error decoding {}: {e}", review.kind())))?;
    let kind = sent
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or(review.kind());
    let version = sent
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or(GROUP_VERSION);
    if kind != review.kind() || version != GROUP_VERSION {
        return Err(Status::bad_request(format!(
            "{kind} in version \"{version}\" cannot be handled as a {}",
            review.kind()
        )));
    }
    let spec = sent.get("spec").cloned().unwrap_or_else(|| json!({}));
    let status = match review {
        Review::Access => {
            if spec.get("resourceAttributes").is_none()
                && spec.get("nonResourceAttributes").is_none()
            {
                return Err(Status::new(
                    422,
                    "Invalid",
                    "SelfSubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.resourceAttributes: Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified",
                ));
            }
            json!({"allowed": true, "reason": REASON})
        }
        Review::Rules => json!({
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": false,
        }),
    };
    Ok(json!({
        "kind": review.kind(),
        "apiVersion": GROUP_VERSION,
        "metadata": {"creationTimestamp": null},
        "spec": spec,
        "status": status,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn everything_is_allowed_and_malformed_reviews_are_refused() {
        assert_eq!(
            Review::of_path("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"),
            Some(Review::Access)
        );
        assert_eq!(
            Review::of_path("/apis/authorization.k8s.io/v1/subjectaccessreviews"),
            None
        );
        let body = json!({
            "kind": "SelfSubjectAccessReview", "apiVersion": GROUP_VERSION,
            "spec": {"resourceAttributes": {"verb": "create", "resource": "pods"}}
        });
        let answered = answer(Review::Access, body.to_string().as_bytes()).unwrap();
        assert_eq!(answered["status"]["allowed"], true);
        assert_eq!(answered["spec"], body["spec"]);
        let empty =
            json!({"kind": "SelfSubjectAccessReview", "apiVersion": GROUP_VERSION, "spec": {}});
        assert_eq!(
            answer(Review::Access, empty.to_string().as_bytes())
                .unwrap_err()
                .code,
            422
        );
        assert_eq!(answer(Review::Rules, b"{").unwrap_err().code, 400);
        let rules = answer(Review::Rules, br#"{"spec":{"namespace":"default"}}"#).unwrap();
        assert_eq!(rules["status"]["resourceRules"][0]["verbs"], json!(["*"]));
    }
}
