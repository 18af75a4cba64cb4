//! The four clients of the first sync, and one client's first sync measured:
//! from spawning its process until it has synced and until its handler has
//! been called for every object, its peak resident memory, and the
//! apiserver's meanwhile.

use super::client_go;
use crate::machine::{peak_rss_bytes, reset_peak_rss, rss_bytes};
use crate::process::{Watchlife, get, metric};
use std::any::Any;
use std::path::Path;
use std::time::{Duration, Instant};
use watchlife_tests::modern_cluster::{GROUP, RESOURCE, VERSION};

/// How long a first sync may take before the bench gives up on it.
const TIMEOUT: Duration = Duration::from_secs(300);
/// How often watchlife's `/metrics` is read while the objects go through
/// its informer.
const POLL: Duration = Duration::from_millis(20);
/// How long after the last handler call the peaks are read: what the client
/// frees or keeps once it has synced is in them by then.
const AFTER: Duration = Duration::from_secs(2);
/// The widgets as watchlife names the resource pinned to its version (the
/// apiserver has no `/apis` root for discovery).
const WATCHLIFE_RESOURCE: &str = "widgets.v1.watchlife.example";
/// watchlife's count of OnAdd calls by its informer's unfiltered listener,
/// counted as each event is published (every stage done).
const ON_ADD_CALLS: &str =
    r#"watchlife_handler_calls_total{listener="controller",callback="OnAdd"}"#;

/// A client whose first sync is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    /// `watchlife --kubernetes 1.36`, with `WatchListClient` on or off.
    Watchlife { streaming: bool },
    /// client-go v0.36.4's dynamic informer, with its WatchListClient gate
    /// at its default (on) or turned off with `KUBE_FEATURE_WatchListClient=false`.
    ClientGo { streaming: bool },
}

/// The order in which the first run measures them; later runs rotate it.
pub const CLIENTS: [Client; 4] = [
    Client::Watchlife { streaming: true },
    Client::ClientGo { streaming: true },
    Client::Watchlife { streaming: false },
    Client::ClientGo { streaming: false },
];

impl Client {
    /// The row's name: the command and what it asks the apiserver.
    pub fn label(self) -> &'static str {
        match self {
            Client::Watchlife { streaming: true } => {
                "`watchlife --kubernetes 1.36`: streaming list"
            }
            Client::Watchlife { streaming: false } => {
                "`watchlife --kubernetes 1.36 --feature-gates WatchListClient=false`: LIST, then WATCH"
            }
            Client::ClientGo { streaming: true } => {
                "client-go v0.36.4 dynamic informer: streaming list"
            }
            Client::ClientGo { streaming: false } => {
                "client-go v0.36.4 with `KUBE_FEATURE_WatchListClient=false`: LIST, then WATCH"
            }
        }
    }

    pub fn streaming(self) -> bool {
        match self {
            Client::Watchlife { streaming } | Client::ClientGo { streaming } => streaming,
        }
    }
}

/// One first sync.
#[derive(Debug, Clone, Copy)]
pub struct FirstSync {
    /// Spawn → synced: client-go's HasSynced; watchlife's Reflector has
    /// the whole list (its `initial_events_end` or `list_finished` report).
    pub synced: Duration,
    /// Spawn → the handler called (OnAdd) for every object.
    pub handled: Duration,
    /// Whether the client streamed its list, as it reported.
    pub streamed: bool,
    pub client_peak: u64,
    /// The client's resident memory [`AFTER`] the last OnAdd.
    pub client_after: u64,
    pub apiserver_before: u64,
    pub apiserver_peak: u64,
}

/// What a measurement needs: the programs, the cluster's kubeconfig, the
/// apiserver's process.
pub struct Setup<'a> {
    pub watchlife: &'a Path,
    pub client_go: &'a Path,
    pub kubeconfig: &'a Path,
    pub apiserver_pid: u32,
    pub objects: usize,
}

