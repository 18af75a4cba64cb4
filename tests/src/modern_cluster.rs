//! A Kubernetes v1.36 apiserver over etcd 3.5 on loopback, one pair per
//! test, serving one namespaced custom resource: `widgets.watchlife.example`.
//!
//! The apiserver is `apiextensions-apiserver`, the v0.36 generic apiserver
//! (watch cache, WatchList, consistent reads from the cache) serving
//! CustomResourceDefinitions and their resources on its own. It and etcd come
//! from `scripts/ensure-modern-cluster.sh` (Debian sid's packages, unpacked
//! privately, the apiserver compiled once per machine); the CA and serving
//! certificate from `scripts/real-cluster-pki.sh`. [`reference`] runs
//! client-go v0.36.4's informer against it.
//!
//! Access: the [`ModernCluster::kubeconfig`] authenticates with a client
//! certificate in the group `system:masters`, which the apiserver allows
//! everything without asking anyone (there is no core cluster to ask).
//! The harness's own HTTP client ([`ModernCluster::client`]) has no client
//! certificate; it sends a bearer token instead, which a token-review
//! webhook run by the harness vouches for as `system:masters` too.

mod apiserver;
mod pki;
pub mod reference;
#[cfg(test)]
mod tests;
mod token_webhook;

use crate::proxy::Proxy;
use crate::real_cluster::etcd::Etcd;
use crate::real_cluster::scripts;
use apiserver::Apiserver;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use tempfile::TempDir;
use token_webhook::TokenWebhook;
use watchlife_testkit::client::Client;

/// The custom resource's API group.
pub const GROUP: &str = "watchlife.example";
/// Its one version (served and stored).
pub const VERSION: &str = "v1";
/// Its plural name, as in URLs.
pub const RESOURCE: &str = "widgets";
/// Its kind.
pub const KIND: &str = "Widget";
/// The CustomResourceDefinition's name; also what `watchlife --resources` takes.
pub const CRD_NAME: &str = "widgets.watchlife.example";
/// The namespace a test writes widgets to unless it says otherwise (the
/// apiserver runs without namespace admission, so any name works and none
/// has to exist).
pub const NAMESPACE: &str = "default";

/// apiextensions-apiserver's default `--etcd-prefix` (kube-apiserver's is
/// `/registry`): every key it writes starts with it.
pub const ETCD_PREFIX: &str = "/registry/apiextensions.kubernetes.io";

/// How long a new CustomResourceDefinition may take to be Established and
/// its resource served: well under a second when idle, a few seconds while
/// builds share the cores.
const CRD_TIMEOUT: Duration = Duration::from_secs(30);

/// How often the harness polls while it waits for the CRD.
const POLL: Duration = Duration::from_millis(100);

/// The binaries a modern cluster runs and the versions they came from.
struct Binaries {
    apiserver: PathBuf,
    etcd: PathBuf,
    etcdctl: PathBuf,
    versions: PathBuf,
}

/// Where `scripts/ensure-modern-cluster.sh` says the binaries are, asked
/// once per test process. That script returns at once when they are in
/// place, and otherwise downloads and builds them (once per machine; `make
/// test` does it before any test runs). Panics if the script fails.
fn binaries() -> &'static Binaries {
    static BINARIES: OnceLock<Binaries> = OnceLock::new();
    BINARIES.get_or_init(|| {
        let mut paths = scripts::run(
            &crate::workspace().join("scripts/ensure-modern-cluster.sh"),
            &[],
        );
        let mut take = |name: &str| {
            paths
                .remove(name)
                .unwrap_or_else(|| panic!("ensure-modern-cluster.sh printed no {name}="))
        };
        Binaries {
            apiserver: take("MODERN_APISERVER"),
            etcd: take("MODERN_ETCD"),
            etcdctl: take("MODERN_ETCDCTL"),
            versions: take("MODERN_VERSIONS"),
        }
    })
}

/// The Debian package versions the binaries were built from, package →
/// version (`golang-k8s-apiextensions-apiserver-dev` → `0.36.4-1`, say), as
/// How long a LIST may keep getting 429 while the watch cache fills after a
/// restart (it took under a second here).
const BUSY_FOR: Duration = Duration::from_secs(30);

/// `scripts/ensure-modern-cluster.sh` recorded them.
pub fn package_versions() -> BTreeMap<String, String> {
    let path = &binaries().versions;
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
        .lines()
        .filter_map(|line| line.split_once(' '))
        .map(|(package, version)| (package.to_string(), version.to_string()))
        .collect()
}

