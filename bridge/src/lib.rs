//! The watchlife bridge.
//!
//! # Layout
//! - [`cli`]: the command-line flags.
//! - [`run`] (here): picks the source, starts it, and serves until Ctrl-C
//!   (or, for `watchlife record`, hands over to [`record`]).
//! - [`record`]: the frame stream written to a file; [`scenario`], the short
//!   stories recorded from the demo for the docs.
//! - [`source`]: a real cluster (kube config) or the embedded demo control plane.
//! - [`target`]: the resources to watch, resolved through discovery.
//! - [`upstream`]: the runtime of everything before the hub, apart from the viewers'.
//! - [`watches`]: starts a Reflector and an informer pipeline per resource.
//! - [`reflector`]: ListAndWatch, written out as a state machine.
//! - [`etcd`]: a real cluster's etcd stage, by watching etcd directly.
//! - [`redact`]: what never leaves the bridge (Secret values, managed fields).
//! - [`pipeline`]: the informer stages (FIFO → Indexer → handlers → workqueue → reconcile) as tasks.
//! - [`hub`]: the fan-out — one ordered stream, encoded once, a window for resuming viewers.
//! - [`fanout`]: the demo watch cache's own fan-out, reported to viewers.
//! - [`viewer`]: one WebSocket connection, a session with one method per event; [`outbox`],
//!   its writes and their pace; [`viewer_message`], what a viewer may say; [`rate_limit`], how
//!   often; [`liveness`], the heartbeat both ends go by.
//! - [`server`]: routes (`/ws`, `/metrics`, `/healthz`, `/version`, the app), the connection
//!   cap and graceful shutdown; [`assets`], the embedded app, and [`csp`], its security policy.
//! - [`access`]: who may connect (token, Origin, Host), the rules; [`guard`], their checks on the
//!   routes; [`metrics`]: the Prometheus numbers.
//! - [`app`]: shared state, and the demo actions viewers may ask for (carried out by
//!   the core's `demo_action`).

pub mod access;
pub mod app;
pub mod assets;
pub mod cli;
pub mod csp;
pub mod etcd;
pub mod fanout;
pub mod guard;
pub mod hub;
pub mod liveness;
pub mod metrics;
pub mod outbox;
pub mod pipeline;
pub mod rate_limit;
pub mod record;
pub mod redact;
pub mod reflector;
pub mod scenario;
pub mod server;
pub mod source;
pub mod target;
pub mod test_break;
pub mod upstream;
pub mod viewer;
pub mod viewer_message;
pub mod watches;

use app::App;
use cli::Args;
use hub::Hub;
use std::sync::Arc;
use watches::Watches;
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
    upstream::run(start_upstream(args.clone(), hub, clock)).await
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
        client: upstream.client.clone(),
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
        None => cluster_version(&upstream.client).await,
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
