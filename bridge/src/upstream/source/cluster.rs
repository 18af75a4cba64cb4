//! A real cluster as a source, reached with the kube crate's config: a
//! kubeconfig (`--kubeconfig`, `$KUBECONFIG`, `~/.kube/config`) and its
//! context, or a pod's service account.

use super::{SourceError, Upstream};
use crate::cli::Args;
use crate::upstream::etcd::{EtcdAccess, EtcdStages};
use crate::upstream::source::stages::ServerStages;
use kube::config::{KubeConfigOptions, Kubeconfig};
use std::sync::Arc;
use watchlife_controlplane::Clock;
use watchlife_protocol::{Source, Stage};

/// What is watched on a cluster when `--resources` is not given.
pub const DEFAULT_RESOURCES: [&str; 1] = ["pods"];

/// Stages measured on a real cluster without access to its etcd: everything
/// from the Reflector on. The apiserver tells no client when it committed or
/// cached an event.
pub fn observed() -> Vec<Stage> {
    Stage::ALL
        .into_iter()
        .filter(|stage| *stage >= Stage::Reflector)
        .collect()
}

/// Context name of the kubeconfig the demo writes: a kubeconfig still
/// pointing there means "the demo", not a cluster.
const DEMO_CONTEXT: &str = watchlife_demo_apiserver::kubeconfig::CONTEXT;

/// The configured cluster, or `Ok(None)` (with the reason) when there is
/// none and the demo should run instead. A kubeconfig given with
/// `--kubeconfig` that cannot be used is an error, never a silent fallback.
pub async fn connect(args: &Args) -> Result<Result<Upstream, String>, SourceError> {
    let kubeconfig = match &args.kubeconfig {
        Some(path) => readable_by_kube(path)
            .and_then(|()| Kubeconfig::read_from(path).map_err(|e| e.to_string()))
            .map_err(|e| {
                SourceError::Config(format!("cannot read --kubeconfig {}: {e}", path.display()))
            })?,
        None => match implicit_kubeconfigs()
            .iter()
            .try_for_each(|path| readable_by_kube(path))
            .and_then(|()| Kubeconfig::read().map_err(|e| e.to_string()))
        {
            Ok(k) => k,
            Err(_) if std::env::var_os("KUBERNETES_SERVICE_HOST").is_some() => {
                return in_cluster(args).map(Ok);
            }
            Err(_) => return Ok(Err("no kubeconfig found".into())),
        },
    };
    let context = match args.context.clone().or(kubeconfig.current_context.clone()) {
        Some(c) => c,
        None if args.kubeconfig.is_some() => {
            return Err(SourceError::Config(
                "the kubeconfig has no current context: choose one with --context".into(),
            ));
        }
        None => return Ok(Err("the kubeconfig has no current context".into())),
    };
    if context == DEMO_CONTEXT && args.context.is_none() && args.kubeconfig.is_none() {
        return Ok(Err(format!(
            "the current context is {DEMO_CONTEXT}, the demo's own"
        )));
    }
    let options = KubeConfigOptions {
        context: Some(context.clone()),
        ..KubeConfigOptions::default()
    };
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .map_err(|e| SourceError::Config(format!("context {context:?}: {e}")))?;
    upstream(config, context, args).map(Ok)
}

/// The files `Kubeconfig::read` reads: those of `$KUBECONFIG`, else
/// `~/.kube/config`.
fn implicit_kubeconfigs() -> Vec<std::path::PathBuf> {
    match std::env::var_os("KUBECONFIG") {
        Some(paths) => std::env::split_paths(&paths)
            .filter(|p| !p.as_os_str().is_empty())
            .collect(),
        None => std::env::home_dir()
            .map(|home| home.join(".kube").join("config"))
            .into_iter()
            .collect(),
    }
}

/// Refuses a kubeconfig file that kube's reader would panic on: one that
/// starts with a UTF-16 byte order mark and has an odd number of bytes
/// after it (kube reads it two bytes at a time and indexes the second of
/// the last one). A file that cannot be read is left to kube, which says
/// so.
fn readable_by_kube(path: &std::path::Path) -> Result<(), String> {
    let Ok(bytes) = std::fs::read(path) else {
        return Ok(());
    };
    match bytes.as_slice() {
        [0xFF, 0xFE, rest @ ..] | [0xFE, 0xFF, rest @ ..] if rest.len() % 2 == 1 => Err(format!(
            "{} is not a kubeconfig: it starts as UTF-16 but has an odd number of bytes",
            path.display()
        )),
        _ => Ok(()),
    }
}

/// The service account of the pod watchlife runs in.
fn in_cluster(args: &Args) -> Result<Upstream, SourceError> {
    let config = kube::Config::incluster()
        .map_err(|e| SourceError::Config(format!("in-cluster config: {e}")))?;
    upstream(config, "in-cluster".into(), args)
}

fn upstream(config: kube::Config, context: String, args: &Args) -> Result<Upstream, SourceError> {
    let server = config.cluster_url.to_string();
    let connections = super::read_only_connections(config)?;
    let mut observed = observed();
    let server_stages: Option<Arc<dyn ServerStages>> = if args.etcd_endpoints.is_empty() {
        None
    } else {
        let access = EtcdAccess {
            endpoints: args.etcd_endpoints.clone(),
            ca_cert: args.etcd_cacert.clone(),
            client_cert: args.etcd_cert.clone(),
            client_key: args.etcd_key.clone(),
        };
        let stages = EtcdStages::start(access, Clock::system())
            .map_err(|e| SourceError::Config(e.to_string()))?;
        observed.insert(0, Stage::Etcd);
        Some(Arc::new(stages))
    };
    Ok(Upstream {
        connections,
        source: Source::Cluster { context, server },
        default_resources: DEFAULT_RESOURCES.iter().map(|s| s.to_string()).collect(),
        server_stages,
        observed,
        demo: None,
        kubeconfig: None,
    })
}
