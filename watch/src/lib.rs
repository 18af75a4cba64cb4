//! The words of list-watch that both sides speak, defined once.
//!
//! The informer crate works in them and the protocol crate carries them as
//! they are, so neither depends on the other: the same split as
//! Kubernetes' own `apimachinery/pkg/watch`, which client-go and the
//! apiserver both import.
//!
//! - [`EventType`]: what a watch event says happened.
//! - [`ReflectorState`]: what a Reflector reports of its list-watch cycle.
//! - [`ServerAnswer`]: who answered one of its requests, where the server
//!   tells.
//!
//! Their serde forms are the wire's (`docs/protocol.md`); a change to one
//! must keep old recordings readable.

mod event_type;
mod reflector_state;
mod server_answer;

pub use event_type::EventType;
pub use reflector_state::ReflectorState;
pub use server_answer::ServerAnswer;

/// Microseconds since the Unix epoch: the one time unit, in the informer and
/// on the wire.
///
/// Microseconds because a stage can take less than a millisecond in-process; a
/// `u64` of them stays exact in a JavaScript number until the year 2255.
pub type Micros = u64;
