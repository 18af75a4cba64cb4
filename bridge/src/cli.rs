//! Command-line flags.

use crate::scenario::{ClientSettings, Scenario};
use clap::{Parser, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use watchlife_informer::profile::{Gate, Profile, ProfileError, Release};
use watchlife_informer::reflector::SilentWatch;

/// watchlife: watch the life of Kubernetes watch events, live in the browser.
///
/// With no cluster configured, watchlife runs its embedded demo control plane
/// and a scripted workload, and serves the app at the printed URL.
#[derive(Debug, Clone, Parser)]
#[command(name = "watchlife", version, about, long_about)]
pub struct Args {
    #[command(subcommand)]
    pub command: Option<Command>,

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
    /// may), as `scheme://host[:port]`; repeat for several. For a reverse proxy
    /// or a page that embeds the app.
    #[arg(long, value_name = "ORIGIN")]
    pub allow_origin: Vec<String>,

    /// Accept controllers' taps on /tap (`watchlife-tap` in a kube-rs
    /// controller): their watcher events and reconciles are relayed to the
    /// viewers as the controller's own lane. Same token and Origin rules as
    /// viewers.
    #[arg(long)]
    pub accept_taps: bool,

    /// Pages that may show the app in a frame (CSP frame-ancestors): 'self',
    /// 'none', or origins; repeat for several.
    #[arg(long, value_name = "SOURCE", default_value = "'self'")]
    pub frame_ancestors: Vec<String>,

    /// Most viewers connected at once; the next one is refused with 503
    /// until one leaves.
    #[arg(long, default_value_t = 10_000, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub max_viewers: u32,

    /// A new viewer's snapshot carries the objects' bodies while they total
    /// at most this many bytes; above, only each object's reference,
    /// resourceVersion and a few columns, and the page fetches a body when
    /// the object is opened (0: always so).
    #[arg(long, default_value_t = crate::downstream::hub::SNAPSHOT_BODIES_LIMIT, value_name = "BYTES")]
    pub snapshot_bodies_limit: usize,

    /// Use the embedded demo control plane even when a cluster is configured.
    #[arg(global = true, long)]
    pub demo: bool,

    /// Pace of the demo's scripted workload, in changes per second (0.2 for a
    /// slow talk, 50 for a busy cluster).
    #[arg(global = true, long, default_value_t = 1.0, value_name = "PER_SECOND", value_parser = positive_rate)]
    pub demo_rate: f64,

    /// Keep the demo still: no scripted workload, only what you do (with
    /// kubectl or the demo actions).
    #[arg(global = true, long)]
    pub demo_idle: bool,

    /// Where the demo control plane serves the Kubernetes API, for kubectl and
    /// any other client (and for watchlife's own list-watch). Port 0 picks a
    /// free port. watchlife writes a kubeconfig for it and prints its path.
    #[arg(
        global = true,
        long,
        default_value = "127.0.0.1:8081",
        value_name = "ADDR"
    )]
    pub demo_api: SocketAddr,

    /// Kubeconfig file of the cluster to watch (default: $KUBECONFIG, then
    /// ~/.kube/config; inside a pod, its service account).
    #[arg(global = true, long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,

    /// Kubeconfig context to use instead of the current one.
    #[arg(global = true, long, value_name = "NAME")]
    pub context: Option<String>,

    /// Resources to list-watch, comma separated: plural names, with the API
    /// group for anything outside the core group (`pods,configmaps,
    /// deployments.apps,widgets.example.com`). Resolved through discovery.
    /// Default: pods on a cluster; pods, configmaps, deployments and
    /// replicasets on the demo.
    #[arg(global = true, long, value_delimiter = ',', value_name = "LIST")]
    pub resources: Vec<String>,

    /// Watch one namespace only (default: all namespaces).
    #[arg(global = true, long, short = 'n', value_name = "NAMESPACE")]
    pub namespace: Option<String>,

    /// Label selector applied to every list-watch (`app=web,tier!=cache`).
    #[arg(global = true, long, short = 'l', value_name = "SELECTOR")]
    pub selector: Option<String>,

    /// The cluster's etcd, to measure when each change was written
    /// (comma separated, such as https://10.0.0.5:2379). Without it, a
    /// cluster's server-side stages are shown as not observed.
    #[arg(global = true, long, value_delimiter = ',', value_name = "URLS")]
    pub etcd_endpoints: Vec<String>,

    /// CA certificate that signed etcd's serving certificate.
    #[arg(global = true, long, value_name = "FILE", requires = "etcd_endpoints")]
    pub etcd_cacert: Option<PathBuf>,

    /// Client certificate presented to etcd.
    #[arg(global = true, long, value_name = "FILE", requires_all = ["etcd_endpoints", "etcd_key"])]
    pub etcd_cert: Option<PathBuf>,

    /// Key of the client certificate presented to etcd.
    #[arg(global = true, long, value_name = "FILE", requires_all = ["etcd_endpoints", "etcd_cert"])]
    pub etcd_key: Option<PathBuf>,

    /// Resync period of the informers (`30s`, `5m`): every period, each
    /// object is delivered again to the handlers as an OnUpdate with the
    /// same resourceVersion, as client-go does. 0 (the default, as most
    /// controllers use) never resyncs.
    #[arg(global = true, long, default_value = "0", value_name = "DURATION", value_parser = duration)]
    pub resync: Duration,

    /// Workers taking keys from each informer's workqueue.
    #[arg(global = true, long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64))]
    pub workers: u32,

    /// How long `/readyz` waits for every resource's first list before it
    /// answers ready anyway, so that the page can show why a cluster does
    /// not answer (seconds; see `downstream::readiness`).
    #[arg(global = true, long, default_value_t = crate::downstream::readiness::READY_GRACE.as_secs(), value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(0..=3_600))]
    pub ready_grace: u64,

    /// Shortest server-side timeout a watch asks for, in seconds; each
    /// watch asks for a random time between this and twice this. client-go
    /// uses 300; shorter shows watches ending and resuming in a talk.
    #[arg(global = true, long, default_value_t = 300, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub min_watch_timeout: u64,

    /// A watch that says nothing (no event, no bookmark) for this many
    /// seconds is taken for dead, and the Reflector lists again. By default
    /// the release decides: 75 s under 1.36 (its apiserver sends a bookmark
    /// every minute), the watch's own timeout plus 5 s under 1.20.
    #[arg(global = true, long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub dead_watch_after: Option<u64>,

    /// The longest base delay between failed list-watch cycles, in seconds:
    /// client-go doubles it from 0.8 s up to 30 (waits then lie between 30
    /// and 60 s with jitter) and starts again at 0.8 s after two quiet
    /// minutes. A lower cap brings a dashboard back sooner from a run of
    /// failures (a fault drill, a flaky venue network), at the cost of more
    /// requests to a struggling apiserver.
    #[arg(global = true, long, default_value_t = 30, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=30))]
    pub backoff_cap: u64,

    /// client-go's `WatchListPageSize` for every Reflector: when set, each
    /// LIST is paged by it, a relist from a resourceVersion included, which
    /// the watch cache cannot serve (the store answers, or 410 once that
    /// revision is compacted, and the Reflector lists again from "": a
    /// consistent read). 0 (the default) pages as client-go's pager does.
    #[arg(global = true, long, default_value_t = 0, value_name = "N")]
    pub watch_list_page_size: u64,

    /// Which Kubernetes to behave as: `1.36` (client-go v0.36: streaming
    /// lists, RealFIFO; the demo's apiserver serves WatchList and consistent
    /// reads from its cache) or `1.20` (client-go v1.20: LIST then WATCH,
    /// DeltaFIFO; the demo's apiserver as v1.20's).
    #[arg(
        global = true,
        long = "kubernetes",
        default_value = "1.36",
        value_name = "RELEASE"
    )]
    pub kubernetes: Release,

    /// Feature gates of that release, as Kubernetes components take them
    /// (`WatchListClient=false,WatchList=false`): client-go's
    /// (WatchListClient, AtomicFIFO...) for the Reflectors, the apiserver's
    /// (WatchList, ListFromCacheSnapshot...) for the demo's. client-go's own
    /// `KUBE_FEATURE_<name>` variables are read first; this flag wins.
    #[arg(global = true, long, value_name = "NAME=BOOL,...", default_value = "")]
    pub feature_gates: String,
}

