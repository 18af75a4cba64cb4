//! One etcd member on loopback ports, with its data in a temporary directory.

use super::process::Process;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use watchlife_testkit::client::Client;

/// How long etcd may take to answer `/health`: under a second when the
/// machine is idle, a few seconds while tests build and run beside it.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The member's name; `--initial-cluster` must name it.
const NAME: &str = "watchlife-test";

/// A running etcd, killed on drop.
pub(crate) struct Etcd {
    process: Process,
    /// `http://127.0.0.1:PORT`, for clients.
    pub(crate) endpoint: String,
    etcdctl: PathBuf,
    /// How it was started, to start it again the same way.
    bin: PathBuf,
    args: Vec<String>,
    log: PathBuf,
}

impl Etcd {
    /// Starts etcd with its data in `dir/etcd` and its log in `dir/etcd.log`,
    /// on free loopback ports, and waits until it reports itself healthy.
    pub(crate) async fn start(etcd: &Path, etcdctl: &Path, dir: &Path) -> Etcd {
        let url = |port: u16| format!("http://127.0.0.1:{port}");
        let (client, peer, metrics) = (
            url(crate::free_port()),
            url(crate::free_port()),
            url(crate::free_port()),
        );
        let args: Vec<String> = [
            "--name",
            NAME,
            "--data-dir",
            &dir.join("etcd").to_string_lossy(),
            "--listen-client-urls",
            &client,
            "--advertise-client-urls",
            &client,
            "--listen-peer-urls",
            &peer,
            "--initial-advertise-peer-urls",
            &peer,
            "--initial-cluster",
            &format!("{NAME}={peer}"),
            "--listen-metrics-urls",
            &metrics,
        ]
        .map(String::from)
        .to_vec();
        let log = dir.join("etcd.log");
        let process = Process::spawn("etcd", Command::new(etcd).args(&args), &log);
        let mut etcd = Etcd {
            process,
            endpoint: client,
            etcdctl: etcdctl.to_path_buf(),
            bin: etcd.to_path_buf(),
            args,
            log,
        };
        etcd.wait_healthy().await;
        etcd
    }

    /// Kills etcd (SIGKILL): the apiserver over it stays up, its requests
    /// to etcd failing, until [`Etcd::start_again`].
    pub(crate) fn kill(&mut self) {
        self.process.kill();
    }

    /// Starts etcd again after [`Etcd::kill`], on the same ports over the
    /// same data, and waits until it is healthy.
    pub(crate) async fn start_again(&mut self) {
        self.process = Process::spawn("etcd", Command::new(&self.bin).args(&self.args), &self.log);
        self.wait_healthy().await;
    }

    async fn wait_healthy(&mut self) {
        let http = Client::new(&self.endpoint, None);
        self.process
            .wait_until("healthy", START_TIMEOUT, || async {
                http.try_get("/health")
                    .await
                    .is_ok_and(|r| r.code == 200 && r.body["health"] == "true")
            })
            .await;
    }

    /// The process id.
    /// Its client address, `127.0.0.1:PORT`.
    pub(crate) fn addr(&self) -> std::net::SocketAddr {
        let host_port = self.endpoint.trim_start_matches("http://");
        host_port.parse().expect("etcd's endpoint is an address")
    }

    pub(crate) fn pid(&self) -> u32 {
        self.process.id()
    }

    /// Compacts the key space at its current revision with
    /// `etcdctl compact --physical` (which returns once the old revisions are
    /// gone from disk too), and returns that revision. From then on a read or
    /// watch at an older revision fails with "required revision has been
    /// compacted".
    pub(crate) async fn compact(&self) -> u64 {
        let revision = self.revision().await;
        self.etcdctl(&["compact", &revision.to_string(), "--physical"])
            .await;
        revision
    }

    /// The key space's current revision (the newest write's), from
    /// `etcdctl endpoint status`.
    pub(crate) async fn revision(&self) -> u64 {
        let status = self
            .etcdctl(&["endpoint", "status", "--write-out=json"])
            .await;
        let status: serde_json::Value =
            serde_json::from_str(&status).expect("etcdctl endpoint status prints JSON");
        status[0]["Status"]["header"]["revision"]
            .as_u64()
            .unwrap_or_else(|| panic!("no revision in {status}"))
    }

    /// Runs etcdctl (API v3) against this member and returns its stdout;
    /// panics if it fails.
    pub(crate) async fn etcdctl(&self, args: &[&str]) -> String {
        let out = tokio::process::Command::new(&self.etcdctl)
            .env("ETCDCTL_API", "3")
            .arg("--endpoints")
            .arg(&self.endpoint)
            .args(args)
            .output()
            .await
            .expect("etcdctl runs");
        assert!(
            out.status.success(),
            "etcdctl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("etcdctl prints UTF-8")
    }
}
