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
    render_with_token(server_url, None)
}

/// [`render`] for a demo API that takes `token` (see [`crate::door`]): the
/// server's URL carries it in its path, which kubectl keeps over plain HTTP,
/// and the user presents it too, for clients that send it as a header.
pub fn render_with_token(server_url: &str, token: Option<&str>) -> String {
    let server_url = match token {
        Some(token) => crate::door::server_url(server_url, token),
        None => server_url.to_string(),
    };
    let user = match token {
        // A token is a single line of printable text; quoted so YAML keeps it
        // as it is.
        Some(token) => format!("\n    token: {}", serde_json::Value::from(token)),
        None => " {}".to_string(),
    };
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: {CONTEXT}
  cluster:
    server: {server_url}
users:
- name: {CONTEXT}
  user:{user}
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
    write_kubeconfig_with_token(path, server_url, None)
}

/// [`write_kubeconfig`] whose user presents `token`. The file is readable by
/// its owner only (on Unix), as kubectl writes its own.
pub fn write_kubeconfig_with_token(
    path: impl AsRef<Path>,
    server_url: &str,
    token: Option<&str>,
) -> io::Result<()> {
    let path = path.as_ref();
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    #[cfg(unix)]
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
    io::Write::write_all(&mut file, render_with_token(server_url, token).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_server_and_makes_its_context_current() {
        let text = render("http://127.0.0.1:8081");
        assert!(text.contains("    server: http://127.0.0.1:8081\n"));
        assert!(text.contains("current-context: watchlife-demo\n"));
        assert!(text.contains("  user: {}\n"));
    }

    #[test]
    fn a_token_is_the_users_and_the_file_is_its_owners() {
        let text = render_with_token("http://10.0.0.5:8081", Some("s3cret"));
        assert!(text.contains("  user:\n    token: \"s3cret\"\n"), "{text}");
        assert!(
            text.contains("    server: http://10.0.0.5:8081/token/s3cret\n"),
            "{text}"
        );
        let dir = std::env::temp_dir().join(format!("watchlife-kubeconfig-{}", std::process::id()));
        let path = dir.join("demo.kubeconfig");
        write_kubeconfig_with_token(&path, "http://10.0.0.5:8081", Some("s3cret")).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "{mode:o}");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }
}
