//! How the bridge and a viewer tell that their connection is alive: a
//! heartbeat on a period, and a silence long enough to call the other end
//! gone. Both ends apply the same rule; the viewer learns the period from
//! `hello` ([`crate::app::App::hello`]), the bridge applies it in
//! [`crate::downstream::viewer`].

use std::time::Duration;

/// How often a heartbeat goes out (with a WebSocket ping). A viewer that hears
/// nothing for three periods calls the connection stalled: a dead link is
/// noticed within seconds.
pub const HEARTBEAT: Duration = Duration::from_secs(5);

/// How long the bridge waits for any sign of life from a viewer (a message,
/// or the pong a browser sends by itself for every ping), and for one write
/// to it to complete, before it calls the viewer gone. Three heartbeats: the
/// same rule the viewer applies to the bridge, so a dead connection is
/// noticed from both ends within 15 to 20 seconds.
pub const DEAD_AFTER: Duration = Duration::from_secs(3 * HEARTBEAT.as_secs());
