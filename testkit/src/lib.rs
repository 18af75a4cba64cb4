//! Test support shared by the demo API's tests (`demo-apiserver/tests/`) and
//! the real-cluster tests (`tests/`), so the watch semantics are checked by
//! one copy of the code against both servers.
//!
//! # Layout
//! - [`client`]: a Kubernetes HTTP client, plain HTTP or TLS trusting one CA,
//!   with an optional bearer token; reads watch streams line by line.
//! - [`suite`]: the watch-semantics checks, written against the HTTP API only.

pub mod client;
pub mod suite;