/// What to do instead of serving the app.
#[derive(Debug, Clone, Subcommand)]
pub enum Command {
    /// Write the frame stream to a file (JSON Lines: a header line, then one
    /// frame per line) instead of serving it; the app replays such a file
    /// with no bridge (`?replay=URL`, or drop the file on the page). Takes
    /// every source flag (--demo, --kubeconfig, --resources...); a real
    /// cluster's Secrets are redacted exactly as in the live stream.
    Record(RecordArgs),
}

/// Flags of `watchlife record`.
#[derive(Debug, Clone, clap::Args)]
pub struct RecordArgs {
    /// File to write. A name ending in `.gz` is gzipped.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,

    /// Gzip the recording whatever its name.
    #[arg(long)]
    pub gzip: bool,

    /// Stop after this many seconds (default: at Ctrl-C, or when the
    /// scenario ends).
    #[arg(long, value_name = "SECONDS", value_parser = positive_seconds)]
    pub duration: Option<f64>,

    /// Play a scenario on the demo control plane (implies --demo with no
    /// scripted workload and a free port for its API) and stop when it ends.
    #[arg(long, value_enum)]
    pub scenario: Option<Scenario>,

    /// A title kept in the recording's header (default: the scenario's name).
    #[arg(long)]
    pub title: Option<String>,

