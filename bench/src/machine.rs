//! What the numbers were measured on, and what a process costs: read from
//! `/proc`, so the bench needs no system library.

use std::process::Command;
use std::time::Duration;

/// The machine and the code a run measured.
#[derive(Debug, Clone)]
pub struct Machine {
    pub cpus: usize,
    pub cpu_model: String,
    pub memory: String,
    pub kernel: String,
    pub rustc: String,
    pub commit: String,
    pub date: String,
    /// Load average (1 minute) when the bench started: how busy the machine was.
    pub load_at_start: String,
}

impl Machine {
    pub fn describe() -> Machine {
        let cpuinfo = read("/proc/cpuinfo");
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, m)| m.trim().to_string())
            .unwrap_or_else(|| "unknown".into());
        let memory = read("/proc/meminfo")
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|l| l.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map(|kib| format!("{:.1} GiB", kib / 1024.0 / 1024.0))
            .unwrap_or_else(|| "unknown".into());
        let commit = output("git", &["rev-parse", "--short=12", "HEAD"]);
        let dirty = !output("git", &["status", "--porcelain", "--untracked-files=no"]).is_empty();
        Machine {
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            cpu_model,
            memory,
            kernel: output("uname", &["-r"]),
            rustc: output("rustc", &["--version"]),
            commit: if dirty {
                format!("{commit} (with uncommitted changes in the working tree)")
            } else {
                commit
            },
            date: watchlife_controlplane::time::rfc3339(now_micros()),
            load_at_start: read("/proc/loadavg")
                .split_whitespace()
                .next()
                .unwrap_or("?")
                .to_string(),
        }
    }
}

/// Microseconds since the Unix epoch, as the protocol's timestamps are.
pub fn now_micros() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

/// Resident memory of a process, in bytes (`VmRSS`).
pub fn rss_bytes(pid: u32) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kib| kib * 1024)
}

/// Peak resident memory of a process, in bytes (`VmHWM`): the most `VmRSS`
/// has been since it started or since [`reset_peak_rss`].
pub fn peak_rss_bytes(pid: u32) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kib| kib * 1024)
}

/// Sets a process's `VmHWM` back to its `VmRSS` now (writing `5` to
/// `/proc/PID/clear_refs`, Linux 4.0 and later), so that the next
/// [`peak_rss_bytes`] is the peak since this call. Whether it worked.
pub fn reset_peak_rss(pid: u32) -> bool {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").is_ok()
}

/// CPU time a process has used so far (user + system, all its threads).
pub fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces; the fields after it are plain.
    let after = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 here.
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_secs_f64(ticks as f64 / clock_ticks()))
}

/// Clock ticks per second of `/proc` times (`getconf CLK_TCK`, 100 on Linux).
fn clock_ticks() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| output("getconf", &["CLK_TCK"]).parse().unwrap_or(100.0))
}

/// Open file descriptors this process may have.
pub fn fd_limit() -> u64 {
    read("/proc/self/limits")
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|v| v.parse().ok())
        .unwrap_or(1024)
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// A command's trimmed standard output, empty when it cannot run.
pub fn output(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

/// A tokio runtime of two worker threads, one per core of the machine the
/// bench is written for, for the sections whose load and clients share it.
pub fn two_thread_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}