/// How the apiserver runs.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Entries of `--feature-gates`, `WatchList=false` for instance.
    pub feature_gates: Vec<String>,
    /// Further flags, `--name=value` each.
    pub extra_flags: Vec<String>,
    /// The apiserver reaches etcd through a [`Proxy`] that can be told to
    /// misbehave ([`ModernCluster::etcd_proxy`]).
    pub etcd_proxy: bool,
}

impl Options {
    /// These options with one more `--feature-gates` entry.
    pub fn feature_gate(mut self, gate: &str) -> Options {
        self.feature_gates.push(gate.to_string());
        self
    }
}

/// A running etcd and apiserver on free loopback ports, with the widgets'
/// CustomResourceDefinition established, and their data, logs, certificates
/// and kubeconfig in a temporary directory.
///
/// Dropping it kills both processes and removes the directory, also when the
/// test is panicking (then the end of each log is printed first).
pub struct ModernCluster {
    // Fields drop in this order: the apiserver before the etcd it talks to,
    // and the directory last.
    apiserver: Apiserver,
    etcd_proxy: Option<Proxy>,
    etcd: Etcd,
    _token_webhook: TokenWebhook,
    client: Client,
    ca_cert: PathBuf,
    kubeconfig: PathBuf,
    dir: TempDir,
}

impl ModernCluster {
    /// Starts etcd, then the apiserver over it, waits until it is ready
    /// (`/readyz?exclude=informer-sync`: its `informer-sync` check waits for
    /// a core cluster that is not there), creates the widgets'
    /// CustomResourceDefinition and returns once it is Established and the
    /// widgets are served. Panics, quoting the logs, if anything fails.
    pub async fn start(options: Options) -> ModernCluster {
        let bin = binaries();
        let dir = tempfile::Builder::new()
            .prefix("watchlife-modern-cluster-")
            .tempdir()
            .expect("a temporary directory");
        let pki = pki::make(&dir.path().join("pki"));
        let etcd = Etcd::start(&bin.etcd, &bin.etcdctl, dir.path()).await;
        let token_webhook = TokenWebhook::start(pki.token.clone()).await;
        let token_reviews = dir.path().join("token-reviews.kubeconfig");
        pki::write_webhook_kubeconfig(&token_reviews, &token_webhook.url);
        let port = crate::free_port();
        let base = format!("https://127.0.0.1:{port}");
        let client = Client::with_ca(&base, Some(pki.token.clone()), &pki.ca_crt);
        let etcd_proxy = match options.etcd_proxy {
            true => Some(Proxy::start(etcd.addr()).await),
            false => None,
        };
        let etcd_url = etcd_proxy
            .as_ref()
            .map_or(etcd.endpoint.clone(), Proxy::http_url);
        let mut flags = apiserver::flags(&pki, &token_reviews, &etcd_url, port);
        if !options.feature_gates.is_empty() {
            flags.push(format!(
                "--feature-gates={}",
                options.feature_gates.join(",")
            ));
        }
        flags.extend(options.extra_flags.iter().cloned());
        let apiserver = Apiserver::start(&bin.apiserver, flags, dir.path(), client.clone()).await;
        let kubeconfig = dir.path().join("kubeconfig");
        pki::write_kubeconfig(&kubeconfig, &base, &pki);
        let cluster = ModernCluster {
            apiserver,
            etcd_proxy,
            etcd,
            _token_webhook: token_webhook,
            client,
            ca_cert: pki.ca_crt.clone(),
            kubeconfig,
            dir,
        };
        cluster.create_crd().await;
        cluster
    }

    /// `https://127.0.0.1:PORT`, the same across restarts.
    pub fn base_url(&self) -> &str {
        &self.client.base
    }

    /// The PEM file of the CA that signed the apiserver's certificate.
    pub fn ca_cert(&self) -> &Path {
        &self.ca_cert
    }

    /// A kubeconfig whose current context is this cluster, in the
    /// [`NAMESPACE`] namespace, as a `system:masters` user with a client
    /// certificate; the CA, certificate and key are referenced by path.
    /// client-go, kube-rs (`kube::Config`) and watchlife read it.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// A client for the apiserver, TLS trusting [`ModernCluster::ca_cert`],
    /// with a bearer token of a `system:masters` user.
    pub fn client(&self) -> Client {
        self.client.clone()
    }

    /// etcd's client URL, `http://127.0.0.1:PORT` (no TLS, no auth).
    pub fn etcd_endpoint(&self) -> &str {
        &self.etcd.endpoint
    }

