//! Why a request to the control plane failed: [`ApiError`], one variant per
//! Kubernetes `Status` reason the demo answers with ([`crate::status`] turns
//! each into its HTTP answer).

use crate::store::Revision;

/// Why a request to the control plane failed; each maps to a Kubernetes Status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    Invalid(String),
    #[error("{kind} \"{name}\" not found")]
    NotFound { kind: String, name: String },
    #[error("{kind} \"{name}\" already exists")]
    AlreadyExists { kind: String, name: String },
    #[error(
        "Operation cannot be fulfilled on {kind} \"{name}\": the object has been modified; please apply your changes to the latest version and try again"
    )]
    Conflict { kind: String, name: String },
    /// 410: a resourceVersion or continue token older than what is kept.
    #[error("{0}")]
    Gone(String),
    /// 400: the request cannot be understood (a bad parameter or token).
    #[error("{0}")]
    BadRequest(String),
    /// 403: the request is understood and refused.
    #[error("{0}")]
    Forbidden(String),
    /// 429: the Cacher is (re)initializing and refuses to wait
    /// (`ResilientWatchCacheInitialization`); the client may retry after
    /// `retry_after_seconds` (see [`crate::cacher::ready`]).
    #[error("{}", crate::cacher::ready::NOT_READY_MESSAGE)]
    NotReady { retry_after_seconds: u64 },
    /// 504: a resourceVersion the store has not reached.
    #[error("Too large resource version: {requested}, current: {current}")]
    TooLargeResourceVersion {
        requested: Revision,
        current: Revision,
    },
}
