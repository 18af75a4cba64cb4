//! The real `watchlife` binary, run as a child process.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a starting bridge may take to answer `/healthz`.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The `watchlife` binary under test: `$WATCHLIFE_BIN`, or the release build.
pub fn binary() -> PathBuf {
    built("WATCHLIFE_BIN", "target/release/watchlife", "make build")
}

/// The variable that turns on a test-only fault of the bridge; a bridge
/// started with it is [`test_break_binary`].
pub const TEST_BREAK: &str = "WATCHLIFE_TEST_BREAK";

/// The `watchlife` binary with the test-only faults (the release build has
/// none): `$WATCHLIFE_TEST_BIN` (`make test` sets it to its own debug build,
/// which has the faults), or the debug build `make test-break` makes.
pub fn test_break_binary() -> PathBuf {
    built(
        "WATCHLIFE_TEST_BIN",
        "target/debug/watchlife-test-break",
        "make test-break",
    )
}

/// The binary `$var` names, or `default`, in the workspace; it must exist.
fn built(var: &str, default: &str, how: &str) -> PathBuf {
    let path = std::env::var_os(var)
        .map(PathBuf::from)
        .map(|p| crate::workspace().join(p))
        .unwrap_or_else(|| crate::workspace().join(default));
    assert!(
        path.is_file(),
        "{} does not exist: build it with `{how}` (or set {var})",
        path.display()
    );
    path
}

/// Flags that keep a test's bridge to itself: unless the test chooses, the
/// demo (never a cluster some kubeconfig on the machine points at), with its
/// API on a free port (tests run in parallel).
fn isolation(args: &[&str]) -> Vec<&'static str> {
    let mut extra = Vec::new();
    if !args
        .iter()
        .any(|a| ["--demo", "--kubeconfig", "--context"].contains(a))
    {
        extra.push("--demo");
    }
    if !args.contains(&"--demo-api") {
        extra.extend(["--demo-api", "127.0.0.1:0"]);
    }
    extra
}

/// A running bridge, killed on drop.
pub struct Bridge {
    child: Child,
    pub addr: SocketAddr,
    /// The bridge's cache folder (where the demo writes its kubeconfig), so
    /// that test runs leave nothing in the user's own cache.
    _cache: tempfile::TempDir,
}

impl Bridge {
    /// Starts `watchlife --listen 127.0.0.1:<free port> <args>` and waits until it serves.
    pub async fn start(args: &[&str]) -> Bridge {
        Bridge::start_in(&crate::workspace(), args).await
    }

    /// A bridge on a real cluster under Kubernetes 1.20's rules (the real
    /// apiserver's release), watching `resources` with `kubeconfig`.
    pub async fn on_cluster(kubeconfig: &Path, resources: &str) -> Bridge {
        let kubeconfig = kubeconfig.to_str().expect("a UTF-8 kubeconfig path");
        Bridge::start(&[
            "--kubernetes",
            "1.20",
            "--kubeconfig",
            kubeconfig,
            "--resources",
            resources,
        ])
        .await
    }

    /// Like [`Bridge::start`], from another working directory.
    pub async fn start_in(dir: &Path, args: &[&str]) -> Bridge {
        let addr: SocketAddr = format!("127.0.0.1:{}", crate::free_port()).parse().unwrap();
        Bridge::launch(dir, addr, args).await
    }

    /// Like [`Bridge::start`], on a chosen address (to restart on the same one).
    pub async fn start_at(addr: SocketAddr, args: &[&str]) -> Bridge {
        Bridge::launch(&crate::workspace(), addr, args).await
    }

    /// Like [`Bridge::start`], with extra environment variables.
    pub async fn start_with_env(args: &[&str], env: &[(&str, &str)]) -> Bridge {
        let addr: SocketAddr = format!("127.0.0.1:{}", crate::free_port()).parse().unwrap();
        Bridge::launch_with(&crate::workspace(), addr, args, env, Stdio::inherit()).await
    }

    /// Like [`Bridge::start_at`], with extra environment variables, and its
    /// stderr appended to `log` instead of the test's own.
    pub async fn start_logged(
        addr: SocketAddr,
        args: &[&str],
        env: &[(&str, &str)],
        log: &Path,
    ) -> Bridge {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .unwrap_or_else(|e| panic!("opening {}: {e}", log.display()));
        Bridge::launch_with(&crate::workspace(), addr, args, env, Stdio::from(file)).await
    }

    async fn launch(dir: &Path, addr: SocketAddr, args: &[&str]) -> Bridge {
        Bridge::launch_with(dir, addr, args, &[], Stdio::inherit()).await
    }

    async fn launch_with(
        dir: &Path,
        addr: SocketAddr,
        args: &[&str],
        env: &[(&str, &str)],
        stderr: Stdio,
    ) -> Bridge {
        let cache = tempfile::tempdir().expect("a temporary folder");
        let program = if env.iter().any(|(name, _)| *name == TEST_BREAK) {
            test_break_binary()
        } else {
            binary()
        };
        let child = Command::new(program)
            .current_dir(dir)
            .env("XDG_CACHE_HOME", cache.path())
            .envs(env.iter().copied())
            .arg("--listen")
            .arg(addr.to_string())
            .args(isolation(args))
            .args(args)
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("the watchlife binary starts");
        let bridge = Bridge {
            child,
            addr,
            _cache: cache,
        };
        let deadline = Instant::now() + START_TIMEOUT;
        while Instant::now() < deadline {
            if let Ok(r) = crate::http::get(addr, "/healthz").await
                && r.status == 200
            {
                return bridge;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("watchlife did not answer /healthz on {addr} within {START_TIMEOUT:?}");
    }

    /// `http://addr`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `ws://addr/ws`.
    pub fn ws_url(&self) -> String {
        format!("ws://{}/ws", self.addr)
    }

    /// The demo API's URL, from a viewer's `hello` (a demo bridge only).
    pub async fn demo_api(&self) -> String {
        use watchlife_protocol::{FrameBody, Source};
        let mut viewer = crate::ws::Viewer::connect(&self.ws_url()).await;
        match viewer.next_frame(START_TIMEOUT).await.body {
            FrameBody::Hello(h) => match h.source {
                Source::Demo { api } => api,
                other => panic!("a demo bridge, got {other:?}"),
            },
            other => panic!("hello first, got {other:?}"),
        }
    }

    /// The bridge's cache folder (`XDG_CACHE_HOME`).
    pub fn cache_dir(&self) -> &Path {
        self._cache.path()
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stops the process as a service manager does (SIGTERM) and waits for
    /// it to exit.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "the bridge is running");
        self.child.wait().expect("the bridge exits")
    }

    /// Stops the process (SIGKILL) and waits for it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        self.kill();
    }
}
