//! kubectl 1.32 (`/usr/bin/kubectl`), as a speaker types it, against the
//! demo (`watchlife --demo --demo-idle`) and against a real kube-apiserver
//! v1.20.2 with etcd: the same commands in the same order on both, and the
//! outcome class of each (success, or which error) compared. Where the two
//! differ on purpose, the step names the difference and why; any other
//! difference fails the test, which prints the whole matrix.
//!
//! Then the Python `kubernetes` client's list + watch + create
//! (`tests/python/list_watch_create.py`) against both, and client-go
//! v1.20.2's own informer (the differential tests' reference program): it
//! lists and watches config maps on both and is told of one created there.
//!
//! The real cluster here is kube-apiserver and etcd only: no scheduler, no
//! controller manager, no kubelet. Its pods stay Pending and its Deployments
//! get no ReplicaSets; the demo runs all of those.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::process::Command;
use watchlife_protocol::Callback;
use watchlife_tests::bridge::Bridge;
use watchlife_tests::client_go::{Options, Reference};
use watchlife_tests::differential::trace::{Trace, View};
use watchlife_tests::real_cluster::RealCluster;

const KUBECTL: &str = "/usr/bin/kubectl";

/// Longest any one command may take (`wait` and `rollout status` are given
/// shorter timeouts of their own).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// What a step does on each side.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// The same outcome class on both.
    Same(&'static str),
    /// A difference on purpose.
    Differs {
        demo: &'static str,
        real: &'static str,
        why: &'static str,
    },
}

struct Step {
    args: &'static [&'static str],
    expect: Expect,
    /// Part of the README's walk-through.
    walkthrough: bool,
}

const fn same(args: &'static [&'static str], class: &'static str) -> Step {
    Step {
        args,
        expect: Expect::Same(class),
        walkthrough: false,
    }
}

const fn walk(args: &'static [&'static str], class: &'static str) -> Step {
    Step {
        args,
        expect: Expect::Same(class),
        walkthrough: true,
    }
}

const NO_CONTROLLERS: &str =
    "the real test cluster runs no controller manager, so its Deployments never progress";
const NO_RUNTIME: &str = "the demo's pod runs without a container runtime, and the demo says so (400); the real cluster's pod is unscheduled, so it has no logs and no process yet";

