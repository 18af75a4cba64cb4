//! The cluster a chaos run faults, one per Kubernetes release the bridge is
//! run with, so that each profile meets the apiserver of its own release:
//!
//! - `--kubernetes 1.20`: kube-apiserver v1.20.2 over etcd 3.4
//!   ([`RealCluster`]); the writer writes ConfigMaps and Pods.
//! - `--kubernetes 1.36`: apiextensions-apiserver v0.36.4 over etcd 3.5
//!   ([`ModernCluster`]): the v1.36 generic apiserver (its watch cache
//!   answers 429 while it initializes, serves streaming lists and consistent
//!   reads). It serves custom resources only, so the writer writes widgets
//!   (`widgets.v1.watchlife.example`), stored as JSON under
//!   `/registry/apiextensions.kubernetes.io/watchlife.example/widgets/NS/NAME`.

use crate::modern_cluster::{self, ModernCluster};
use crate::proxy::Proxy;
use crate::real_cluster::RealCluster;
use std::path::Path;
use std::time::Duration;
use watchlife_testkit::client::Client;

/// The release whose rules the bridge runs with (`--kubernetes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kubernetes {
    V1_20,
    V1_36,
}

impl Kubernetes {
    /// The value of `--kubernetes`.
    pub fn flag(self) -> &'static str {
        match self {
            Kubernetes::V1_20 => "1.20",
            Kubernetes::V1_36 => "1.36",
        }
    }

    /// `1.20` or `1.36`; `None` for anything else.
    pub fn parse(text: &str) -> Option<Kubernetes> {
        match text {
            "1.20" => Some(Kubernetes::V1_20),
            "1.36" => Some(Kubernetes::V1_36),
            _ => None,
        }
    }

    /// The kinds the writer writes and the bridge watches on this
    /// release's cluster.
    pub fn kinds(self) -> &'static [Kind] {
        match self {
            Kubernetes::V1_20 => &CORE_KINDS,
            Kubernetes::V1_36 => &WIDGET_KINDS,
        }
    }
}

/// One kind of object the writer writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kind {
    /// Its name in `--resources` and in the bridge's frames: the plural,
    /// with the version and group outside the core group (pinned, as the
    /// v0.36 apiextensions-apiserver has no discovery root).
    pub resource: &'static str,
    /// The group-version's path: `/api/v1`, `/apis/GROUP/VERSION`.
    pub api: &'static str,
    /// Its plural in URLs.
    pub plural: &'static str,
    /// `apiVersion` and `kind` of its objects.
    pub api_version: &'static str,
    pub kind: &'static str,
    /// Where the apiserver stores it in etcd: `PREFIX/NAMESPACE/NAME`.
    pub etcd_prefix: &'static str,
}

impl Kind {
    /// Its API group, as RBAC names it ("" for the core group).
    pub fn group(&self) -> &'static str {
        self.api
            .strip_prefix("/apis/")
            .and_then(|rest| rest.split('/').next())
            .unwrap_or("")
    }

    /// The collection in `namespace`.
    pub fn collection(&self, namespace: &str) -> String {
        format!("{}/namespaces/{namespace}/{}", self.api, self.plural)
    }

    /// The collection across every namespace.
    pub fn everywhere(&self) -> String {
        format!("{}/{}", self.api, self.plural)
    }

    /// The etcd key of `namespace/name`.
    pub fn etcd_key(&self, namespace: &str, name: &str) -> String {
        format!("{}/{namespace}/{name}", self.etcd_prefix)
    }
}

pub const CONFIGMAPS: Kind = Kind {
    resource: "configmaps",
    api: "/api/v1",
    plural: "configmaps",
    api_version: "v1",
    kind: "ConfigMap",
    etcd_prefix: "/registry/configmaps",
};

pub const PODS: Kind = Kind {
    resource: "pods",
    api: "/api/v1",
    plural: "pods",
    api_version: "v1",
    kind: "Pod",
    etcd_prefix: "/registry/pods",
};

pub const WIDGETS: Kind = Kind {
    resource: "widgets.v1.watchlife.example",
    api: "/apis/watchlife.example/v1",
    plural: modern_cluster::RESOURCE,
    api_version: "watchlife.example/v1",
    kind: modern_cluster::KIND,
    etcd_prefix: "/registry/apiextensions.kubernetes.io/watchlife.example/widgets",
};

const CORE_KINDS: [Kind; 2] = [CONFIGMAPS, PODS];
const WIDGET_KINDS: [Kind; 1] = [WIDGETS];

/// A running etcd and apiserver of one release.
pub enum Cluster {
    V1_20(Box<RealCluster>),
    V1_36(Box<ModernCluster>),
}

impl Cluster {
    /// Starts the cluster of `kubernetes` and creates `namespaces` where
    /// they must exist (v1.20's apiserver admits objects of known
    /// namespaces only; the v0.36 one runs without namespace admission).
    pub async fn start(kubernetes: Kubernetes, namespaces: &[&str]) -> Cluster {
        match kubernetes {
            Kubernetes::V1_20 => {
                let cluster = RealCluster::start_behind_etcd_proxy(&[
                    "--storage-media-type=application/json",
                ])
                .await;
                super::writer::create_namespaces(&cluster.client(), namespaces).await;
                Cluster::V1_20(Box::new(cluster))
            }
            Kubernetes::V1_36 => {
                let options = modern_cluster::Options {
                    etcd_proxy: true,
                    ..Default::default()
                };
                Cluster::V1_36(Box::new(ModernCluster::start(options).await))
            }
        }
    }

