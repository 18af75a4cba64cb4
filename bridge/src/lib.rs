//! The watchlife bridge.
//!
//! # Layout
//! - [`cli`]: the command-line flags.
//! - [`run`] (here): picks the source, starts it, and serves until Ctrl-C.
//! - [`demo_source`]: list-watch of the embedded demo control plane.
//! - [`pipeline`]: the informer stages (FIFO → Indexer → handlers → workqueue → reconcile) as tasks.
//! - [`hub`]: the fan-out — one ordered stream, encoded once, a window for resuming viewers.
//! - [`viewer`]: one WebSocket connection.
//! - [`server`]: routes (`/ws`, `/healthz`, `/version`, the app) and [`assets`], the embedded app.
//! - [`app`] and [`actions`]: shared state, and the demo actions viewers may ask for.

pub mod actions;
pub mod app;
pub mod assets;
pub mod cli;
pub mod demo_source;
pub mod hub;
pub mod pipeline;
pub mod server;
pub mod viewer;

use app::App;
use cli::Args;
use hub::Hub;
use std::sync::Arc;
use watchlife_controlplane::resource::{CONFIGMAPS, PODS};
use watchlife_controlplane::story::Story;
use watchlife_controlplane::{Clock, ControlPlane};
use watchlife_protocol::Source;

/// Why the bridge could not run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("cannot listen on {addr}: {source}{hint}")]
    Listen {
        addr: std::net::SocketAddr,
        source: std::io::Error,
        hint: &'static str,
    },
    #[error("the server failed: {0}")]
    Serve(std::io::Error),
}

/// Runs the bridge until Ctrl-C (or SIGTERM).
pub async fn run(args: Args) -> Result<(), RunError> {
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
    let app = Arc::new(start_demo(&args));
    if !assets::is_built() {
        tracing::warn!("this binary was built without the browser app; run `make run` to build it");
    }
    println!("watchlife is serving http://{local}/  (source: embedded demo control plane)");
    axum::serve(listener, server::router(app))
        .with_graceful_shutdown(shutdown_signal())
        .await
        .map_err(RunError::Serve)
}

/// Starts the embedded demo control plane, its scripted workload, and the
/// list-watch of it.
fn start_demo(args: &Args) -> App {
    let clock = Clock::system();
    let cp = ControlPlane::new(clock.clone());
    let hub = Hub::new(format!("{:x}", clock.now()));
    let resources = [PODS, CONFIGMAPS];
    for rt in resources {
        let pipeline = pipeline::Pipeline::start(hub.clone(), clock.clone());
        tokio::spawn(demo_source::reflect(cp.clone(), rt, hub.clone(), pipeline));
    }
    if !args.demo_idle {
        let (cp, pace) = (cp.clone(), args.demo_pace());
        tokio::spawn(async move {
            let mut story = Story::new();
            loop {
                match story.step(&cp, pace) {
                    Ok(wait) => tokio::time::sleep(wait).await,
                    Err(e) => {
                        tracing::warn!("the demo story stopped: {e}");
                        return;
                    }
                }
            }
        });
    }
    App {
        hub,
        source: Source::Demo {
            api: "in-process".into(),
        },
        resources: resources.iter().map(|r| r.qualified_name()).collect(),
        observed_stages: demo_source::OBSERVED.to_vec(),
        demo: Some(cp),
        clock,
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
