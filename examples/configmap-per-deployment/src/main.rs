//! `configmap-per-deployment`: the example controller, with its tap when
//! `--watchlife` (or `$WATCHLIFE_URL`) is given.

use std::path::PathBuf;

use clap::Parser;
use configmap_per_deployment::{Journal, run, run_tapped};
use kube::config::{KubeConfigOptions, Kubeconfig};
use tracing_subscriber::prelude::*;
use tracing_subscriber::{EnvFilter, fmt};
use watchlife_tap::{Tap, TapConfig};

/// Keeps a ConfigMap `<name>-replicas` per Deployment with its replica
/// count, and shows its reconciles in a running watchlife.
#[derive(Parser)]
struct Args {
    /// The cluster's kubeconfig (else `$KUBECONFIG`, `~/.kube/config`, or
    /// in-cluster); `watchlife --demo` prints the demo's.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// watchlife's address (`http://127.0.0.1:8080`): the tap sends there.
    #[arg(long, env = "WATCHLIFE_URL")]
    watchlife: Option<String>,
    /// watchlife's viewer token, if it asks for one.
    #[arg(long, env = "WATCHLIFE_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// The controller's name in watchlife.
    #[arg(long, default_value = "configmap-per-deployment")]
    name: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let client = client(args.kubeconfig.as_ref()).await?;
    let Some(url) = args.watchlife else {
        tracing_subscriber::registry().with(log()).init();
        run(client, Journal::default()).await;
        return Ok(());
    };
    let mut config = TapConfig::new(url, args.name);
    if let Some(token) = args.token {
        config = config.token(token);
    }
    let tap = Tap::connect(config)?;
    tracing_subscriber::registry()
        .with(tap.layer())
        .with(log())
        .init();
    run_tapped(client, Journal::default(), tap).await;
    Ok(())
}

/// The printed log, `$RUST_LOG` (default `info`), filtered on its own so
/// that the tap's layer still sees kube's spans.
fn log<S>() -> impl tracing_subscriber::Layer<S>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    fmt::layer()
        .with_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")))
}

/// A client from `--kubeconfig`, else kube's usual places.
async fn client(kubeconfig: Option<&PathBuf>) -> Result<kube::Client, Box<dyn std::error::Error>> {
    let Some(path) = kubeconfig else {
        return Ok(kube::Client::try_default().await?);
    };
    let kubeconfig = Kubeconfig::read_from(path)?;
    let config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    Ok(kube::Client::try_from(config)?)
}
