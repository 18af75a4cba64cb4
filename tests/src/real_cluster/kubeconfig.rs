//! A kubeconfig for the real cluster: one cluster (server and CA file), one
//! user (bearer token), one context, current. kubectl and the kube crate read it.

use std::path::Path;

/// The name of the cluster, the user and the context in the file.
const NAME: &str = "watchlife-real";

/// Writes the kubeconfig to `path`. The token is written as given: the file
/// is as secret as the token file beside it.
pub(super) fn write(path: &Path, server: &str, ca: &Path, token: &str) {
    // JSON is YAML, and serde_json quotes every string correctly.
    let config = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": NAME, "cluster": {
            "server": server,
            "certificate-authority": ca,
        }}],
        "users": [{"name": NAME, "user": {"token": token}}],
        "contexts": [{"name": NAME, "context": {
            "cluster": NAME,
            "user": NAME,
            "namespace": "default",
        }}],
        "current-context": NAME,
    });
    std::fs::write(path, serde_json::to_vec_pretty(&config).unwrap())
        .unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
}

/// Copies the kubeconfig at `from` to `to`, its user acting as `user` (in
/// `groups`) by impersonation: `as` and `as-groups`, as `kubectl --as` sets them.
pub(super) fn acting_as(from: &Path, to: &Path, user: &str, groups: &[&str]) {
    let text =
        std::fs::read_to_string(from).unwrap_or_else(|e| panic!("reading {}: {e}", from.display()));
    let mut config: serde_json::Value = serde_json::from_str(&text).expect("written as JSON");
    let auth = &mut config["users"][0]["user"];
    auth["as"] = user.into();
    if !groups.is_empty() {
        auth["as-groups"] = serde_json::json!(groups);
    }
    std::fs::write(to, config.to_string())
        .unwrap_or_else(|e| panic!("writing {}: {e}", to.display()));
}
