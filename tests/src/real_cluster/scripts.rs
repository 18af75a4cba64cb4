//! The set-up scripts in `scripts/`, run from the tests: they say where the
//! binaries are and make the TLS and token files.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The binaries a real cluster runs.
pub(super) struct Binaries {
    pub(super) etcd: PathBuf,
    pub(super) etcdctl: PathBuf,
    pub(super) kube_apiserver: PathBuf,
}

/// Where `scripts/ensure-real-cluster.sh` says the binaries are, asked once
/// per test process. That script returns at once when they are in place, and
/// otherwise installs and builds them (once per machine; `make test` does it
/// before any test runs). Panics if the script fails.
pub(super) fn binaries() -> &'static Binaries {
    static BINARIES: OnceLock<Binaries> = OnceLock::new();
    BINARIES.get_or_init(|| {
        let mut paths = run(
            &crate::workspace().join("scripts/ensure-real-cluster.sh"),
            &[],
        );
        let mut take = |name: &str| {
            paths
                .remove(name)
                .unwrap_or_else(|| panic!("ensure-real-cluster.sh printed no {name}="))
        };
        Binaries {
            etcd: take("ETCD"),
            etcdctl: take("ETCDCTL"),
            kube_apiserver: take("KUBE_APISERVER"),
        }
    })
}

/// The files `scripts/real-cluster-pki.sh` makes in a directory.
pub(crate) struct Pki {
    pub(crate) ca_crt: PathBuf,
    /// The CA's private key, to sign further certificates with.
    pub(crate) ca_key: PathBuf,
    pub(crate) server_crt: PathBuf,
    pub(crate) server_key: PathBuf,
    pub(crate) token_file: PathBuf,
    pub(crate) token_auth_file: PathBuf,
    pub(crate) sa_key: PathBuf,
    pub(crate) sa_pub: PathBuf,
}

/// A fresh CA, serving certificate, bearer token and service-account key
/// pair in `dir`. Panics if the script fails.
pub(crate) fn pki(dir: &Path) -> Pki {
    let mut paths = run(
        &crate::workspace().join("scripts/real-cluster-pki.sh"),
        &[dir],
    );
    let mut take = |name: &str| {
        paths
            .remove(name)
            .unwrap_or_else(|| panic!("real-cluster-pki.sh printed no {name}="))
    };
    Pki {
        ca_crt: take("CA_CRT"),
        ca_key: take("CA_KEY"),
        server_crt: take("SERVER_CRT"),
        server_key: take("SERVER_KEY"),
        token_file: take("TOKEN_FILE"),
        token_auth_file: take("TOKEN_AUTH_FILE"),
        sa_key: take("SA_KEY"),
        sa_pub: take("SA_PUB"),
    }
}

/// Runs a script whose stdout is `NAME=PATH` lines; its progress (stderr)
/// goes to the test's stderr. Panics if the script fails.
pub(crate) fn run(script: &Path, args: &[&Path]) -> HashMap<String, PathBuf> {
    let out = Command::new(script)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", script.display()));
    assert!(
        out.status.success(),
        "{} failed ({})",
        script.display(),
        out.status
    );
    String::from_utf8(out.stdout)
        .expect("the script prints UTF-8")
        .lines()
        .filter_map(|line| line.split_once('='))
        .map(|(name, path)| (name.to_string(), PathBuf::from(path)))
        .collect()
}
