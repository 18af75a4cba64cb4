//! A real etcd 3.4 and kube-apiserver v1.20.2 on loopback, one pair per test.
//!
//! The binaries come from `scripts/ensure-real-cluster.sh` (Debian's etcd;
//! kube-apiserver built once per machine from Debian's source package), the
//! TLS and token files from `scripts/real-cluster-pki.sh`.

mod apiserver;
// The etcd launcher, the process guard and the PKI are shared with
// `modern_cluster`.
pub(crate) mod etcd;
mod kubeconfig;
pub(crate) mod process;
pub(crate) mod scripts;
#[cfg(test)]
mod tests;

use crate::proxy::Proxy;
use apiserver::Apiserver;
use etcd::Etcd;
use std::path::{Path, PathBuf};
use tempfile::TempDir;
use watchlife_testkit::client::Client;

/// A running etcd and kube-apiserver, both on free loopback ports, with
/// their data, logs, certificates and kubeconfig in a temporary directory.
///
/// Dropping it kills both processes and removes the directory, also when the
/// test is panicking (then the end of each log is printed first). Only a test
/// process that is itself killed outright leaves them running.
pub struct RealCluster {
    // Fields drop in this order: the apiserver before the etcd it talks to,
    // and the directory last.
    apiserver: Apiserver,
    etcd_proxy: Option<Proxy>,
    etcd: Etcd,
    token: String,
    ca_cert: PathBuf,
    kubeconfig: PathBuf,
    dir: TempDir,
}

impl RealCluster {
    /// Starts etcd, then kube-apiserver over it, and returns once the
    /// apiserver is ready (`/readyz` is 200 and the `default` namespace
    /// exists). Panics, quoting the logs, if either does not come up.
    pub async fn start() -> RealCluster {
        RealCluster::start_with(&[]).await
    }

    /// Like [`RealCluster::start`], with `extra` flags for kube-apiserver
    /// (`--storage-media-type=application/json`, say), kept across restarts.
    pub async fn start_with(extra: &[&str]) -> RealCluster {
        RealCluster::start_as(extra, false).await
    }

    /// Like [`RealCluster::start_with`], with the apiserver reaching etcd
    /// through a [`Proxy`] that can be told to misbehave
    /// ([`RealCluster::etcd_proxy`]): etcd unreachable while both run.
    pub async fn start_behind_etcd_proxy(extra: &[&str]) -> RealCluster {
        RealCluster::start_as(extra, true).await
    }

    async fn start_as(extra: &[&str], etcd_proxied: bool) -> RealCluster {
        let bin = scripts::binaries();
        let dir = tempfile::Builder::new()
            .prefix("watchlife-real-cluster-")
            .tempdir()
            .expect("a temporary directory");
        let pki = scripts::pki(&dir.path().join("pki"));
        let token = std::fs::read_to_string(&pki.token_file).expect("the token file");
        let etcd = Etcd::start(&bin.etcd, &bin.etcdctl, dir.path()).await;
        let etcd_proxy = match etcd_proxied {
            true => Some(Proxy::start(etcd.addr()).await),
            false => None,
        };
        let apiserver = Apiserver::start(
            &bin.kube_apiserver,
            &pki,
            &token,
            &etcd_proxy
                .as_ref()
                .map_or(etcd.endpoint.clone(), Proxy::http_url),
            crate::free_port(),
            dir.path(),
            extra,
        )
        .await;
        let kubeconfig = dir.path().join("kubeconfig");
        kubeconfig::write(&kubeconfig, &apiserver.base, &pki.ca_crt, &token);
        RealCluster {
            apiserver,
            etcd_proxy,
            etcd,
            token,
            ca_cert: pki.ca_crt,
            kubeconfig,
            dir,
        }
    }

    /// `https://127.0.0.1:PORT`, the same across [`RealCluster::restart_apiserver`].
    pub fn base_url(&self) -> &str {
        &self.apiserver.base
    }

    /// The PEM file of the CA that signed the apiserver's certificate.
    pub fn ca_cert(&self) -> &Path {
        &self.ca_cert
    }

    /// A bearer token of a `system:masters` user (every request is allowed).
    pub fn token(&self) -> &str {
        &self.token
    }