    /// Mark moments while recording: each line typed (Enter) marks the
    /// moment, the line its label. Written beside the recording as
    /// OUT.markers, which the replay page and `<watchlife-player
    /// markers-src>` read.
    #[arg(long)]
    pub marker: bool,
}

impl RecordArgs {
    /// Whether to gzip: asked for, or a `.gz` name.
    pub fn gzipped(&self) -> bool {
        self.gzip || self.out.extension().is_some_and(|e| e == "gz")
    }

    /// When to stop: `--duration`, if given.
    pub fn stop_after(&self) -> Option<Duration> {
        self.duration.map(Duration::from_secs_f64)
    }
}

/// A duration as `90`, `500ms`, `30s`, `5m` or `1h` (a bare number is seconds).
fn duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration such as 30s, 5m or 1h"))?;
    let seconds = match unit {
        "" | "s" => value,
        "ms" => value / 1000.0,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        other => return Err(format!("unknown unit {other:?}: use ms, s, m or h")),
    };
    if seconds.is_finite() && (0.0..=MAX_RESYNC_SECONDS).contains(&seconds) {
        Ok(Duration::from_secs_f64(seconds))
    } else {
        Err(format!(
            "must be between 0 and {MAX_RESYNC_SECONDS} seconds"
        ))
    }
}

/// Longest resync period accepted: a week; longer is the same as none.
const MAX_RESYNC_SECONDS: f64 = 7.0 * 24.0 * 3600.0;

/// Longest `watchlife record --duration`: a year. The bound keeps every
/// accepted value a `Duration` ([`RecordArgs::stop_after`]): `1e300`
/// seconds is finite and above 0, yet no `Duration`, and made the recorder
/// panic at start.
const MAX_RECORD_SECONDS: f64 = 365.0 * 24.0 * 3600.0;

fn positive_seconds(text: &str) -> Result<f64, String> {
    let seconds: f64 = text.parse().map_err(|e| format!("{e}"))?;
    if seconds > 0.0 && seconds <= MAX_RECORD_SECONDS {
        Ok(seconds)
    } else {
        Err(format!(
            "must be a number of seconds above 0 and at most {MAX_RECORD_SECONDS} (a year)"
        ))
    }
}

impl Args {
    /// The Kubernetes release and gates chosen: `--kubernetes`, then
    /// client-go's `KUBE_FEATURE_<name>` variables, then `--feature-gates`.
    pub fn profile(&self) -> Result<Profile, ProfileError> {
        let mut profile = Profile::new(self.kubernetes);
        let vars: Vec<(String, String)> = std::env::vars()
            .filter(|(k, _)| k.starts_with("KUBE_FEATURE_"))
            .collect();
        profile.set_from_env(vars.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
        profile.set_list(&self.feature_gates)?;
        Ok(profile)
    }

    /// How each Reflector behaves: client-go's defaults for the chosen
    /// release unless flags say otherwise.
    pub fn reflector(&self) -> Result<crate::upstream::reflector::Config, ProfileError> {
        Ok(crate::upstream::reflector::Config {
            min_watch_timeout: Duration::from_secs(self.min_watch_timeout),
            resync_period: self.resync,
            watch_list_page_size: self.watch_list_page_size,
            silent_watch: self.silent_watch(),
            backoff_cap: Duration::from_secs(self.backoff_cap),
            ..crate::upstream::reflector::Config::for_profile(self.profile()?)
        })
    }

    /// When a watch on the source is taken for dead: `--dead-watch-after`,
    /// else by the release's rules.
    fn silent_watch(&self) -> SilentWatch {
        if crate::test_break::is(crate::test_break::Break::TrustSilentWatch) {
            return SilentWatch::Trusted;
        }
        match self.dead_watch_after {
            Some(seconds) => SilentWatch::After(Duration::from_secs(seconds)),
            None => SilentWatch::ByRelease,
        }
    }

    /// Applies a scenario's [`ClientSettings`] over the user's flags: a gate
    /// is appended to `--feature-gates` (where it wins, as the last setting
    /// of a gate does), so the profile the Hello names shows it
    /// (`1.36 (WatchListClient=false)`).
    pub fn apply(&mut self, settings: ClientSettings) -> Result<(), ProfileError> {
        if settings.list_then_watch && self.profile()?.streams_lists() {
            let off = format!("{}=false", Gate::WatchListClient.name());
            self.feature_gates = match self.feature_gates.trim() {
                "" => off,
                gates => format!("{gates},{off}"),
            };
        }
        if settings.watch_list_page_size != 0 {
            self.watch_list_page_size = settings.watch_list_page_size;
        }
        Ok(())
    }

    /// The pause between two steps of the scripted workload.
    pub fn demo_pace(&self) -> Duration {
        Duration::from_secs_f64(1.0 / self.demo_rate)
    }
}

/// Highest demo rate: beyond this the story is a blur, and a benchmark wants
/// a load generator rather than a story.
const MAX_DEMO_RATE: f64 = 10_000.0;

/// Lowest demo rate: one change a day, already a still demo. A rate must
/// have a lower bound: [`Args::demo_pace`] is its inverse, and the pace of
/// a rate near 0 (`1e-20`) is beyond any `Duration`, which would panic at
/// start.
const MIN_DEMO_RATE: f64 = 1.0 / 86_400.0;

fn positive_rate(text: &str) -> Result<f64, String> {
    let rate: f64 = text.parse().map_err(|e| format!("{e}"))?;
    if (MIN_DEMO_RATE..=MAX_DEMO_RATE).contains(&rate) {
        Ok(rate)
    } else {
        Err(format!(
            "must be at least {MIN_DEMO_RATE:.6} (one change a day) and at most {MAX_DEMO_RATE}"
        ))
    }
}

#[cfg(test)]
mod duration_tests {
    use super::*;

