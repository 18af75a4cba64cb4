//! One bridge of a run: its process, its log, and the full-speed viewer
//! that always watches it directly. A run has [`REPLICAS`] of them behind
//! the viewers' load balancer, as `deploy/replicas` runs them: each holds
//! its own watches through the same proxies, and every fault reaches both.

use super::invariants;
use crate::bridge::Bridge;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// Bridges a run starts unless told otherwise.
pub const REPLICAS: usize = 2;

/// One bridge and what the run knows of it.
pub(super) struct Replica {
    pub(super) bridge: Bridge,
    pub(super) log: PathBuf,
    /// The follower that watches this bridge and no other (an index into
    /// the rig's followers): it reads every frame, so the streaming lists
    /// and the failures it is told are this bridge's.
    pub(super) pinned: usize,
}

impl Replica {
    /// Starts `watchlife` on `addr` with `args` and `env`, its output
    /// appended to `log`.
    pub(super) async fn start(
        addr: SocketAddr,
        args: &[String],
        env: &[(String, String)],
        log: &Path,
    ) -> Bridge {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        Bridge::start_logged(addr, &args, &env, log).await
    }

    async fn metrics(&self) -> Result<String, String> {
        let reply = crate::http::get(self.bridge.addr, "/metrics")
            .await
            .map_err(|e| format!("the bridge does not answer /metrics: {e}"))?;
        if reply.status != 200 {
            return Err(format!("the bridge answers /metrics with {}", reply.status));
        }
        Ok(reply.text())
    }

    /// LISTs (first pages) this process has made.
    pub(super) async fn lists(&self) -> Result<u64, String> {
        Ok(invariants::metric(&self.metrics().await?, "watchlife_lists_total") as u64)
    }

    pub(super) fn log_len(&self) -> u64 {
        std::fs::metadata(&self.log).map_or(0, |m| m.len())
    }

    pub(super) fn log_since(&self, offset: u64) -> String {
        let text = std::fs::read(&self.log).unwrap_or_default();
        String::from_utf8_lossy(&text[(offset as usize).min(text.len())..]).into_owned()
    }
}
