//! Command-line flags.

use clap::Parser;
use std::net::SocketAddr;
use std::time::Duration;

/// watchlife: watch the life of Kubernetes watch events, live in the browser.
///
/// With no cluster configured, watchlife runs its embedded demo control plane
/// and a scripted workload, and serves the app at the printed URL.
#[derive(Debug, Clone, Parser)]
#[command(name = "watchlife", version, about, long_about)]
pub struct Args {
    /// Address to serve the app and the WebSocket stream on. Loopback by default:
    /// nothing on the network can see the stream unless you choose so.
    #[arg(long, default_value = "127.0.0.1:8080", env = "WATCHLIFE_LISTEN")]
    pub listen: SocketAddr,

    /// Use the embedded demo control plane even when a cluster is configured.
    #[arg(long)]
    pub demo: bool,

    /// Pace of the demo's scripted workload, in changes per second (0.2 for a
    /// slow talk, 50 for a busy cluster).
    #[arg(long, default_value_t = 1.0, value_name = "PER_SECOND", value_parser = positive_rate)]
    pub demo_rate: f64,

    /// Keep the demo still: no scripted workload, only what you do (with
    /// kubectl or the demo actions).
    #[arg(long)]
    pub demo_idle: bool,
}

impl Args {
    /// The pause between two steps of the scripted workload.
    pub fn demo_pace(&self) -> Duration {
        Duration::from_secs_f64(1.0 / self.demo_rate)
    }
}

/// Highest demo rate: beyond this the story is a blur, and a benchmark wants
/// a load generator rather than a story.
const MAX_DEMO_RATE: f64 = 10_000.0;

fn positive_rate(text: &str) -> Result<f64, String> {
    let rate: f64 = text.parse().map_err(|e| format!("{e}"))?;
    if rate > 0.0 && rate <= MAX_DEMO_RATE {
        Ok(rate)
    } else {
        Err(format!("must be above 0 and at most {MAX_DEMO_RATE}"))
    }
}
