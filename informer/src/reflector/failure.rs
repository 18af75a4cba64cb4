//! How a request or a watch stream failed, sorted as client-go sorts it.

/// How a request failed, sorted as client-go sorts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// 410: the resourceVersion asked for is older than the server keeps
    /// (`IsResourceExpired` or `IsGone`).
    Expired(String),
    /// The server's cache has not reached the resourceVersion asked for
    /// (the `ResourceVersionTooLarge` cause).
    TooLargeResourceVersion(String),
    /// The TCP connection was refused: the server is likely down.
    ConnectionRefused(String),
    /// 429: the server asks to come back later (a watch cache that is
    /// initializing answers so since Kubernetes 1.31).
    TooManyRequests(String),
    /// Anything else (forbidden, a bad selector, a server error, a broken
    /// stream, an undecodable event, a 422 to a streaming list), with its
    /// message.
    Other(String),
}

impl Failure {
    pub fn message(&self) -> &str {
        match self {
            Failure::Expired(m)
            | Failure::TooLargeResourceVersion(m)
            | Failure::ConnectionRefused(m)
            | Failure::TooManyRequests(m)
            | Failure::Other(m) => m,
        }
    }

    /// The resourceVersion asked for cannot be served: "expired" or "too
    /// large" (client-go's `isExpiredError || isTooLargeResourceVersionError`).
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            Failure::Expired(_) | Failure::TooLargeResourceVersion(_)
        )
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.message())
    }
}

/// How a watch stream ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchEnd {
    /// The stream ended without an error (its timeout, or the server or the
    /// connection closed it).
    Closed,
    /// An ERROR event, or a stream that could not be read or decoded.
    Failed(Failure),
}
