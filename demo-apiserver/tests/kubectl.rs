//! The real kubectl (`/usr/bin/kubectl`, 1.32) against the demo API, with a
//! kubeconfig written by `write_kubeconfig`.
//!
//! `create -f` and `apply -f` validate manifests with the server's OpenAPI
//! documents (when the build has them, see `build.rs`).

mod support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use tokio::process::Command;
use watchlife_controlplane::resource::{CONFIGMAPS, DEPLOYMENTS};

const KUBECTL: &str = "/usr/bin/kubectl";

const CONFIGMAP: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  greeting: hello
";

const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: mhausenblas/simple-service:0.5.0
        ports:
        - containerPort: 9876
";

struct Kubectl {
    kubeconfig: PathBuf,
    dir: PathBuf,
}

impl Kubectl {
    fn command(&self, args: &[&str]) -> Command {
        assert!(
            Path::new(KUBECTL).exists(),
            "these tests drive the real kubectl at {KUBECTL}"
        );
        let mut cmd = Command::new(KUBECTL);
        cmd.args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("HOME", &self.dir)
            .stdin(Stdio::null());
        cmd
    }

    /// Runs kubectl to completion; panics with its stderr if it fails.
    async fn run(&self, args: &[&str]) -> String {
        let out = self.command(args).output().await.expect("kubectl runs");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {}{stdout}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }

    fn manifest(&self, name: &str, text: &str) -> String {
        let path = self.dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    }
}

