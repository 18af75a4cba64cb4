//! A child process whose output goes to a log file, killed on drop.

use std::fs::OpenOptions;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How often a starting process is probed for readiness: often enough that a
/// test does not wait long after the process is ready, seldom enough not to
/// load the two cores the process is starting on.
const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// How many lines of a process's log a failure message quotes.
const LOG_TAIL_LINES: usize = 30;

/// A running child process. Its stdout and stderr are appended to its log
/// file, so a restarted process adds to the same log. Dropping it kills the
/// process (SIGKILL) and reaps it, also while a test is panicking.
pub(crate) struct Process {
    name: &'static str,
    child: Child,
    log: PathBuf,
}

impl Process {
    /// Starts `command` with its output appended to `log`. Panics if it
    /// cannot be started.
    pub(crate) fn spawn(name: &'static str, command: &mut Command, log: &Path) -> Process {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .unwrap_or_else(|e| panic!("opening {}: {e}", log.display()));
        let child = command
            .stdin(Stdio::null())
            .stdout(file.try_clone().expect("a second handle to the log"))
            .stderr(file)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {name} ({command:?}): {e}"));
        Process {
            name,
            child,
            log: log.to_path_buf(),
        }
    }

    /// Polls `ready` until it returns true. Panics, quoting the end of the
    /// log, if the process exits first or `timeout` passes.
    pub(crate) async fn wait_until<F, Fut>(&mut self, what: &str, timeout: Duration, mut ready: F)
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = bool>,
    {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().expect("waitpid") {
                panic!(
                    "{} exited ({status}) before {what}; end of {}:\n{}",
                    self.name,
                    self.log.display(),
                    self.log_tail()
                );
            }
            if ready().await {
                return;
            }
            if Instant::now() >= deadline {
                panic!(
                    "{} not {what} within {timeout:?}; end of {}:\n{}",
                    self.name,
                    self.log.display(),
                    self.log_tail()
                );
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    }

    /// Kills the process (SIGKILL) and waits until it is gone. Does nothing
    /// more if it has exited already.
    pub(crate) fn kill(&mut self) {
        // An error means it has exited already; wait() then only reaps it.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends SIGTERM and waits up to `grace` for the process to exit, then
    /// SIGKILLs it, as a kubelet does at the end of a pod's grace period.
    /// Returns whether it exited by itself.
    pub(crate) fn terminate(&mut self, grace: Duration) -> bool {
        if self.child.try_wait().ok().flatten().is_some() {
            return true;
        }
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if self.child.try_wait().ok().flatten().is_some() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.kill();
        false
    }

    /// The process id, while it runs.
    pub(crate) fn id(&self) -> u32 {
        self.child.id()
    }

    /// The last lines of the log.
    pub(crate) fn log_tail(&self) -> String {
        crate::tail(&self.log, LOG_TAIL_LINES)
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "--- end of the {} log ({}) ---\n{}",
                self.name,
                self.log.display(),
                self.log_tail()
            );
        }
        self.kill();
    }
}
