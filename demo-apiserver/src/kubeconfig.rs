//! A kubeconfig for the demo API, so that kubectl and every other client
//! reach it with `export KUBECONFIG=...`.

use std::io;
use std::path::Path;

/// The cluster, user and context name written to the kubeconfig.
pub const CONTEXT: &str = "watchlife-demo";

/// The kubeconfig's text: one cluster at `server_url` (plain HTTP, no
/// credentials: the demo API listens on loopback only), one user, and one
/// context in the `default` namespace, made current.
pub fn render(server_url: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: {CONTEXT}
  cluster:
    server: {server_url}
users:
- name: {CONTEXT}
  user: {{}}
contexts:
- name: {CONTEXT}
  context:
    cluster: {CONTEXT}
    user: {CONTEXT}
    namespace: default
current-context: {CONTEXT}
preferences: {{}}
"
    )
}

/// Writes the kubeconfig for `server_url` (such as `http://127.0.0.1:8081`)
/// to `path`, creating its directory when missing.
pub fn write_kubeconfig(path: impl AsRef<Path>, server_url: &str) -> io::Result<()> {
    let path = path.as_ref();
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, render(server_url))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_server_and_makes_its_context_current() {
        let text = render("http://127.0.0.1:8081");
        assert!(text.contains("    server: http://127.0.0.1:8081\n"));
        assert!(text.contains("current-context: watchlife-demo\n"));
    }
}
