//! The image `make image` builds, run as a cluster would run it, without a
//! kubelet: its root filesystem unpacked, mounted read-only and entered with
//! `chroot` as its own user (see `watchlife_tests::deploy::Rootfs`).
//!
//! - in demo mode it serves `/healthz`;
//! - in a "pod" of a real kube-apiserver v1.20.2 (`KUBERNETES_SERVICE_HOST`
//!   and `_PORT` set, the token of `deploy/`'s service account, `ca.crt` and
//!   `namespace` mounted where the kubelet mounts them, the Deployment's own
//!   arguments and token Secret) it list-watches with no kubeconfig at all.
//!
//! Runs only where buildah is installed (`make test`'s set-up installs it,
//! and `make test` builds the image first); elsewhere each test says so and
//! passes. Needs root, as `chroot` and mounts do.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};
use watchlife_protocol::{FrameBody, ReflectorState, Source};
use watchlife_tests::deploy::{
    IMAGE_USER, Rootfs, buildah_present, deploy_copy, elf_interpreter, image_name, kubectl_ok,
    uids, workspace_version,
};
use watchlife_tests::real_cluster::RealCluster;
use watchlife_tests::ws::Viewer;

/// How long the binary may take to serve, or a frame to come, on a busy machine.
const WAIT: Duration = Duration::from_secs(60);

/// The image, or `None` (said on stderr) where buildah is not installed or
/// the tests do not run as root (mounts and `chroot` need it).
fn unpacked() -> Option<Rootfs> {
    if !buildah_present() {
        eprintln!("skipped: buildah is not installed (make test-setup installs it)");
        return None;
    }
    let uid = std::process::Command::new("id").arg("-u").output().unwrap();
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        eprintln!("skipped: the image tests mount and chroot, which needs root");
        return None;
    }
    Some(Rootfs::unpack(&image_name()))
}

