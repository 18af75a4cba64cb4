//! From the hub to the viewers.
//!
//! - [`hub`]: one ordered stream, encoded once, a window for resuming
//!   viewers, and the current objects for a snapshot; [`deflate`], the
//!   stream compressed once for the viewers who take it so; [`patched`],
//!   updates' frames with their bodies as merge patches; [`frame_text`],
//!   a frame as the one text message every viewer is sent.
//! - [`server`]: routes (`/ws`, `/metrics`, `/healthz`, `/readyz`,
//!   `/version`, the app), the connection cap and graceful shutdown;
//!   [`assets`], the embedded app, and [`csp`], its security policy;
//!   [`readiness`], when a viewer sent here sees the whole cluster.
//! - [`access`]: who may connect (token, Origin, Host), the rules;
//!   [`guard`], their checks on the routes.
//! - [`viewer`]: one WebSocket connection, a session with one method per
//!   event; [`outbox`], its writes and their pace; [`compressed`], its
//!   messages when it takes them compressed; [`viewer_message`], what
//!   a viewer may say; [`rate_limit`], how often; [`liveness`], the
//!   heartbeat both ends go by.
//! - [`tap`]: `/tap`, where controllers' taps tell what they saw, relayed
//!   to the viewers; [`tap_history`], what the hub keeps of it for a
//!   viewer who joins.
//! - [`metrics`]: the Prometheus numbers.

pub mod access;
pub mod assets;
pub mod compressed;
pub mod csp;
pub mod deflate;
pub mod frame_text;
pub mod guard;
pub mod hub;
pub mod liveness;
pub mod metrics;
pub mod outbox;
pub mod patched;
pub mod rate_limit;
pub mod readiness;
pub mod server;
pub mod tap;
pub mod tap_history;
pub mod viewer;
pub mod viewer_message;
