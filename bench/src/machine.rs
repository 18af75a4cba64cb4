//! What the numbers were measured on, and what a process costs: read from
//! `/proc`, so the bench needs no system library.

use std::collections::HashMap;
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
        let memory = kib_field(&read("/proc/meminfo"), "MemTotal")
            .map(|b| format!("{:.1} GiB", b as f64 / 1024.0 / 1024.0 / 1024.0))
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

/// The text of a process's `/proc/PID/status`.
pub fn status(pid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/status")).ok()
}

/// The field `name` of a `/proc` file's text (`status`, `meminfo`) given in
/// kB (`VmRSS:   1234 kB`), in bytes.
pub fn kib_field(text: &str, name: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kib| kib * 1024)
}

/// Resident memory of a process, in bytes (`VmRSS`).
pub fn rss_bytes(pid: u32) -> Option<u64> {
    kib_field(&status(pid)?, "VmRSS")
}

/// Peak resident memory of a process, in bytes (`VmHWM`): the most `VmRSS`
/// has been since it started or since [`reset_peak_rss`].
pub fn peak_rss_bytes(pid: u32) -> Option<u64> {
    kib_field(&status(pid)?, "VmHWM")
}

/// Sets a process's `VmHWM` back to its `VmRSS` now (writing `5` to
/// `/proc/PID/clear_refs`, Linux 4.0 and later), so that the next
/// [`peak_rss_bytes`] is the peak since this call. Whether it worked.
pub fn reset_peak_rss(pid: u32) -> bool {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").is_ok()
}

/// The fields of `/proc/PID/stat` after the command name, which may hold
/// spaces (the fields after it are plain): the state is the first of them.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    Some(after.split_whitespace().map(String::from).collect())
}

/// CPU time a process has used so far (user + system, all its threads).
pub fn cpu_time(pid: u32) -> Option<Duration> {
    let fields = stat_fields(pid)?;
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 here.
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_secs_f64(ticks as f64 / clock_ticks()))
}

/// The calling thread's id, as `/proc/self/task/` names it.
pub fn thread_id() -> Option<u32> {
    std::fs::read_link("/proc/thread-self")
        .ok()?
        .file_name()?
        .to_str()?
        .parse()
        .ok()
}

/// CPU time the thread `tid` of this process has used so far, to the
/// nanosecond (the first field of `/proc/self/task/TID/schedstat`; `stat`
/// counts in clock ticks of 10 ms).
pub fn thread_cpu_time(tid: u32) -> Option<Duration> {
    let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()?;
    Some(Duration::from_nanos(
        text.split_whitespace().next()?.parse().ok()?,
    ))
}

/// `root` and every process under it, children after their parent.
pub fn process_tree(root: u32) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        // The parent is the second field after the command name.
        let ppid = stat_fields(pid).and_then(|f| f.get(1)?.parse::<u32>().ok());
        if let Some(ppid) = ppid {
            children.entry(ppid).or_default().push(pid);
        }
    }
    let mut tree = Vec::new();
    let mut stack = vec![root];
    while let Some(pid) = stack.pop() {
        if let Some(kids) = children.get(&pid) {
            stack.extend(kids);
        }
        tree.push(pid);
    }
    tree
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

/// The renderer processes of a browser.
#[derive(Debug, Clone)]
pub struct Renderers {
    pub processes: usize,
    /// `VmRSS`, summed over them (pages they share counted in each).
    pub rss: f64,
    /// The one with the most anonymous memory (the tab's own, where its
    /// wasm memory, JS heap and DOM live): its `VmRSS` and its `RssAnon`.
    pub tab_rss: f64,
    pub tab_anon: f64,
}

/// The processes under `root` started with `--type=renderer` (Chromium
/// rewrites its command line into one string, so it is searched, not split).
pub fn renderers(root: u32) -> Renderers {
    let mut found = Renderers {
        processes: 0,
        rss: 0.0,
        tab_rss: 0.0,
        tab_anon: 0.0,
    };
    for pid in process_tree(root) {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if !String::from_utf8_lossy(&cmdline).contains("--type=renderer") {
            continue;
        }
        let status = status(pid).unwrap_or_default();
        let field = |name| kib_field(&status, name).map(|b| b as f64);
        let (Some(rss), Some(anon)) = (field("VmRSS"), field("RssAnon")) else {
            continue;
        };
        found.processes += 1;
        found.rss += rss;
        if anon > found.tab_anon {
            found.tab_anon = anon;
            found.tab_rss = rss;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_field_in_kilobytes_as_bytes() {
        let status = "Name:\tx\nVmHWM:\t   2048 kB\nVmRSS:\t   1024 kB\nRssAnon:\t 512 kB\n";
        assert_eq!(kib_field(status, "VmRSS"), Some(1024 * 1024));
        assert_eq!(kib_field(status, "RssAnon"), Some(512 * 1024));
        assert_eq!(kib_field(status, "VmSwap"), None);
        assert!(rss_bytes(std::process::id()).is_some_and(|b| b > 0));
        assert!(process_tree(std::process::id()).contains(&std::process::id()));
        let tid = thread_id().expect("this thread's id");
        assert!(thread_cpu_time(tid).is_some());
    }
}
