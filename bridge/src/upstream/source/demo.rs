//! The embedded demo control plane as a source: its controllers and story
//! run in-process, its Kubernetes API is served on `--demo-api`, and the
//! bridge list-watches that API over HTTP like any other client.

use super::{SourceError, Upstream};
use crate::cli::Args;
use crate::upstream::connections::Connections;
use crate::upstream::source::stages::ServerStages;
use futures_util::future::BoxFuture;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use watchlife_controlplane::cacher::watcher::DEMO_BOOKMARK_FREQUENCY;
use watchlife_controlplane::control_plane::{ServedFrom, StreamRecord};
use watchlife_controlplane::controllers::Demo;
use watchlife_controlplane::limits::Limits;
use watchlife_controlplane::{Clock, ControlPlane};
use watchlife_protocol::{Origin, ServerAnswer, ServerPath, Source, Stage, StageMark, StageTimes};

/// What the bridge watches on the demo when `--resources` is not given: the
/// objects the story and its controllers change.
pub const DEFAULT_RESOURCES: [&str; 4] =
    ["pods", "configmaps", "deployments.apps", "replicasets.apps"];

/// File name of the kubeconfig written for the demo API.
const KUBECONFIG_NAME: &str = "demo.kubeconfig";

/// Starts the control plane, its controllers and story, and its API.
pub async fn start(args: &Args) -> Result<Upstream, SourceError> {
    let listener = tokio::net::TcpListener::bind(args.demo_api)
        .await
        .map_err(|source| SourceError::DemoApi {
            addr: args.demo_api,
            source,
        })?;
    let addr = listener
        .local_addr()
        .map_err(|source| SourceError::DemoApi {
            addr: args.demo_api,
            source,
        })?;
    let base = format!("http://{addr}");
    let token = crate::downstream::access::demo_api_token(args);
    // kubectl sends no credentials over plain HTTP: beyond loopback the
    // token also travels in the server URL's path, which the demo API's door
    // takes off before routing.
    let url = match &token {
        Some(token) => watchlife_demo_apiserver::door::server_url(&base, token),
        None => base.clone(),
    };
    // The demo's apiserver follows the release the Reflectors do
    // (`run` checked the flags before anything started).
    let profile = args.profile().unwrap_or_default();
    let cp = watchlife_demo_apiserver::stages::start_with_profile(
        Limits::DEMO,
        DEMO_BOOKMARK_FREQUENCY,
        profile,
    );
    let clock = cp.clock().clone();
    let options = watchlife_demo_apiserver::ServeOptions {
        token: token.clone(),
        ..watchlife_demo_apiserver::ServeOptions::default()
    };
    let api = cp.clone();
    tokio::spawn(async move {
        if let Err(e) =
            watchlife_demo_apiserver::serve_with(api, listener, options, std::future::pending())
                .await
        {
            tracing::error!("the demo API stopped: {e}");
        }
    });
    let pace = (!args.demo_idle).then(|| args.demo_pace());
    tokio::spawn(drive(Demo::new(cp.clone(), pace), clock));

    let kubeconfig = write_kubeconfig(addr.port(), &base, token.as_deref());
    let config = kube::Config::new(
        url.parse()
            .map_err(|e| SourceError::Config(format!("{e}")))?,
    );
    let connections =
        Connections::new(move || kube::Client::try_from(config.clone()).map_err(|e| e.to_string()))
            .map_err(SourceError::Config)?;
    Ok(Upstream {
        connections,
        source: Source::Demo { api: base },
        default_resources: DEFAULT_RESOURCES.iter().map(|s| s.to_string()).collect(),
        server_stages: Some(Arc::new(LedgerStages(cp.clone()))),
        observed: Stage::ALL.to_vec(),
        demo: Some(cp),
        kubeconfig,
    })
}

/// Writes the kubeconfig of the demo API at `base` (the token, if any, in
/// its path) and says how kubectl finds it; `None`, with a warning, when it
/// cannot be written: the demo runs on without it.
fn write_kubeconfig(port: u16, base: &str, token: Option<&str>) -> Option<Kubeconfig> {
    let path = kubeconfig_path(port);
    match watchlife_demo_apiserver::write_kubeconfig_with_token(&path, base, token) {
        Ok(()) => {
            println!(
                "the demo's Kubernetes API is at {base}{}; for kubectl:\n  export KUBECONFIG={}",
                if token.is_some() {
                    " (it asks for --token, which the kubeconfig carries)"
                } else {
                    ""
                },
                path.display()
            );
            Some(Kubeconfig(path))
        }
        Err(e) => {
            tracing::warn!(
                "could not write the demo kubeconfig {}: {e}",
                path.display()
            );
            None
        }
    }
}

/// The kubeconfig written for the demo's API, removed when dropped: a demo
/// that stopped leaves no file pointing at its port.
#[derive(Debug)]
pub struct Kubeconfig(PathBuf);

impl Drop for Kubeconfig {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Where the kubeconfig goes: beside watchlife's other files in the user's
/// cache, one per port, so two demos on two ports do not overwrite each other.
fn kubeconfig_path(port: u16) -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("watchlife")
        .join(format!("{port}-{KUBECONFIG_NAME}"))
}