/// Waits until `GET /healthz` on `addr` answers 200; panics with the log if
/// it does not within [`WAIT`] or the process ends.
async fn wait_healthy(
    addr: SocketAddr,
    running: &mut watchlife_tests::deploy::Running,
    log: &Path,
) {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Ok(r) = watchlife_tests::http::get(addr, "/healthz").await
            && r.status == 200
        {
            assert_eq!(r.text(), "ok");
            return;
        }
        let log_text = || std::fs::read_to_string(log).unwrap_or_default();
        assert!(
            running.running(),
            "the image's process ended:\n{}",
            log_text()
        );
        assert!(
            Instant::now() < deadline,
            "no /healthz on {addr} within {WAIT:?}:\n{}",
            log_text()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn loopback() -> SocketAddr {
    format!("127.0.0.1:{}", watchlife_tests::free_port())
        .parse()
        .unwrap()
}

#[tokio::test]
async fn the_image_is_the_binary_and_its_libraries_on_an_empty_base_run_as_65532_with_oci_labels() {
    let Some(image) = unpacked() else { return };
    let config = &image.config["config"];
    assert_eq!(config["User"], IMAGE_USER);
    assert_eq!(config["Entrypoint"], serde_json::json!(["/watchlife"]));
    let labels = &config["Labels"];
    assert_eq!(
        labels["org.opencontainers.image.version"],
        workspace_version()
    );
    assert_eq!(labels["org.opencontainers.image.licenses"], "Apache-2.0");
    assert!(
        labels["org.opencontainers.image.source"]
            .as_str()
            .is_some_and(|s| s.starts_with("https://")),
        "{labels}"
    );
    assert!(labels["org.opencontainers.image.revision"].is_string());

    // Nothing but the binary, the loader and libraries it asks for, and the
    // CA bundle: no shell, no other program.
    let binary = image.root().join("watchlife");
    let loader = elf_interpreter(&binary).expect("the release binary is dynamic");
    let loader = loader.trim_start_matches('/');
    let paths = image.paths();
    for wanted in ["watchlife", "etc/ssl/certs/ca-certificates.crt", loader] {
        assert!(paths.iter().any(|p| p == wanted), "{wanted} in {paths:?}");
    }
    let files: Vec<&String> = paths
        .iter()
        .filter(|p| image.root().join(p).is_file())
        .collect();
    for file in &files {
        let shared_library = file.starts_with("lib") && file.contains(".so");
        assert!(
            shared_library || *file == "watchlife" || file.starts_with("etc/ssl/"),
            "{file}: only the binary, its libraries and the CA bundle"
        );
    }
    // The loader and libc, libm, libgcc_s: a new library linked in is a
    // choice to make, not one to find in the image.
    assert!(files.len() <= 6, "{files:?}");
    // Owned by root and writable by nobody else: the image's user cannot
    // change a byte of it, whatever the mount says.
    use std::os::unix::fs::MetadataExt;
    for path in image.paths() {
        let meta = std::fs::metadata(image.root().join(&path)).unwrap();
        assert_eq!(meta.uid(), 0, "{path} is root's");
        assert_eq!(meta.mode() & 0o022, 0, "{path} is writable by root only");
    }
}

#[tokio::test]
async fn the_image_serves_the_demo_from_a_read_only_root_as_its_own_user() {
    let Some(image) = unpacked() else { return };
    let log_dir = tempfile::tempdir().unwrap();
    let log = log_dir.path().join("watchlife.log");
    let (addr, api) = (loopback(), loopback());
    let mut running = image.spawn(
        &[
            "--demo",
            "--listen",
            &addr.to_string(),
            "--demo-api",
            &api.to_string(),
        ],
        &[],
        None,
        &log,
    );
    wait_healthy(addr, &mut running, &log).await;

    // The process runs as the image's user, not as root.
    let pid = running.entrypoint_pid().expect("the entrypoint runs");
    assert_eq!(uids(pid), [65532; 4]);
    // The root really is read-only: the demo's kubeconfig, the one file it
    // writes when it can, could not be written, and it serves on regardless.
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("Read-only file system"), "{text}");
    // The app and the demo API are served too.
    let page = watchlife_tests::http::get(addr, "/").await.unwrap();
    assert_eq!(page.status, 200);
    assert!(page.text().contains("<html"), "the embedded app");
    let pods = watchlife_tests::http::get(api, "/api/v1/pods")
        .await
        .unwrap();
    assert_eq!(pods.status, 200, "{}", pods.text());
}

/// The Deployment's container as the server stored it: its arguments and
/// the name of the Secret its token comes from.
fn deployment_container(kubeconfig: &Path) -> (Vec<String>, String) {
    let json = kubectl_ok(
        Some(kubeconfig),
        &[
            "-n",
            "watchlife",
            "get",
            "deployment",
            "watchlife",
            "-o",
            "json",
        ],
    );
    let deployment: serde_json::Value = serde_json::from_str(&json).unwrap();
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    let args = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    let env = container["env"].as_array().unwrap();
    let token = env
        .iter()
        .find(|e| e["name"] == "WATCHLIFE_TOKEN")
        .expect("the token is in the environment");
    let secret = token["valueFrom"]["secretKeyRef"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    (args, secret)
}

#[tokio::test]
async fn in_a_pod_of_a_real_cluster_it_list_watches_with_the_service_account_and_no_kubeconfig() {
    let Some(image) = unpacked() else { return };
    let cluster = RealCluster::start().await;
    let admin = cluster.kubeconfig();

    // The walk-through: `kubectl apply -k deploy/` (for real this time: the
    // namespace, the service account and its role, the Secret, the
    // Deployment). No kubelet runs the pod; this test is its kubelet.
    let viewers_token = "4f1c0ffee4f1c0ffee4f1c0ffee4f1c0";
    let deploy = deploy_copy(viewers_token);
    kubectl_ok(
        Some(admin),
        &["apply", "-k", deploy.path().to_str().unwrap()],
    );

    // What the kubelet would mount: a token of the Deployment's service
    // account from the apiserver (TokenRequest), the cluster's CA and the
    // namespace.
    let sa_token = kubectl_ok(
        Some(admin),
        &[
            "-n",
            "watchlife",
            "create",
            "token",
            "watchlife",
            "--duration",
            "1h",
        ],
    );
    let sa = tempfile::tempdir().unwrap();
    std::fs::write(sa.path().join("token"), sa_token.trim()).unwrap();
    std::fs::copy(cluster.ca_cert(), sa.path().join("ca.crt")).unwrap();
    std::fs::write(sa.path().join("namespace"), "watchlife").unwrap();

    // What the kubelet would run: the Deployment's arguments (on a loopback
    // port rather than 0.0.0.0:8080) and its token from the Secret, as the
    // server stored them.
    let (args, secret) = deployment_container(admin);
    let token_b64 = kubectl_ok(
        Some(admin),
        &[
            "-n",
            "watchlife",
            "get",
            "secret",
            &secret,
            "-o",
            "jsonpath={.data.token}",
        ],
    );
    use base64::Engine;
    let token = String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(token_b64.trim())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(token, viewers_token);
    let addr = loopback();
    let args: Vec<String> = args
        .iter()
        .map(|a| {
            if a == "0.0.0.0:8080" {
                addr.to_string()
            } else {
                a.clone()
            }
        })
        .collect();
    assert!(args.contains(&addr.to_string()), "--listen in {args:?}");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let port = cluster.base_url().rsplit(':').next().unwrap().to_string();
    let log_dir = tempfile::tempdir().unwrap();
    let log = log_dir.path().join("watchlife.log");
    let mut running = image.spawn(
        &args,
        &[
            ("KUBERNETES_SERVICE_HOST", "127.0.0.1"),
            ("KUBERNETES_SERVICE_PORT", &port),
            ("WATCHLIFE_TOKEN", &token),
        ],
        Some(sa.path()),
        &log,
    );
    wait_healthy(addr, &mut running, &log).await;

    // The stream holds the token the Secret gave.
    let mut viewer = Viewer::connect(&format!("ws://{addr}/ws?token={token}")).await;
    let hello = viewer
        .until(WAIT, |f| match &f.body {
            FrameBody::Hello(h) => Some(h.clone()),
            _ => None,
        })
        .await;
    let Source::Cluster { context, server } = &hello.source else {
        panic!("a cluster source: {:?}", hello.source);
    };
    assert_eq!(
        context, "in-cluster",
        "the service account's config, not a kubeconfig"
    );
    assert_eq!(server.trim_end_matches('/'), cluster.base_url());

    // Both resources of the Deployment's --resources are watched.
    let mut watching = BTreeSet::new();
    viewer
        .until(WAIT, |f| {
            let updates = match &f.body {
                FrameBody::Reflector(u) => vec![u.clone()],
                FrameBody::Snapshot(s) => s.reflectors.clone(),
                _ => vec![],
            };
            for u in updates {
                if matches!(u.state, ReflectorState::WatchStarted { .. }) {
                    watching.insert(u.resource);
                }
            }
            (watching.len() == 2).then_some(())
        })
        .await;
    assert_eq!(
        watching,
        BTreeSet::from(["pods".to_string(), "deployments.apps".to_string()])
    );

    // A pod created now arrives on the watch.
    let manifest = serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "seen-from-the-pod", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "example.invalid/none"}]},
    });
    let file = log_dir.path().join("pod.json");
    std::fs::write(&file, manifest.to_string()).unwrap();
    kubectl_ok(Some(admin), &["apply", "-f", file.to_str().unwrap()]);
    viewer
        .until(WAIT, |f| match &f.body {
            FrameBody::Event(e) if e.target.name == "seen-from-the-pod" => Some(()),
            _ => None,
        })
        .await;
}