    /// The proxy between the apiserver and etcd, when started behind one.
    pub fn etcd_proxy(&self) -> Option<&Proxy> {
        self.etcd_proxy.as_ref()
    }

    /// The temporary directory holding the logs (`etcd.log`,
    /// `apiextensions-apiserver.log`), data and files.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The process ids of the apiserver and etcd; a restart changes the first.
    pub fn pids(&self) -> [u32; 2] {
        [self.apiserver.pid(), self.etcd.pid()]
    }

    /// `/apis/watchlife.example/v1/namespaces/NAMESPACE/widgets`.
    pub fn widgets_path(namespace: &str) -> String {
        format!("/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{RESOURCE}")
    }

    /// The etcd key of a widget: apiextensions-apiserver stores custom
    /// resources under [`ETCD_PREFIX`]`/GROUP/RESOURCE/NAMESPACE/NAME`.
    pub fn widget_etcd_key(namespace: &str, name: &str) -> String {
        format!("{ETCD_PREFIX}/{GROUP}/{RESOURCE}/{namespace}/{name}")
    }

    /// Creates the widget `namespace/name` with `spec` and returns its
    /// resourceVersion. Panics unless the apiserver answers 201.
    pub async fn create_widget(&self, namespace: &str, name: &str, spec: Value) -> String {
        let body = json!({
            "apiVersion": format!("{GROUP}/{VERSION}"),
            "kind": KIND,
            "metadata": {"name": name, "namespace": namespace},
            "spec": spec,
        });
        let reply = self
            .client
            .post(&Self::widgets_path(namespace), &body)
            .await;
        assert_eq!(
            reply.code, 201,
            "creating widget {namespace}/{name}: {}",
            reply.text
        );
        resource_version(&reply.body)
    }

    /// Replaces the widget's spec (a JSON merge patch of `spec`) and returns
    /// its new resourceVersion. Panics unless the apiserver answers 200.
    pub async fn update_widget(&self, namespace: &str, name: &str, spec: Value) -> String {
        let path = format!("{}/{name}", Self::widgets_path(namespace));
        let reply = self
            .client
            .patch(
                &path,
                "application/merge-patch+json",
                &json!({"spec": spec}),
            )
            .await;
        assert_eq!(
            reply.code, 200,
            "updating widget {namespace}/{name}: {}",
            reply.text
        );
        resource_version(&reply.body)
    }

    /// Deletes the widget. The apiserver answers a custom resource's DELETE
    /// with a Status, not the object: the deletion's revision is seen only
    /// by watchers (the DELETED event) or in [`ModernCluster::etcd_revision`].
    /// Panics unless the apiserver answers 200.
    pub async fn delete_widget(&self, namespace: &str, name: &str) {
        let path = format!("{}/{name}", Self::widgets_path(namespace));
        let reply = self.client.delete(&path).await;
        assert_eq!(
            reply.code, 200,
            "deleting widget {namespace}/{name}: {}",
            reply.text
        );
    }

    /// The widgets of `namespace` now, name → resourceVersion, from a
    /// consistent LIST. A 429 (the watch cache filling after a restart) is
    /// asked again after the Retry-After it carries; panics on any other
    /// answer than 200, or when the cache stays busy past [`BUSY_FOR`].
    pub async fn widgets(&self, namespace: &str) -> BTreeMap<String, String> {
        let deadline = std::time::Instant::now() + BUSY_FOR;
        let reply = loop {
            let reply = self.client.get(&Self::widgets_path(namespace)).await;
            if reply.code != 429 || std::time::Instant::now() >= deadline {
                break reply;
            }
            let retry_after = reply.body["details"]["retryAfterSeconds"]
                .as_u64()
                .unwrap_or(1);
            tokio::time::sleep(Duration::from_secs(retry_after)).await;
        };
        assert_eq!(reply.code, 200, "listing widgets: {}", reply.text);
        reply.body["items"]
            .as_array()
            .expect("a list has items")
            .iter()
            .map(|item| {
                let name = item["metadata"]["name"].as_str().unwrap_or_default();
                (name.to_string(), resource_version(item))
            })
            .collect()
    }

    /// Stops the apiserver as a kubelet does: SIGTERM (it stops accepting
    /// connections, ends open watches after its 2 s watch grace period and
    /// exits), SIGKILL if it has not exited after `grace`. Then starts it
    /// again on the same port and waits until `/readyz?exclude=informer-sync`
    /// passes; the widgets' own watch cache may still be filling then, as it
    /// would be for any client. Returns whether it exited by itself.
    pub async fn restart_apiserver_gracefully(&mut self, grace: Duration) -> bool {
        let exited = self.apiserver.terminate(grace);
        self.apiserver.start_again().await;
        exited
    }