    /// A kubeconfig whose current context is this cluster, as that user, in
    /// the `default` namespace; the CA is referenced by path.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// etcd's client URL, `http://127.0.0.1:PORT` (no TLS, no auth).
    pub fn etcd_endpoint(&self) -> &str {
        &self.etcd.endpoint
    }

    /// The proxy between the apiserver and etcd, when started behind one.
    pub fn etcd_proxy(&self) -> Option<&Proxy> {
        self.etcd_proxy.as_ref()
    }

    /// A test client for the apiserver: TLS trusting [`RealCluster::ca_cert`],
    /// with [`RealCluster::token`].
    pub fn client(&self) -> Client {
        Client::with_ca(self.base_url(), Some(self.token.clone()), &self.ca_cert)
    }

    /// Compacts etcd at its current revision and returns that revision:
    /// afterwards etcd answers a read or watch at an older revision with
    /// "compacted", which the apiserver turns into 410 Gone. The apiserver's
    /// watch cache still serves watches from the revisions it holds; to make
    /// it forget them, [`RealCluster::restart_apiserver`].
    pub async fn compact_etcd(&self) -> u64 {
        self.etcd.compact().await
    }

    /// Kills kube-apiserver and starts it again on the same port over the
    /// same etcd, then waits until it is ready. Its watch cache starts afresh
    /// from the current revision; open watches end.
    pub async fn restart_apiserver(&mut self) {
        self.apiserver.restart().await;
    }

    /// Stops kube-apiserver as a kubelet does: SIGTERM (it stops accepting
    /// connections and drains), SIGKILL if it has not exited after `grace`.
    /// Then starts it again on the same port and waits until it is ready.
    /// Returns whether it exited by itself within `grace`.
    ///
    /// v1.20 waits up to 60 s for open requests on SIGTERM, and a watch
    /// stays open until then: with a grace period under that (a pod's is
    /// 30 s by default), open watches make it end by SIGKILL.
    pub async fn restart_apiserver_gracefully(&mut self, grace: std::time::Duration) -> bool {
        self.apiserver.restart_gracefully(grace).await
    }

    /// Kills kube-apiserver and leaves it stopped (its port refuses
    /// connections) until [`RealCluster::start_apiserver`]; etcd runs on.
    pub fn stop_apiserver(&mut self) {
        self.apiserver.stop();
    }

    /// Starts kube-apiserver again after [`RealCluster::stop_apiserver`], on
    /// the same port over the same etcd, and waits until it is ready.
    pub async fn start_apiserver(&mut self) {
        self.apiserver.start_again().await;
    }

    /// SIGKILLs etcd; kube-apiserver runs on, its requests to etcd failing,
    /// until [`RealCluster::start_etcd`].
    pub fn kill_etcd(&mut self) {
        self.etcd.kill();
    }

    /// Starts etcd again on its ports over its data, and waits until it is
    /// healthy (the apiserver reconnects by itself).
    pub async fn start_etcd(&mut self) {
        self.etcd.start_again().await;
    }

    /// Runs `etcdctl ARGS` (API v3) against the cluster's etcd and returns
    /// its stdout; panics if it fails. Keys are as the apiserver stores them,
    /// `/registry/configmaps/NAMESPACE/NAME` for instance.
    pub async fn etcdctl(&self, args: &[&str]) -> String {
        self.etcd.etcdctl(args).await
    }

    /// A copy of [`RealCluster::kubeconfig`], written to `file` in the
    /// cluster's directory, that acts as `user` (in `groups`) the way
    /// `kubectl --as` does: the apiserver authorizes every request as that user.
    pub fn kubeconfig_acting_as(&self, file: &str, user: &str, groups: &[&str]) -> PathBuf {
        let path = self.dir.path().join(file);
        kubeconfig::acting_as(&self.kubeconfig, &path, user, groups);
        path
    }

    /// The temporary directory holding the logs, data and files.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The process ids of kube-apiserver and etcd; a restart changes the first.
    pub fn pids(&self) -> [u32; 2] {
        [self.apiserver.pid(), self.etcd.pid()]
    }
}
