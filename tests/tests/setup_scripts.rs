//! The set-up scripts on a machine where another apt run holds the package
//! lock: they wait for it (and say so) instead of failing half-way, as
//! `apt-get update` alone does.
//!
//! The lock here is a file of the test's own, taken as apt and dpkg take
//! theirs (a POSIX record lock); the scripts' `wait_for_apt` is pointed at
//! it, so the machine's own apt is never disturbed. And every package
//! command in the scripts and the Makefile goes through that wait.

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

/// apt-get's commands that change the system's packages, or its lists:
/// each takes the package lock.
const LOCKING: &[&str] = &[
    "install",
    "update",
    "upgrade",
    "dist-upgrade",
    "remove",
    "purge",
    "autoremove",
];

/// The lines of a shell `script` that run apt-get or dpkg on the system's
/// package state other than through `apt_get` (which waits for the lock):
/// words inside quotes and comments are not commands, a private apt
/// configuration (`APT_PRIVATE`, `apt_private`) holds no system lock, and
/// the wrapper's own line passes its lock timeout.
fn unwaited_package_commands(script: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut quote: Option<char> = None;
    for line in script.lines() {
        // The line with what is inside quotes and after a comment removed.
        let mut code = String::new();
        let mut chars = line.chars().peekable();
        let mut previous = ' ';
        while let Some(c) = chars.next() {
            match quote {
                Some(q) if c == q => quote = None,
                Some('"') if c == '\\' => {
                    chars.next();
                }
                Some(_) => {}
                None if c == '"' || c == '\'' => quote = Some(c),
                None if c == '#' && previous.is_whitespace() => break,
                None => code.push(c),
            }
            previous = c;
        }
        let allowed = ["APT_PRIVATE", "apt_private", "DPkg::Lock::Timeout"]
            .iter()
            .any(|m| line.contains(m));
        let words: Vec<&str> = code.split_whitespace().collect();
        for (i, word) in words.iter().enumerate() {
            let command = match *word {
                "apt-get" | "apt" => words[i + 1..]
                    .iter()
                    .find(|w| !w.starts_with('-'))
                    .is_some_and(|sub| LOCKING.contains(sub)),
                "dpkg" => words[i + 1..]
                    .iter()
                    .any(|w| matches!(*w, "-i" | "--install" | "--configure" | "-r" | "--remove")),
                _ => false,
            };
            if command && !allowed {
                found.push(line.trim().to_string());
            }
        }
    }
    found
}

#[test]
fn every_package_command_of_the_set_up_waits_for_the_lock() {
    // The check finds what it looks for, and passes what it must.
    assert_eq!(
        unwaited_package_commands(
            "set -e\nsudo apt-get -qq install -y chromium\napt_get update\n\
             say \"run: apt-get install x\n  apt-get update\" # apt-get update\n\
             apt-get -q \"${APT_PRIVATE[@]}\" update\nfor tool in apt-get dpkg; do :; done\n\
             (cd d && dpkg -i x.deb)\n"
        ),
        [
            "sudo apt-get -qq install -y chromium",
            "(cd d && dpkg -i x.deb)"
        ]
    );

    let root = watchlife_tests::workspace();
    let mut files = vec![root.join("Makefile"), root.join(".ci/run")];
    for dir in ["scripts", "scripts/lib"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.is_file() {
                files.push(path);
            }
        }
    }
    let mut unwaited = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for line in unwaited_package_commands(&text) {
            unwaited.push(format!("{}: {line}", file.display()));
        }
    }
    assert!(
        files.len() > 5 && unwaited.is_empty(),
        "package commands that do not wait for the package lock (use apt_get from scripts/lib/ensure.sh):\n{}",
        unwaited.join("\n")
    );
}
