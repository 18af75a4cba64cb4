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
        let mut process = Process::spawn(
            "etcd",
            Command::new(etcd)
                .arg("--name")
                .arg(NAME)
                .arg("--data-dir")
                .arg(dir.join("etcd"))
                .args(["--listen-client-urls", &client])
                .args(["--advertise-client-urls", &client])
                .args(["--listen-peer-urls", &peer])
                .args(["--initial-advertise-peer-urls", &peer])
                .args(["--initial-cluster", &format!("{NAME}={peer}")])
                .args(["--listen-metrics-urls", &metrics]),
            &dir.join("etcd.log"),
        );
        let http = Client::new(&client, None);
        process
            .wait_until("healthy", START_TIMEOUT, || async {
                http.try_get("/health")
                    .await
                    .is_ok_and(|r| r.code == 200 && r.body["health"] == "true")
            })
            .await;
        Etcd {
            process,
            endpoint: client,
            etcdctl: etcdctl.to_path_buf(),
        }
    }

    /// The process id.
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