    /// The release it runs.
    pub fn kubernetes(&self) -> Kubernetes {
        match self {
            Cluster::V1_20(_) => Kubernetes::V1_20,
            Cluster::V1_36(_) => Kubernetes::V1_36,
        }
    }

    /// The bearer token of its `system:masters` user, where its kubeconfig
    /// has one (v1.20; v1.36's uses a client certificate).
    pub fn bearer_token(&self) -> Option<&str> {
        match self {
            Cluster::V1_20(c) => Some(c.token()),
            Cluster::V1_36(_) => None,
        }
    }

    /// The proxy between the apiserver and etcd.
    pub fn etcd_proxy(&self) -> Option<&Proxy> {
        match self {
            Cluster::V1_20(c) => c.etcd_proxy(),
            Cluster::V1_36(c) => c.etcd_proxy(),
        }
    }

    pub fn client(&self) -> Client {
        match self {
            Cluster::V1_20(c) => c.client(),
            Cluster::V1_36(c) => c.client(),
        }
    }

    pub fn base_url(&self) -> &str {
        match self {
            Cluster::V1_20(c) => c.base_url(),
            Cluster::V1_36(c) => c.base_url(),
        }
    }

    pub fn kubeconfig(&self) -> &Path {
        match self {
            Cluster::V1_20(c) => c.kubeconfig(),
            Cluster::V1_36(c) => c.kubeconfig(),
        }
    }

    pub fn dir(&self) -> &Path {
        match self {
            Cluster::V1_20(c) => c.dir(),
            Cluster::V1_36(c) => c.dir(),
        }
    }

    /// SIGKILLs the apiserver and leaves it stopped; etcd runs on.
    pub fn kill_apiserver(&mut self) {
        match self {
            Cluster::V1_20(c) => c.stop_apiserver(),
            Cluster::V1_36(c) => c.crash_apiserver(),
        }
    }

    /// Starts the apiserver again on its port and waits until it is ready.
    pub async fn start_apiserver(&mut self) {
        match self {
            Cluster::V1_20(c) => c.start_apiserver().await,
            Cluster::V1_36(c) => c.start_apiserver().await,
        }
    }

    /// SIGTERM, SIGKILL after `grace`, then started again; whether it
    /// exited by itself.
    pub async fn restart_apiserver_gracefully(&mut self, grace: Duration) -> bool {
        match self {
            Cluster::V1_20(c) => c.restart_apiserver_gracefully(grace).await,
            Cluster::V1_36(c) => c.restart_apiserver_gracefully(grace).await,
        }
    }

    /// SIGKILLs etcd and leaves it stopped; the apiserver runs on.
    pub fn kill_etcd(&mut self) {
        match self {
            Cluster::V1_20(c) => c.kill_etcd(),
            Cluster::V1_36(c) => c.kill_etcd(),
        }
    }

    /// Starts etcd again over its data and waits until it is healthy.
    pub async fn start_etcd(&mut self) {
        match self {
            Cluster::V1_20(c) => c.start_etcd().await,
            Cluster::V1_36(c) => c.start_etcd().await,
        }
    }

    /// Compacts etcd at its current revision; returns it.
    pub async fn compact_etcd(&self) -> u64 {
        match self {
            Cluster::V1_20(c) => c.compact_etcd().await,
            Cluster::V1_36(c) => c.compact_etcd().await,
        }
    }

    pub async fn etcdctl(&self, args: &[&str]) -> String {
        match self {
            Cluster::V1_20(c) => c.etcdctl(args).await,
            Cluster::V1_36(c) => c.etcdctl(args).await,
        }
    }

    /// "kube-apiserver v1.20.2 over etcd 3.4.23", from the servers' own
    /// answers (`/version`, etcd's endpoint status), with the package the
    /// v1.36 apiserver was built from.
    pub async fn versions(&self) -> String {
        let apiserver = self.client().get("/version").await.body["gitVersion"]
            .as_str()
            .unwrap_or("of unknown version")
            .to_string();
        let status = self.etcdctl(&["endpoint", "status", "-w", "json"]).await;
        let etcd = serde_json::from_str::<serde_json::Value>(&status)
            .ok()
            .and_then(|s| s[0]["Status"]["version"].as_str().map(String::from))
            .unwrap_or_else(|| "of unknown version".into());
        let name = match self {
            Cluster::V1_20(_) => "kube-apiserver".to_string(),
            Cluster::V1_36(_) => format!(
                "apiextensions-apiserver (Debian's golang-k8s-apiextensions-apiserver-dev {})",
                modern_cluster::package_versions()
                    .get("golang-k8s-apiextensions-apiserver-dev")
                    .map_or("of unknown version", String::as_str)
            ),
        };
        format!("{name} {apiserver} over etcd {etcd}")
    }
}