/// Waits until the demo API has a watcher on `rt` (kubectl's `get -w` has
/// listed and started watching), so that no change made afterwards is missed.
async fn until_watched(server: &support::Server, plural: &str) {
    loop {
        let watched = server
            .cp
            .watchers()
            .iter()
            .any(|w| w.resource.plural == plural && !w.watchers.is_empty());
        if watched {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn kubectl_creates_watches_labels_scales_applies_and_deletes() {
    let server = support::start().await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kube").join("config");
    watchlife_demo_apiserver::write_kubeconfig(&kubeconfig, &server.base).unwrap();
    let k = Kubectl {
        kubeconfig,
        dir: dir.path().to_path_buf(),
    };

    let version = k.run(&["version", "-o", "json"]).await;
    let version: Value = serde_json::from_str(&version).unwrap();
    assert_eq!(version["serverVersion"]["gitVersion"], "v1.32.0-watchlife");

    // A watch in the background, started before any change.
    let watch = k
        .command(&["get", "configmaps", "-w", "--output-watch-events"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    until_watched(&server, "configmaps").await;

    let cm = k.manifest("cm.yaml", CONFIGMAP);
    assert_eq!(
        k.run(&["create", "-f", &cm]).await.trim(),
        "configmap/settings created"
    );
    assert!(k.run(&["get", "configmaps"]).await.contains("settings"));
    assert_eq!(
        k.run(&["label", "configmap", "settings", "tier=front"])
            .await
            .trim(),
        "configmap/settings labeled"
    );
    assert_eq!(
        k.run(&["annotate", "cm", "settings", "note=hi"])
            .await
            .trim(),
        "configmap/settings annotated"
    );
    let stored = server
        .cp
        .get(CONFIGMAPS, Some("default"), "settings")
        .unwrap();
    assert_eq!(stored["metadata"]["labels"]["tier"], "front");
    assert_eq!(stored["metadata"]["annotations"]["note"], "hi");
    let described = k.run(&["describe", "configmap", "settings"]).await;
    assert!(described.contains("tier=front"), "{described}");
    assert!(described.contains("greeting"), "{described}");
    assert_eq!(
        k.run(&["delete", "configmap", "settings"]).await.trim(),
        "configmap \"settings\" deleted"
    );

    // End the background watch from the server side: kubectl prints what
    // it was sent and exits, so its whole output can be checked.
    server.cp.drop_watchers();
    let out = watch.wait_with_output().await.unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<(String, String)> = text
        .lines()
        .map(|l| {
            let mut cols = l.split_whitespace();
            (
                cols.next().unwrap_or("").to_string(),
                cols.next().unwrap_or("").to_string(),
            )
        })
        .collect();
    let expected: Vec<(String, String)> = [
        ("EVENT", "NAME"),
        ("ADDED", "settings"),
        ("MODIFIED", "settings"),
        ("MODIFIED", "settings"),
        ("DELETED", "settings"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(lines, expected, "kubectl printed:\n{text}");

    // Deployments: apply, apply a change, scale, describe, delete.
    let deploy = k.manifest("deploy.yaml", DEPLOYMENT);
    assert_eq!(
        k.run(&["apply", "-f", &deploy]).await.trim(),
        "deployment.apps/web created"
    );
    let changed = k.manifest("deploy2.yaml", &DEPLOYMENT.replace("0.5.0", "1.5.3"));
    assert_eq!(
        k.run(&["apply", "-f", &changed]).await.trim(),
        "deployment.apps/web configured"
    );
    let stored = server.cp.get(DEPLOYMENTS, Some("default"), "web").unwrap();
    let container = &stored["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "mhausenblas/simple-service:1.5.3");
    assert_eq!(
        container["ports"][0]["containerPort"], 9876,
        "kept by the merge"
    );
    assert_eq!(
        k.run(&["scale", "deployment", "web", "--replicas=3"])
            .await
            .trim(),
        "deployment.apps/web scaled"
    );
    let stored = server.cp.get(DEPLOYMENTS, Some("default"), "web").unwrap();
    assert_eq!(stored["spec"]["replicas"], 3);
    let described = k.run(&["describe", "deploy", "web"]).await;
    assert!(described.contains("3 desired"), "{described}");
    assert_eq!(
        k.run(&["get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"])
            .await,
        "3"
    );
    assert_eq!(
        k.run(&["delete", "-f", &changed]).await.trim(),
        "deployment.apps \"web\" deleted"
    );
    assert!(server.cp.get(DEPLOYMENTS, Some("default"), "web").is_err());
}

/// kubectl's typed generators send their objects in protobuf.
#[tokio::test]
async fn kubectl_generators_send_protobuf_and_are_understood() {
    if watchlife_demo_apiserver::protobuf::pool().is_none() {
        eprintln!("skipped: this build has no protobuf schemas (no Kubernetes source tree)");
        return;
    }
    let server = support::start().await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kube").join("config");
    watchlife_demo_apiserver::write_kubeconfig(&kubeconfig, &server.base).unwrap();
    let k = Kubectl {
        kubeconfig,
        dir: dir.path().to_path_buf(),
    };
    for (args, said) in [
        (
            &["create", "configmap", "x", "--from-literal=a=b"][..],
            "configmap/x created",
        ),
        (&["create", "namespace", "demo"], "namespace/demo created"),
        (
            &[
                "create",
                "deployment",
                "web",
                "--image=nginx:1.27",
                "--replicas=2",
                "-n",
                "demo",
            ],
            "deployment.apps/web created",
        ),
        (
            &[
                "create",
                "secret",
                "generic",
                "s",
                "--from-literal=password=hunter2",
            ],
            "secret/s created",
        ),
        (
            &["create", "service", "clusterip", "web", "--tcp=80:8080"],
            "service/web created",
        ),
    ] {
        assert_eq!(k.run(args).await.trim(), said);
    }
    let cm = server.cp.get(CONFIGMAPS, Some("default"), "x").unwrap();
    assert_eq!(cm["data"]["a"], "b");
    let d = server.cp.get(DEPLOYMENTS, Some("demo"), "web").unwrap();
    assert_eq!(d["spec"]["replicas"], 2);
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.27"
    );
    let secret = k
        .run(&["get", "secret", "s", "-o", "jsonpath={.data.password}"])
        .await;
    assert_eq!(secret, "aHVudGVyMg==");
}

/// kubectl validates manifests and explains fields with the OpenAPI
/// documents the server derives from Kubernetes' own spec.
#[tokio::test]
async fn kubectl_validates_and_explains_with_the_servers_openapi() {
    if watchlife_demo_apiserver::protobuf::pool().is_none() {
        eprintln!("skipped: this build has no OpenAPI documents (no Kubernetes source tree)");
        return;
    }
    let server = support::start().await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kube").join("config");
    watchlife_demo_apiserver::write_kubeconfig(&kubeconfig, &server.base).unwrap();
    let k = Kubectl {
        kubeconfig,
        dir: dir.path().to_path_buf(),
    };
    let bad = k.manifest(
        "bad.yaml",
        &DEPLOYMENT.replace("  replicas: 1\n", "  replicas: 1\n  replicaz: 2\n"),
    );
    let out = k.command(&["apply", "-f", &bad]).output().await.unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("unknown field \"replicaz\" in io.k8s.api.apps.v1.DeploymentSpec"),
        "{stderr}"
    );
    assert!(server.cp.get(DEPLOYMENTS, Some("default"), "web").is_err());

    let good = k.manifest("good.yaml", DEPLOYMENT);
    assert_eq!(
        k.run(&["apply", "-f", &good]).await.trim(),
        "deployment.apps/web created"
    );
    let explained = k.run(&["explain", "deployment.spec.strategy"]).await;
    assert!(explained.contains("KIND:       Deployment"), "{explained}");
    assert!(explained.contains("rollingUpdate"), "{explained}");
    let explained = k.run(&["explain", "pods.spec.containers.image"]).await;
    assert!(explained.contains("FIELD: image <string>"), "{explained}");
}

/// `kubectl auth can-i` is answered yes (the demo has no RBAC), and what the
/// demo has no container runtime for is refused in words that say so.
#[tokio::test]
async fn kubectl_auth_can_i_says_yes_and_logs_exec_are_refused_clearly() {
    let server = support::start().await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kube").join("config");
    watchlife_demo_apiserver::write_kubeconfig(&kubeconfig, &server.base).unwrap();
    let k = Kubectl {
        kubeconfig,
        dir: dir.path().to_path_buf(),
    };
    assert_eq!(
        k.run(&["auth", "can-i", "create", "pods"]).await.trim(),
        "yes"
    );
    assert_eq!(
        k.run(&[
            "auth",
            "can-i",
            "delete",
            "deployments.apps",
            "-n",
            "kube-system"
        ])
        .await
        .trim(),
        "yes"
    );
    let list = k.run(&["auth", "can-i", "--list"]).await;
    assert!(list.contains("*.*"), "{list}");

    k.run(&["run", "p", "--image=nginx"]).await;
    // `kubectl get` prints the server's table: the columns of a cluster.
    let listed = k.run(&["get", "pods"]).await;
    let header: Vec<&str> = listed.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["NAME", "READY", "STATUS", "RESTARTS", "AGE"],
        "{listed}"
    );
    assert!(
        listed.contains("0/1") && listed.contains("Pending"),
        "{listed}"
    );
    let wide = k.run(&["get", "pods", "-o", "wide"]).await;
    assert!(wide.lines().next().unwrap().contains("NODE"), "{wide}");
    let events = k.run(&["get", "events"]).await;
    assert!(
        // No events without controllers ("No resources found" is on stderr).
        events.is_empty() || events.contains("REASON"),
        "{events}"
    );
    for args in [
        &["logs", "p"][..],
        &["exec", "p", "--", "ls"],
        &["attach", "p"],
    ] {
        let out = k.command(args).output().await.unwrap();
        assert!(!out.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("Error from server (BadRequest)")
                && stderr.contains("the demo control plane has no container runtime"),
            "{args:?}: {stderr}"
        );
    }
    let out = k.command(&["logs", "nope"]).output().await.unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("NotFound"));
}

/// `kubectl apply --server-side`: creates, re-applies, reports a conflict
/// with another manager as kube-apiserver does, and takes the field with
/// `--force-conflicts`.
#[tokio::test]
async fn kubectl_server_side_apply_owns_fields_and_reports_conflicts() {
    let server = support::start().await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kube").join("config");
    watchlife_demo_apiserver::write_kubeconfig(&kubeconfig, &server.base).unwrap();
    let k = Kubectl {
        kubeconfig,
        dir: dir.path().to_path_buf(),
    };
    let first = k.manifest("first.yaml", DEPLOYMENT);
    for _ in 0..2 {
        assert_eq!(
            k.run(&["apply", "--server-side", "-f", &first])
                .await
                .trim(),
            "deployment.apps/web serverside-applied"
        );
    }
    let d = server.cp.get(DEPLOYMENTS, Some("default"), "web").unwrap();
    assert_eq!(d["metadata"]["managedFields"][0]["manager"], "kubectl");
    assert_eq!(d["metadata"]["managedFields"][0]["operation"], "Apply");
    assert!(
        d["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:template"]["f:spec"]
            ["f:containers"]["k:{\"name\":\"web\"}"]
            .is_object(),
        "{d}"
    );

    let other = k.manifest(
        "other.yaml",
        &DEPLOYMENT.replace("replicas: 1", "replicas: 3"),
    );
    let out = k
        .command(&[
            "apply",
            "--server-side",
            "--field-manager=other",
            "-f",
            &other,
        ])
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "Apply failed with 1 conflict: conflict with \"kubectl\" using apps/v1: .spec.replicas"
        ),
        "{stderr}"
    );
    k.run(&[
        "apply",
        "--server-side",
        "--field-manager=other",
        "--force-conflicts",
        "-f",
        &other,
    ])
    .await;
    let d = server.cp.get(DEPLOYMENTS, Some("default"), "web").unwrap();
    assert_eq!(d["spec"]["replicas"], 3);

    // The first manager gives replicas up (it would conflict again) and
    // adds a label; a label it stops applying is then removed.
    let without_replicas = DEPLOYMENT.replace("  replicas: 1\n", "");
    let labelled = k.manifest(
        "labelled.yaml",
        &without_replicas.replace(
            "labels: {app: web}\nspec",
            "labels: {app: web, tier: front}\nspec",
        ),
    );
    k.run(&["apply", "--server-side", "-f", &labelled]).await;
    let d = server.cp.get(DEPLOYMENTS, Some("default"), "web").unwrap();
    assert_eq!(d["metadata"]["labels"]["tier"], "front");
    let unlabelled = k.manifest("unlabelled.yaml", &without_replicas);
    k.run(&["apply", "--server-side", "-f", &unlabelled]).await;
    let d = server.cp.get(DEPLOYMENTS, Some("default"), "web").unwrap();
    assert!(d["metadata"]["labels"].get("tier").is_none(), "{d}");
    // replicas now belongs to "other" alone, so it stays.
    assert_eq!(d["spec"]["replicas"], 3);
}
