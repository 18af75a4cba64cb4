//! An example kube-rs controller: for every Deployment, a ConfigMap
//! `<name>-replicas` holding its replica count (`data.replicas`), owned by
//! the Deployment. With [`watchlife_tap`], it shows in watchlife live.
//!
//! [`run`] is the whole controller; the binary (`main.rs`) only reads its
//! flags. The tap is the few lines in [`run_tapped`].

mod journal;

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::{Controller, WatchStreamExt, reflector, watcher};
use kube::{Api, Client, Resource, ResourceExt};
use watchlife_tap::{Tap, WatchTapExt};

pub use journal::{Journal, Reconciled};

/// The field manager of the ConfigMaps' server-side apply.
pub const MANAGER: &str = "configmap-per-deployment";
/// The resync a healthy object asks for: a change is seen by the watch; this
/// is the safety net for a missed one.
pub const RESYNC: Duration = Duration::from_secs(300);
/// The retry after a failed reconcile.
pub const RETRY: Duration = Duration::from_secs(5);

/// What the reconciler needs.
pub struct Context {
    pub client: Client,
    /// The controller's own log of what it reconciled.
    pub journal: Journal,
}

/// Why a reconcile failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the Deployment has no namespace or name")]
    Unnamed,
    #[error("applying the ConfigMap: {0}")]
    Apply(#[from] kube::Error),
}

/// The ConfigMap's name for a Deployment.
pub fn configmap_name(deployment: &str) -> String {
    format!("{deployment}-replicas")
}

/// Applies the Deployment's ConfigMap (server-side apply, owned by it).
pub async fn reconcile(deployment: Arc<Deployment>, ctx: Arc<Context>) -> Result<Action, Error> {
    let result = apply(&deployment, &ctx.client).await;
    ctx.journal.push(&deployment, &result);
    result
}

async fn apply(deployment: &Deployment, client: &Client) -> Result<Action, Error> {
    let (Some(namespace), Some(name)) = (deployment.namespace(), deployment.meta().name.clone())
    else {
        return Err(Error::Unnamed);
    };
    let replicas = deployment.spec.replicas.unwrap_or(1);
    let owner = deployment.controller_owner_ref(&()).ok_or(Error::Unnamed)?;
    let configmap = serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": { "name": configmap_name(&name), "ownerReferences": [owner] },
        "data": { "replicas": replicas.to_string() },
    });
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
    let params = PatchParams::apply(MANAGER).force();
    api.patch(&configmap_name(&name), &params, &Patch::Apply(&configmap))
        .await?;
    Ok(Action::requeue(RESYNC))
}

/// Retries a failed reconcile after [`RETRY`].
pub fn error_policy(_: Arc<Deployment>, _: &Error, _: Arc<Context>) -> Action {
    Action::requeue(RETRY)
}

/// Runs the controller without a tap, as kube-rs's documentation writes one.
pub async fn run(client: Client, journal: Journal) {
    let ctx = Arc::new(Context {
        client: client.clone(),
        journal,
    });
    Controller::new(
        Api::<Deployment>::all(client.clone()),
        watcher::Config::default(),
    )
    .owns(Api::<ConfigMap>::all(client), watcher::Config::default())
    .run(reconcile, error_policy, ctx)
    .for_each(log_outcome)
    .await;
}

/// Runs the same controller with `tap`: the watcher streams are made here
/// (as `Controller::new` and `owns` make them) so that the tap sees them,
/// and the reconciler and error policy are wrapped.
pub async fn run_tapped(client: Client, journal: Journal, tap: Tap) {
    let ctx = Arc::new(Context {
        client: client.clone(),
        journal,
    });
    let config = watcher::Config::default();
    let (reader, writer) = reflector::store();
    let deployments = watcher(Api::<Deployment>::all(client.clone()), config.clone()).tap(&tap);
    let configmaps = watcher(Api::<ConfigMap>::all(client), config).tap(&tap);
    Controller::for_stream(reflector(writer, deployments).applied_objects(), reader)
        .owns_stream(configmaps.touched_objects())
        .run(
            tap.reconciler(reconcile),
            tap.error_policy(error_policy),
            ctx,
        )
        .for_each(log_outcome)
        .await;
}

async fn log_outcome<T: std::fmt::Debug, E: std::fmt::Display>(outcome: Result<T, E>) {
    if let Err(e) = outcome {
        tracing::warn!("{e}");
    }
}
