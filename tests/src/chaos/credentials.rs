//! The bridge's credentials in a run, and the faults that change them.
//!
//! The bridge reads a bearer token from a file (`tokenFile` in its
//! kubeconfig), as a pod reads its projected service-account token. The
//! TLS proxy's [`Gate`] stands for the authority that issued it: it accepts
//! the current tokens and sends each request on with the cluster's own
//! credential. On v1.20 it also acts as [`BRIDGE_USER`], whose read-only
//! ClusterRole the run binds, so that the real apiserver's RBAC judges
//! every request the bridge makes; the v0.36 apiextensions-apiserver has no
//! authorizer but its privileged group, so there the gate does not.

use super::cluster::{Cluster, Kind, Kubernetes};
use crate::tls_proxy::Gate;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use watchlife_testkit::client::Client;

/// The user the bridge's requests act as on v1.20.
pub const BRIDGE_USER: &str = "watchlife-bridge";

/// The ClusterRole and ClusterRoleBinding that let [`BRIDGE_USER`] read
/// what the run watches.
const GRANT: &str = "watchlife-bridge-reads";

const RBAC: &str = "/apis/rbac.authorization.k8s.io/v1";

/// The token file, its gate, and (v1.20) the binding.
pub struct Credentials {
    file: PathBuf,
    gate: Arc<Gate>,
    token: String,
    issued: u32,
}

impl Credentials {
    /// The first token, written to a file in the cluster's folder; on v1.20
    /// the read-only role for `kinds`, bound to [`BRIDGE_USER`].
    pub async fn set_up(cluster: &Cluster, client: &Client, kinds: &[Kind]) -> Credentials {
        let rbac = cluster.kubernetes() == Kubernetes::V1_20;
        let token = token(1);
        let gate = Gate::new(
            &token,
            cluster.bearer_token().map(|t| format!("Bearer {t}")),
            rbac.then_some(BRIDGE_USER),
        );
        let credentials = Credentials {
            file: cluster.dir().join("bridge-token"),
            gate: Arc::new(gate),
            token,
            issued: 1,
        };
        credentials.write();
        if rbac {
            let role = json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": GRANT},
                "rules": kinds.iter().map(|k| json!({
                    "apiGroups": [k.group()], "resources": [k.plural],
                    "verbs": ["get", "list", "watch"],
                })).collect::<Vec<_>>(),
            });
            let reply = client.post(&format!("{RBAC}/clusterroles"), &role).await;
            assert_eq!(reply.code, 201, "the bridge's ClusterRole: {}", reply.text);
            credentials.grant(client).await;
        }
        credentials
    }

    /// The gate the TLS proxy checks tokens with.
    pub fn gate(&self) -> Arc<Gate> {
        self.gate.clone()
    }

    /// Rewrites the kubeconfig at `path` so that its user is the token file.
    pub fn use_in(&self, path: &Path) {
        let text = std::fs::read_to_string(path).expect("the kubeconfig");
        let mut config: serde_json::Value =
            serde_json::from_str(&text).expect("the harness writes kubeconfigs as JSON");
        config["users"][0]["user"] = json!({"tokenFile": self.file});
        std::fs::write(path, serde_json::to_vec_pretty(&config).unwrap())
            .expect("write the kubeconfig");
    }

    /// A new token in the file, accepted beside the current one, as the
    /// kubelet renews a projected token (a new file moved over the old,
    /// so a reader never sees half of one). Returns the token it replaced.
    pub fn renew(&mut self) -> String {
        self.issued += 1;
        let old = std::mem::replace(&mut self.token, token(self.issued));
        self.gate.accept(&self.token);
        self.write();
        old
    }

    /// `token` is refused from now on.
    pub fn expire(&self, token: &str) {
        self.gate.refuse(token);
    }

    /// Requests the gate has refused so far.
    pub fn refusals(&self) -> u64 {
        self.gate.refusals()
    }

    /// Binds the read-only role to [`BRIDGE_USER`].
    pub async fn grant(&self, client: &Client) {
        let binding = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": GRANT},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": GRANT},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": BRIDGE_USER}],
        });
        let reply = client
            .post(&format!("{RBAC}/clusterrolebindings"), &binding)
            .await;
        assert_eq!(reply.code, 201, "binding the bridge's role: {}", reply.text);
    }

    /// Removes the binding: [`BRIDGE_USER`] may read nothing.
    pub async fn revoke(&self, client: &Client) {
        let reply = client
            .delete(&format!("{RBAC}/clusterrolebindings/{GRANT}"))
            .await;
        assert_eq!(
            reply.code, 200,
            "removing the bridge's binding: {}",
            reply.text
        );
    }

    fn write(&self) {
        let next = self.file.with_extension("next");
        std::fs::write(&next, &self.token).expect("write the token");
        std::fs::rename(&next, &self.file).expect("move the token into place");
    }
}

/// The `n`th token issued.
fn token(n: u32) -> String {
    format!("watchlife-bridge-token-{n}")
}
