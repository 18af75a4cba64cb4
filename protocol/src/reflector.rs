//! The Reflector's own life, reported as it happens.

use serde::{Deserialize, Serialize};

pub use watchlife_watch::ReflectorState;

/// A change in the state of the Reflector that list-watches one resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReflectorUpdate {
    /// Resource the Reflector watches (`pods`, `deployments.apps`).
    pub resource: String,
    #[serde(flatten)]
    pub state: ReflectorState,
}
