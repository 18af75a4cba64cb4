//! Choosing the source: the demo when no cluster is configured (saying so),
//! its API for kubectl at the printed kubeconfig, and clear refusals.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;
use watchlife_protocol::{EventType, FrameBody, ReflectorState, Stage};
use watchlife_tests::bridge::{Bridge, binary};
use watchlife_tests::free_port;
use watchlife_tests::ws::Viewer;

/// How long a starting `watchlife` may take to print a line.
const LINE_TIMEOUT: Duration = Duration::from_secs(30);

/// A `watchlife` child whose stdout lines arrive on a channel; killed on drop.
struct Run {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Run {
    fn start(args: &[&str], home: &std::path::Path) -> Run {
        let mut child = Command::new(binary())
            .args(args)
            .env_remove("KUBECONFIG")
            .env_remove("KUBERNETES_SERVICE_HOST")
            .env("HOME", home)
            .env("XDG_CACHE_HOME", home.join("cache"))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("watchlife starts");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Run { child, lines }
    }

    /// Lines up to and including the first that contains `wanted`.
    fn until(&self, wanted: &str) -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            match self.lines.recv_timeout(LINE_TIMEOUT) {
                Ok(line) => {
                    let found = line.contains(wanted);
                    seen.push(line);
                    if found {
                        return seen;
                    }
                }
                Err(_) => panic!("no line with {wanted:?}; got {seen:#?}"),
            }
        }
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn without_a_kubeconfig_the_demo_starts_and_kubectl_reaches_its_api() {
    let home = tempfile::tempdir().unwrap();
    let listen = format!("127.0.0.1:{}", free_port());
    let api = format!("127.0.0.1:{}", free_port());
    let run = Run::start(
        &["--listen", &listen, "--demo-api", &api, "--demo-idle"],
        home.path(),
    );
    let lines = run.until("watchlife is serving");
    let text = lines.join("\n");
    assert!(text.contains("no kubeconfig found"), "{text}");
    assert!(text.contains(&format!("http://{api}")), "{text}");
    let kubeconfig = lines
        .iter()
        .find_map(|l| l.trim().strip_prefix("export KUBECONFIG="))
        .unwrap_or_else(|| panic!("an export line: {text}"))
        .to_string();

    let kubectl = |args: &[&str]| {
        let out = Command::new("kubectl")
            .args(args)
            .env("KUBECONFIG", &kubeconfig)
            .output()
            .expect("kubectl runs");
        assert!(
            out.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    // `create -f` sends JSON; the typed generators (`create configmap`) send
    // protobuf, which the demo API does not speak (see its README).
    let manifest = home.path().join("cm.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-kubectl\ndata:\n  k: v\n",
    )
    .unwrap();
    let mut viewer = Viewer::connect(&format!("ws://{listen}/ws")).await;
    kubectl(&[
        "create",
        "--validate=false",
        "-f",
        manifest.to_str().unwrap(),
    ]);
    let listed = kubectl(&["get", "configmaps", "-o", "name"]);
    assert!(listed.contains("configmap/from-kubectl"), "{listed}");

    // The bridge's own list-watch goes through the same API: the write comes
    // back as an event with every stage measured, the server's included.
    let rv = kubectl(&[
        "get",
        "configmap",
        "from-kubectl",
        "-o",
        "jsonpath={.metadata.resourceVersion}",
    ]);
    let event = viewer
        .until(LINE_TIMEOUT, |f| match &f.body {
            FrameBody::Event(e) if e.target.name == "from-kubectl" => Some(e.clone()),
            _ => None,
        })
        .await;
    assert_eq!(
        (event.event_type, event.resource_version),
        (EventType::Added, rv)
    );
    for stage in Stage::ALL {
        assert!(
            event.stages.contains_key(&stage),
            "{stage:?} measured: {:?}",
            event.stages
        );
    }
}

#[test]
fn a_demo_api_port_in_use_is_a_one_line_error_naming_it() {
    let home = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let out = Command::new(binary())
        .args([
            "--demo",
            "--listen",
            &format!("127.0.0.1:{}", free_port()),
            "--demo-api",
            &format!("127.0.0.1:{port}"),
        ])
        .env("HOME", home.path())
        .output()
        .unwrap();
    let line = watchlife_tests::one_line_error(&out);
    assert!(line.contains(&port.to_string()), "{line}");
    assert!(line.contains("--demo-api"), "{line}");
}

#[test]
fn an_unknown_resource_fails_with_the_closest_names() {
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(binary())
        .args([
            "--demo",
            "--listen",
            &format!("127.0.0.1:{}", free_port()),
            "--demo-api",
            "127.0.0.1:0",
            "--resources",
            "pods,deploymnets",
        ])
        .env("HOME", home.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("\"deploymnets\""), "{stderr}");
    assert!(stderr.contains("did you mean deployments.apps"), "{stderr}");
}

#[test]
fn a_missing_kubeconfig_given_explicitly_is_an_error_not_a_fallback() {
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(binary())
        .args([
            "--listen",
            &format!("127.0.0.1:{}", free_port()),
            "--kubeconfig",
            "/nonexistent/kubeconfig",
        ])
        .env("HOME", home.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("/nonexistent/kubeconfig"), "{stderr}");
}

/// A Backoff state of the Reflector of `resource`, live or in a snapshot.
async fn backoff_of(viewer: &mut Viewer, resource: &str) -> String {
    viewer
        .reflector(LINE_TIMEOUT, resource, |state| match state {
            ReflectorState::Backoff { error, delay_ms } => {
                assert!(
                    *delay_ms >= 800,
                    "client-go's schedule starts at 800 ms: {delay_ms}"
                );
                Some(error.clone())
            }
            _ => None,
        })
        .await
}

#[tokio::test]
async fn an_unreachable_cluster_shows_backoff_while_the_app_is_served() {
    let home = tempfile::tempdir().unwrap();
    let kubeconfig = watchlife_tests::unreachable_kubeconfig(home.path());
    let bridge = Bridge::on_cluster(&kubeconfig, "pods").await;
    let mut viewer = Viewer::connect(&bridge.ws_url()).await;
    let error = backoff_of(&mut viewer, "pods").await;
    assert!(!error.is_empty());
    let page = watchlife_tests::http::get(bridge.addr, "/").await.unwrap();
    assert_eq!(page.status, 200);
}

#[tokio::test]
async fn an_invalid_selector_shows_the_servers_message() {
    let bridge = Bridge::start(&[
        "--demo-idle",
        "--resources",
        "pods",
        "--selector",
        "app in (web",
    ])
    .await;
    let mut viewer = Viewer::connect(&bridge.ws_url()).await;
    let error = backoff_of(&mut viewer, "pods").await;
    assert!(error.contains("400"), "{error}");
    // The server's own words, as it answered.
    assert!(error.contains("unable to parse requirement"), "{error}");
}

#[test]
fn kubectl_runs_it_as_a_plugin() {
    // kubectl runs any `kubectl-NAME` on the PATH as `kubectl NAME`.
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(binary(), dir.path().join("kubectl-watchlife")).unwrap();
    let path = format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("kubectl")
        .args(["watchlife", "--help"])
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(
        help.contains("--kubeconfig") && help.contains("--resources"),
        "{help}"
    );
}

#[tokio::test]
async fn bookmarks_move_the_reflectors_resource_version_on() {
    // The story writes: a watch cache sends a bookmark only once its
    // revision has moved past where the watch started (v1.20 and v0.36
    // alike), so an idle demo sends none.
    let bridge = Bridge::start(&["--demo", "--resources", "configmaps,pods"]).await;
    let mut viewer = Viewer::connect(&bridge.ws_url()).await;
    // The demo API sends a bookmark every few seconds; the Reflector reports
    // each one and shows it passing as a BOOKMARK token.
    let reported = viewer
        .until(LINE_TIMEOUT, |f| match &f.body {
            FrameBody::Reflector(r) => match &r.state {
                ReflectorState::Bookmark { resource_version } => Some(resource_version.clone()),
                _ => None,
            },
            _ => None,
        })
        .await;
    assert!(reported.parse::<u64>().is_ok(), "{reported}");
    let token = viewer
        .until(LINE_TIMEOUT, |f| match &f.body {
            FrameBody::Event(e) if e.event_type == EventType::Bookmark => Some(e.clone()),
            _ => None,
        })
        .await;
    assert!(token.stages.contains_key(&Stage::Reflector));
}