/// Measures `client`'s first sync against the apiserver as it is now.
pub async fn measure(client: Client, setup: &Setup<'_>) -> Result<FirstSync, String> {
    let apiserver_before = rss_bytes(setup.apiserver_pid).ok_or("the apiserver is gone")?;
    if !reset_peak_rss(setup.apiserver_pid) {
        return Err("cannot reset the apiserver's peak memory (/proc/PID/clear_refs)".into());
    }
    let start = Instant::now();
    // The client's process lives until its memory is read.
    let (mut sync, pid, _alive): (FirstSync, u32, Box<dyn Any + Send>) = match client {
        Client::Watchlife { streaming } => {
            let bridge = start_watchlife(setup, streaming)?;
            let sync = watchlife_first_sync(&bridge, start, setup.objects).await?;
            let pid = bridge.pid();
            (sync, pid, Box::new(bridge))
        }
        Client::ClientGo { streaming } => {
            let gate = [("KUBE_FEATURE_WatchListClient", "false")];
            let env: &[(&str, &str)] = if streaming { &[] } else { &gate };
            let mut informer = client_go::Informer::start(
                setup.client_go,
                setup.kubeconfig,
                (GROUP, VERSION, RESOURCE),
                setup.objects,
                env,
            )?;
            let reported =
                tokio::task::block_in_place(|| informer.wait_synced_and_handled(TIMEOUT))?;
            let since = |at: Option<Instant>| at.map_or(Duration::ZERO, |at| at - start);
            let sync = FirstSync {
                synced: since(reported.synced),
                handled: since(reported.handled),
                streamed: reported.watch_list_client == Some(true),
                client_peak: 0,
                client_after: 0,
                apiserver_before,
                apiserver_peak: 0,
            };
            let pid = informer.pid();
            (sync, pid, Box::new(informer))
        }
    };
    tokio::time::sleep(AFTER).await;
    sync.client_peak = peak_rss_bytes(pid).ok_or("the client is gone")?;
    sync.client_after = rss_bytes(pid).ok_or("the client is gone")?;
    sync.apiserver_before = apiserver_before;
    sync.apiserver_peak = peak_rss_bytes(setup.apiserver_pid).ok_or("the apiserver is gone")?;
    Ok(sync)
}

fn start_watchlife(setup: &Setup<'_>, streaming: bool) -> Result<Watchlife, String> {
    let kubeconfig = setup
        .kubeconfig
        .to_str()
        .ok_or("a kubeconfig path not UTF-8")?;
    // v1.36's rules, over the widgets of every namespace.
    let mut args = vec!["--kubernetes", "1.36", "--kubeconfig", kubeconfig];
    args.extend(["--resources", WATCHLIFE_RESOURCE]);
    if !streaming {
        args.extend(["--feature-gates", "WatchListClient=false"]);
    }
    Watchlife::start(setup.watchlife, &args)
}

/// watchlife's first sync: its Reflector's report that the list is whole
/// (read by a viewer that hears only the Reflector), then its informer's
/// OnAdd calls counted in `/metrics` until they reach `objects`.
async fn watchlife_first_sync(
    bridge: &Watchlife,
    start: Instant,
    objects: usize,
) -> Result<FirstSync, String> {
    let (synced, streamed) = reflector_has_the_list(bridge, start).await?;
    let deadline = start + TIMEOUT;
    let handled = loop {
        let calls = get(bridge.addr, "/metrics")
            .await
            .and_then(|m| metric(&m, ON_ADD_CALLS));
        if calls.is_some_and(|c| c >= objects as f64) {
            break start.elapsed();
        }
        if Instant::now() > deadline {
            return Err(format!(
                "watchlife's handler saw {calls:?} of {objects} objects in time"
            ));
        }
        tokio::time::sleep(POLL).await;
    };
    Ok(FirstSync {
        synced,
        handled,
        streamed,
        client_peak: 0,
        client_after: 0,
        apiserver_before: 0,
        apiserver_peak: 0,
    })
}

/// The time since `start` when the bridge's Reflector reports its first
/// list whole, and whether it streamed it.
async fn reflector_has_the_list(
    bridge: &Watchlife,
    start: Instant,
) -> Result<(Duration, bool), String> {
    let mut streamed = false;
    let late = "watchlife's Reflector did not list in time";
    bridge
        .hear_reflector(TIMEOUT, late, |frame| {
            if frame.contains(r#""state":"streaming_list_started""#) {
                streamed = true;
            }
            if frame.contains(r#""state":"streaming_list_failed""#) {
                streamed = false;
            }
            (frame.contains(r#""state":"initial_events_end""#)
                || frame.contains(r#""state":"list_finished""#))
            .then(|| (start.elapsed(), streamed))
        })
        .await
}
