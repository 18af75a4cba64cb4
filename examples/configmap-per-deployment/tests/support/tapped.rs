//! The example controller run with its tap, on the test's thread.

use configmap_per_deployment::{Journal, Reconciled, run_tapped};
use tokio::task::JoinHandle;
use tracing_subscriber::prelude::*;
use watchlife_tap::{Tap, TapConfig};

/// A running tapped controller. The tap's layer is this thread's tracing
/// subscriber while it lives, so the test runs on one thread
/// (`flavor = "current_thread"`) with every task of the controller and kube.
pub struct Tapped {
    pub tap: Tap,
    pub journal: Journal,
    controller: JoinHandle<()>,
    _subscriber: tracing::subscriber::DefaultGuard,
}

impl Tapped {
    /// Starts the controller on `client` with a tap made from `config`,
    /// keeping its journal.
    pub fn start(client: &kube::Client, config: TapConfig) -> Tapped {
        let tap = Tap::connect(config).unwrap();
        let subscriber =
            tracing::subscriber::set_default(tracing_subscriber::registry().with(tap.layer()));
        let journal = Journal::keeping();
        let controller = tokio::spawn(run_tapped(client.clone(), journal.clone(), tap.clone()));
        Tapped {
            tap,
            journal,
            controller,
            _subscriber: subscriber,
        }
    }

    /// Stops the controller and returns its journal, then whole.
    pub async fn stop(&mut self) -> Vec<Reconciled> {
        self.controller.abort();
        let _ = (&mut self.controller).await;
        self.journal.entries()
    }
}
