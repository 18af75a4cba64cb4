//! The set-up scripts on a machine where another apt run holds the package
//! lock: they wait for it (and say so) instead of failing half-way, as
//! `apt-get update` alone does.
//!
//! The lock here is a file of the test's own, taken as apt and dpkg take
//! theirs (a POSIX record lock); the scripts' `wait_for_apt` is pointed at
//! it, so the machine's own apt is never disturbed.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

/// How long the other "apt run" holds the lock: long enough that a script
/// that did not wait would be seen to go ahead while it is held.
const HOLD_SECONDS: u32 = 4;

/// Another "apt run": a process that takes `lock` as apt does and holds it
/// for `seconds`; returned once it holds it.
fn hold(lock: &Path, seconds: u32) -> Child {
    let mut holder = Command::new("python3")
        .args([
            "-c",
            "import fcntl, os, sys, time\n\
             fd = os.open(sys.argv[1], os.O_RDWR)\n\
             fcntl.lockf(fd, fcntl.LOCK_EX)\n\
             print('held', flush=True)\n\
             time.sleep(int(sys.argv[2]))\n",
        ])
        .arg(lock)
        .arg(seconds.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut line = String::new();
    BufReader::new(holder.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "held");
    holder
}

/// The scripts' `wait_for_apt` on `lock` (after `settings`, shell
/// assignments), then `echo free`.
fn wait_for_apt(lock: &Path, settings: &str) -> Output {
    let script = format!(
        ". '{}'; log_as setup; SUDO=; APT_LOCKS=('{}'); {settings} wait_for_apt && echo free",
        watchlife_tests::workspace()
            .join("scripts/lib/ensure.sh")
            .display(),
        lock.display()
    );
    Command::new("bash").args(["-c", &script]).output().unwrap()
}

#[test]
fn the_set_up_waits_for_the_package_lock_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let lock = dir.path().join("lock");
    std::fs::write(&lock, "").unwrap();

    let mut holder = hold(&lock, HOLD_SECONDS);
    let waited = wait_for_apt(&lock, "");
    // The lock is let go only when its holder ends.
    let holder_ended = holder.try_wait().unwrap().is_some();
    let said = String::from_utf8_lossy(&waited.stderr);
    assert!(waited.status.success(), "{said}");
    assert_eq!(String::from_utf8_lossy(&waited.stdout).trim(), "free");
    assert!(
        said.contains("holds the package lock"),
        "it says why: {said}"
    );
    assert!(holder_ended, "it went on only once the lock was free");
}

#[test]
fn a_lock_held_too_long_fails_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let lock = dir.path().join("lock");
    std::fs::write(&lock, "").unwrap();
    let mut holder = hold(&lock, 60);

    let waited = wait_for_apt(&lock, "APT_LOCK_WAIT_SECONDS=2;");
    let _ = holder.kill();
    let _ = holder.wait();
    let said = String::from_utf8_lossy(&waited.stderr);
    assert!(!waited.status.success(), "{said}");
    assert!(said.contains("still held"), "{said}");
    assert!(waited.stdout.is_empty());
}
