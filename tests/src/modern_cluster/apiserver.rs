//! apiextensions-apiserver v1.36 on a loopback port, serving TLS only,
//! standalone: the core cluster it would delegate authentication and
//! authorization to is a closed port.

use super::pki::Pki;
use crate::real_cluster::process::Process;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use watchlife_testkit::client::Client;

/// How long the apiserver may take to become ready: under a second on an
/// idle machine, several times that when clusters start side by side beside
/// a build.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a SIGTERMed apiserver keeps open watches before it ends them.
/// The default (none: it waits for them, up to a minute) would make a
/// graceful restart that slow.
const WATCH_TERMINATION_GRACE: &str = "2s";

/// Admission plugins that need a core cluster (namespaces, webhooks,
/// admission policies read from it): off, so writes need nothing else.
const DISABLED_ADMISSION: &str = "NamespaceLifecycle,MutatingAdmissionPolicy,MutatingAdmissionWebhook,ValidatingAdmissionPolicy,ValidatingAdmissionWebhook";

/// The process's name in messages and its log's name.
const NAME: &str = "apiextensions-apiserver";

/// A running apiserver, killed on drop.
pub(super) struct Apiserver {
    process: Process,
    bin: PathBuf,
    flags: Vec<String>,
    log: PathBuf,
    /// A client for readiness probes.
    client: Client,
}

impl Apiserver {
    /// Starts the apiserver with `flags`, its log in
    /// `dir/apiextensions-apiserver.log`, and waits until it is ready.
    pub(super) async fn start(
        bin: &Path,
        flags: Vec<String>,
        dir: &Path,
        client: Client,
    ) -> Apiserver {
        let log = dir.join(format!("{NAME}.log"));
        let mut apiserver = Apiserver {
            process: Process::spawn(NAME, Command::new(bin).args(&flags), &log),
            bin: bin.to_path_buf(),
            flags,
            log,
            client,
        };
        apiserver.wait_ready().await;
        apiserver
    }

    /// Kills the process (SIGKILL) and waits until it is gone.
    pub(super) fn kill(&mut self) {
        self.process.kill();
    }

    /// SIGTERM, then SIGKILL after `grace`; returns whether it exited by itself.
    pub(super) fn terminate(&mut self, grace: Duration) -> bool {
        self.process.terminate(grace)
    }

    /// Starts the process again after it stopped, with the same flags, and
    /// waits until it is ready.
    pub(super) async fn start_again(&mut self) {
        self.process = Process::spawn(NAME, Command::new(&self.bin).args(&self.flags), &self.log);
        self.wait_ready().await;
    }

    /// The process id.
    pub(super) fn pid(&self) -> u32 {
        self.process.id()
    }

    /// The end of its log.
    pub(super) fn log_tail(&self) -> String {
        self.process.log_tail()
    }

    /// Ready: every readiness check passes but `informer-sync`, which waits
    /// for the absent core cluster's informers and never does.
    async fn wait_ready(&mut self) {
        let client = self.client.clone();
        self.process
            .wait_until("ready", START_TIMEOUT, || async {
                client
                    .try_get("/readyz?exclude=informer-sync")
                    .await
                    .is_ok_and(|r| r.code == 200)
            })
            .await;
    }
}

/// The flags: TLS only; clients authenticate with certificates signed by
/// the cluster's CA or with a bearer token that the webhook described by
/// `token_reviews` (a kubeconfig) vouches for, and those in
/// `system:masters` may do anything; the other kubeconfigs of the core
/// cluster it would delegate to point at a closed port, and it does not
/// look up the front proxy's settings there.
pub(super) fn flags(pki: &Pki, token_reviews: &Path, etcd: &str, port: u16) -> Vec<String> {
    let path = |p: &Path| p.display().to_string();
    let closed = path(&pki.closed_kubeconfig);
    vec![
        format!("--etcd-servers={etcd}"),
        "--bind-address=127.0.0.1".into(),
        format!("--secure-port={port}"),
        format!("--tls-cert-file={}", path(&pki.server_crt)),
        format!("--tls-private-key-file={}", path(&pki.server_key)),
        format!("--client-ca-file={}", path(&pki.ca_crt)),
        format!("--kubeconfig={closed}"),
        format!("--authentication-kubeconfig={}", path(token_reviews)),
        format!("--authorization-kubeconfig={closed}"),
        "--authentication-skip-lookup".into(),
        format!("--disable-admission-plugins={DISABLED_ADMISSION}"),
        format!("--shutdown-watch-termination-grace-period={WATCH_TERMINATION_GRACE}"),
        "--profiling=false".into(),
    ]
}