    /// Kills the apiserver (SIGKILL) and leaves it stopped, its port
    /// refusing connections, until [`ModernCluster::start_apiserver`]; etcd
    /// runs on.
    pub fn crash_apiserver(&mut self) {
        self.apiserver.kill();
    }

    /// Starts the apiserver again after a crash, on the same port over the
    /// same etcd, with the same flags, and waits as
    /// [`ModernCluster::restart_apiserver_gracefully`] does.
    pub async fn start_apiserver(&mut self) {
        self.apiserver.start_again().await;
    }

    /// [`ModernCluster::crash_apiserver`], then [`ModernCluster::start_apiserver`].
    pub async fn crash_and_restart_apiserver(&mut self) {
        self.crash_apiserver();
        self.start_apiserver().await;
    }

    /// Deletes the widget's key straight in etcd, as if its deletion had
    /// happened while no apiserver watched: meant for while the apiserver
    /// is down (a running one would see the deletion on its etcd watch).
    /// Returns whether there was such a key.
    pub async fn delete_widget_in_etcd(&self, namespace: &str, name: &str) -> bool {
        let out = self
            .etcd
            .etcdctl(&["del", &Self::widget_etcd_key(namespace, name)])
            .await;
        out.trim() == "1"
    }

    /// SIGKILLs etcd; the apiserver runs on, its requests to etcd failing,
    /// until [`ModernCluster::start_etcd`].
    pub fn kill_etcd(&mut self) {
        self.etcd.kill();
    }

    /// Starts etcd again on its ports over its data, and waits until it is
    /// healthy (the apiserver reconnects by itself).
    pub async fn start_etcd(&mut self) {
        self.etcd.start_again().await;
    }

    /// Compacts etcd at its current revision and returns that revision:
    /// afterwards etcd answers a read or watch at an older revision with
    /// "compacted", which the apiserver turns into 410 Gone.
    pub async fn compact_etcd(&self) -> u64 {
        self.etcd.compact().await
    }

    /// etcd's current revision: the resourceVersion of the newest write.
    pub async fn etcd_revision(&self) -> u64 {
        self.etcd.revision().await
    }

    /// Runs `etcdctl ARGS` (API v3) against the cluster's etcd and returns
    /// its stdout; panics if it fails.
    pub async fn etcdctl(&self, args: &[&str]) -> String {
        self.etcd.etcdctl(args).await
    }

    /// Creates the widgets' CustomResourceDefinition and waits until it is
    /// Established and a LIST of widgets answers 200.
    async fn create_crd(&self) {
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": CRD_NAME},
            "spec": {
                "group": GROUP,
                "scope": "Namespaced",
                "names": {
                    "plural": RESOURCE,
                    "singular": "widget",
                    "kind": KIND,
                    "listKind": format!("{KIND}List"),
                },
                "versions": [{
                    "name": VERSION,
                    "served": true,
                    "storage": true,
                    "schema": {"openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": true,
                    }},
                }],
            },
        });
        const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
        let reply = self.client.post(CRDS, &crd).await;
        assert_eq!(reply.code, 201, "creating the CRD: {}", reply.text);
        let deadline = Instant::now() + CRD_TIMEOUT;
        let established = |crd: &Value| {
            crd["status"]["conditions"]
                .as_array()
                .is_some_and(|conditions| {
                    conditions
                        .iter()
                        .any(|c| c["type"] == "Established" && c["status"] == "True")
                })
        };
        loop {
            let crd = self.client.try_get(&format!("{CRDS}/{CRD_NAME}")).await;
            let served = self.client.try_get(&Self::widgets_path(NAMESPACE)).await;
            if crd.is_ok_and(|r| r.code == 200 && established(&r.body))
                && served.is_ok_and(|r| r.code == 200)
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the CRD {CRD_NAME} is not established and served within {CRD_TIMEOUT:?}; end of the apiserver's log:\n{}",
                self.apiserver.log_tail()
            );
            tokio::time::sleep(POLL).await;
        }
    }
}

/// `metadata.resourceVersion` of an object; panics if it has none.
fn resource_version(object: &Value) -> String {
    object["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_else(|| panic!("no resourceVersion in {object}"))
        .to_string()
}