    #[test]
    fn durations_read_as_kubernetes_flags_write_them() {
        assert_eq!(duration("0"), Ok(Duration::ZERO));
        assert_eq!(duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(duration("250ms"), Ok(Duration::from_millis(250)));
        assert!(duration("-1s").is_err());
        assert!(duration("1y").is_err());
        assert!(duration("99999999h").is_err());
    }

    #[test]
    fn demo_rates_near_zero_are_refused_not_a_panic() {
        assert!(positive_rate("1e-20").is_err());
        assert!(positive_rate("0").is_err());
        assert!(positive_rate("NaN").is_err());
        let slowest = Args::try_parse_from(["watchlife", "--demo-rate", "0.0000116"]).unwrap();
        assert!(slowest.demo_pace() <= Duration::from_secs(86_400));
    }

    #[test]
    fn record_durations_beyond_a_year_are_refused_not_a_panic() {
        assert!(positive_seconds("1e300").is_err());
        assert!(positive_seconds("inf").is_err());
        let year = Args::try_parse_from([
            "watchlife",
            "record",
            "--out",
            "x",
            "--duration",
            "31536000",
        ])
        .unwrap();
        let Some(Command::Record(record)) = year.command else {
            panic!("record is a subcommand");
        };
        assert_eq!(record.stop_after(), Some(Duration::from_secs(31_536_000)));
    }
}

#[cfg(test)]
mod scenario_settings_tests {
    use super::*;
    use crate::scenario::CONSISTENT_READ_PAGE_SIZE;

    fn configured(scenario: Scenario, flags: &[&str]) -> Args {
        let mut args =
            Args::try_parse_from(std::iter::once("watchlife").chain(flags.iter().copied()))
                .expect("the flags parse");
        args.apply(scenario.client_settings())
            .expect("the settings apply");
        args
    }

    #[test]
    fn consistent_read_lists_then_watches_in_pages_over_the_users_flags() {
        let args = configured(
            Scenario::ConsistentRead,
            &[
                "--feature-gates",
                "WatchList=false",
                "--watch-list-page-size",
                "40",
            ],
        );
        let profile = args.profile().unwrap();
        assert!(!profile.streams_lists());
        assert_eq!(
            profile.to_string(),
            "1.36 (WatchListClient=false,WatchList=false)"
        );
        assert_eq!(
            args.reflector().unwrap().watch_list_page_size,
            CONSISTENT_READ_PAGE_SIZE
        );
        // Even where the user turned the gate on.
        let args = configured(
            Scenario::ConsistentRead,
            &["--feature-gates", "WatchListClient=true"],
        );
        assert_eq!(
            args.profile().unwrap().to_string(),
            "1.36 (WatchListClient=false)"
        );
    }

    #[test]
    fn consistent_read_adds_no_gate_to_a_release_that_lists() {
        let args = configured(Scenario::ConsistentRead, &["--kubernetes", "1.20"]);
        assert_eq!(args.profile().unwrap().to_string(), "1.20");
        assert_eq!(
            args.reflector().unwrap().watch_list_page_size,
            CONSISTENT_READ_PAGE_SIZE
        );
    }

    #[test]
    fn other_scenarios_keep_the_users_flags() {
        let args = configured(
            Scenario::CompactionRelist,
            &["--watch-list-page-size", "40"],
        );
        assert_eq!(args.profile().unwrap().to_string(), "1.36");
        assert_eq!(args.reflector().unwrap().watch_list_page_size, 40);
    }
}