/// The steps, in order. `{dir}` is the folder of the manifests.
fn steps() -> Vec<Step> {
    vec![
        same(&["version"], "ok"),
        same(&["create", "namespace", "demo"], "ok"),
        same(&["create", "configmap", "x", "--from-literal=a=b"], "ok"),
        same(
            &["create", "secret", "generic", "s", "--from-literal=p=q"],
            "ok",
        ),
        same(
            &["create", "service", "clusterip", "web", "--tcp=80:8080"],
            "ok",
        ),
        // The README's walk-through, as a speaker types it.
        walk(
            &[
                "create",
                "deployment",
                "web",
                "--image=nginx:1.27",
                "--replicas=3",
            ],
            "ok",
        ),
        Step {
            args: &["rollout", "status", "deployment/web", "--timeout=20s"],
            expect: Expect::Differs {
                demo: "ok",
                real: "Timeout",
                why: NO_CONTROLLERS,
            },
            walkthrough: true,
        },
        walk(&["get", "pods", "-o", "wide"], "ok"),
        same(&["get", "replicasets"], "ok"),
        same(&["get", "services"], "ok"),
        same(&["get", "configmaps"], "ok"),
        same(&["get", "secrets"], "ok"),
        same(&["get", "namespaces"], "ok"),
        walk(&["describe", "deployment", "web"], "ok"),
        walk(&["scale", "deployment", "web", "--replicas=5"], "ok"),
        walk(
            &["set", "image", "deployment/web", "nginx=nginx:1.28"],
            "ok",
        ),
        Step {
            args: &[
                "wait",
                "--for=condition=Available",
                "deployment/web",
                "--timeout=20s",
            ],
            expect: Expect::Differs {
                demo: "ok",
                real: "Timeout",
                why: NO_CONTROLLERS,
            },
            walkthrough: true,
        },
        walk(&["events", "--for", "deployment/web"], "ok"),
        walk(&["get", "events"], "ok"),
        same(&["auth", "can-i", "create", "pods"], "ok"),
        // Everyday commands.
        same(&["get", "deployments"], "ok"),
        same(&["get", "all"], "ok"),
        same(&["label", "configmap", "x", "tier=front"], "ok"),
        same(&["annotate", "configmap", "x", "note=hi"], "ok"),
        same(
            &[
                "patch",
                "deployment",
                "web",
                "-p",
                r#"{"spec":{"replicas":2}}"#,
            ],
            "ok",
        ),
        same(
            &[
                "patch",
                "configmap",
                "x",
                "--type=merge",
                "-p",
                r#"{"data":{"b":"c"}}"#,
            ],
            "ok",
        ),
        same(
            &[
                "patch",
                "configmap",
                "x",
                "--type=json",
                "-p",
                r#"[{"op":"add","path":"/data/c","value":"d"}]"#,
            ],
            "ok",
        ),
        same(&["rollout", "restart", "deployment/web"], "ok"),
        same(&["rollout", "history", "deployment/web"], "ok"),
        Step {
            args: &["rollout", "undo", "deployment/web"],
            expect: Expect::Differs {
                demo: "ok",
                real: "ClientError",
                why: "kubectl finds no ReplicaSet to roll back to where no controller made one",
            },
            walkthrough: false,
        },
        Step {
            args: &["cordon", "node-a"],
            expect: Expect::Differs {
                demo: "ok",
                real: "NotFound",
                why: "the real test cluster has no kubelet, so no node",
            },
            walkthrough: false,
        },
        Step {
            args: &["uncordon", "node-a"],
            expect: Expect::Differs {
                demo: "ok",
                real: "NotFound",
                why: "the real test cluster has no kubelet, so no node",
            },
            walkthrough: false,
        },
        same(&["apply", "-f", "{dir}/api.yaml"], "ok"),
        same(&["apply", "-f", "{dir}/api.yaml"], "ok"),
        same(&["create", "-f", "{dir}/settings.yaml"], "ok"),
        same(&["create", "-f", "{dir}/settings.yaml"], "AlreadyExists"),
        same(
            &["apply", "-f", "{dir}/unknown-field.yaml"],
            "ValidationError",
        ),
        same(
            &["create", "-f", "{dir}/unknown-field.yaml"],
            "ValidationError",
        ),
        same(&["apply", "--server-side", "-f", "{dir}/ssa.yaml"], "ok"),
        same(&["apply", "--server-side", "-f", "{dir}/ssa.yaml"], "ok"),
        same(
            &[
                "apply",
                "--server-side",
                "--field-manager=other",
                "-f",
                "{dir}/ssa-3.yaml",
            ],
            "Conflict",
        ),
        same(
            &[
                "apply",
                "--server-side",
                "--field-manager=other",
                "--force-conflicts",
                "-f",
                "{dir}/ssa-3.yaml",
            ],
            "ok",
        ),
        same(&["explain", "pods.spec.containers"], "ok"),
        same(&["explain", "deployment.spec.strategy"], "ok"),
        same(&["auth", "can-i", "delete", "nodes"], "ok"),
        same(&["auth", "can-i", "--list"], "ok"),
        same(&["run", "p", "--image=nginx:1.27"], "ok"),
        same(&["describe", "pod", "p"], "ok"),
        Step {
            args: &["logs", "p"],
            expect: Expect::Differs {
                demo: "BadRequest",
                real: "ok",
                why: NO_RUNTIME,
            },
            walkthrough: false,
        },
        // Both refuse, for different reasons (checked below).
        same(&["exec", "p", "--", "ls"], "BadRequest"),
        same(&["top", "pods"], "ClientError"),
        same(&["get", "configmap", "nope"], "NotFound"),
        same(&["delete", "configmap", "x"], "ok"),
        same(&["delete", "pod", "p", "--wait=false"], "ok"),
        walk(&["delete", "deployment", "web"], "ok"),
        same(&["delete", "namespace", "demo", "--wait=false"], "ok"),
    ]
}

const API_DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  labels: {app: api}
spec:
  replicas: 1
  selector:
    matchLabels: {app: api}
  template:
    metadata:
      labels: {app: api}
    spec:
      containers:
      - name: api
        image: nginx:1.27
        ports:
        - containerPort: 80
