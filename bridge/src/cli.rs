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

    /// Secret that viewers must present: open the page as
    /// http://HOST:PORT/?token=SECRET (scripts may send `Authorization:
    /// Bearer SECRET`). Required when --listen is not a loopback address.
    /// Prefer the environment variable: flags show in the process list.
    #[arg(
        long,
        env = "WATCHLIFE_TOKEN",
        hide_env_values = true,
        value_name = "SECRET"
    )]
    pub token: Option<String>,

    /// Serve anyone who can reach --listen, with no token: only on a network
    /// you trust entirely.
    #[arg(long, conflicts_with = "token")]
    pub insecure_no_auth: bool,

    /// Another origin whose pages may open the stream (the bridge's own always
    /// may), as scheme://host[:port]; repeat for several. For a reverse proxy
    /// or a page that embeds the app.
    #[arg(long, value_name = "ORIGIN")]
    pub allow_origin: Vec<String>,

    /// Pages that may show the app in a frame (CSP frame-ancestors): 'self',
    /// 'none', or origins; repeat for several.
    #[arg(long, value_name = "SOURCE", default_value = "'self'")]
    pub frame_ancestors: Vec<String>,

    /// Most viewers connected at once; the next one is refused with 503
    /// until one leaves.
    #[arg(long, default_value_t = 10_000, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub max_viewers: u32,

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
