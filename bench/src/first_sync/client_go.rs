//! client-go v0.36.4's dynamic informer as the first sync's reference: the
//! program in `bench/client-go-first-sync/`, built here with the Go and the
//! Kubernetes library sources that `scripts/ensure-modern-cluster.sh`
//! unpacked, in GOPATH mode as Debian builds them, into
//! `~/.cache/watchlife/bench-client-go-first-sync/` (named by a hash of the
//! source and the package versions: an unchanged program is not built again).

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

/// The program's import path inside its own GOPATH entry.
const PACKAGE: &str = "watchlife.example/bench-client-go-first-sync";

/// The Go toolchain and sources as `ensure-modern-cluster.sh` prints them.
pub struct Toolchain {
    paths: HashMap<String, String>,
}

impl Toolchain {
    /// Runs `scripts/ensure-modern-cluster.sh` (at once when everything is
    /// in place) and reads the `NAME=PATH` lines it prints.
    pub fn find() -> Result<Toolchain, String> {
        let script = watchlife_tests::workspace().join("scripts/ensure-modern-cluster.sh");
        let out = Command::new(&script)
            .stderr(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
        if !out.status.success() {
            return Err(format!("{} failed: {}", script.display(), out.status));
        }
        let paths = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Ok(Toolchain { paths })
    }

    fn path(&self, name: &str) -> Result<&str, String> {
        self.paths
            .get(name)
            .map(String::as_str)
            .ok_or_else(|| format!("ensure-modern-cluster.sh printed no {name}="))
    }

    /// The built program, building it first if this source and these
    /// packages have not been built yet.
    pub fn build(&self) -> Result<PathBuf, String> {
        let source_dir = watchlife_tests::workspace().join("bench/client-go-first-sync");
        let source = std::fs::read_to_string(source_dir.join("main.go"))
            .map_err(|e| format!("{}: {e}", source_dir.display()))?;
        let versions = std::fs::read_to_string(self.path("MODERN_VERSIONS")?).unwrap_or_default();
        let mut hasher = DefaultHasher::new();
        (&source, &versions).hash(&mut hasher);
        let cache = PathBuf::from(self.path("MODERN_GOCACHE")?)
            .parent()
            .and_then(Path::parent)
            .ok_or("an odd Go cache path")?
            .join("bench-client-go-first-sync");
        let binary = cache.join(format!("first-sync-{:016x}", hasher.finish()));
        if binary.exists() {
            return Ok(binary);
        }
        let gopath = cache.join("gopath");
        let package_dir = gopath.join("src").join(PACKAGE);
        let _ = std::fs::remove_dir_all(&gopath);
        std::fs::create_dir_all(&package_dir).map_err(|e| e.to_string())?;
        std::fs::write(package_dir.join("main.go"), &source).map_err(|e| e.to_string())?;
        let partial = cache.join(format!(".partial-{}", std::process::id()));
        let status = Command::new(self.path("MODERN_GO")?)
            .args(["build", "-o"])
            .arg(&partial)
            .arg(PACKAGE)
            .current_dir(&package_dir)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", std::env::var_os("HOME").unwrap_or_default())
            .env("GOROOT", self.path("MODERN_GOROOT")?)
            .env(
                "GOPATH",
                format!("{}:{}", gopath.display(), self.path("MODERN_GOPATH")?),
            )
            .env("GOCACHE", self.path("MODERN_GOCACHE")?)
            .envs([
                ("GO111MODULE", "off"),
                ("GOPROXY", "off"),
                ("GOFLAGS", ""),
                ("CGO_ENABLED", "0"),
                ("GOWORK", "off"),
                ("GOTOOLCHAIN", "local"),
                ("GOENV", "off"),
            ])
            .status()
            .map_err(|e| format!("cannot run go: {e}"))?;
        if !status.success() {
            return Err(format!("go build {PACKAGE} failed: {status}"));
        }
        std::fs::rename(&partial, &binary).map_err(|e| e.to_string())?;
        Ok(binary)
    }
}

/// What the program reported, each stamped when the bench read it.
#[derive(Debug, Default, Clone, Copy)]
pub struct Reported {
    /// Whether client-go's WatchListClient gate was on.
    pub watch_list_client: Option<bool>,
    pub synced: Option<Instant>,
    pub handled: Option<Instant>,
}

/// A running reference informer, killed on drop.
pub struct Informer {
    child: Child,
    lines: Receiver<(Instant, String)>,
    pub reported: Reported,
}

impl Informer {
    /// Starts the program over every namespace's `resource` of
    /// `group/version`, asked to say when it has handled `expect` objects,
    /// with `env` (client-go's `KUBE_FEATURE_*` among them).
    pub fn start(
        binary: &Path,
        kubeconfig: &Path,
        (group, version, resource): (&str, &str, &str),
        expect: usize,
        env: &[(&str, &str)],
    ) -> Result<Informer, String> {
        let mut child = Command::new(binary)
            .arg(format!("-kubeconfig={}", kubeconfig.display()))
            .arg(format!("-group={group}"))
            .arg(format!("-version={version}"))
            .arg(format!("-resource={resource}"))
            .arg("-namespace=")
            .arg(format!("-expect={expect}"))
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", binary.display()))?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send((Instant::now(), line)).is_err() {
                    break;
                }
            }
        });
        Ok(Informer {
            child,
            lines,
            reported: Reported::default(),
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Reads the program's lines until it has said both `synced` and
    /// `handled`, or `timeout` has passed.
    pub fn wait_synced_and_handled(&mut self, timeout: Duration) -> Result<Reported, String> {
        let deadline = Instant::now() + timeout;
        while self.reported.synced.is_none() || self.reported.handled.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            let (at, line) = match self.lines.recv_timeout(left) {
                Ok(read) => read,
                Err(RecvTimeoutError::Timeout) => {
                    return Err(format!("client-go did not sync within {timeout:?}"));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(format!("client-go exited: {:?}", self.child.try_wait()));
                }
            };
            let value: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
            match value["op"].as_str() {
                Some("start") => {
                    self.reported.watch_list_client = value["watchListClient"].as_bool()
                }
                Some("synced") => self.reported.synced = Some(at),
                Some("handled") => self.reported.handled = Some(at),
                _ => {}
            }
        }
        Ok(self.reported)
    }
}

impl Drop for Informer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