";

const SETTINGS: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  greeting: hello
";

const SSA: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: applied
spec:
  replicas: 1
  selector:
    matchLabels: {app: applied}
  template:
    metadata:
      labels: {app: applied}
    spec:
      containers:
      - name: applied
        image: nginx:1.27
";

fn manifests(dir: &Path) {
    let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).unwrap();
    write("api.yaml", API_DEPLOYMENT);
    write("settings.yaml", SETTINGS);
    write(
        "unknown-field.yaml",
        &API_DEPLOYMENT
            .replace("name: api\n", "name: api-typo\n")
            .replace("  replicas: 1\n", "  replicas: 1\n  replicaz: 2\n"),
    );
    write("ssa.yaml", SSA);
    write("ssa-3.yaml", &SSA.replace("replicas: 1", "replicas: 3"));
}

/// The outcome class of one run: `ok`, the server's reason (`NotFound`,
/// `Conflict`...), `ValidationError` (client-side schema validation),
/// `Timeout`, or `ClientError` (kubectl refused by itself).
fn class(success: bool, stderr: &str) -> String {
    if success {
        return "ok".into();
    }
    if let Some(i) = stderr.find("Error from server (") {
        let rest = &stderr[i + "Error from server (".len()..];
        return rest.split(')').next().unwrap_or("").to_string();
    }
    if stderr.contains("Apply failed with") {
        return "Conflict".into();
    }
    if stderr.contains("error validating data") {
        return "ValidationError".into();
    }
    if stderr.contains("timed out") {
        return "Timeout".into();
    }
    "ClientError".into()
}

struct Run {
    class: String,
    stdout: String,
    stderr: String,
}

async fn kubectl(kubeconfig: &Path, home: &Path, args: &[String]) -> Run {
    let child = Command::new(KUBECTL)
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("HOME", home)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(COMMAND_TIMEOUT, child)
        .await
        .unwrap_or_else(|_| panic!("kubectl {args:?} did not end within {COMMAND_TIMEOUT:?}"))
        .expect("kubectl runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    Run {
        class: class(out.status.success(), &stderr),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
    }
}

/// The column names of a table kubectl printed.
fn header(out: &str) -> Option<Vec<String>> {
    out.lines()
        .next()
        .map(|l| l.split_whitespace().map(str::to_string).collect())
}