/// Runs the controllers and the story, stepping again at once when the
/// control plane dispatched something (a change by kubectl or a demo action
/// reached the controllers' watches).
async fn drive(mut demo: Demo, clock: Clock) {
    let mut revisions = demo.control_plane().dispatches();
    loop {
        let wait = demo.step(clock.now());
        if wait.is_zero() {
            tokio::task::yield_now().await;
            continue;
        }
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            changed = revisions.changed() => if changed.is_err() { return },
        }
        // Let a burst of writes settle into one step.
        tokio::time::sleep(SETTLE).await;
    }
}

/// Pause after a change before the controllers look: a kubectl command often
/// writes several objects in a row, and one step seeing all of them is what a
/// real controller's informer would do.
const SETTLE: Duration = Duration::from_millis(5);

/// The demo's server-side stages, exact, from the control plane's ledger
/// and its record of each named stream.
struct LedgerStages(ControlPlane);

impl LedgerStages {
    /// The stage marks of a change before any watcher (commit, cache), from
    /// the ledger.
    fn change_stages(&self, revision: u64) -> Option<(StageTimes, Option<u64>, StageMark)> {
        let record = self.0.stage_times(revision)?;
        let t = record.times;
        let cached = StageMark {
            at: t.cached_at,
            depth: Some(t.incoming_depth),
        };
        let stages = StageTimes::from([
            (Stage::Etcd, StageMark::at(t.committed_at)),
            (Stage::WatchCache, cached),
        ]);
        Some((
            stages,
            Some(t.reflected_at),
            StageMark {
                at: record.dispatched_at,
                depth: Some(t.incoming_depth),
            },
        ))
    }
}

impl ServerStages for LedgerStages {
    /// The ledger records a change before any watcher can receive it: no wait.
    fn stages_of<'a>(&'a self, resource_version: &'a str) -> BoxFuture<'a, StageTimes> {
        let stages = resource_version
            .parse()
            .ok()
            .and_then(|rv| self.change_stages(rv))
            .map(|(stages, _, _)| stages)
            .unwrap_or_default();
        Box::pin(std::future::ready(stages))
    }

    fn stream_path(
        &self,
        client: &str,
        resource_version: &str,
    ) -> Option<(StageTimes, ServerPath)> {
        let revision = resource_version.parse().ok()?;
        let StreamRecord {
            origin,
            buffered_at,
            buffer_depth,
            written_at,
            ..
        } = self.0.stream_times(client, revision)?;
        let origin = match origin {
            watchlife_controlplane::Origin::Live => Origin::Live,
            watchlife_controlplane::Origin::Replayed => Origin::Replayed,
            watchlife_controlplane::Origin::Synthetic => Origin::Synthetic,
            watchlife_controlplane::Origin::Bookmark => return None,
        };
        let buffered = StageMark {
            at: buffered_at,
            depth: Some(buffer_depth),
        };
        let written = StageMark {
            at: written_at,
            depth: Some(buffer_depth),
        };
        // A synthetic ADDED is no change: nothing was committed or cached
        // for it, and the ledger's record of the object's last change is not
        // its own.
        let change = (origin != Origin::Synthetic)
            .then(|| self.change_stages(revision))
            .flatten();
        let (mut stages, reflected, dispatched) = match change {
            Some((stages, reflected, dispatched)) => (stages, reflected, Some(dispatched)),
            None => (StageTimes::new(), None, None),
        };
        stages.insert(Stage::WatchStream, written);
        Some((
            stages,
            ServerPath {
                origin,
                reflected,
                // A replayed event was dispatched to others, not to this stream.
                dispatched: dispatched.filter(|_| origin == Origin::Live),
                buffered,
                written: written_at,
            },
        ))
    }

    fn answer(&self, client: &str, list: bool) -> Option<ServerAnswer> {
        if list {
            let answer = self.0.last_list(client)?;
            if let Some(read) = answer.consistent {
                let revision = match answer.served {
                    ServedFrom::WatchCache { revision, .. } | ServedFrom::Store { revision } => {
                        revision
                    }
                };
                return Some(ServerAnswer::ConsistentList {
                    asked: answer.asked,
                    store_revision: read.store_revision,
                    revision,
                    items: answer.items,
                    waited_micros: read.waited,
                    from_cache: read.from_cache,
                });
            }
            Some(match answer.served {
                ServedFrom::WatchCache { revision, waited } => ServerAnswer::ListFromWatchCache {
                    asked: answer.asked,
                    revision,
                    items: answer.items,
                    waited_micros: waited,
                },
                ServedFrom::Store { revision } => ServerAnswer::ListFromEtcd {
                    asked: answer.asked,
                    revision,
                    items: answer.items,
                },
            })
        } else {
            let answer = self.0.last_watch(client)?;
            Some(
                if answer.synthetic > 0 || answer.asked.is_empty() || answer.asked == "0" {
                    ServerAnswer::WatchSynthetic {
                        asked: answer.asked,
                        events: answer.synthetic,
                    }
                } else {
                    ServerAnswer::WatchReplayed {
                        asked: answer.asked,
                        events: answer.replayed,
                    }
                },
            )
        }
    }
}
