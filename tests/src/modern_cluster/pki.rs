//! The modern cluster's TLS material and kubeconfigs: the CA and serving
//! certificate of `scripts/real-cluster-pki.sh`, plus a client certificate
//! in `system:masters` signed by that CA (made with openssl), its bearer
//! token, and the kubeconfigs.

use crate::real_cluster::scripts;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The client certificate's user (its CN) and group (its O): the apiserver
/// lets `system:masters` do anything without asking an authorizer.
const USER: &str = "watchlife-admin";
const GROUP: &str = "system:masters";

/// How long the client certificate is valid: longer than any test run.
const DAYS: &str = "3650";

/// Where the kubeconfigs of the absent core cluster point: port 1 on
/// loopback, where nothing listens, so a request the apiserver would
/// delegate fails at once (connection refused).
const CLOSED_SERVER: &str = "https://127.0.0.1:1";

/// The name of the cluster, user and context in the kubeconfigs.
const NAME: &str = "watchlife-modern";

/// The files a modern cluster needs.
pub(super) struct Pki {
    pub(super) ca_crt: PathBuf,
    pub(super) server_crt: PathBuf,
    pub(super) server_key: PathBuf,
    pub(super) client_crt: PathBuf,
    pub(super) client_key: PathBuf,
    /// A kubeconfig for a core cluster that is not there.
    pub(super) closed_kubeconfig: PathBuf,
    /// A random bearer token (see `token_webhook`).
    pub(super) token: String,
}

/// Makes a fresh CA, serving certificate, client certificate and closed
/// kubeconfig in `dir`. Panics if openssl fails.
pub(super) fn make(dir: &Path) -> Pki {
    let base = scripts::pki(dir);
    let (client_key, client_crt) = (dir.join("client.key"), dir.join("client.crt"));
    let (csr, ext) = (dir.join("client.csr"), dir.join("client.ext"));
    openssl(
        Command::new("openssl")
            .args(["req", "-new", "-nodes", "-newkey", "rsa:2048", "-keyout"])
            .arg(&client_key)
            .arg("-out")
            .arg(&csr)
            .args(["-subj", &format!("/O={GROUP}/CN={USER}")]),
    );
    std::fs::write(
        &ext,
        "basicConstraints = critical, CA:FALSE\n\
         keyUsage = critical, digitalSignature, keyEncipherment\n\
         extendedKeyUsage = clientAuth\n",
    )
    .expect("writing the certificate's extensions");
    // A serial number unique to this certificate, as X.509 asks of a CA.
    let serial = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("the clock is past 1970")
        .as_nanos();
    openssl(
        Command::new("openssl")
            .args(["x509", "-req", "-sha256", "-days", DAYS, "-in"])
            .arg(&csr)
            .arg("-CA")
            .arg(&base.ca_crt)
            .arg("-CAkey")
            .arg(&base.ca_key)
            .args(["-set_serial", &serial.to_string(), "-extfile"])
            .arg(&ext)
            .arg("-out")
            .arg(&client_crt),
    );
    let closed_kubeconfig = dir.join("closed.kubeconfig");
    write_json(
        &closed_kubeconfig,
        &serde_json::json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": NAME, "cluster": {
                "server": CLOSED_SERVER,
                "insecure-skip-tls-verify": true,
            }}],
            "users": [{"name": NAME, "user": {}}],
            "contexts": [{"name": NAME, "context": {"cluster": NAME, "user": NAME}}],
            "current-context": NAME,
        }),
    );
    Pki {
        ca_crt: base.ca_crt,
        server_crt: base.server_crt,
        server_key: base.server_key,
        client_crt,
        client_key,
        closed_kubeconfig,
        token: std::fs::read_to_string(&base.token_file).expect("the token file"),
    }
}

/// Writes a kubeconfig for the token-review webhook at `url` (plain HTTP).
pub(super) fn write_webhook_kubeconfig(path: &Path, url: &str) {
    write_json(
        path,
        &serde_json::json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": NAME, "cluster": {"server": url}}],
            "users": [{"name": NAME, "user": {}}],
            "contexts": [{"name": NAME, "context": {"cluster": NAME, "user": NAME}}],
            "current-context": NAME,
        }),
    );
}

/// Writes a kubeconfig for the cluster at `server`: the CA, the client
/// certificate and its key by path, the [`super::NAMESPACE`] namespace.
pub(super) fn write_kubeconfig(path: &Path, server: &str, pki: &Pki) {
    write_json(
        path,
        &serde_json::json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": NAME, "cluster": {
                "server": server,
                "certificate-authority": pki.ca_crt,
            }}],
            "users": [{"name": NAME, "user": {
                "client-certificate": pki.client_crt,
                "client-key": pki.client_key,
            }}],
            "contexts": [{"name": NAME, "context": {
                "cluster": NAME,
                "user": NAME,
                "namespace": super::NAMESPACE,
            }}],
            "current-context": NAME,
        }),
    );
}

/// JSON is YAML: every kubeconfig reader takes it.
fn write_json(path: &Path, value: &serde_json::Value) {
    std::fs::write(path, serde_json::to_vec_pretty(value).unwrap())
        .unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
}

/// Runs an openssl command; panics if it fails.
fn openssl(command: &mut Command) {
    let out = command.output().expect("openssl runs");
    assert!(
        out.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
