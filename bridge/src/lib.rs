//! The watchlife bridge: list-watches a source and fans its events out to
//! viewers. Its two halves meet at the hub.
//!
//! # Layout
//! - [`upstream`]: from the source to the hub. The source (a cluster or the
//!   embedded demo), the resources resolved through discovery, a Reflector
//!   and an informer pipeline per resource, a cluster's etcd, redaction.
//! - [`downstream`]: from the hub to the viewers. The hub (one ordered
//!   stream, encoded once), the routes and their guards, each viewer's
//!   session, the metrics.
//! - [`cli`]: the command-line flags; [`run`] (here): picks the source,
//!   starts it, and serves until Ctrl-C (or, for `watchlife record`, hands
//!   over to [`record`]); [`scenario`]: the short stories recorded from the
//!   demo for the docs.
//! - [`app`]: shared state, and the demo actions viewers may ask for
//!   (carried out by the core's `demo_action`).
//! - [`test_break`]: faults the tests switch on, compiled only with the
//!   `test-break` feature.

pub mod app;
pub mod cli;
pub mod downstream;
pub mod record;
pub mod record_marks;
pub mod scenario;
pub mod test_break;
pub mod upstream;

use app::App;
use cli::Args;
use downstream::hub::Hub;
use downstream::{access, assets, hub, server};
use std::sync::Arc;
use upstream::watches::Watches;
use upstream::{fanout, source, target};
use watchlife_controlplane::Clock;

/// Why the bridge could not run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("cannot listen on {addr}: {source}{hint}")]
    Listen {
        addr: std::net::SocketAddr,
        source: std::io::Error,
        hint: &'static str,
    },
    #[error(transparent)]
    Source(#[from] source::SourceError),
    #[error("{0}")]
    Resources(#[from] target::ResolveError),
    #[error("the server failed: {0}")]
    Serve(std::io::Error),
    /// The flags break an access rule (see [`access`]).
    #[error("{0}")]
    Access(#[from] access::AccessError),
    /// `--kubernetes`, `--feature-gates` or a `KUBE_FEATURE_` variable
    /// names what that release does not have.
    #[error("{0}")]
    Profile(#[from] watchlife_informer::profile::ProfileError),
    /// `watchlife record` could not write its file, or its scenario failed.
    #[error(transparent)]
    Record(#[from] record::RecordError),
}

/// Runs the bridge until Ctrl-C (or SIGTERM).
pub async fn run(args: Args) -> Result<(), RunError> {
    // The demo API is served without a token: never beyond loopback.
    access::check_demo_api(&args)?;
    // A release or gate that does not exist is refused before anything starts.
    args.profile()?;
    if let Some(cli::Command::Record(record)) = &args.command {
        return record::run(&args, record).await;
    }
    // Who may connect, and how many: refused before anything starts.
    let server_config = server::ServerConfig::from_args(&args)?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|source| RunError::Listen {
            addr: args.listen,
            hint: if source.kind() == std::io::ErrorKind::AddrInUse {
                " (is another watchlife running? choose another address with --listen)"
            } else {
                ""
            },
            source,
        })?;
    let local = listener.local_addr().map_err(RunError::Serve)?;
    let clock = Clock::system();
    let hub = Hub::new(hub::stream_id(clock.now()))
        .with_snapshot_bodies_limit(args.snapshot_bodies_limit);
    let app = Arc::new(start_on(&args, hub, clock).await?);
    if !assets::is_built() {
        tracing::warn!("this binary was built without the browser app; run `make run` to build it");
    }
    println!("watchlife is serving http://{local}/");
    server::serve(listener, app, server_config, shutdown_signal())
        .await
        .map_err(RunError::Serve)
}

/// Connects the source and starts the list-watch of every resource,
/// publishing to `hub`, on the [`upstream`] runtime.
async fn start_on(args: &Args, hub: Hub, clock: Clock) -> Result<App, RunError> {
    upstream::runtime::run(start_upstream(args.clone(), hub, clock)).await
}

async fn start_upstream(args: Args, hub: Hub, clock: Clock) -> Result<App, RunError> {
    let args = &args;
    let upstream = source::choose(args).await?;
    let names = if args.resources.is_empty() {
        &upstream.default_resources
    } else {
        &args.resources
    };
    let resources = Watches {
        connections: upstream.connections.clone(),
        names: names.clone(),
        namespace: args.namespace.clone(),
        selector: args.selector.clone(),
        hub: hub.clone(),
        clock: clock.clone(),
        server: upstream.server_stages.clone(),
        reflector: args.reflector()?,
        workers: args.workers,
    }
    .start()
    .await?;
    if let Some(cp) = &upstream.demo {
        fanout::spawn_reporter(cp.clone(), hub.clone());
    }
    // The demo's apiserver is watchlife's own: its `/version` names the
    // kubectl it is tested with, not a Kubernetes it runs.
    let cluster_version = match upstream.demo {
        Some(_) => None,
        None => cluster_version(&upstream.connections.client()).await,
    };
    Ok(App {
        hub,
        source: upstream.source,
        resources,
        observed_stages: upstream.observed,
        demo: upstream.demo,
        clock,
        kubeconfig: upstream.kubeconfig,
        kubernetes: args.profile()?.to_string(),
        cluster_version,
    })
}

/// How long the bridge waits for the apiserver's `/version` at start: the
/// header shows it, but an unreachable cluster must not hold the page back.
const VERSION_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// The apiserver's `gitVersion`, if `/version` answers in time.
async fn cluster_version(client: &kube::Client) -> Option<String> {
    match tokio::time::timeout(VERSION_WAIT, client.apiserver_version()).await {
        Ok(Ok(info)) => Some(info.git_version),
        Ok(Err(e)) => {
            tracing::info!("the apiserver's /version did not answer: {e}");
            None
        }
        Err(_) => None,
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = terminate => {} }
}
