//! kube-apiserver v1.20.2 on a loopback port, serving TLS only.

use super::process::Process;
use super::scripts::Pki;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use watchlife_testkit::client::Client;

/// How long kube-apiserver may take to become ready: about 4 s on an idle
/// machine, several times that when two start at once beside a build.
const START_TIMEOUT: Duration = Duration::from_secs(90);

/// The service-account token issuer (and audience). Nothing checks it in
/// these tests, but v1.20 refuses to start without one.
const SERVICE_ACCOUNT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// The process's name in messages.
const NAME: &str = "kube-apiserver";

/// A running kube-apiserver, killed on drop.
pub(super) struct Apiserver {
    process: Process,
    bin: PathBuf,
    args: Vec<OsString>,
    log: PathBuf,
    /// `https://127.0.0.1:PORT`.
    pub(super) base: String,
    /// A client trusting the cluster's CA, with the admin token.
    client: Client,
}

impl Apiserver {
    /// Starts kube-apiserver on `port`, storing in the etcd at `etcd`, with
    /// its log in `dir/kube-apiserver.log`, and waits until it is ready.
    pub(super) async fn start(
        bin: &Path,
        pki: &Pki,
        token: &str,
        etcd: &str,
        port: u16,
        dir: &Path,
        extra: &[&str],
    ) -> Apiserver {
        let base = format!("https://127.0.0.1:{port}");
        let mut flags = args(pki, etcd, port);
        flags.extend(extra.iter().map(OsString::from));
        let (bin, args, log) = (bin.to_path_buf(), flags, dir.join("kube-apiserver.log"));
        let mut apiserver = Apiserver {
            process: Process::spawn(NAME, Command::new(&bin).args(&args), &log),
            bin,
            args,
            log,
            client: Client::with_ca(&base, Some(token.to_string()), &pki.ca_crt),
            base,
        };
        apiserver.wait_ready().await;
        apiserver
    }

    /// Kills the process, starts it again with the same flags (so on the
    /// same port, over the same etcd) and waits until it is ready. What it
    /// kept in memory, its watch cache, is gone; what etcd holds is not.
    pub(super) async fn restart(&mut self) {
        // Killed first: the new process must find the port free.
        self.stop();
        self.start_again().await;
    }

    /// Kills the process and waits until it is gone: clients then find the
    /// port closed (connection refused). Does nothing more if it is stopped.
    pub(super) fn stop(&mut self) {
        self.process.kill();
    }

    /// Stops the process as a kubelet does (SIGTERM, SIGKILL after `grace`),
    /// and starts it again; returns whether it exited by itself.
    pub(super) async fn restart_gracefully(&mut self, grace: Duration) -> bool {
        let exited = self.process.terminate(grace);
        self.start_again().await;
        exited
    }

    /// Starts the process again after [`Apiserver::stop`], with the same
    /// flags, and waits until it is ready.
    pub(super) async fn start_again(&mut self) {
        self.process = Process::spawn(NAME, Command::new(&self.bin).args(&self.args), &self.log);
        self.wait_ready().await;
    }

    /// The process id.
    pub(super) fn pid(&self) -> u32 {
        self.process.id()
    }

    async fn wait_ready(&mut self) {
        let client = self.client.clone();
        self.process
            .wait_until("ready", START_TIMEOUT, || ready(&client))
            .await;
    }
}

/// Ready means `/readyz` says so and the `default` namespace exists: the
/// apiserver makes that namespace itself, shortly after it starts serving,
/// and the tests write there.
async fn ready(client: &Client) -> bool {
    let ok = async |path: &str| client.try_get(path).await.is_ok_and(|r| r.code == 200);
    ok("/readyz").await && ok("/api/v1/namespaces/default").await
}

/// The flags: TLS only, a static admin token (in `system:masters`, so RBAC
/// allows it everything), RBAC as on any real cluster (tests act as other
/// users by impersonation), and nothing that would need controllers this
/// cluster does not run.
fn args(pki: &Pki, etcd: &str, port: u16) -> Vec<OsString> {
    vec![
        flag("etcd-servers", etcd),
        flag("bind-address", "127.0.0.1"),
        flag("advertise-address", "127.0.0.1"),
        flag("secure-port", port.to_string()),
        flag("tls-cert-file", &pki.server_crt),
        flag("tls-private-key-file", &pki.server_key),
        flag("client-ca-file", &pki.ca_crt),
        flag("token-auth-file", &pki.token_auth_file),
        flag("authorization-mode", "RBAC"),
        flag("service-account-issuer", SERVICE_ACCOUNT_ISSUER),
        flag("api-audiences", SERVICE_ACCOUNT_ISSUER),
        flag("service-account-key-file", &pki.sa_pub),
        flag("service-account-signing-key-file", &pki.sa_key),
        flag("service-cluster-ip-range", "10.0.0.0/24"),
        // No controller creates the default service account, so the
        // ServiceAccount admission plugin would reject every pod.
        flag("disable-admission-plugins", "ServiceAccount"),
        // The default reconciler rejects a loopback address, logs an error
        // and writes to etcd every 10 s.
        flag("endpoint-reconciler-type", "none"),
        flag("profiling", "false"),
        // --etcd-compaction-interval stays at its default (5 min): a test
        // that needs compaction asks etcd for it, at the moment it chooses.
    ]
}

/// `--name=value`.
fn flag(name: &str, value: impl AsRef<OsStr>) -> OsString {
    let mut arg = OsString::from(format!("--{name}="));
    arg.push(value);
    arg
}