/// A kubeconfig for the demo's API (plain HTTP on loopback, no token).
fn demo_kubeconfig(dir: &Path, api: &str) -> PathBuf {
    let path = dir.join("demo.kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1
kind: Config
clusters:
- name: demo
  cluster: {{server: \"http://{api}\"}}
contexts:
- name: demo
  context: {{cluster: demo, user: demo, namespace: default}}
current-context: demo
users:
- name: demo
  user: {{}}
"
        ),
    )
    .unwrap();
    path
}

#[tokio::test]
async fn kubectl_commands_end_alike_on_the_demo_and_on_kube_apiserver() {
    assert!(
        Path::new(KUBECTL).exists(),
        "this test drives the real kubectl at {KUBECTL}"
    );
    let dir = tempfile::tempdir().unwrap();
    manifests(dir.path());
    let api = format!("127.0.0.1:{}", watchlife_tests::free_port());
    let _bridge = Bridge::start(&["--demo", "--demo-idle", "--demo-api", &api]).await;
    let demo = demo_kubeconfig(dir.path(), &api);
    let cluster = RealCluster::start().await;
    let real = cluster.kubeconfig().to_path_buf();
    let (demo_home, real_home) = (dir.path().join("home-demo"), dir.path().join("home-real"));
    std::fs::create_dir_all(&demo_home).unwrap();
    std::fs::create_dir_all(&real_home).unwrap();

    let mut report =
        String::from("| kubectl | demo | kube-apiserver v1.20.2 | expected |\n|---|---|---|---|\n");
    let mut failures = Vec::new();
    let mut walked = 0;
    for step in steps() {
        let args: Vec<String> = step
            .args
            .iter()
            .map(|a| a.replace("{dir}", &dir.path().display().to_string()))
            .collect();
        let on_demo = kubectl(&demo, &demo_home, &args).await;
        let on_real = kubectl(&real, &real_home, &args).await;
        let (want_demo, want_real, note) = match step.expect {
            Expect::Same(c) => (c, c, String::new()),
            Expect::Differs { demo, real, why } => (demo, real, format!(" ({why})")),
        };
        report.push_str(&format!(
            "| {} | {} | {} | {want_demo} / {want_real}{note} |\n",
            step.args.join(" "),
            on_demo.class,
            on_real.class
        ));
        if on_demo.class != want_demo || on_real.class != want_real {
            failures.push(format!(
                "kubectl {}: demo {} (want {want_demo}), real {} (want {want_real})\n  demo stderr: {}\n  real stderr: {}",
                step.args.join(" "),
                on_demo.class,
                on_real.class,
                on_demo.stderr.trim(),
                on_real.stderr.trim()
            ));
        }
        if step.walkthrough {
            walked += 1;
        }
        // `kubectl get` prints the same columns from both servers' tables
        // (`get all` aside: the real cluster has no pods to list first).
        if step.args[0] == "get"
            && step.args[1] != "all"
            && on_demo.class == "ok"
            && on_real.class == "ok"
            && let (Some(demo_header), Some(real_header)) =
                (header(&on_demo.stdout), header(&on_real.stdout))
            && demo_header != real_header
        {
            failures.push(format!(
                "kubectl {}: the demo prints {demo_header:?}, kube-apiserver {real_header:?}",
                step.args.join(" ")
            ));
        }
        // What the demo says must also read right, not only end right.
        match step.args {
            ["auth", "can-i", "create", "pods"] => assert_eq!(on_demo.stdout.trim(), "yes"),
            ["events", ..] => assert!(
                on_demo.stdout.contains("ScalingReplicaSet"),
                "{}",
                on_demo.stdout
            ),
            ["logs", "p"] | ["exec", "p", ..] => assert!(
                on_demo.stderr.contains("no container runtime"),
                "{}",
                on_demo.stderr
            ),
            ["apply", "-f", f] if f.contains("unknown-field") => assert!(
                on_demo
                    .stderr
                    .contains("unknown field \"replicaz\" in io.k8s.api.apps.v1.DeploymentSpec")
                    && on_real.stderr.contains("unknown field \"replicaz\""),
                "{}",
                on_demo.stderr
            ),
            _ => {}
        }
    }
    println!("{report}");
    assert_eq!(walked, 10, "the README's walk-through has ten commands");
    assert!(failures.is_empty(), "{}\n\n{report}", failures.join("\n"));

    // client-go's informer on both: LIST, WATCH, then OnAdd for a config
    // map created with kubectl.
    for (side, kubeconfig, home) in [
        ("demo", &demo, &demo_home),
        ("kube-apiserver", &real, &real_home),
    ] {
        let trace = Trace::new(std::time::Instant::now(), View::Calls);
        let log = dir.path().join(format!("client-go-{side}.log"));
        let reference = Reference::start(kubeconfig, &Options::default(), trace.clone(), &log);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while !trace.watching() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "client-go never watched {side}: {}",
                reference.log_tail()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let created = kubectl(
            kubeconfig,
            home,
            &[
                "create",
                "configmap",
                "from-client-go",
                "--from-literal=a=b",
            ]
            .map(String::from),
        )
        .await;
        assert_eq!(created.class, "ok", "{side}: {}", created.stderr);
        loop {
            let added = trace
                .calls()
                .get("default/from-client-go")
                .is_some_and(|calls| calls.iter().any(|c| c.callback == Callback::OnAdd));
            if added {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "client-go on {side} was never told of the new config map: {}",
                reference.log_tail()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    // The Python client's list + watch + create, on both.
    let script = watchlife_tests::workspace().join("tests/python/list_watch_create.py");
    for (side, kubeconfig) in [("demo", &demo), ("kube-apiserver", &real)] {
        let out = tokio::time::timeout(
            COMMAND_TIMEOUT,
            Command::new("python3")
                .arg(&script)
                .arg(kubeconfig)
                .arg("from-python")
                .kill_on_drop(true)
                .output(),
        )
        .await
        .expect("the Python client ends")
        .expect("python3 runs");
        assert!(
            out.status.success(),
            "the Python kubernetes client against {side}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
